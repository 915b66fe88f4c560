"""Bounded state: a queue idle for ``monitor.queue_ttl`` is forgotten when nothing would be lost.  Pure."""

from __future__ import annotations

from qmon.core.lazy import live
from qmon.core.queues.base import ShardBase
from qmon.core.queues.state import QueueState


class Retention(ShardBase):
    """What a shard may forget."""

    def forgettable(self, name: str, q: QueueState) -> bool:
        """Only an empty queue with the settings it would get anew (not DEFINEd, not ALTERed, no High/OK
        flip-flop state) and no FIRING alert or forecast may be forgotten: nothing an operator or MQ would keep
        is lost (a forecast's samples of an idle queue are not worth keeping)."""
        return (
            q["depth"] == 0
            and not q["defined"]
            and q["stall_alert_id"] is None
            and not (q["fc"] is not None and q["fc"]["on"])
            and q["svc_timer_start"] is None
            and q["attrs"] == self.settings.attrs_for(name)
        )

    def expire(self, now_ts: int, ttl_ms: int) -> list[str]:
        """Forget idle queues (no activity for ``ttl_ms`` of event time) that are ``forgettable``."""
        used = live(self.queues)
        gone = [n for n, q in used.items() if now_ts - q["last_ts"] > ttl_ms and self.forgettable(n, q)]
        gone.extend(
            n for n, (last_ts, _, idle) in self.index.items() if idle and now_ts - last_ts > ttl_ms and n not in used
        )
        for n in sorted(gone):
            del self.queues[n]
            self.index.pop(n, None)
        if gone and self.settings.snapshot_interval_ms > 0:  # the exporter drops their series
            snap = self._snap()
            snap["gone"] = sorted(set(snap["gone"]).union(gone))
            snap["dirty"] = [n for n in snap["dirty"] if n not in gone]
        return sorted(gone)
