"""Where a query's units are, kept with its checkpoint (see ``qmon.core.placement``).

``placement(spark, checkpoint, names, queue_units, queue_shards)`` returns a ``Placement``:

* ``structures``, ``{structure: bucket}``: assignments already made for this checkpoint, plus new ones
  for configured structures not yet placed;
* ``queue_units``: the key bucket of each queue unit (unit ``i`` on shuffle partition
  ``i mod partitions``; as many groups as partitions unless ``job.queue_units`` says);
* ``queue_shards``: the shards a queue manager's queues are split into.

All of it is kept in the file ``qmon-placement.json`` in the checkpoint directory (read and written
through Hadoop's FileSystem, so any checkpoint location Spark accepts works), with the number of
shuffle partitions the checkpoint was created with, which Spark keeps for the checkpoint's whole life.
The state lives under those keys and those shards: a checkpoint keeps the counts it started with (a
configuration that asks for others is logged and overruled).  The file also records the version of the
state the checkpoint holds (``qmon.core.state_version``): a checkpoint whose query has run under another
version than this qmon's or qmon 0.4's is refused before anything is read (``CheckpointError``), naming the
version found.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from qmon.core.placement import place, spread
from qmon.core.state_version import STATE_VERSION

logger = logging.getLogger(__name__)

FILE = "qmon-placement.json"


class CheckpointError(Exception):
    """A checkpoint this qmon cannot carry on from."""


@dataclass(frozen=True)
class Placement:
    structures: dict[str, int]  # structure -> the bucket of its key (S, structure, bucket)
    queue_units: list[int]  # group i of queue-manager shards -> the bucket of its key (Q, "", bucket)
    queue_shards: int  # shards a queue manager's queues are split into


def _fs(spark: Any, checkpoint: str, name: str = FILE) -> tuple[Any, Any]:
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(checkpoint.rstrip("/") + "/" + name)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def _has_batches(spark: Any, checkpoint: str) -> bool:
    """Whether the checkpoint's query has planned a batch (its offsets log has an entry)."""
    fs, path = _fs(spark, checkpoint, "offsets")
    return bool(fs.exists(path) and any(s.getPath().getName().isdigit() for s in fs.listStatus(path)))


def read_placement(spark: Any, checkpoint: str) -> dict[str, Any] | None:
    """What ``qmon-placement.json`` records in ``checkpoint`` (None: no such file)."""
    fs, path = _fs(spark, checkpoint)
    if not fs.exists(path):
        return None
    stream = fs.open(path)
    try:
        text = spark.sparkContext._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()
    return json.loads(text)


def _write(spark: Any, checkpoint: str, doc: dict[str, Any]) -> None:
    fs, path = _fs(spark, checkpoint)
    out = fs.create(path, True)
    try:
        out.write(bytearray(json.dumps(doc, sort_keys=True).encode()))
    finally:
        out.close()


def spark_partitions(spark: Any, keys: list[tuple[str, str, int]], partitions: int) -> dict[tuple[str, str, int], int]:
    """The shuffle partition Spark puts each operator key ``(unit, unit_name, bucket)`` on: its hash partitioning,
    ``pmod(hash(key), partitions)`` (Murmur3, the key's columns with the types ``rows.ROUTED`` gives them),
    asked of Spark itself in one small query."""
    if not keys:
        return {}
    frame = spark.createDataFrame(keys, "u string, n string, b int")
    rows = frame.selectExpr("u", "n", "b", f"pmod(hash(u, n, b), {int(partitions)}) AS p").collect()
    return {(r.u, r.n, r.b): r.p for r in rows}


def placement(
    spark: Any,
    checkpoint: str,
    names: list[str],
    queue_units: int | None,
    queue_shards: int,
    queue_sharing_groups: bool = False,
) -> Placement:
    """The units' keys for the query on ``checkpoint`` (kept there).  ``queue_units`` None: one queue unit
    per shuffle partition (the checkpoint's).  A checkpoint qmon 0.4 wrote is carried on (its values are migrated
    as the monitor loads them: ``qmon.streaming.state_0_4``) if its duplicate check was the step this qmon has,
    and no queue-sharing group is configured (``queue_sharing_groups``: this qmon keeps a group member's own
    queues in its group's shards, where 0.4 kept them under the member)."""
    from qmon.streaming.rows import Unit  # (not at import: the CLI imports this module for CheckpointError)

    doc = read_placement(spark, checkpoint) or {}
    ran = _has_batches(spark, checkpoint)
    found = doc.get("state_version")
    release_0_4 = found is None and doc.get("dedup_state") == "slice"  # (0.4's default; recorded by 0.4 only)
    if ran and found != STATE_VERSION and not (release_0_4 and not queue_sharing_groups):
        if found is None:  # (qmon 0.4 recorded none)
            held, export = "qmon 0.4 (none recorded)", "this qmon"
            why = (
                "this qmon carries on a qmon 0.4 checkpoint written with monitor.dedup_state: slice (its default) "
                "while no queue-sharing group is configured (0.4 kept a member's own queues under the member)"
            )
        else:
            held, export = f"version {found}", "the qmon that wrote this checkpoint"
            why = f"this qmon reads state version {STATE_VERSION} and qmon 0.4's"
        raise CheckpointError(
            f"{checkpoint}: this checkpoint holds qmon state of {held}; {why}. Start the job with a new checkpoint "
            "directory (job.checkpoint or --checkpoint; "
            "job.starting_offsets: latest skips the input already read), and give it the old job's queues with "
            f"`qmon state import FILE`, FILE written by `qmon state export FILE --checkpoint DIR` of {export}: "
            "see the production guide, upgrading"
        )
    partitions = int(doc.get("partitions") or spark.conf.get("spark.sql.shuffle.partitions"))
    existing = {str(k): int(v) for k, v in (doc.get("structures") or {}).items()}
    tries = 16 * partitions + 64
    units = [int(b) for b in doc.get("queue_units") or []]
    candidates = [(Unit.STRUCTURE.value, n, b) for n, b in existing.items()]
    candidates += [(Unit.STRUCTURE.value, n, b) for n in set(names) - set(existing) for b in range(tries)]
    candidates += [] if units else [(Unit.QUEUES.value, "", b) for b in range(tries)]
    of = spark_partitions(spark, candidates, partitions)

    def partition_of(unit: Unit, name: str, bucket: int) -> int:
        return of.get((unit.value, name, bucket), -1)

    buckets = place(existing, names, partitions, lambda n, b: partition_of(Unit.STRUCTURE, n, b), tries=tries)
    if not units:
        count = queue_units or min(partitions, 4096)
        units = spread(count, partitions, lambda b: partition_of(Unit.QUEUES, "", b), tries=tries)
    elif queue_units is not None and len(units) != queue_units:
        logger.warning(
            "job.queue_units is %d but checkpoint %s was started with %d: kept (the state lives under them)",
            queue_units,
            checkpoint,
            len(units),
        )
    shards = int(doc.get("queue_shards") or doc.get("queue_buckets") or queue_shards)  # (its name in qmon 0.4)
    if shards != queue_shards:
        logger.warning(
            "job.queue_shards is %d but checkpoint %s was started with %d: kept (the state lives in those shards)",
            queue_shards,
            checkpoint,
            shards,
        )
    new = {
        "partitions": partitions,
        "structures": buckets,
        "queue_units": units,
        "queue_shards": shards,
        "state_version": STATE_VERSION,
    }
    if new != doc:
        _write(spark, checkpoint, new)
        logger.info(
            "units placed over %d shuffle partitions: structures %s, %d queue units of queue-manager shards (%d a "
            "queue manager) at %s",
            partitions,
            buckets,
            len(units),
            shards,
            units,
        )
    return Placement(buckets, units, shards)
