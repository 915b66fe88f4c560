"""One queue-manager shard's rules in one object: ``QueueMonitor`` applies activity, commands and timers to a
shard's state and returns the records they raise.  Its rules live by concept: service interval and depth
events (``service_interval``), the stall alert (``stall``), fill forecasts (``fill_forecast``), MQSC and
statistics (``commands``), bounded state (``retention``), snapshots (``snapshot``).  Pure."""

from __future__ import annotations

from qmon.core.lazy import live
from qmon.core.queues.commands import Commands, command_reply
from qmon.core.queues.fill_forecast import FillForecast
from qmon.core.queues.retention import Retention
from qmon.core.queues.service_interval import ServiceInterval
from qmon.core.queues.snapshot import Snapshots
from qmon.core.queues.stall import StallAlert
from qmon.core.queues.state import QueueState
from qmon.core.records import Activity, Emit


class QueueMonitor(ServiceInterval, StallAlert, FillForecast, Commands, Retention, Snapshots):
    """The per-queue rules for one shard of one queue manager."""

    def on_activity(self, rec: Activity) -> list[Emit]:
        """One put, get or START (duplicates were dropped ahead of the rules: ``qmon.core.dedup``); in a
        queue-sharing group's shard, of any member (``rec.qmgr``)."""
        q = self._queue(rec.queue, rec.ts)
        if rec.ts > q["last_ts"]:
            q["last_ts"] = rec.ts
        if q["reset_ts"] is None:
            q["reset_ts"] = rec.ts
        clock = rec.clock if rec.clock is not None else rec.ts
        # What event time has already made due (a stall the timer would have raised, forecast samples) comes
        # first, so the output does not depend on where micro-batches happen to split.
        out = self._catch_up_stall(rec.queue, q, rec.ts)
        out.extend(self._forecast(rec.queue, q, rec.ts, rec.event_id))
        if self.qsg is not None:  # a shared queue: from here on, the member's operation
            q["by"] = rec.qmgr
        out.extend(self._service_interval(rec, q, clock))
        out.extend(self._forecast_reached(rec, q, clock))
        return out

    def _due(self, q: QueueState) -> int | None:
        """The arrival-clock time at which ``on_clock`` has something to do for ``q`` (its stall, or a sample
        while a forecast fires), or None."""
        dues = [due for due in (self._stall_due(q), self._forecast_due(q)) if due is not None]
        return min(dues) if dues else None

    def next_stall_clock(self) -> int | None:
        """The arrival-clock time at which the earliest queue has something due, a stall or a forecast sample
        (for a Spark timer)."""
        used = live(self.queues)
        dues = [due for name, (_, due, _) in self.index.items() if due is not None and name not in used]
        dues.extend(due for q in used.values() if (due := self._due(q)) is not None)
        return min(dues) if dues else None

    def on_clock(self, clock: int) -> list[Emit]:
        """The arrival clock reached ``clock``: raise every stall now overdue (strictly past QSVCINT), resolve or
        relapse the firing ones whose hold or interval has passed, and take the samples due of the queues whose
        forecast fires."""
        out: list[Emit] = []
        used = live(self.queues)
        names = set(used).union(n for n, (_, due, _) in self.index.items() if due is not None and due <= clock)
        for name in sorted(names):
            q = self.queues[name]
            out.extend(self._stall_on_clock(name, q, clock))
            out.extend(self._forecast_on_clock(name, q, clock))
        return out


__all__ = ["QueueMonitor", "command_reply"]
