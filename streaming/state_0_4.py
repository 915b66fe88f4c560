"""The state qmon 0.4 kept in its checkpoints (queue and structure state version 4), read for ``qmon state
export`` (``qmon.streaming.state_export``), which writes it as the lines this qmon's own state gives.

A 0.4 checkpoint records no state version in ``qmon-placement.json``.  Its monitor's value per unit is the unit's
state itself (a queue unit's ``{"v": 1, "shards": {owner: {shard: shard value}}}``, a structure's state), where
later versions wrap it with the unit's event-order marks.  Inside, a queue's fields are stored by position in the
shapes below, frozen as 0.4 wrote them (this qmon's shapes of the same ids hold other fields).

One default changed since: 0.4 gave a queue QDPMAXEV(DISABLED) and kept it in every queue's attributes, whether
MQSC set it or not.  A 0.4 queue's line leaves QDPMAXEV out when it is DISABLED, so that an import gives the queue
the configuration's (by default ENABLED, as IBM MQ's); an operator who disabled it by MQSC sends that ALTER again.
Pure: no Spark, no Kafka."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgpack

#: the version of every queue shard and structure state 0.4 wrote
VERSION = 4

#: 0.4's queue shapes: ``[shape id, value, ...]``
_SHAPES: dict[int, tuple[str, ...]] = {
    1: (
        "depth",
        "svc_timer_start",
        "svc_timer_clock",
        "attrs",
        "defined",
        "reset_ts",
        "high_depth",
        "enq",
        "deq",
        "last_ts",
        "recent",
        "stall_alert_id",
        "stall_ok",
    ),
    2: ("msgs", "el", "ovf", "rej", "fifo", "recent"),
    3: ("msgs", "el", "ovf", "rej", "fifo"),
}
#: a shape-1 queue's ``attrs`` by position
_ATTRS = ("QSVCIEV", "QSVCINT", "MAXDEPTH", "QDEPTHHI", "QDEPTHLO", "QDPHIEV", "QDPLOEV", "QDPMAXEV")
#: what a line leaves out: the rules' own bookkeeping (remembered event ids, the shard's index and snapshot pace)
_INTERNAL = ("recent", "index", "snap")


class Release04Error(ValueError):
    """A value in a checkpoint of no state qmon 0.4 wrote."""


def _map(blob: Any, what: str) -> dict[str, Any]:
    value = msgpack.unpackb(blob, raw=False) if isinstance(blob, bytes) else blob
    if not isinstance(value, dict):
        raise Release04Error(f"{what}: not a map (starts {bytes(blob[:16]) if isinstance(blob, bytes) else blob!r})")
    return value


def _versioned(blob: Any, what: str) -> dict[str, Any]:
    value = _map(blob, what)
    if value.get("v") != VERSION:
        raise Release04Error(f"{what}: state of version {value.get('v')!r}, not qmon 0.4's ({VERSION})")
    return value


def load_queue(blob: Any) -> dict[str, Any]:
    """A queue's stored value as 0.4 wrote it: by position in a shape, or a map."""
    value = msgpack.unpackb(blob, raw=False) if isinstance(blob, bytes) else blob
    if isinstance(value, dict):
        return value
    fields = _SHAPES.get(value[0]) if isinstance(value, list) and value and type(value[0]) is int else None
    if fields is None or len(value) != len(fields) + 1:
        raise Release04Error(f"a queue's stored value of no shape qmon 0.4 wrote: {value!r:.80}")
    queue = dict(zip(fields, value[1:], strict=True))
    if isinstance(attrs := queue.get("attrs"), list):
        if len(attrs) != len(_ATTRS):
            raise Release04Error(f"a queue's stored attributes of no shape qmon 0.4 wrote: {attrs!r}")
        queue["attrs"] = dict(zip(_ATTRS, attrs, strict=True))
    return queue


def _public(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if k not in _INTERNAL and k != "v"}


def _queue_line(owner: str, name: str, blob: Any) -> dict[str, Any]:
    queue = _public(load_queue(blob))
    attrs = queue.get("attrs")
    if isinstance(attrs, dict) and attrs.get("QDPMAXEV") in (False, "DISABLED"):
        queue["attrs"] = {k: v for k, v in attrs.items() if k != "QDPMAXEV"}  # (0.4's default: see above)
    return {"kind": "queue", "owner": owner, "queue": name, **queue}


def unit_lines(unit: str, unit_name: str, value: bytes) -> Iterator[dict[str, Any]]:
    """The export's lines of one unit's value in a 0.4 checkpoint (values as stored: bytes still bytes)."""
    if unit == "S":
        structure = _public(_versioned(value, f"structure {unit_name}"))
        queues = {name: _public(load_queue(q)) for name, q in structure.pop("queues", {}).items()}
        yield {"kind": "structure", "structure": unit_name, **structure, "queues": queues}
        return
    group = _map(value, "a queue unit")
    if "shards" not in group:
        raise Release04Error(f"a queue unit's value without shards (keys {sorted(group)})")
    for owner, shards in sorted(group["shards"].items()):
        for shard, blob in sorted(shards.items(), key=lambda kv: int(kv[0])):
            state = _public(_versioned(blob, f"queue manager {owner}'s shard {shard}"))
            queues = state.pop("queues", {})
            yield {"kind": "queue_manager", "name": owner, "shard": int(shard), **state}
            for name, q in sorted(queues.items()):
                yield _queue_line(owner, name, q)
