"""``qmon state export`` and ``qmon state import``: what the job holds, as JSON lines an operator can read, keep,
and give to a job on another checkpoint.

**Export** reads the monitor's state from a checkpoint (Spark's state data source, ``read_checkpoint``) and writes
one line per queue manager (or queue-sharing group) shard, per queue and per structure, with the stored
fields by name (``unit_lines``): ``{"kind": "queue", "qmgr": ..., "qsg": ..., "queue": ..., "depth": ...,
"attrs": {...}, ...}``.  A checkpoint qmon 0.4 wrote gives the same lines (``qmon.streaming.state_0_4``).

**Import** turns those lines into what a queue manager would send a monitor that starts against it
(``import_records``), written to the input topics at the moment of the import:

* per queue manager: ``ALTER QMGR PERFMEV(...)`` where it was set by MQSC, and its registrations of interest;
* per queue whose attributes differ from what the configuration gives its name (an attribute a line leaves out is
  the configuration's), or that was DEFINEd: ``DEFINE
  QLOCAL(name) REPLACE`` with them (``QSGDISP(SHARED)`` for a shared queue, sent to the member of its latest
  record);
* per queue holding messages: a ``START`` record with ``depth_after``, which gives the queue its depth and starts
  its service timer, as at queue-manager start-up (IBM MQ, *Queue service interval events*).

So depths, attributes, PERFMEV and registrations carry over; statistics, service timers and open alert
episodes start again, as they do when a queue manager restarts. A structure's usage is rebuilt by its
activity: structures are exported for reading, not imported.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import msgpack

from qmon.core.mqsc import QSGDISP
from qmon.core.queues import MonitorSettings
from qmon.core.records import Activity
from qmon.core.state_version import STATE_VERSION
from qmon.streaming import state as stored
from qmon.streaming.rows import Unit

#: a line's kinds
QUEUE_MANAGER, QUEUE, STRUCTURE = "queue_manager", "queue", "structure"

#: what a queue's line leaves out: what only the rules' own bookkeeping needs
_QUEUE_INTERNAL = ("forecast", "puts", "index")


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def unit_lines(unit: str, unit_name: str, value: bytes) -> Iterator[dict[str, Any]]:
    """The lines of one unit's stored value (the operator's ``UnitSlot``: ``{"unit": unit value, "order": ...}``)."""
    blob = msgpack.unpackb(value, raw=False).get("unit")
    if blob is None:
        return
    if unit == Unit.STRUCTURE:
        structure = stored.loads(blob)
        queues = {name: stored.load_queue(q) for name, q in structure.pop("queues", {}).items()}
        yield {"kind": STRUCTURE, "structure": unit_name, **_jsonable(structure), "queues": _jsonable(queues)}
        return
    group = stored.load_queue_unit(blob)
    for owner, shards in sorted(group["shards"].items()):
        for shard, shard_blob in sorted(shards.items(), key=lambda kv: int(kv[0])):
            state = stored.loads(shard_blob)
            queues = state.pop("queues", {})
            state.pop("index", None)
            state.pop("snap", None)
            yield {"kind": QUEUE_MANAGER, "name": owner, "shard": int(shard), **_jsonable(state)}
            for name, q in sorted(queues.items()):
                queue = {k: v for k, v in stored.load_queue(q).items() if k not in _QUEUE_INTERNAL}
                yield {"kind": QUEUE, "owner": owner, "queue": name, **_jsonable(queue)}


def _flag(value: Any) -> Any:
    return ("ENABLED" if value else "DISABLED") if isinstance(value, bool) else value


def import_records(
    lines: Iterable[dict[str, Any]], settings: MonitorSettings, now_ms: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Exported lines -> (commands, activity) to produce at ``now_ms``: ControlCommand and QueueActivity records."""
    commands: list[dict[str, Any]] = []
    activity: list[dict[str, Any]] = []
    sharing = settings.sharing
    registered: set[tuple[str, str, str]] = set()
    altered: set[str] = set()

    def command(qmgr: str, text: str) -> None:
        n = len(commands)
        commands.append({"command_id": f"import-{now_ms}-{n}", "ts": now_ms, "qmgr": qmgr, "text": text,
                         "user": "qmon state import"})  # fmt: skip

    for line in lines:
        kind = line.get("kind")
        if kind == QUEUE_MANAGER:
            name = line["name"]
            if sharing.group_named(name) is None:
                if line.get("perfmev") and name not in altered:
                    altered.add(name)
                    command(name, f"ALTER QMGR PERFMEV({line['perfmev']})")
                for pattern, clients in sorted((line.get("interest") or {}).items()):
                    for client in clients:
                        if (name, pattern, client) not in registered:
                            registered.add((name, pattern, client))
                            command(name, f"REGISTER INTEREST QUEUE({pattern}) CLIENT({client})")
            for member, perfmev in sorted((line.get("member_perfmev") or {}).items()):
                if member not in altered:
                    altered.add(member)
                    command(member, f"ALTER QMGR PERFMEV({perfmev})")
        elif kind == QUEUE:
            owner, name = line["owner"], line["queue"]
            group = sharing.group_named(owner)
            qmgr = owner if group is None else (line.get("member") or group.members[0])
            defaults = settings.attrs_for(name)
            attrs = {**defaults, **(line.get("attrs") or {})}  # (an attribute a line leaves out: the default)
            if line.get("defined") or attrs != defaults:
                given = " ".join(f"{k}({_flag(v)})" for k, v in attrs.items())
                shared = f" {QSGDISP}(SHARED)" if group is not None else ""
                command(qmgr, f"DEFINE QLOCAL('{name}') REPLACE{shared} {given}".rstrip())
            if line.get("depth"):
                start = Activity(
                    event_id=f"import-{now_ms}-{qmgr}-{name}",
                    qmgr=qmgr,
                    queue=name,
                    op="START",
                    ts=now_ms,
                    depth_after=int(line["depth"]),
                )
                activity.append(start.record())
    return commands, activity


class ExportError(ValueError):
    """A line that is not one ``qmon state export`` writes."""


_NEEDS = {QUEUE_MANAGER: ("name",), QUEUE: ("owner", "queue"), STRUCTURE: ("structure",)}


def read_lines(text: str) -> list[dict[str, Any]]:
    """A file of exported lines (blank lines skipped); ``ExportError`` names the first line that is not one."""
    lines = []
    for n, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ExportError(f"line {n}: not JSON ({exc.msg})") from None
        kind = line.get("kind") if isinstance(line, dict) else None
        if kind not in _NEEDS:
            raise ExportError(f"line {n}: no kind qmon state export writes ({', '.join(_NEEDS)})")
        if missing := [k for k in _NEEDS[kind] if not line.get(k)]:
            raise ExportError(f"line {n}: a {kind} line without {', '.join(missing)}")
        lines.append(line)
    return lines


def read_checkpoint(spark: Any, checkpoint: str) -> Iterator[dict[str, Any]]:
    """The lines of every unit the monitor holds in ``checkpoint``, as of its last committed batch (Spark's state
    data source; the operator is found by name in the checkpoint's state metadata).  A checkpoint qmon 0.4 wrote
    (no state version recorded) is read as 0.4 laid it out (``qmon.streaming.state_0_4``); one of another
    version than 0.4's or this qmon's is refused (``ValueError``), naming the version."""
    from pyspark.sql import functions as F

    from qmon.streaming import state_0_4
    from qmon.streaming.units import read_placement

    version = (read_placement(spark, checkpoint) or {}).get("state_version")
    if version not in (None, STATE_VERSION):
        raise ValueError(
            f"{checkpoint}: a checkpoint of qmon state version {version}, which no release wrote; this qmon "
            f"exports state version {STATE_VERSION} and qmon 0.4's (none recorded)"
        )
    meta = spark.read.format("state-metadata").load(checkpoint).collect()
    ids = [r["operatorId"] for r in meta if r["operatorName"] == "applyInPandasWithState"]
    if not ids:
        names = sorted({r["operatorName"] for r in meta})
        raise ValueError(f"{checkpoint}: no monitor state in this checkpoint (its stateful operators: {names})")
    rows = spark.read.format("statestore").option("operatorId", ids[0]).load(checkpoint)
    rows = rows.select("key.unit", "key.unit_name", F.col("value.groupState.value").alias("value"))
    for row in rows.orderBy("unit", "unit_name").toLocalIterator():
        if row["value"] is None:
            continue
        if version is None:
            for line in state_0_4.unit_lines(row["unit"], row["unit_name"], bytes(row["value"])):
                yield _jsonable(line)
        else:
            yield from unit_lines(row["unit"], row["unit_name"], bytes(row["value"]))
