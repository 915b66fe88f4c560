"""Bounded state: a queue idle for ``monitor.queue_ttl`` is forgotten when nothing would be lost.  Pure."""

from __future__ import annotations

from qmon.core.lazy import live
from qmon.core.queues.shard import Shard
from qmon.core.queues.snapshot import Snapshots
from qmon.core.queues.state import QueueState


class Retention:
    """What a shard may forget (``forgettable``), and forgetting it (``expire``), which its next snapshot tells
    (``snapshots``)."""

    def __init__(self, shard: Shard, snapshots: Snapshots):
        self.shard = shard
        self.settings = shard.settings
        self.snapshots = snapshots

    def forgettable(self, name: str, q: QueueState) -> bool:
        """Only an empty queue with the settings it would get anew (not DEFINEd, not ALTERed, no High/OK
        flip-flop state) and no FIRING alert or forecast may be forgotten: nothing an operator or MQ would keep
        is lost (a forecast's samples of an idle queue are not worth keeping)."""
        return (
            q["depth"] == 0
            and not q["defined"]
            and q["stall_alert_id"] is None
            and not (q["forecast"] is not None and q["forecast"]["on"])
            and q["svc_timer_start"] is None
            and q["attrs"] == self.settings.attrs_for(name)
        )

    def expire(self, now_ts: int, ttl_ms: int) -> list[str]:
        """Forget idle queues (no activity for ``ttl_ms`` of event time) that are ``forgettable``."""
        queues, index = self.shard.queues, self.shard.index
        used = live(queues)
        gone = [n for n, q in used.items() if now_ts - q["last_ts"] > ttl_ms and self.forgettable(n, q)]
        gone.extend(
            n for n, (last_ts, _, idle) in index.items() if idle and now_ts - last_ts > ttl_ms and n not in used
        )
        for n in sorted(gone):
            del queues[n]
            index.pop(n, None)
        if gone:
            self.snapshots.forget(gone)
        return sorted(gone)
