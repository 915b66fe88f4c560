"""One queue-manager shard's rules in one object: ``QueueMonitor`` applies activity, commands and timers to a
shard's state and returns the records they raise.  It is made of components, one concept each, over the shard they
share (``shard``): service interval and depth events (``service_interval``), the stall alert (``stall``), fill
forecasts (``fill_forecast``), MQSC and statistics (``commands``), bounded state (``retention``), snapshots
(``snapshot``).  Pure."""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

from qmon.core.interest import Registry
from qmon.core.journals import JournalMonitor, JournalStatus
from qmon.core.lazy import live
from qmon.core.mqsc import Command
from qmon.core.queues.commands import Commands, command_reply
from qmon.core.queues.fill_forecast import QueueFillForecast
from qmon.core.queues.retention import Retention
from qmon.core.queues.service_interval import ServiceInterval
from qmon.core.queues.settings import MonitorSettings
from qmon.core.queues.shard import Shard
from qmon.core.queues.snapshot import Snapshots
from qmon.core.queues.stall import StallAlert
from qmon.core.queues.state import QueueState
from qmon.core.records import Activity, Emit


class QueueMonitor:
    """The per-queue rules for one shard of one queue manager.

    Its components, each given the shard (settings, state, the queues' helpers) and the other components it calls:

    * ``service_interval``: a put, get or START on the depth, the service timer, statistics and performance
      events; it tells ``stall`` of a START and of a get while a stall fires;
    * ``stall``: QUEUE_STALLED, before a record (``catch_up``) and on the arrival clock (``due``, ``on_clock``);
    * ``forecast``: QUEUE_FILL_FORECAST, its samples before a record (``catch_up``), the episodes a record ends
      (``on_activity``), and its samples on the arrival clock (``due``, ``on_clock``);
    * ``commands``: MQSC;
    * ``snapshots``: the shard's snapshot and its deadline;
    * ``retention``: what the shard may forget; it tells ``snapshots`` what it forgot.
    """

    def __init__(
        self,
        qmgr: str,
        settings: MonitorSettings,
        state: dict[str, Any] | None = None,
        decode: Callable[[Any], QueueState] | None = None,
    ):
        """``qmgr``: the queue manager whose queues the shard holds, or a queue-sharing group's name for a shard of
        the group's shared queues (``qmon.core.sharing``); ``decode``: the queues are stored encoded, each decoded
        when used (``qmon.core.lazy``)."""
        shard = self.shard = Shard(qmgr, settings, state, decode)
        self.qmgr, self.settings, self.qsg = shard.qmgr, shard.settings, shard.qsg
        self.state: dict[str, Any] = shard.state
        self.queues: MutableMapping[str, QueueState] = shard.queues
        self.index: dict[str, list[Any]] = shard.index
        self.stall = StallAlert(shard)
        self.service_interval = ServiceInterval(shard, self.stall)
        self.forecast = QueueFillForecast(shard)
        self.commands = Commands(shard)
        self.snapshots = Snapshots(shard)
        self.retention = Retention(shard, self.snapshots)

    # ---------------------------------------------------------------- a record's route

    def on_activity(self, rec: Activity) -> list[Emit]:
        """One put, get or START (duplicates were dropped ahead of the rules: ``qmon.core.dedup``); in a
        queue-sharing group's shard, of any member (``rec.qmgr``)."""
        q = self.shard.queue(rec.queue, rec.ts)
        if rec.ts > q["last_ts"]:
            q["last_ts"] = rec.ts
        if q["reset_ts"] is None:
            q["reset_ts"] = rec.ts
        clock = rec.clock if rec.clock is not None else rec.ts
        # What event time has already made due (a stall the timer would have raised, forecast samples) comes
        # first, so the output does not depend on where micro-batches happen to split.
        out = self.stall.catch_up(rec.queue, q, rec.ts)
        out.extend(self.forecast.catch_up(rec.queue, q, rec.ts, rec.event_id))
        if self.qsg is not None:  # a shared queue: from here on, the member's operation
            q["member"] = rec.qmgr
        out.extend(self.service_interval.on_activity(rec, q, clock))
        out.extend(self.forecast.on_activity(rec, q, clock))
        return out

    def on_command(
        self,
        cmd: Command,
        ts: int,
        command_id: str,
        reply: bool,
        member: str | None = None,
        like: dict[str, Any] | None = None,
        own: bool = True,
    ) -> list[Emit]:
        """A parsed MQSC command (``Commands.on_command``)."""
        return self.commands.on_command(cmd, ts, command_id, reply, member, like, own)

    def on_journal(self, status: JournalStatus) -> list[Emit]:
        """Journal receiver status of this queue manager (IBM MQ for IBM i, *Queue manager journals on
        IBM i*)."""
        journals = JournalMonitor(self.qmgr, self.state.setdefault("journals", {}), self.settings.journal_near_pct)
        return [Emit(*e) for e in journals.on_status(status)]

    # ---------------------------------------------------------------- the timers

    def _due(self, q: QueueState) -> int | None:
        """The arrival-clock time at which ``on_clock`` has something to do for ``q`` (its stall, or a sample
        while a forecast fires), or None."""
        dues = [due for due in (self.stall.due(q), self.forecast.due(q)) if due is not None]
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
            out.extend(self.stall.on_clock(name, q, clock))
            out.extend(self.forecast.on_clock(name, q, clock))
        return out

    def snapshot(self, clock: int) -> list[Emit]:
        """The shard's snapshot, if one is due (``Snapshots.snapshot``)."""
        return self.snapshots.snapshot(clock)

    def snapshot_due(self) -> int | None:
        """The arrival-clock time of the next snapshot, if the shard has changes waiting for it."""
        return self.snapshots.due()

    # ---------------------------------------------------------------- the state

    def pack(self) -> None:
        """Make the state ready to store: the index entries of the queues used brought up to date."""
        forgettable = self.retention.forgettable
        for name, q in live(self.queues).items():
            self.index[name] = [q["last_ts"], self._due(q), forgettable(name, q)]

    def expire(self, now_ts: int, ttl_ms: int) -> list[str]:
        """Forget idle queues (no activity for ``ttl_ms`` of event time) that are ``forgettable``."""
        return self.retention.expire(now_ts, ttl_ms)

    def forgettable(self, name: str, q: QueueState) -> bool:
        """Whether queue ``name`` (its state ``q``) may be forgotten (``Retention.forgettable``)."""
        return self.retention.forgettable(name, q)

    def definition(self, name: str) -> dict[str, Any] | None:
        """The attributes queue ``name`` is defined with, as ``LIKE(name)`` copies them (``Commands.definition``)."""
        return self.commands.definition(name)

    def define(self, name: str, verb: str, given: dict[str, Any], like: dict[str, Any] | None) -> None:
        """Keep queue ``name``'s definition (``Commands.define``)."""
        self.commands.define(name, verb, given, like)

    def display_blocks(self, cmd: Command, ts: int) -> list[tuple[str, str]]:
        """(name, what DISPLAY shows) of every queue of this monitor that ``cmd``'s generic name matches."""
        return self.commands.display_blocks(cmd, ts)

    @property
    def interest(self) -> Registry:
        """The registrations of interest the shard holds."""
        return self.shard.interest

    @property
    def perfmev(self) -> str:
        """The queue manager's PERFMEV (``ALTER QMGR``, else the configured one)."""
        return self.shard.perfmev

    def member_perfmev(self, member: str | None) -> str:
        """A group's shard: the PERFMEV of the member ``member``."""
        return self.shard.member_perfmev(member)


__all__ = ["QueueMonitor", "command_reply"]
