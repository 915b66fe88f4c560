"""Snapshots for gauges: a shard that changed publishes its queues' depths, oldest messages' put times and last
puts and gets (and the queues it forgot) at most once per ``snapshot_interval`` of the arrival clock.  Pure."""

from __future__ import annotations

from typing import Any

from qmon.core import topics
from qmon.core.ids import event_id
from qmon.core.lazy import live
from qmon.core.queues.base import ShardBase
from qmon.core.queues.status import oldest_put
from qmon.core.records import Emit, Snapshot


class Snapshots(ShardBase):
    """A shard's snapshot."""

    def _snap(self) -> dict[str, Any]:
        snap: dict[str, Any] = self.state.setdefault("snap", {"at": None, "dirty": [], "gone": []})
        return snap

    def snapshot(self, clock: int) -> list[Emit]:
        """The depths, oldest messages' put times and last puts and gets (``status``) of the queues used since the
        shard's last snapshot, and the queues it forgot, at most once per ``snapshot_interval_ms`` of the arrival
        clock (a queue that changed in between waits for the next one: ``snapshot_due`` is a deadline of the
        unit's timer)."""
        interval = self.settings.snapshot_interval_ms
        if interval <= 0:
            return []
        snap = self._snap()
        dirty = set(snap["dirty"]).union(live(self.queues))
        if not dirty and not snap["gone"]:
            return []
        if snap["at"] is not None and clock < snap["at"] + interval:
            snap["dirty"] = sorted(dirty)
            return []
        names = sorted(n for n in dirty if n in self.queues)
        queues = [self.queues[n] for n in names]
        record: Snapshot = {
            "event_id": event_id("snapshot", self.qmgr, clock, *names, "", *snap["gone"]),
            "ts": max((q["last_ts"] for q in queues), default=clock),
            "qmgr": self.qmgr,
            "queues": [
                {
                    "queue": n,
                    "depth": q["depth"],
                    "service_timer_start": q["svc_timer_start"],
                    "oldest_message_put": oldest_put(q),
                    "last_put": q["lput"],
                    "last_get": q["lget"],
                }
                for n, q in zip(names, queues, strict=True)
            ],
            "forgotten": list(snap["gone"]),
            "qsg": self.qsg,
        }
        snap.update(at=clock, dirty=[], gone=[])
        return [Emit(topics.SNAPSHOT, self.qmgr, dict(record))]

    def snapshot_due(self) -> int | None:
        """The arrival-clock time of the next snapshot, if the shard has changes waiting for it."""
        snap = self.state.get("snap")
        if self.settings.snapshot_interval_ms <= 0 or not snap or snap["at"] is None:
            return None
        if snap["dirty"] or snap["gone"]:
            return int(snap["at"]) + self.settings.snapshot_interval_ms
        return None
