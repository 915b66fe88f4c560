"""Operator state at rest: one MessagePack value of plain data per unit, versioned by the rules.

Inside it, each of the unit's queues is a MessagePack value of its own (``dump_queue``), decoded only when
the rules use that queue and encoded again only if they did (``qmon.core.lazy``): a batch pays for the
queues it touched, not for every queue of the unit.

A unit's state (``qmon.core.queues.ShardState``, ``qmon.core.structures.StructureState``) is plain data:
dicts with string keys, lists, strings, bytes, integers, booleans and None, with its version in ``v``
(``qmon.core.state_version``: the rules refuse another).  MessagePack keeps exactly that and nothing else
(no classes, so renaming or moving code cannot make a stored value unreadable; a tuple comes back as a
list).  A queue's fields by position (``QUEUE_SHAPES``) are the one layout kept here; its shapes are frozen
by golden tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

import msgpack

from qmon.core.lazy import Lazy


class StoredStateError(ValueError):
    """A stored value that is not a unit's state."""


def _queues(value: Any) -> Any:
    if isinstance(value, Lazy):  # a unit's queues: each one its own value, re-encoded only if it was used
        return value.encoded(dump_queue)
    raise TypeError(f"cannot store {type(value).__name__}")


def dumps(state: Mapping[str, Any]) -> bytes:
    return msgpack.packb(state, use_bin_type=True, default=_queues)


#: one Packer for every queue value (``msgpack.packb`` builds a Packer per call, for every queue of a batch)
_packer = msgpack.Packer(use_bin_type=True, default=_queues)

#: a queue's fields in shape 1 (each later queue shape adds fields after them)
_QUEUE_SHAPE_1 = (
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
    "stall_alert_id",
    "stall_ok",
)
_QUEUE_SHAPE_3 = (*_QUEUE_SHAPE_1, "fc")

#: The shapes of a queue's map (``qmon.core.queues.QueueState``; ``qmon.core.structures.StructureQueueState``,
#: a queue's share of a structure) stored by position: ``[shape id, value, ...]`` instead of the map, the
#: field names written here once rather than in every queue.  A map of any other keys or order (a queue
#: without a stall hold has no ``stall_ok``) is stored as a map.  Within a state version an id is never
#: changed nor reused: a stored value is read back by it (``tests/streaming/test_state.py`` holds the shapes
#: frozen and golden values of each).
QUEUE_SHAPES: dict[int, tuple[str, ...]] = {
    1: _QUEUE_SHAPE_1,
    2: ("msgs", "el", "ovf", "rej", "fifo"),
    3: _QUEUE_SHAPE_3,
    4: (*_QUEUE_SHAPE_3, "unseen", "puts", "lput", "lget"),
    # a shared queue, in its queue-sharing group's shard: shape 4 and the member of its latest record
    5: (*_QUEUE_SHAPE_3, "unseen", "puts", "lput", "lget", "by"),
}
#: a queue's ``attrs`` (shapes 1, 3, 4 and 5), by position too when they are exactly these
#: (``qmon.core.queues.MQ_DEFAULTS``)
ATTRS_SHAPE = ("QSVCIEV", "QSVCINT", "MAXDEPTH", "QDEPTHHI", "QDEPTHLO", "QDPHIEV", "QDPLOEV", "QDPMAXEV")
_SHAPE_IDS = {fields: sid for sid, fields in QUEUE_SHAPES.items()}
_ATTRS = QUEUE_SHAPES[1].index("attrs")
#: the shapes with ``attrs``, at the same place in each
_WITH_ATTRS = frozenset(sid for sid, fields in QUEUE_SHAPES.items() if fields[_ATTRS : _ATTRS + 1] == ("attrs",))


def dump_queue(queue: dict[str, Any]) -> bytes:
    """One queue's state inside its unit's value (``qmon.core.lazy``): by position if its keys are a shape."""
    sid = _SHAPE_IDS.get(tuple(queue))
    if sid is None:
        return _packer.pack(queue)
    values = [sid, *queue.values()]
    if sid in _WITH_ATTRS and isinstance(attrs := values[1 + _ATTRS], dict) and tuple(attrs) == ATTRS_SHAPE:
        values[1 + _ATTRS] = list(attrs.values())
    return _packer.pack(values)


def load_queue(stored: Any) -> Any:
    """One queue's state back as its map: stored by position (``QUEUE_SHAPES``), as an encoded map (a queue
    of another shape, or a state of a version before 4), or a plain map (as it is)."""
    if isinstance(stored, dict):
        return stored
    value = msgpack.unpackb(stored, raw=False)
    if isinstance(value, dict):
        return value
    sid = value[0] if isinstance(value, list) and value else None
    fields = QUEUE_SHAPES.get(sid) if type(sid) is int else None
    if fields is None or len(value) != len(fields) + 1:
        raise StoredStateError(f"a queue's stored value of no known shape (starts {bytes(stored[:16])!r})")
    queue = dict(zip(fields, value[1:], strict=True))
    if sid in _WITH_ATTRS and isinstance(attrs := queue["attrs"], list):
        if len(attrs) != len(ATTRS_SHAPE):
            raise StoredStateError(f"a queue's stored attributes of no known shape: {attrs!r}")
        queue["attrs"] = dict(zip(ATTRS_SHAPE, attrs, strict=True))
    return queue


#: the version of ``ShardGroup``
GROUP_VERSION = 1


class ShardGroup(TypedDict):
    """A queue unit's value: a group of queue-manager shards (``qmon.streaming.route.route``), each shard's
    state (``qmon.core.queues.ShardState``) one MessagePack value of its own, decoded only when used."""

    v: int  # GROUP_VERSION
    shards: dict[str, dict[str, bytes]]  # queue manager -> shard number -> the shard's stored state
    due: dict[str, dict[str, int]]  # queue manager -> shard number -> its next deadline (arrival clock), if any


def load_group(blob: bytes | None) -> ShardGroup:
    """A queue unit's value (a new, empty group when None)."""
    if blob is None:
        return {"v": GROUP_VERSION, "shards": {}, "due": {}}
    value = loads(blob)
    if value["v"] > GROUP_VERSION or "shards" not in value:
        raise StoredStateError(f"a queue unit's value of version {value['v']}, this qmon reads up to {GROUP_VERSION}")
    return value  # type: ignore[return-value]


def loads(blob: bytes) -> dict[str, Any]:
    value = msgpack.unpackb(blob, raw=False)
    if not isinstance(value, dict) or not isinstance(value.get("v"), int):
        raise StoredStateError(f"stored state is not a versioned map (starts {blob[:16]!r})")
    return value
