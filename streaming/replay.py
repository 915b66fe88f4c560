"""``qmon replay``: the streaming query once over a file of activity and command records.

The file's lines are encoded into rows shaped like Spark's Kafka source (the
same Avro bytes a producer would send), written to a staging directory, and
read back by a file stream under ``Trigger.AvailableNow`` through exactly the
query ``qmon run`` uses (``streaming.pipeline.build``).  Records with equal
``ts`` apply in file order; the watermark runs on ``ts`` here (there is no
broker clock), so stall timers fire in event time once the data is consumed.

A line that is not JSON, is neither activity, a command nor journal status,
or lacks a required field becomes a dead letter here: those are faults of the
file, which never reach Avro.  Everything else is validated by the query.
"""

from __future__ import annotations

import base64
import json
import logging
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from qmon.connectors import avro
from qmon.connectors.jsonl import Encoded, encode_lines
from qmon.core import topics
from qmon.core.config import Config, duration_ms

logger = logging.getLogger(__name__)

RAW_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("timestamp_ms", pa.int64()),
    ]
)
RAW_DDL = "topic string, partition int, offset long, key binary, value binary, timestamp_ms long"


def _jsonable(topic: str, record: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"topic": topic}
    for k, v in avro.to_jsonable({k: v for k, v in record.items()}).items():
        out[k] = v
    if topic == topics.DLQ:
        for k in ("key", "value"):
            raw = record.get(k)
            out[k] = base64.b64encode(raw).decode() if isinstance(raw, bytes) else raw
    return out


def run_rows(
    spark: Any, encoded: Encoded, config: Config, workdir: Path, *, snapshots: bool = False
) -> list[dict[str, Any]]:
    """Run the query once over encoded rows; returns the output records in order (the units' snapshots,
    which follow where micro-batches split, only with ``snapshots``)."""
    from pyspark.sql import functions as F

    from qmon.streaming.pipeline import build
    from qmon.streaming.spark import checkpoint_fs
    from qmon.streaming.units import placement

    data = workdir / "input"
    data.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist([dict(zip(RAW_SCHEMA.names, r, strict=True)) for r in encoded.rows], schema=RAW_SCHEMA)
    pq.write_table(table, data / "part-0.parquet")
    raw = (
        spark.readStream.schema(RAW_DDL)
        .parquet(str(data))
        .withColumn("timestamp", F.timestamp_millis("timestamp_ms"))
        .drop("timestamp_ms")
    )
    checkpoint_fs(spark, str(workdir / "checkpoint"), config.job.checkpoint_fs)
    placed = placement(
        spark,
        str(workdir / "checkpoint"),
        [s.strname for s in config.structures],
        config.job.queue_units,
        config.job.queue_shards,
    )
    out = build(
        raw,
        settings=config.monitor_settings(),
        structure_settings=config.structure_settings(),
        shards=placed.queue_shards,
        watermark_delay="0 seconds",
        ttl_ms=duration_ms(config.monitor.queue_ttl),
        structure_buckets=placed.structures,
        queue_units=placed.queue_units,
        dedup_window_ms=duration_ms(config.monitor.dedup_window),
        max_lateness_ms=duration_ms(config.job.max_lateness),
        mq_trace=config.mq_trace.settings() if any(r[0] == topics.MQ_TRACE for r in encoded.rows) else None,
    )
    collected: list[Any] = []

    def sink(batch: Any, batch_id: int) -> None:
        collected.extend((batch_id, *r) for r in batch.collect())

    query = (
        out.writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(workdir / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(f"the replay query failed: {query.exception()}")
    records = []
    for _batch, topic, _key, value, order_ts, order_seq, order_idx in collected:
        if topic in topics.STATUS and not snapshots:
            continue
        rec = avro.decode(topics.RECORD_OF[topic], bytes(value))
        records.append(((order_ts, order_seq, order_idx, topic, rec.get("event_id", "")), _jsonable(topic, rec)))
    for d in encoded.dead:
        records.append(((d["put_time"], d["offset"], 0, topics.DLQ, d["event_id"]), d))
    records.sort(key=lambda x: x[0])
    return [r for _, r in records]


def replay(
    spark: Any, lines: Iterable[str], config: Config | None = None, source: str = "input"
) -> list[dict[str, Any]]:
    config = config or Config()
    workdir = Path(tempfile.mkdtemp(prefix="qmon-replay-"))
    try:
        return run_rows(spark, encode_lines(lines, source), config, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def replay_file(input_path: str, config: Config, output: str | None, spark: Any = None) -> int:
    """The CLI entry: writes one JSON object per output record; returns how many."""
    from qmon.streaming.spark import session

    spark = spark or session(
        config.job.master,
        "qmon-replay",
        shuffle_partitions=config.job.shuffle_partitions,
        checkpoint_fs=config.job.checkpoint_fs,
        settings=config.spark_settings(),
    )
    with open(input_path) as fh:
        records = replay(spark, fh, config, source=Path(input_path).name)
    text = "".join(json.dumps(r, sort_keys=False) + "\n" for r in records)
    if output:
        Path(output).write_text(text)
    else:
        import sys

        sys.stdout.write(text)
    return len(records)


__all__ = ["replay", "replay_file", "run_rows"]
