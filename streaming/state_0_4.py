"""The state qmon 0.4 kept in its checkpoints (queue and structure state version 4): read by a job started on
such a checkpoint, which migrates each unit's value when it first loads it (``upgrade``), and by ``qmon state
export`` (``qmon.streaming.state_export``), which writes it as the lines this qmon's own state gives.

A 0.4 checkpoint records no state version in ``qmon-placement.json``.  Its monitor's value per unit is the unit's
state itself (a queue unit's ``{"v": 1, "shards": {owner: {shard: shard value}}}``, a structure's state), where
later versions wrap it with the unit's event-order marks.  Inside, a queue's fields are stored by position in the
shapes below, frozen as 0.4 wrote them (this qmon's shapes of the same ids hold other fields).

Migrated, a queue keeps its depth, service timer, statistics, attributes and stall episode; what 0.4 did not keep
starts as for a queue qmon has just met: its messages' put times are unknown (DISPLAY QSTATUS shows no MSGAGE
until the messages 0.4 counted are got), no last put or get, fill forecasts from the next record.  A queue
manager keeps its PERFMEV, registrations of interest and journals; what its DEFINE and ALTER commands gave each
queue (what LIKE copies) was not kept by 0.4, so LIKE knows the queues defined or altered after the upgrade.  A
structure keeps its usage, its queues' shares and its episodes.

One default changed since: 0.4 gave a queue QDPMAXEV(DISABLED) and kept it in every queue's attributes, whether
MQSC set it or not.  A migrated queue whose QDPMAXEV is DISABLED takes the configuration's value for its name (by
default ENABLED, as IBM MQ's), and a 0.4 queue's exported line leaves it out so that an import does the same; an
operator who disabled it by MQSC sends that ALTER again.  Pure: no Spark, no Kafka."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import msgpack

from qmon.core.state_version import STATE_VERSION
from qmon.streaming import state as stored

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
#: 0.4's names of a structure's fields and of a queue's share of it -> this qmon's
_RENAMED = {
    "msgs": "messages",
    "el": "elements",
    "ovf": "in_overflow",
    "rej": "put_rejected",
    "ovf_used": "overflow_used",
}
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
    return {_RENAMED.get(k, k): v for k, v in state.items() if k not in _INTERNAL and k != "v"}


def _queue_line(owner: str, name: str, blob: Any) -> dict[str, Any]:
    queue = _public(load_queue(blob))
    attrs = queue.get("attrs")
    if isinstance(attrs, dict) and attrs.get("QDPMAXEV") in (False, "DISABLED"):
        queue["attrs"] = {k: v for k, v in attrs.items() if k != "QDPMAXEV"}  # (0.4's default: see above)
    return {"kind": "queue", "owner": owner, "queue": name, **queue}


def unit_lines(unit: str, unit_name: str, value: bytes) -> Iterator[dict[str, Any]]:
    """The export's lines of one unit's value in a 0.4 checkpoint (values as stored: bytes still bytes)."""
    if unit == "S":  # (a structure unit: streaming.rows.Unit.STRUCTURE)
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


def _queue_now(q: dict[str, Any], qdpmaxev: Any) -> dict[str, Any]:
    """A 0.4 queue as this qmon's ``QueueState`` (its fields in the order of a stored shape)."""
    attrs = dict(q["attrs"])
    if attrs.get("QDPMAXEV") in (False, "DISABLED"):
        attrs["QDPMAXEV"] = qdpmaxev
    return {
        "depth": q["depth"],
        "svc_timer_start": q["svc_timer_start"],
        "svc_timer_clock": q["svc_timer_clock"],
        "attrs": attrs,
        "defined": q["defined"],
        "reset_ts": q["reset_ts"],
        "high_depth": q["high_depth"],
        "enq": q["enq"],
        "deq": q["deq"],
        "last_ts": q["last_ts"],
        "stall_alert_id": q.get("stall_alert_id"),
        "stall_ok": q.get("stall_ok"),
        "forecast": None,
        "unseen": max(int(q["depth"]), 0),
        "puts": [],
        "last_put": None,
        "last_get": None,
        "member": None,
    }


def _structure_queue_now(q: dict[str, Any]) -> dict[str, Any]:
    return {_RENAMED.get(k, k): q[k] for k in ("msgs", "el", "ovf", "rej", "fifo")}


def upgrade(value: dict[str, Any], qdpmaxev_for: Callable[[str], Any]) -> bytes:
    """A unit's value as 0.4 stored it (decoded once), as this qmon stores it (``qmon.streaming.state``):
    ``qdpmaxev_for(queue)`` is the configuration's QDPMAXEV for a queue's name."""
    if "shards" not in value:  # a structure
        structure = _versioned(value, "a structure")
        queues = {n: stored.dump_queue(_structure_queue_now(load_queue(q))) for n, q in structure["queues"].items()}
        kept = {_RENAMED.get(k, k): v for k, v in structure.items() if k not in ("recent", "queues", "v")}
        return stored.dumps({**kept, "v": STATE_VERSION, "queues": queues, "forecast": None})
    shards: dict[str, dict[str, bytes]] = {}
    for owner, numbered in value["shards"].items():
        for shard, blob in numbered.items():
            state = _versioned(blob, f"queue manager {owner}'s shard {shard}")
            queues = {
                name: stored.dump_queue(_queue_now(load_queue(q), qdpmaxev_for(name)))
                for name, q in state["queues"].items()
            }
            kept = {k: v for k, v in state.items() if k not in ("queues", "v")}
            shards.setdefault(owner, {})[shard] = stored.dumps({**kept, "v": STATE_VERSION, "queues": queues})
    return stored.dumps({"v": stored.QUEUE_UNIT_VERSION, "shards": shards, "due": value.get("due") or {}})


def is_0_4(value: dict[str, Any]) -> bool:
    """Whether a monitor's stored value (decoded) is a unit's value as 0.4 stored it (later ones wrap it:
    ``unit``)."""
    return "unit" not in value and "v" in value
