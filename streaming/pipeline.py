"""The query, from raw input records to encoded output records.

``build(raw, ...)`` takes a streaming DataFrame shaped like Spark's Kafka
source (topic, partition, offset, key, value, timestamp) and returns one
DataFrame of (topic, key, value, order_ts, order_seq, order_idx) ready for
the Kafka sink.  ``qmon run`` feeds it from Kafka; ``qmon replay`` from a
file it encodes into the same rows.  Both therefore run the same operators.

Steps:

1. Decode.  The Confluent 5-byte header is stripped when present, then
   ``from_avro`` (PERMISSIVE: a bad record yields null, never a failed batch).
2. Validate in SQL; every record that fails becomes a DeadLetter (SPEC §7)
   carrying its original key and value bytes.  Commands are parsed (MQSC);
   an invalid one gets an error reply *and* a dead letter.
3. Route.  Activity goes to shard ``(qmgr, pmod(xxhash64(queue), buckets))``;
   a command that names one queue goes to that queue's shard, one that
   concerns the whole queue manager (ALTER QMGR, generic names) to every
   shard of the queue manager, and only shard 0 replies.
4. The per-queue operator (``streaming.operators.QueueProcessor``) applies
   ``qmon.queues`` in (ts, arrival) order and encodes its outputs.
5. In parallel, the per-structure operator (``StructureProcessor``, key: structure)
   applies ``qmon.structures`` to the activity that names a structure.
"""

from __future__ import annotations

import logging
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro, to_avro

from connectors.avro import schema_text
from qmon import topics
from qmon.reasons import CODE

logger = logging.getLogger(__name__)

#: The columns the per-queue operator receives.
ROUTED_COLUMNS = ["qmgr", "bucket", "kind", "event_id", "queue", "op", "ts", "depth_after", "msg_bytes",
                  "structure", "reason", "text", "reply", "rank", "src_partition", "src_offset", "clock"]

OUTPUT_SCHEMA = "topic string, key string, value binary, order_ts long, order_seq long, order_idx int"

_MAX_NAME = 48
# Timestamps qmon accepts: 1970-01-01 .. 9999-12-31 (anything else cannot be a time of day).
_TS_MIN = 0
_TS_MAX = 253_402_300_799_999


def _body(value: Column) -> Column:
    """The Avro body: the value without its Confluent header (magic byte 0 + 4-byte schema id)."""
    return F.when((F.length(value) > 5) & (F.substring(value, 1, 1) == F.lit(b"\x00")),
                  F.expr("substring(value, 6)")).otherwise(value)


def _reason(cases: list[tuple[Column, str, Column]]) -> tuple[Column, Column]:
    """(reason name, error text) of the first failing check, or nulls."""
    name = F.lit(None).cast("string")
    error = F.lit(None).cast("string")
    for cond, reason, text in reversed(cases):
        name = F.when(cond, F.lit(reason)).otherwise(name)
        error = F.when(cond, text).otherwise(error)
    return name, error


def _name_checks(col: str, label: str) -> list[tuple[Column, str, Column]]:
    c = F.col(f"r.{col}")
    return [
        (c.isNull() | (F.length(c) == 0), "QMON_MISSING_FIELD", F.lit(f"{label} is empty")),
        (F.length(c) > _MAX_NAME, "QMON_INVALID_FIELD",
         F.concat(F.lit(f"{label} is "), F.length(c).cast("string"), F.lit(f" characters long; at most {_MAX_NAME}"))),
    ]


def _ts_check(col: str = "r.ts") -> tuple[Column, str, Column]:
    ms = F.unix_millis(F.col(col))
    return ((ms < _TS_MIN) | (ms > _TS_MAX), "QMON_INVALID_FIELD",
            F.concat(F.lit("ts "), ms.cast("string"), F.lit(" ms is outside 1970-01-01..9999-12-31")))


def _decode(df: DataFrame, record: str) -> DataFrame:
    """Column ``r``: the decoded record, or null when the value is not one.

    ``from_avro`` ignores bytes left over after a record, so random bytes can decode into
    garbage; re-encoding the record must give back exactly as many bytes as the body held.
    """
    schema = schema_text(record)
    df = df.withColumn("_body", _body(F.col("value")))
    df = df.withColumn("r", from_avro(F.col("_body"), schema, {"mode": "PERMISSIVE"}))
    # PERMISSIVE yields a struct of nulls (not a null struct) for bytes that do not decode:
    # a real record never has a null in a field its schema declares non-null.
    decoded = F.col("r").isNotNull()
    for field in _required_fields(record):
        decoded = decoded & F.col(f"r.{field}").isNotNull()
    whole = F.length(to_avro(F.col("r"), schema)) == F.length(F.col("_body"))
    return df.withColumn("r", F.when(decoded, F.when(whole, F.col("r")))).drop("_body")


def _required_fields(record: str) -> list[str]:
    import json

    def nullable(t: Any) -> bool:
        return t == "null" or (isinstance(t, list) and "null" in t)

    return [f["name"] for f in json.loads(schema_text(record))["fields"] if not nullable(f["type"])]


def decode_activity(raw: DataFrame, names: dict[str, str]) -> DataFrame:
    df = _decode(raw.where(F.col("topic") == names[topics.ACTIVITY]), "QueueActivity")
    checks = [
        (F.col("r").isNull(), "QMON_UNDECODABLE",
         F.lit("the value is not a QueueActivity Avro record (plain or Confluent wire format)")),
        (F.col("r.event_id").isNull() | (F.length("r.event_id") == 0), "QMON_MISSING_FIELD", F.lit("event_id is empty")),
        *_name_checks("qmgr", "qmgr"),
        *_name_checks("queue", "queue"),
        _ts_check(),
        (F.col("r.depth_after") < 0, "QMON_INVALID_FIELD",
         F.concat(F.lit("depth_after is negative ("), F.col("r.depth_after").cast("string"), F.lit(")"))),
        (F.col("r.msg_bytes") < 0, "QMON_INVALID_FIELD",
         F.concat(F.lit("msg_bytes is negative ("), F.col("r.msg_bytes").cast("string"), F.lit(")"))),
        (F.length("r.structure") > 16, "QMON_INVALID_FIELD",
         F.lit("structure is longer than 16 characters (a CF structure name is 1-16)")),
    ]
    name, error = _reason(checks)
    return df.withColumn("dlq_reason", name).withColumn("dlq_error", error)


def decode_control(raw: DataFrame, names: dict[str, str]) -> DataFrame:
    from streaming.udfs import parse_mqsc

    df = _decode(raw.where(F.col("topic") == names[topics.CONTROL]), "ControlCommand")
    checks = [
        (F.col("r").isNull(), "QMON_UNDECODABLE",
         F.lit("the value is not a ControlCommand Avro record (plain or Confluent wire format)")),
        (F.col("r.command_id").isNull() | (F.length("r.command_id") == 0), "QMON_MISSING_FIELD",
         F.lit("command_id is empty")),
        *_name_checks("qmgr", "qmgr"),
        _ts_check(),
    ]
    name, error = _reason(checks)
    df = df.withColumn("dlq_reason", name).withColumn("dlq_error", error)
    # Parse only records that passed the checks (a Python UDF; commands are few).
    parsed = F.when(F.col("dlq_reason").isNull(), parse_mqsc(F.col("r.text")))
    df = df.withColumn("p", parsed)
    df = df.withColumn("cmd_invalid", F.col("dlq_reason").isNull() & ~F.col("p.ok"))
    df = df.withColumn("dlq_reason", F.when(F.col("cmd_invalid"), F.lit("QMON_INVALID_COMMAND")).otherwise(F.col("dlq_reason")))
    df = df.withColumn("dlq_error", F.when(F.col("cmd_invalid"), F.col("p.error")).otherwise(F.col("dlq_error")))
    return df


def decode_journal(raw: DataFrame, names: dict[str, str]) -> DataFrame:
    from qmon.journals import RECEIVER_PATTERN

    df = _decode(raw.where(F.col("topic") == names[topics.JOURNAL]), "JournalStatus")
    checks = [
        (F.col("r").isNull(), "QMON_UNDECODABLE",
         F.lit("the value is not a JournalStatus Avro record (plain or Confluent wire format)")),
        (F.length("r.event_id") == 0, "QMON_MISSING_FIELD", F.lit("event_id is empty")),
        *_name_checks("qmgr", "qmgr"),
        (F.length("r.library") == 0, "QMON_MISSING_FIELD", F.lit("library is empty")),
        (F.length("r.library") > 10, "QMON_INVALID_FIELD", F.lit("library is longer than 10 characters (an IBM i name)")),
        _ts_check(),
        (~F.col("r.attached").rlike(RECEIVER_PATTERN), "QMON_INVALID_FIELD",
         F.concat(F.lit("attached receiver "), F.col("r.attached"),
                  F.lit(" is not a journal receiver name AMQArnnnnn (AMQ, a letter, a restore digit, 5 digits)"))),
        (F.col("r.size_kb") < 0, "QMON_INVALID_FIELD", F.lit("size_kb is negative")),
        (F.col("r.threshold_kb") <= 0, "QMON_INVALID_FIELD", F.lit("threshold_kb must be positive")),
    ]
    name, error = _reason(checks)
    return df.withColumn("dlq_reason", name).withColumn("dlq_error", error)


def dead_letters(df: DataFrame, record: str, names: dict[str, str]) -> DataFrame:
    """DeadLetter records for the rows of ``df`` that carry a ``dlq_reason``."""
    reason_code = F.create_map(*[x for name, code in CODE.items() for x in (F.lit(name), F.lit(code))])
    bad = df.where(F.col("dlq_reason").isNotNull())
    eid = F.sha2(F.concat_ws("\x1f", F.lit("dlq"), F.col("topic"), F.col("partition").cast("string"),
                             F.col("offset").cast("string")), 256).substr(1, 32)
    dl = F.struct(
        eid.alias("event_id"),
        reason_code[F.col("dlq_reason")].alias("reason"),
        F.col("dlq_reason").alias("reason_name"),
        F.col("topic").alias("dest_topic"),
        F.lit(record).alias("format"),
        F.lit("qmon").alias("put_appl_name"),
        F.col("timestamp").alias("put_time"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        F.col("dlq_error").alias("error"),
        F.col("key").alias("key"),
        F.col("value").alias("value"),
    )
    return bad.select(
        F.lit(names[topics.DLQ]).alias("topic"),
        F.concat_ws("/", F.col("topic"), F.col("partition").cast("string"), F.col("offset").cast("string")).alias("key"),
        to_avro(dl, schema_text("DeadLetter")).alias("value"),
        F.unix_millis("timestamp").alias("order_ts"),
        F.col("offset").alias("order_seq"),
        F.lit(0).alias("order_idx"),
    )


def invalid_command_replies(ctl: DataFrame, names: dict[str, str]) -> DataFrame:
    bad = ctl.where(F.col("cmd_invalid"))
    reply = F.struct(
        F.sha2(F.concat_ws("\x1f", F.lit("reply"), F.col("r.command_id")), 256).substr(1, 32).alias("event_id"),
        F.col("r.command_id").alias("command_id"),
        F.col("r.qmgr").alias("qmgr"),
        F.col("r.ts").alias("ts"),
        F.lit(False).alias("ok"),
        F.col("p.error").alias("message"),
    )
    return bad.select(
        F.lit(names[topics.REPLIES]).alias("topic"),
        F.col("r.command_id").alias("key"),
        to_avro(reply, schema_text("CommandReply")).alias("value"),
        F.unix_millis("r.ts").alias("order_ts"),
        F.col("offset").alias("order_seq"),
        F.lit(1).alias("order_idx"),
    )


def route(act: DataFrame, ctl: DataFrame, buckets: int, jrn: DataFrame | None = None) -> DataFrame:
    good_act = act.where(F.col("dlq_reason").isNull()).select(
        F.col("r.qmgr").alias("qmgr"),
        F.pmod(F.xxhash64(F.col("r.queue")), F.lit(buckets)).cast("int").alias("bucket"),
        F.lit("A").alias("kind"),
        F.col("r.event_id").alias("event_id"),
        F.col("r.queue").alias("queue"),
        F.col("r.op").alias("op"),
        F.unix_millis("r.ts").alias("ts"),
        F.col("r.depth_after").alias("depth_after"),
        F.col("r.msg_bytes").cast("long").alias("msg_bytes"),
        F.col("r.structure").alias("structure"),
        F.col("r.reason").cast("long").alias("reason"),
        F.lit(None).cast("string").alias("text"),
        F.lit(False).alias("reply"),
        F.lit(1).alias("rank"),
        F.col("partition").cast("long").alias("src_partition"),
        F.col("offset").alias("src_offset"),
        F.col("timestamp").alias("clock"),
    )
    good_ctl = ctl.where(F.col("dlq_reason").isNull())
    all_buckets = F.sequence(F.lit(0), F.lit(buckets - 1))
    one_bucket = F.array(F.pmod(F.xxhash64(F.col("p.name")), F.lit(buckets)).cast("int"))
    good_ctl = good_ctl.withColumn(
        "bucket", F.explode(F.when(F.col("p.scope") == "qmgr", all_buckets).otherwise(one_bucket)))
    good_ctl = good_ctl.select(
        F.col("r.qmgr").alias("qmgr"),
        F.col("bucket").cast("int").alias("bucket"),
        F.lit("C").alias("kind"),
        F.col("r.command_id").alias("event_id"),
        F.col("p.name").alias("queue"),
        F.lit(None).cast("string").alias("op"),
        F.unix_millis("r.ts").alias("ts"),
        F.lit(None).cast("long").alias("depth_after"),
        F.lit(None).cast("long").alias("msg_bytes"),
        F.lit(None).cast("string").alias("structure"),
        F.lit(None).cast("long").alias("reason"),
        F.col("r.text").alias("text"),
        ((F.col("p.scope") != "qmgr") | (F.col("bucket") == 0)).alias("reply"),
        F.lit(0).alias("rank"),
        F.col("partition").cast("long").alias("src_partition"),
        F.col("offset").alias("src_offset"),
        F.col("timestamp").alias("clock"),
    )
    routed = good_act.unionByName(good_ctl)
    if jrn is not None:
        payload = F.to_json(F.struct(F.col("r.library").alias("library"), F.col("r.attached").alias("attached"),
                                     F.col("r.size_kb").alias("size_kb"),
                                     F.col("r.threshold_kb").alias("threshold_kb"),
                                     F.col("r.receivers").alias("receivers")))
        good_jrn = jrn.where(F.col("dlq_reason").isNull()).select(
            F.col("r.qmgr").alias("qmgr"),
            F.pmod(F.xxhash64(F.col("r.library")), F.lit(buckets)).cast("int").alias("bucket"),
            F.lit("J").alias("kind"),
            F.col("r.event_id").alias("event_id"),
            F.col("r.library").alias("queue"),
            F.lit(None).cast("string").alias("op"),
            F.unix_millis("r.ts").alias("ts"),
            F.lit(None).cast("long").alias("depth_after"),
            F.lit(None).cast("long").alias("msg_bytes"),
            F.lit(None).cast("string").alias("structure"),
            F.lit(None).cast("long").alias("reason"),
            payload.alias("text"),
            F.lit(False).alias("reply"),
            F.lit(1).alias("rank"),
            F.col("partition").cast("long").alias("src_partition"),
            F.col("offset").alias("src_offset"),
            F.col("timestamp").alias("clock"),
        )
        routed = routed.unionByName(good_jrn)
    return routed


def structure_rows(act: DataFrame) -> DataFrame:
    """The valid activity that names a structure, for the per-structure operator."""
    return act.where(F.col("dlq_reason").isNull() & F.col("r.structure").isNotNull()).select(
        F.col("r.structure").alias("structure"),
        F.col("r.event_id").alias("event_id"),
        F.col("r.qmgr").alias("qmgr"),
        F.col("r.queue").alias("queue"),
        F.col("r.op").alias("op"),
        F.unix_millis("r.ts").alias("ts"),
        F.col("r.msg_bytes").cast("long").alias("msg_bytes"),
        F.col("r.reason").cast("long").alias("reason"),
        F.col("partition").cast("long").alias("src_partition"),
        F.col("offset").alias("src_offset"),
        F.col("timestamp").alias("clock"),
    )


def build(raw: DataFrame, *, settings: Any, buckets: int, watermark_delay: str, ttl_ms: int,
          prefix: str = "qmon", structure_settings: Any = None) -> DataFrame:
    """The whole query over Kafka-shaped rows; returns the rows for the Kafka sink.

    ``raw.topic`` holds physical topic names (under ``prefix``); so do the output rows.
    """
    from qmon.structures import StructureSettings
    from streaming.operators import QueueProcessor, StructureProcessor

    names = topics.physical_map(prefix)
    raw = raw.withWatermark("timestamp", watermark_delay)
    act = decode_activity(raw, names)
    ctl = decode_control(raw, names)
    jrn = decode_journal(raw, names)
    routed = route(act, ctl, buckets, jrn)
    events = routed.groupBy("qmgr", "bucket").transformWithStateInPandas(
        statefulProcessor=QueueProcessor(settings, ttl_ms),
        outputStructType=OUTPUT_SCHEMA,
        outputMode="Append",
        timeMode="EventTime",
    )
    structures = structure_rows(act).groupBy("structure").transformWithStateInPandas(
        statefulProcessor=StructureProcessor(structure_settings or StructureSettings()),
        outputStructType=OUTPUT_SCHEMA,
        outputMode="Append",
        timeMode="EventTime",
    )
    events = events.unionByName(structures)
    if prefix != "qmon":  # the operators speak logical names
        mapping = F.create_map(*[F.lit(x) for kv in names.items() for x in kv])
        events = events.withColumn("topic", mapping[F.col("topic")])
    return (
        events
        .unionByName(dead_letters(act, "QueueActivity", names))
        .unionByName(dead_letters(ctl, "ControlCommand", names))
        .unionByName(dead_letters(jrn, "JournalStatus", names))
        .unionByName(invalid_command_replies(ctl, names))
    )
