"""The MQ activity trace input (``<prefix>.mq.trace``): PCF messages decoded in the query into the same
decoded rows as ``qmon.activity`` records (column ``ra``), and a dead letter for a message that is not all
readable.  The decoding is ``qmon.core.pcf``'s, in ``mapInArrow``: one flat row per call (the message's bytes
are not copied onto its calls; only a dead letter carries them), built column by column in Arrow; routing is
then exactly the activity's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from qmon.connectors.schema import schema_text
from qmon.streaming.rows import ACTIVITY

#: the QueueActivity fields a call can set, as ``qmon.core.pcf`` decodes them (all but depth_after and
#: structure, which it leaves null), in the schema's order; each typed as its routed column
CALL_FIELDS = tuple(name for name, _type in ACTIVITY if name not in ("depth_after", "structure"))
FLAT = StructType(
    [
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),  # only on a dead letter's row
        StructField("timestamp", TimestampType()),
        *[StructField(name, dict(ACTIVITY)[name]) for name in CALL_FIELDS],
        StructField("error", StringType()),  # a dead letter's row: why (null on a call's row)
    ]
)
FORMAT = "MQ activity trace (PCF)"
REASON = "QMON_BAD_PCF"


def error_text(d: Any) -> str | None:
    """What makes a decoded message a dead letter (None: nothing): each fault at its byte offset."""
    problems = ([d.fatal] if d.fatal else []) + d.problems
    if not problems:
        return None
    kept = f" ({len(d.activity)} calls before it were kept)" if d.fatal and d.activity else ""
    return "; ".join(f"at byte {p.offset}: {p.message}" for p in problems) + kept


def decode_batches(batches: Iterator[Any], encoding: str, timezone: str) -> Iterator[Any]:
    """Arrow batches of trace records (topic, partition, offset, key, value, timestamp) -> batches of
    ``FLAT`` rows: one per call, and one per message that is a dead letter."""
    import datetime as dt
    from zoneinfo import ZoneInfo

    import pyarrow as pa

    from qmon.core import pcf
    from qmon.streaming.worker import freeze_imports

    freeze_imports()
    tz = dt.UTC if timezone.upper() == "UTC" else ZoneInfo(timezone)
    types = {name: pa.int64() if FLAT[name].dataType == LongType() else pa.string() for name in CALL_FIELDS}
    for batch in batches:
        values = batch.column("value").to_pylist()
        partitions = batch.column("partition").to_pylist()
        offsets = batch.column("offset").to_pylist()
        rows: list[int] = []  # the input row of each call
        calls: dict[str, list[Any]] = {name: [] for name in CALL_FIELDS}
        dead: list[int] = []
        errors: list[str] = []
        for i, (value, partition, offset) in enumerate(zip(values, partitions, offsets, strict=True)):
            d = pcf.decode(value or b"", partition=partition, offset=offset, encoding=encoding, timezone=tz)
            for rec in d.activity:
                rows.append(i)
                for name, column in calls.items():
                    column.append(rec[name])
            error = error_text(d)
            if error is not None:
                dead.append(i)
                errors.append(error)
        for idx, is_dead in ((rows, False), (dead, True)):
            if not idx:
                continue
            n, take = len(idx), pa.array(idx, pa.int32())
            cols = {name: batch.column(name).take(take) for name in ("topic", "partition", "offset", "timestamp")}
            cols["key"] = batch.column("key").take(take) if is_dead else pa.nulls(n, pa.binary())
            cols["value"] = batch.column("value").take(take) if is_dead else pa.nulls(n, pa.binary())
            for name in CALL_FIELDS:
                cols[name] = pa.nulls(n, types[name]) if is_dead else pa.array(calls[name], types[name])
            cols["error"] = pa.array(errors, pa.string()) if is_dead else pa.nulls(n, pa.string())
            yield pa.RecordBatch.from_arrays([cols[f.name] for f in FLAT.fields], names=FLAT.fieldNames())


def decode_trace_topic(raw: DataFrame, *, encoding: str, timezone: str, null_columns: dict[str, Any]) -> DataFrame:
    """The trace topic's rows -> decoded rows (``ra`` filled) for each call, plus one dead-letter row per
    message that is not wholly readable (``dlq_reason`` QMON_BAD_PCF, the byte offsets in ``dlq_error``).

    ``null_columns``: the other decoded columns (rc, rj, p, cmd_invalid) as typed nulls."""
    activity = from_avro(F.lit(None).cast("binary"), schema_text("QueueActivity"))
    ra_type = raw.select(activity.alias("ra")).schema["ra"].dataType
    assert isinstance(ra_type, StructType)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        return decode_batches(batches, encoding, timezone)

    flat = raw.select("topic", "partition", "offset", "key", "value", "timestamp").mapInArrow(run, FLAT)
    others = [v.alias(k) for k, v in null_columns.items()]
    base = ["topic", "partition", "offset", "key", "value", "timestamp"]
    values = {name: F.col(name) for name in CALL_FIELDS}
    values["ts"] = F.timestamp_millis(F.col("ts"))
    # the decoded QueueActivity's struct, field by field (its non-null fields cannot be reached by a cast)
    ra = F.struct(*[values.get(f.name, F.lit(None)).cast(f.dataType).alias(f.name) for f in ra_type.fields])
    is_dead = F.col("error").isNotNull()
    return flat.select(
        *base,
        F.when(~is_dead, ra).alias("ra"),
        *others,
        F.when(is_dead, F.lit(REASON)).alias("dlq_reason"),
        F.col("error").alias("dlq_error"),
        F.when(is_dead, F.lit(FORMAT)).otherwise(F.lit("QueueActivity")).alias("format"),
    )
