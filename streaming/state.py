"""Operator state at rest: one MessagePack value of plain data per unit, versioned by the rules.

Inside it, each of the unit's queues is a MessagePack value of its own (``dump_queue``), decoded only when
the rules use that queue and encoded again only if they did (``qmon.core.lazy``): a batch pays for the
queues it touched, not for every queue of the unit.

A unit's state (``qmon.core.queues.ShardState``, ``qmon.core.structures.StructureState``) is plain data:
dicts with string keys, lists, strings, bytes, integers, booleans and None, with its version in ``v``
(``qmon.core.state_version``: the rules refuse another).  MessagePack keeps exactly that and nothing else
(no classes, so renaming or moving code cannot make a stored value unreadable; a tuple comes back as a
list).  A queue's fields are stored by position, in the layout its ``TypedDict`` declares (``LAYOUTS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

import msgpack

from qmon.core.lazy import Lazy
from qmon.core.queues import MQ_DEFAULTS, QueueState
from qmon.core.structures import StructureQueueState


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

#: The layouts a queue's map is stored in by position, ``[layout id, value, ...]``: each the fields of its
#: ``TypedDict`` in their declared order (``qmon.core.queues.QueueState``; ``qmon.core.structures.
#: StructureQueueState``, a queue's share of a structure), so the field names are declared there once and
#: written in no stored queue.  A queue's ``attrs`` are stored by position too, in the order of
#: ``qmon.core.queues.MQ_DEFAULTS``.  A layout is part of the state version: ``tests/streaming/test_state.py``
#: holds each layout's fields frozen, so that a field added, removed or moved comes with a new
#: ``qmon.core.state_version``.  A map of other keys (none the rules make) is stored as a map.
LAYOUTS: dict[int, tuple[str, ...]] = {
    1: tuple(QueueState.__annotations__),
    2: tuple(StructureQueueState.__annotations__),
}
ATTRS_LAYOUT = tuple(MQ_DEFAULTS)
_LAYOUT_IDS = {fields: lid for lid, fields in LAYOUTS.items()}
_ATTRS = LAYOUTS[1].index("attrs")


def dump_queue(queue: dict[str, Any]) -> bytes:
    """One queue's state inside its unit's value (``qmon.core.lazy``): by position in its layout."""
    lid = _LAYOUT_IDS.get(tuple(queue))
    if lid is None:
        return _packer.pack(queue)
    values = [lid, *queue.values()]
    if lid == 1 and isinstance(attrs := values[1 + _ATTRS], dict) and tuple(attrs) == ATTRS_LAYOUT:
        values[1 + _ATTRS] = list(attrs.values())
    return _packer.pack(values)


def load_queue(stored: Any) -> Any:
    """One queue's state back as its map: stored by position in a layout (``LAYOUTS``), or as a map."""
    if isinstance(stored, dict):
        return stored
    value = msgpack.unpackb(stored, raw=False)
    if isinstance(value, dict):
        return value
    lid = value[0] if isinstance(value, list) and value else None
    fields = LAYOUTS.get(lid) if type(lid) is int else None
    if fields is None or len(value) != len(fields) + 1:
        raise StoredStateError(f"a queue's stored value of no known layout (starts {bytes(stored[:16])!r})")
    queue = dict(zip(fields, value[1:], strict=True))
    if lid == 1 and isinstance(attrs := queue["attrs"], list):
        if len(attrs) != len(ATTRS_LAYOUT):
            raise StoredStateError(f"a queue's stored attributes of no known layout: {attrs!r}")
        queue["attrs"] = dict(zip(ATTRS_LAYOUT, attrs, strict=True))
    return queue


#: the version of ``QueueUnitState``
QUEUE_UNIT_VERSION = 1


class QueueUnitState(TypedDict):
    """A queue unit's value: its queue-manager shards (``qmon.streaming.route.route``), each shard's
    state (``qmon.core.queues.ShardState``) one MessagePack value of its own, decoded only when used."""

    v: int  # QUEUE_UNIT_VERSION
    shards: dict[str, dict[str, bytes]]  # queue manager -> shard number -> the shard's stored state
    due: dict[str, dict[str, int]]  # queue manager -> shard number -> its next deadline (arrival clock), if any


def load_queue_unit(blob: bytes | None) -> QueueUnitState:
    """A queue unit's value (a new, empty group when None)."""
    if blob is None:
        return {"v": QUEUE_UNIT_VERSION, "shards": {}, "due": {}}
    value = loads(blob)
    if value["v"] > QUEUE_UNIT_VERSION or "shards" not in value:
        raise StoredStateError(
            f"a queue unit's value of version {value['v']}, this qmon reads up to {QUEUE_UNIT_VERSION}"
        )
    return value  # type: ignore[return-value]


def loads(blob: bytes) -> dict[str, Any]:
    value = msgpack.unpackb(blob, raw=False)
    if not isinstance(value, dict) or not isinstance(value.get("v"), int):
        raise StoredStateError(f"stored state is not a versioned map (starts {blob[:16]!r})")
    return value
