"""The structure monitors' buckets for a query, kept with its checkpoint (see ``qmon.core.placement``).

``structure_buckets(spark, checkpoint, names)`` returns ``{structure: bucket}``: assignments
already made for this checkpoint (file ``qmon-placement.json`` in the checkpoint directory, read
and written through Hadoop's FileSystem, so any checkpoint location Spark accepts works), plus new
ones for configured structures not yet placed.  The file also records the number of shuffle
partitions the checkpoint was created with, which Spark keeps for the checkpoint's whole life.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from qmon.core.placement import place

logger = logging.getLogger(__name__)

FILE = "qmon-placement.json"


def _partition_table(spark: Any, names: list[str], partitions: int, tries: int) -> dict[tuple[str, int], int]:
    """Spark's shuffle partition of key (S, name, bucket) for every name and bucket < tries."""
    from qmon.streaming.rows import Unit

    if not names:
        return {}
    # an inline table: Spark folds the projection into a local relation on the driver (no job)
    values = ", ".join(f"({_sql_string(n)}, {b})" for n in names for b in range(tries))
    df = spark.sql(
        f"SELECT n, b, pmod(hash('{Unit.STRUCTURE.value}', n, b), {int(partitions)}) AS p FROM VALUES {values} AS t(n, b)"
    )
    return {(r.n, r.b): r.p for r in df.collect()}


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fs(spark: Any, checkpoint: str) -> tuple[Any, Any]:
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(checkpoint.rstrip("/") + "/" + FILE)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


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


def structure_buckets(spark: Any, checkpoint: str, names: list[str]) -> dict[str, int]:
    """The bucket of each structure's key for the query on ``checkpoint`` (kept there)."""
    doc = _read(spark, checkpoint) or {}
    partitions = int(doc.get("partitions") or spark.conf.get("spark.sql.shuffle.partitions"))
    existing = {str(k): int(v) for k, v in (doc.get("structures") or {}).items()}
    tries = 16 * partitions + 64
    table = _partition_table(spark, sorted(set(names) | set(existing)), partitions, tries)
    buckets = place(existing, names, partitions, lambda n, b: table.get((n, b), -1), tries=tries)
    if buckets != existing or "partitions" not in doc:
        _write(spark, checkpoint, {"partitions": partitions, "structures": buckets})
        logger.info("structure monitors placed over %d shuffle partitions: %s", partitions, buckets)
    return buckets
