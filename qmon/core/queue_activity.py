# Generated from avro/QueueActivity.avsc by `python -m qmon.app.docgen` (qmon/app/codegen.py): edit the schema,
# not this file.
"""QueueActivity (``avro/QueueActivity.avsc``) as the rules take it: ``Activity``.  Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

#: QueueActivity's fields, in the schema's order (the order of the values in its Avro bytes)
RECORD_FIELDS = ("event_id", "qmgr", "queue", "op", "ts", "depth_after", "msg_bytes", "structure", "reason")


class Activity(NamedTuple):
    """One validated QueueActivity record (one put, get or queue-manager start, as published by a queue manager), plus
    where it came from: what every rule takes (the queue monitor, the structure monitor, the pure reference).  The
    schema's fields come first, in its order (the Spark operator makes ``Activity`` objects from its columns by
    position)."""

    event_id: str  # unique at the source; repeats for the same queue are ignored
    qmgr: str  # queue manager or IMS/CQS system name, 1-48 characters
    queue: str  # queue name, 1-48 characters; IMS names begin with the queue-type digit
    op: str  # PUT, GET, START
    ts: int  # epoch ms
    depth_after: int | None = None
    msg_bytes: int | None = None
    structure: str | None = None
    reason: int | None = None  # MQ reason code when the operation failed
    clock: int | None = None  # arrival clock (broker append time); defaults to ts
    seq: int = 0  # arrival order, for output ordering

    @classmethod
    def of(cls, record: Mapping[str, Any], clock: int | None = None, seq: int = 0) -> Activity:
        """The ``Activity`` of a QueueActivity record (a dict of its fields by name; an optional field it lacks:
        None), arriving at ``clock`` (None: at its ``ts``) as the ``seq``-th record."""
        return cls(
            record["event_id"],
            record["qmgr"],
            record["queue"],
            record["op"],
            record["ts"],
            record.get("depth_after"),
            record.get("msg_bytes"),
            record.get("structure"),
            record.get("reason"),
            clock,
            seq,
        )

    def record(self) -> dict[str, Any]:
        """The QueueActivity record, its fields by name (what ``qmon.connectors.avro.encode`` or a JSONL line
        takes): the schema's fields, without where the record came from."""
        return {
            "event_id": self.event_id,
            "qmgr": self.qmgr,
            "queue": self.queue,
            "op": self.op,
            "ts": self.ts,
            "depth_after": self.depth_after,
            "msg_bytes": self.msg_bytes,
            "structure": self.structure,
            "reason": self.reason,
        }
