"""Where a query's units are, kept with its checkpoint (see ``qmon.core.placement``).

``placement(spark, checkpoint, names, queue_units, queue_buckets)`` returns a ``Placement``:

* ``structures``, ``{structure: bucket}``: assignments already made for this checkpoint, plus new ones
  for configured structures not yet placed;
* ``queue_units``: the key bucket of each group of queue-manager shards (group ``i`` on shuffle partition
  ``i mod partitions``; as many groups as partitions unless ``job.queue_units`` says);
* ``queue_buckets``: the shards a queue manager's queues are split into;
* ``dedup_state``: where the remembered event ids live (``monitor.dedup_state``): ``queue`` (in the
  monitor's state) or ``slice`` (in a step of their own ahead of it, a second stateful operator).

All of it is kept in the file ``qmon-placement.json`` in the checkpoint directory (read and written
through Hadoop's FileSystem, so any checkpoint location Spark accepts works), with the number of
shuffle partitions the checkpoint was created with, which Spark keeps for the checkpoint's whole life.
The state lives under those keys and those shards: a checkpoint keeps the counts it started with (a
configuration that asks for others is logged and overruled), and so does ``dedup_state`` (a checkpoint
that has run without the key was written with ``queue``).  A checkpoint that has run batches without
``queue_units`` keeps its state under one key per queue-manager shard, not per unit, which this job cannot
read: it is refused (``CheckpointError``).
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass
from typing import Any

from qmon.core.placement import place, spread
from qmon.core.sparkhash import partition

logger = logging.getLogger(__name__)

FILE = "qmon-placement.json"


class CheckpointError(Exception):
    """A checkpoint this qmon cannot carry on from."""


@dataclass(frozen=True)
class Placement:
    structures: dict[str, int]  # structure -> the bucket of its key (S, structure, bucket)
    queue_units: list[int]  # group i of queue-manager shards -> the bucket of its key (Q, "", bucket)
    queue_buckets: int  # shards a queue manager's queues are split into
    dedup_state: str = "queue"  # monitor.dedup_state: "queue" or "slice"


def _fs(spark: Any, checkpoint: str, name: str = FILE) -> tuple[Any, Any]:
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(checkpoint.rstrip("/") + "/" + name)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def _has_batches(spark: Any, checkpoint: str) -> bool:
    """Whether the checkpoint's query has planned a batch (its offsets log has an entry)."""
    fs, path = _fs(spark, checkpoint, "offsets")
    return bool(fs.exists(path) and any(s.getPath().getName().isdigit() for s in fs.listStatus(path)))


def _read(spark: Any, checkpoint: str) -> dict[str, Any] | None:
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


def placement(
    spark: Any,
    checkpoint: str,
    names: list[str],
    queue_units: int | None,
    queue_buckets: int,
    dedup_state: str = "queue",
) -> Placement:
    """The units' keys for the query on ``checkpoint`` (kept there).  ``queue_units`` None: one group of shards
    per shuffle partition (the checkpoint's)."""
    from qmon.streaming.rows import Unit  # (not at import: the CLI imports this module for CheckpointError)

    doc = _read(spark, checkpoint) or {}
    ran = _has_batches(spark, checkpoint)
    if "queue_units" not in doc and ran:
        raise CheckpointError(
            f"{checkpoint}: this checkpoint was written by a qmon before 0.4.0 (or an earlier 0.4.0 build), whose "
            "state is keyed by queue manager shard; this qmon groups the shards into units and cannot read it. Start the job with a new "
            "checkpoint directory (job.checkpoint; job.starting_offsets: latest to skip the input already read): "
            "see CHANGELOG.md, 0.4.0"
        )
    partitions = int(doc.get("partitions") or spark.conf.get("spark.sql.shuffle.partitions"))
    existing = {str(k): int(v) for k, v in (doc.get("structures") or {}).items()}
    tries = 16 * partitions + 64
    # Spark's shuffle partition of each key, computed as Spark does (``qmon.core.sparkhash``), once a key
    partition_of = functools.cache(lambda unit, name, bucket: partition((unit, name, bucket), partitions))
    buckets = place(existing, names, partitions, lambda n, b: partition_of(Unit.STRUCTURE, n, b), tries=tries)
    units = [int(b) for b in doc.get("queue_units") or []]
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
    shards = int(doc.get("queue_buckets") or queue_buckets)
    if shards != queue_buckets:
        logger.warning(
            "job.queue_buckets is %d but checkpoint %s was started with %d: kept (the state lives in those shards)",
            queue_buckets,
            checkpoint,
            shards,
        )
    kept = str(doc.get("dedup_state") or ("queue" if ran else dedup_state))
    if kept != dedup_state:
        logger.warning(
            "monitor.dedup_state is %s but checkpoint %s was started with %s: kept (its query's stateful operators "
            "are those of %s; a new checkpoint directory changes it)",
            dedup_state,
            checkpoint,
            kept,
            kept,
        )
    new = {
        "partitions": partitions,
        "structures": buckets,
        "queue_units": units,
        "queue_buckets": shards,
        "dedup_state": kept,
    }
    if new != doc:
        _write(spark, checkpoint, new)
        logger.info(
            "units placed over %d shuffle partitions: structures %s, %d groups of queue-manager shards (%d a "
            "queue manager) at %s",
            partitions,
            buckets,
            len(units),
            shards,
            units,
        )
    return Placement(buckets, units, shards, kept)
