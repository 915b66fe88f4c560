"""Snapshots for gauges: a shard that changed publishes its queues' depths, oldest messages' put times and last
puts and gets (and the queues it forgot) at most once per ``snapshot_interval`` of the arrival clock.  Pure."""

from __future__ import annotations

from typing import Any

from qmon.core import topics
from qmon.core.ids import event_id
from qmon.core.lazy import live
from qmon.core.queues.shard import Shard
from qmon.core.queues.status import oldest_put
from qmon.core.records import Emit, Snapshot


class Snapshots:
    """A shard's snapshot (``snapshot``), its deadline (``due``), and the queues forgotten since the last one
    (``forget``)."""

    def __init__(self, shard: Shard):
        self.shard = shard
        self.settings = shard.settings

    def _snap(self) -> dict[str, Any]:
        snap: dict[str, Any] = self.shard.state.setdefault("snap", {"at": None, "dirty": [], "gone": []})
        return snap

    def snapshot(self, clock: int) -> list[Emit]:
        """The depths, oldest messages' put times and last puts and gets (``status``) of the queues used since the
        shard's last snapshot, and the queues it forgot, at most once per ``snapshot_interval_ms`` of the arrival
        clock (a queue that changed in between waits for the next one: ``due`` is a deadline of the
        unit's timer)."""
        interval = self.settings.snapshot_interval_ms
        if interval <= 0:
            return []
        shard, snap = self.shard, self._snap()
        dirty = set(snap["dirty"]).union(live(shard.queues))
        if not dirty and not snap["gone"]:
            return []
        if snap["at"] is not None and clock < snap["at"] + interval:
            snap["dirty"] = sorted(dirty)
            return []
        names = sorted(n for n in dirty if n in shard.queues)
        queues = [shard.queues[n] for n in names]
        record: Snapshot = {
            "event_id": event_id("snapshot", shard.qmgr, clock, *names, "", *snap["gone"]),
            "ts": max((q["last_ts"] for q in queues), default=clock),
            "qmgr": shard.qmgr,
            "queues": [
                {
                    "queue": n,
                    "depth": q["depth"],
                    "service_timer_start": q["svc_timer_start"],
                    "oldest_message_put": oldest_put(q),
                    "last_put": q["last_put"],
                    "last_get": q["last_get"],
                }
                for n, q in zip(names, queues, strict=True)
            ],
            "forgotten": list(snap["gone"]),
            "qsg": shard.qsg,
        }
        snap.update(at=clock, dirty=[], gone=[])
        return [Emit(topics.SNAPSHOT, shard.qmgr, dict(record))]

    def due(self) -> int | None:
        """The arrival-clock time of the next snapshot, if the shard has changes waiting for it."""
        snap = self.shard.state.get("snap")
        if self.settings.snapshot_interval_ms <= 0 or not snap or snap["at"] is None:
            return None
        if snap["dirty"] or snap["gone"]:
            return int(snap["at"]) + self.settings.snapshot_interval_ms
        return None

    def forget(self, gone: list[str]) -> None:
        """The queues ``gone`` were forgotten: the next snapshot says so (the exporter drops their series)."""
        if self.settings.snapshot_interval_ms > 0:
            snap = self._snap()
            snap["gone"] = sorted(set(snap["gone"]).union(gone))
            snap["dirty"] = [n for n in snap["dirty"] if n not in gone]
