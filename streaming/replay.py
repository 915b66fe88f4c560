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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from connectors import avro
from qmon import topics
from qmon.config import Config, duration_ms
from qmon.ids import event_id
from qmon.reasons import CODE

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

_ACTIVITY_REQUIRED = ("qmgr", "queue", "op", "ts")
_OPS = ("PUT", "GET", "START")


@dataclass
class Encoded:
    rows: list[tuple]
    dead: list[dict[str, Any]]


def dlq_event_id(topic: str, partition: int, offset: int) -> str:
    """The DeadLetter event_id, the same formula as the query's (sha256 of topic/partition/offset)."""
    import hashlib

    text = "\x1f".join(("dlq", topic, str(partition), str(offset)))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _dead(reason: str, error: str, line_no: int, raw: bytes, ts: int, topic: str, fmt: str) -> dict[str, Any]:
    return {
        "topic": topics.DLQ,
        "event_id": dlq_event_id(topic, 0, line_no),
        "reason": CODE[reason],
        "reason_name": reason,
        "dest_topic": topic,
        "format": fmt,
        "put_appl_name": "qmon",
        "put_time": ts,
        "partition": 0,
        "offset": line_no,
        "error": f"line {line_no}: {error}",
        "key": None,
        "value": base64.b64encode(raw).decode(),
    }


def encode_lines(lines: Iterable[str], source: str = "input") -> Encoded:
    """JSONL lines -> Kafka-shaped rows (or dead letters for faults of the file)."""
    rows: list[tuple] = []
    dead: list[dict[str, Any]] = []
    last_ts = 0
    for line_no, line in enumerate(lines, start=1):
        raw = line.rstrip("\n").encode()
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            dead.append(
                _dead(
                    "QMON_INVALID_JSON",
                    f"not valid JSON: {exc.msg} at column {exc.colno}",
                    line_no,
                    raw,
                    last_ts,
                    topics.ACTIVITY,
                    "QueueActivity",
                )
            )
            continue
        if not isinstance(obj, dict):
            dead.append(
                _dead(
                    "QMON_INVALID_JSON",
                    "a line must be a JSON object",
                    line_no,
                    raw,
                    last_ts,
                    topics.ACTIVITY,
                    "QueueActivity",
                )
            )
            continue
        ts = obj.get("ts")
        if isinstance(ts, int) and not isinstance(ts, bool):
            last_ts = ts
        if "command" in obj:
            topic, fmt = topics.CONTROL, "ControlCommand"
            missing = [k for k in ("ts", "qmgr", "command") if obj.get(k) is None]
            if missing:
                dead.append(
                    _dead(
                        "QMON_MISSING_FIELD", f"a command needs {', '.join(missing)}", line_no, raw, last_ts, topic, fmt
                    )
                )
                continue
            record = {
                "command_id": str(obj.get("command_id") or f"{source}:{line_no}"),
                "ts": obj["ts"],
                "qmgr": obj["qmgr"],
                "text": obj["command"],
                "user": obj.get("user"),
            }
            key = str(obj["qmgr"])
        elif "journal" in obj:
            topic, fmt = topics.JOURNAL, "JournalStatus"
            j = obj["journal"]
            missing = [k for k in ("ts", "qmgr") if obj.get(k) is None]
            if not isinstance(j, dict):
                missing.append("journal (an object)")
            else:
                missing += [
                    f"journal.{k}"
                    for k in ("library", "attached", "size_kb", "threshold_kb", "receivers")
                    if j.get(k) is None
                ]
            if missing:
                dead.append(
                    _dead(
                        "QMON_MISSING_FIELD",
                        f"journal status needs {', '.join(missing)}",
                        line_no,
                        raw,
                        last_ts,
                        topic,
                        fmt,
                    )
                )
                continue
            record = {
                "event_id": str(obj.get("event_id") or f"{source}:{line_no}"),
                "qmgr": obj["qmgr"],
                "ts": obj["ts"],
                **{k: j[k] for k in ("library", "attached", "size_kb", "threshold_kb", "receivers")},
            }
            key = f"{obj['qmgr']}/{j['library']}"
        elif "op" in obj or "queue" in obj:
            topic, fmt = topics.ACTIVITY, "QueueActivity"
            missing = [k for k in _ACTIVITY_REQUIRED if obj.get(k) is None]
            if missing:
                dead.append(
                    _dead(
                        "QMON_MISSING_FIELD",
                        f"required field(s) missing: {', '.join(missing)}",
                        line_no,
                        raw,
                        last_ts,
                        topic,
                        fmt,
                    )
                )
                continue
            if obj["op"] not in _OPS:
                dead.append(
                    _dead(
                        "QMON_UNKNOWN_OP",
                        f"op {obj['op']!r} is not PUT, GET or START",
                        line_no,
                        raw,
                        last_ts,
                        topic,
                        fmt,
                    )
                )
                continue
            record = {
                "event_id": str(obj.get("event_id") or f"{source}:{line_no}"),
                **{
                    k: obj.get(k)
                    for k in ("qmgr", "queue", "op", "ts", "depth_after", "msg_bytes", "structure", "reason")
                },
            }
            key = f"{obj['qmgr']}/{obj['queue']}"
        else:
            dead.append(
                _dead(
                    "QMON_UNKNOWN_RECORD",
                    "neither activity (op, queue), a command nor journal status",
                    line_no,
                    raw,
                    last_ts,
                    topics.ACTIVITY,
                    "QueueActivity",
                )
            )
            continue
        try:
            value = avro.encode(fmt, record)
        except (TypeError, ValueError, OverflowError) as exc:
            dead.append(
                _dead("QMON_INVALID_FIELD", f"a field has the wrong type: {exc}", line_no, raw, last_ts, topic, fmt)
            )
            continue
        rows.append((topic, 0, line_no, key.encode(), value, int(obj["ts"])))
    return Encoded(rows, dead)


def _jsonable(topic: str, record: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"topic": topic}
    for k, v in avro.to_jsonable({k: v for k, v in record.items()}).items():
        out[k] = v
    if topic == topics.DLQ:
        for k in ("key", "value"):
            raw = record.get(k)
            out[k] = base64.b64encode(raw).decode() if isinstance(raw, bytes) else raw
    return out


def run_rows(spark: Any, encoded: Encoded, config: Config, workdir: Path) -> list[dict[str, Any]]:
    """Run the query once over encoded rows; returns the output records in order."""
    from pyspark.sql import functions as F

    from streaming.pipeline import build
    from streaming.units import structure_buckets

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
    placed = structure_buckets(spark, str(workdir / "checkpoint"), [s.strname for s in config.structures])
    out = build(
        raw,
        settings=config.monitor_settings(),
        structure_settings=config.structure_settings(),
        buckets=config.job.queue_buckets,
        watermark_delay="0 seconds",
        ttl_ms=duration_ms(config.monitor.queue_ttl),
        structure_buckets=placed,
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
    from streaming.spark import session

    spark = spark or session(config.job.master, "qmon-replay", shuffle_partitions=config.job.shuffle_partitions)
    with open(input_path) as fh:
        records = replay(spark, fh, config, source=Path(input_path).name)
    text = "".join(json.dumps(r, sort_keys=False) + "\n" for r in records)
    if output:
        Path(output).write_text(text)
    else:
        import sys

        sys.stdout.write(text)
    return len(records)


__all__ = ["encode_lines", "replay", "replay_file", "run_rows", "event_id"]
