"""Operator state at rest: one MessagePack value of plain data per unit, versioned by the rules.

A unit's state (``qmon.core.queues.ShardState``, ``qmon.core.structures.StructureState``) is plain data:
dicts with string keys, lists, strings, bytes, integers, booleans and None, with its version in ``v``.
MessagePack keeps exactly that and nothing else (no classes, so no code change can make a stored value
unreadable; a tuple comes back as a list), and the rules migrate an older version when they load it
(``qmon.core.queues.migrate``, ``qmon.core.structures.migrate``).
"""

from __future__ import annotations

from typing import Any

import msgpack


class StoredStateError(ValueError):
    """A stored value that is not a unit's state."""


def dumps(state: dict[str, Any]) -> bytes:
    return msgpack.packb(state, use_bin_type=True)


def loads(blob: bytes) -> dict[str, Any]:
    value = msgpack.unpackb(blob, raw=False)
    if not isinstance(value, dict) or not isinstance(value.get("v"), int):
        raise StoredStateError(f"stored state is not a versioned map (starts {blob[:16]!r})")
    return value
