"""The query, from raw input records to encoded output records.

``build(raw, ...)`` takes streaming DataFrames shaped like Spark's Kafka
source (topic, partition, offset, key, value, timestamp), one per input
topic or one for them all, and returns one
DataFrame of (topic, key, value, order_ts, order_seq, order_idx) ready for
the Kafka sink.  ``qmon run`` feeds it from Kafka; ``qmon replay`` from a
file it encodes into the same rows.  Both therefore run the same operators.

Steps:

1. Decode each input topic with its own record (one Kafka source per topic): the Confluent
   5-byte header is stripped when present, then ``from_avro`` (PERMISSIVE: a bad record yields
   null, never a failed batch).  The union of the three carries one watermark.
2. Validate in SQL; every record that fails becomes a DeadLetter carrying its
   original key and value bytes.  Commands are parsed (MQSC); an invalid one gets an error
   reply *and* a dead letter.
3. Route to the operator's units, key ``(unit, unit_name, bucket)``.  Activity goes to its queue
   manager's shard ``pmod(xxhash64(queue), buckets)`` (column ``shard``), in the group of shards that holds
   it, key ``(Q, "", placed bucket)`` (``route``; a queue-sharing group member's to its group's shard, split and
   placed under the group's name: ``qmon.core.queues.queue_sharing_group``), and, when it names a structure, also to
   ``(S, structure, b)``, b chosen so that structures do not share a partition (``qmon.core.placement``); a command that names one queue to that queue's shard, one that
   concerns the whole queue manager (ALTER QMGR, generic names, interest) to every shard of it, and only
   shard 0 replies (``RESET QSTATS`` with a generic name: every shard replies with its part); journal status to the shard of its library.  Dead letters and error replies ride along (kind P) and are passed
   through by the operator, so the input is read once for them all.
4. The duplicate check ahead of the monitor (``streaming.dedup``, ``qmon.core.dedup``) over one row a
   record; the structures' rows are made after it (``copies``), and so are every unit's marks.
5. One stateful operator (``streaming.operators.Monitor``, ``applyInPandasWithState``): each queue shard applies
   ``qmon.core.queues`` (and ``qmon.core.interest``, ``qmon.core.journals``), a structure ``qmon.core.structures``,
   each in (ts, arrival) order, and encodes its outputs.  One operator, not one per unit kind:
   the input is read and shuffled once, and the fixed per-batch cost of a Python stateful
   operator is paid once.
"""

from __future__ import annotations

import logging
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro, to_avro
from pyspark.sql.types import BinaryType, BooleanType, IntegerType, LongType, StringType

from qmon.connectors import avro
from qmon.connectors.schema import required_fields, schema_text
from qmon.core import topics
from qmon.core.mqsc import PART_MARK
from qmon.core.reasons import CODE
from qmon.core.sharing import Sharing
from qmon.streaming.dedup import dedup_step
from qmon.streaming.event_order import source
from qmon.streaming.rows import ACTIVITY, LATE, OUTPUT, ROUTED, ROUTED_COLUMNS, Kind, Unit
from qmon.streaming.writer_schemas import MISMATCH, NEW_ID, UNKNOWN, TopicPlan

logger = logging.getLogger(__name__)

_MAX_NAME = 48

#: The column the watermark is defined on: the arrival clock (the broker's timestamp) a century ahead, with
#: the watermark's delay a century longer.  The watermark's value is the arrival clock's, minus the delay;
#: but Spark's event-time timeout drops every input row whose watermarked column is behind the watermark,
#: and across Kafka partitions the arrival clock is not monotone (a batch can read one partition further
#: than another).  A century ahead, no row is ever behind it: qmon orders records itself, by event time.
HORIZON = "horizon"
#: the name of the query's observed metrics of event-time order (``late_records``: records applied late)
ORDER_METRICS = "qmon_order"
_CENTURY_DAYS = 36_500
# Timestamps qmon accepts: 1970-01-01 .. 9999-12-31 (anything else cannot be a time of day).
_TS_MIN = 0
_TS_MAX = 253_402_300_799_999


def _body(value: Column) -> Column:
    """The Avro body: the value without its Confluent header (magic byte 0 + 4-byte schema id)."""
    return F.when(
        (F.length(value) > 5) & (F.substring(value, 1, 1) == F.lit(b"\x00")), F.expr("substring(value, 6)")
    ).otherwise(value)


def _reason(cases: list[tuple[Column, str, Column]]) -> tuple[Column, Column]:
    """(reason name, error text) of the first failing check, or nulls."""
    name = F.lit(None).cast("string")
    error = F.lit(None).cast("string")
    for cond, reason, text in reversed(cases):
        name = F.when(cond, F.lit(reason)).otherwise(name)
        error = F.when(cond, text).otherwise(error)
    return name, error


def _name_checks(col: str, label: str, rec: str = "r") -> list[tuple[Column, str, Column]]:
    c = F.col(f"{rec}.{col}")
    return [
        (c.isNull() | (F.length(c) == 0), "QMON_MISSING_FIELD", F.lit(f"{label} is empty")),
        (
            F.length(c) > _MAX_NAME,
            "QMON_INVALID_FIELD",
            F.concat(
                F.lit(f"{label} is "), F.length(c).cast("string"), F.lit(f" characters long; at most {_MAX_NAME}")
            ),
        ),
    ]


def _ts_check(col: str = "r.ts") -> tuple[Column, str, Column]:
    ms = F.unix_millis(F.col(col))
    return (
        (ms < _TS_MIN) | (ms > _TS_MAX),
        "QMON_INVALID_FIELD",
        F.concat(F.lit("ts "), ms.cast("string"), F.lit(" ms is outside 1970-01-01..9999-12-31")),
    )


def _decoded(df: DataFrame, col: str, record: str, topic: str, plan: TopicPlan | None = None) -> DataFrame:
    """Column ``col``: the value decoded as ``record`` when it was read from ``topic``, else null.

    PERMISSIVE yields a struct of nulls (not a null struct) for bytes that do not decode, and
    ``from_avro`` ignores bytes left over after a record (random bytes can decode into garbage):
    a real record has no null in a non-null field and re-encodes to exactly its own length.

    With a ``plan`` (a schema registry's), a framed record is read by its schema id: with qmon's schema when
    the id's is qmon's own, with the writer's resolved into qmon's when it resolves (its length checked with
    the writer's), as null when it is a dead letter (``_schema_checks``); an id in no plan raises
    ``writer_schemas.NEW_ID`` and the query fails (``streaming.job`` plans it and starts again)."""
    schema = schema_text(record)
    mine = F.col("topic") == topic
    body = F.col("_body")
    if plan is None:
        df = df.withColumn(col, from_avro(F.when(mine, body), schema, {"mode": "PERMISSIVE"}))
        whole = F.length(to_avro(F.col(col), schema)) == F.length(body)
    else:
        sid = _schema_id(F.col("value"))
        own = (sid.isNull() | sid.isin(*sorted(plan.own))) if plan.own else sid.isNull()
        value = F.when(own, from_avro(body, schema, {"mode": "PERMISSIVE"}))
        whole = F.when(own, F.length(to_avro(F.col(col), schema)) == F.length(body))
        for schema_id, writer in sorted(plan.writers.items()):
            resolved = from_avro(body, writer.text, {"mode": "PERMISSIVE", "avroSchema": schema})
            value = value.when(sid == schema_id, resolved)
            if writer.checked:  # the length of the record as the writer wrote it
                written = to_avro(from_avro(body, writer.text, {"mode": "PERMISSIVE"}), writer.text)
                whole = whole.when(sid == schema_id, F.length(written) == F.length(body))
            else:
                whole = whole.when(sid == schema_id, F.lit(True))
        if plan.dead:
            value = value.when(sid.isin(*sorted(plan.dead)), F.lit(None))
        new = F.concat(
            F.lit(NEW_ID), sid.cast("string"), F.lit(f" in a record of {topic}, which the query did not plan")
        )
        df = df.withColumn(col, F.when(mine, value.otherwise(F.raise_error(new))))
    decoded = mine & F.col(col).isNotNull()
    for field in required_fields(record):
        decoded = decoded & F.col(f"{col}.{field}").isNotNull()
    return df.withColumn(col, F.when(decoded, F.when(whole, F.col(col))))


def _schema_id(value: Column) -> Column:
    """The schema id in the Confluent header of ``value`` (as ``_body`` finds one), else null."""
    framed = (F.length(value) > 5) & (F.substring(value, 1, 1) == F.lit(b"\x00"))
    return F.when(framed, F.conv(F.hex(F.substring(value, 2, 4)), 16, 10).cast("long"))


def _schema_checks(plan: TopicPlan | None) -> list[tuple[Column, str, Column]]:
    """A framed record whose id the plan makes a dead letter: its reason and error, ahead of every other check."""
    if plan is None or not plan.dead:
        return []
    sid = _schema_id(F.col("value"))
    ids = sorted(plan.dead)
    reason = F.create_map(*[x for i in ids for x in (F.lit(i).cast("long"), F.lit(plan.dead[i].reason))])[sid]
    error = F.create_map(*[x for i in ids for x in (F.lit(i).cast("long"), F.lit(plan.dead[i].error))])[sid]
    return [(reason == F.lit(name), name, error) for name in (UNKNOWN, MISMATCH)]


def _activity_checks(r: str = "ra") -> list[tuple[Column, str, Column]]:
    return [
        (
            F.col(r).isNull(),
            "QMON_UNDECODABLE",
            F.lit("the value is not a QueueActivity Avro record (plain or Confluent wire format)"),
        ),
        (F.length(f"{r}.event_id") == 0, "QMON_MISSING_FIELD", F.lit("event_id is empty")),
        *_name_checks("qmgr", "qmgr", r),
        *_name_checks("queue", "queue", r),
        _ts_check(f"{r}.ts"),
        (
            F.col(f"{r}.depth_after") < 0,
            "QMON_INVALID_FIELD",
            F.concat(F.lit("depth_after is negative ("), F.col(f"{r}.depth_after").cast("string"), F.lit(")")),
        ),
        (
            F.col(f"{r}.msg_bytes") < 0,
            "QMON_INVALID_FIELD",
            F.concat(F.lit("msg_bytes is negative ("), F.col(f"{r}.msg_bytes").cast("string"), F.lit(")")),
        ),
        (
            F.length(f"{r}.structure") > 16,
            "QMON_INVALID_FIELD",
            F.lit("structure is longer than 16 characters (a CF structure name is 1-16)"),
        ),
    ]


def _control_checks(r: str = "rc") -> list[tuple[Column, str, Column]]:
    return [
        (
            F.col(r).isNull(),
            "QMON_UNDECODABLE",
            F.lit("the value is not a ControlCommand Avro record (plain or Confluent wire format)"),
        ),
        (F.length(f"{r}.command_id") == 0, "QMON_MISSING_FIELD", F.lit("command_id is empty")),
        *_name_checks("qmgr", "qmgr", r),
        _ts_check(f"{r}.ts"),
    ]


def _journal_checks(r: str = "rj") -> list[tuple[Column, str, Column]]:
    from qmon.core.journals import RECEIVER_PATTERN

    return [
        (
            F.col(r).isNull(),
            "QMON_UNDECODABLE",
            F.lit("the value is not a JournalStatus Avro record (plain or Confluent wire format)"),
        ),
        (F.length(f"{r}.event_id") == 0, "QMON_MISSING_FIELD", F.lit("event_id is empty")),
        *_name_checks("qmgr", "qmgr", r),
        (F.length(f"{r}.library") == 0, "QMON_MISSING_FIELD", F.lit("library is empty")),
        (
            F.length(f"{r}.library") > 10,
            "QMON_INVALID_FIELD",
            F.lit("library is longer than 10 characters (an IBM i name)"),
        ),
        _ts_check(f"{r}.ts"),
        (
            ~F.col(f"{r}.attached").rlike(RECEIVER_PATTERN),
            "QMON_INVALID_FIELD",
            F.concat(
                F.lit("attached receiver "),
                F.col(f"{r}.attached"),
                F.lit(" is not a journal receiver name AMQArnnnnn (AMQ, a letter, a restore digit, 5 digits)"),
            ),
        ),
        (F.col(f"{r}.size_kb") < 0, "QMON_INVALID_FIELD", F.lit("size_kb is negative")),
        (F.col(f"{r}.threshold_kb") <= 0, "QMON_INVALID_FIELD", F.lit("threshold_kb must be positive")),
    ]


_PARSED_NULL = "struct<ok:boolean,error:string,scope:string,name:string>"

#: input topic -> (decoded column, Avro record, checks) of the records read from it
_INPUTS = {
    topics.ACTIVITY: ("ra", "QueueActivity", _activity_checks),
    topics.CONTROL: ("rc", "ControlCommand", _control_checks),
    topics.JOURNAL: ("rj", "JournalStatus", _journal_checks),
}


def decode_topic(raw: DataFrame, logical: str, names: dict[str, str], plan: TopicPlan | None = None) -> DataFrame:
    """The records of one input topic decoded: columns ra / rc / rj (only the one of ``logical``
    filled, the others typed nulls, so every input topic yields the same columns), ``dlq_reason`` /
    ``dlq_error`` (null when valid), ``format``, ``p`` (a command's parse) and ``cmd_invalid``.
    ``plan``: how framed records are read by their schema id (``streaming.writer_schemas``); without one, the
    header is skipped and the body read with qmon's schema.

    One decoder per topic, so the MQSC parser (a Python UDF, which Spark feeds every row of its
    input) sees commands only, never the activity stream."""
    from qmon.streaming.udfs import parse_mqsc

    df = raw.withColumn("_body", _body(F.col("value")))
    for other, (col, record, _checks) in _INPUTS.items():
        if other == logical:
            df = _decoded(df, col, record, names[logical], plan)
        else:
            df = df.withColumn(col, from_avro(F.lit(None).cast("binary"), schema_text(record)))
    col, record, checks = _INPUTS[logical]
    name, error = _reason([*_schema_checks(plan), *checks()])
    df = df.drop("_body").withColumn("dlq_reason", name).withColumn("dlq_error", error)
    df = df.withColumn("format", F.lit(record))
    if logical != topics.CONTROL:
        return df.withColumn("p", F.lit(None).cast(_PARSED_NULL)).withColumn("cmd_invalid", F.lit(False))
    # parse only commands that passed the checks
    is_cmd = F.col("dlq_reason").isNull()
    df = df.withColumn("p", F.when(is_cmd, parse_mqsc(F.col("rc.text"))))
    df = df.withColumn("cmd_invalid", is_cmd & ~F.col("p.ok"))
    df = df.withColumn(
        "dlq_reason", F.when(F.col("cmd_invalid"), F.lit("QMON_INVALID_COMMAND")).otherwise(F.col("dlq_reason"))
    )
    return df.withColumn("dlq_error", F.when(F.col("cmd_invalid"), F.col("p.error")).otherwise(F.col("dlq_error")))


def decode(
    raw: DataFrame | dict[str, DataFrame],
    names: dict[str, str],
    mq_trace: tuple[str, str] | None = None,
    plans: dict[str, TopicPlan] | None = None,
) -> DataFrame:
    """Every input record decoded, one decoder per input topic, in one union.

    ``raw`` is one Kafka-shaped DataFrame per logical input topic (``qmon run``: one Kafka source
    each), or one DataFrame holding them all (``qmon replay``), split here by topic.  With ``mq_trace``
    ((encoding, time zone)), the MQ activity trace topic too (``streaming.trace``): its calls become
    decoded activity, routed like ``qmon.activity``'s.  ``plans``: each input topic's writer schemas (by
    logical name), with a schema registry."""
    wanted = [*_INPUTS, topics.MQ_TRACE] if mq_trace else list(_INPUTS)
    if not isinstance(raw, dict):
        raw = {t: raw.where(F.col("topic") == names[t]) for t in wanted}
    parts = [decode_topic(raw[t], t, names, (plans or {}).get(t)) for t in _INPUTS if t in raw]
    dec = parts[0]
    for part in parts[1:]:
        dec = dec.unionByName(part)
    if mq_trace and topics.MQ_TRACE in raw:
        from qmon.streaming.trace import decode_trace_topic

        nulls = {c: F.lit(None).cast(dec.schema[c].dataType) for c in ("rc", "rj", "p")}
        nulls["cmd_invalid"] = F.lit(False)
        trace = decode_trace_topic(raw[topics.MQ_TRACE], encoding=mq_trace[0], timezone=mq_trace[1], null_columns=nulls)
        dec = dec.unionByName(trace.select(*dec.columns))
    return dec


class _Router:
    """Builds routed rows as structs with every field of ``rows.ROUTED``, in order and typed.  The fields a row
    does not set (nulls) and those every row shares are built once, not once for each routed row: each
    ``Column`` operation is several py4j round trips to the JVM, and the routing expression would otherwise
    make most of those that building the query makes."""

    #: Types whose name (``simpleString``) Spark's parser reads back as the same type (a timestamp's name
    #: would follow ``spark.sql.timestampType``; a struct's does not quote its field names).
    _BY_NAME = (IntegerType, LongType, StringType, BooleanType, BinaryType)

    def __init__(self, topic_index: Column) -> None:
        for field in ROUTED.fields:
            if type(field.dataType) not in self._BY_NAME:
                raise TypeError(f"rows.ROUTED.{field.name}: {field.dataType} is not cast by name here (_Router)")
        self._types = {field.name: field.dataType.simpleString() for field in ROUTED.fields}
        common = {
            "src_topic": topic_index,
            "src_partition": F.col("partition"),
            "src_offset": F.col("offset"),
            "clock": F.unix_millis("timestamp"),  # ms: cheaper to hand to Python than a timestamp
        }
        self._shared = {name: self._field(name, value) for name, value in common.items()}
        self._nulls: dict[str, Column] = {}

    def _field(self, name: str, value: Column) -> Column:
        # (a type's name, not a DataType: a DataType makes PySpark look the session up and parse its JSON)
        return value.cast(self._types[name]).alias(name)

    def __call__(self, **cols: Column) -> Column:
        fields = []
        for name in self._types:
            if name in cols:
                fields.append(self._field(name, cols[name]))
            elif name in self._shared:
                fields.append(self._shared[name])
            else:
                if name not in self._nulls:
                    self._nulls[name] = self._field(name, F.lit(None))
                fields.append(self._nulls[name])
        return F.struct(*fields)


def _dead_letter_value(reason_code: Column) -> Column:
    dl = F.struct(
        F.sha2(
            F.concat_ws(
                "\x1f", F.lit("dlq"), F.col("topic"), F.col("partition").cast("string"), F.col("offset").cast("string")
            ),
            256,
        )
        .substr(1, 32)
        .alias("event_id"),
        reason_code.alias("reason"),
        F.col("dlq_reason").alias("reason_name"),
        F.col("topic").alias("dest_topic"),
        F.col("format").alias("format"),
        F.lit("qmon").alias("put_appl_name"),
        F.col("timestamp").alias("put_time"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        F.col("dlq_error").alias("error"),
        F.col("key").alias("key"),
        F.col("value").alias("value"),
    )
    return to_avro(dl, schema_text("DeadLetter"))


def _structure_bucket(structure: Column, structure_buckets: dict[str, int] | None) -> Column:
    """The bucket of a structure's key: the one placed for it (``qmon.core.placement``), else 0."""
    if not structure_buckets:
        return F.lit(0)
    chosen = F.create_map(*[F.lit(x) for kv in sorted(structure_buckets.items()) for x in kv])
    return F.coalesce(chosen[structure], F.lit(0))


def framed(value: Column, topic: Column, ids: dict[str, int]) -> Column:
    """An output ``value`` in Confluent's wire format: the header of ``ids[topic]`` (ids by physical topic name)
    before it; a topic without an id keeps its value as it is."""
    if not ids:
        return value
    headers = F.create_map(*[x for t, i in sorted(ids.items()) for x in (F.lit(t), F.lit(avro.header(i)))])
    return F.concat(F.coalesce(headers[topic], F.lit(b"")), value)


def _group_of(qmgr: Column, sharing: Sharing) -> Column | None:
    """The queue-sharing group ``qmgr`` is a member of (``Sharing.group_of``), else null; None without groups."""
    members = sorted((m, g.name) for g in sharing.groups for m in g.members)
    if not members:
        return None
    return F.create_map(*[F.lit(x) for kv in members for x in kv])[qmgr]


def topic_numbers(names: dict[str, str]) -> dict[str, int]:
    """Each topic's number in a routed row's ``src_topic``: its place among the sorted physical names."""
    return {name: i for i, name in enumerate(sorted(set(names.values())))}


def route(
    dec: DataFrame,
    names: dict[str, str],
    buckets: int,
    structure_buckets: dict[str, int] | None = None,
    queue_units: list[int] | None = None,
    sharing: Sharing | None = None,
) -> DataFrame:
    """Every decoded record -> the rows the per-queue operator receives (kind A, C, J), and the dead letters
    and invalid-command replies it passes through (kind P): one row a record, one pass over the input.  An
    activity's copy for its structure (kind S) is made by ``copies``, after the duplicate check
    (``streaming.dedup``), so that a record and its copy have one verdict.

    A queue manager's queues are split into ``buckets`` shards (``xxhash64(queue) mod buckets``); the shards
    of every queue manager are grouped into ``len(queue_units)`` units, keyed ``(Q, "", queue_units[u])``:
    a queue manager's shards go round the groups from a place its name's hash chooses, so that the number
    of keys (each a fixed cost in every micro-batch) does not grow with the queue managers.

    ``sharing``: the queue-sharing groups (``qmon.core.sharing``), as literals of the query.  A group member's
    records and commands of its queues, shared or its own, go to its group's shard of the queue's name, split
    and placed as a queue manager's are under the group's name (column ``qsg``; ``qmgr`` stays the member), and
    its commands for the whole queue manager to every shard of the group's: which queue a record is about is
    decided there, from the group's state (``qmon.core.queues.queue_sharing_group``), so that a DEFINE ...
    QSGDISP(SHARED) alone makes a queue shared."""
    _routed = _Router(F.create_map(*[F.lit(x) for kv in topic_numbers(names).items() for x in kv])[F.col("topic")])
    units = queue_units or [0]
    unit_keys = F.array(*[F.lit(int(b)) for b in units])

    def unit_of(qmgr: Column, shard: Column) -> Column:
        first = F.pmod(F.xxhash64(qmgr), F.lit(len(units)))  # (pmod first: xxhash64 + shard could overflow)
        return F.element_at(unit_keys, (F.pmod(first + shard, F.lit(len(units))) + 1).cast("int"))

    reason_code = F.create_map(*[x for name, code in CODE.items() for x in (F.lit(name), F.lit(code))])
    spread = F.element_at(unit_keys, (F.pmod(F.col("offset"), F.lit(len(units))) + 1).cast("int"))
    dead = _routed(
        unit=F.lit(Unit.QUEUES.value),
        unit_name=F.lit(""),
        bucket=spread,
        kind=F.lit(Kind.PASS.value),
        ts=F.unix_millis("timestamp"),
        rank=F.lit(0),
        out_topic=F.lit(topics.DLQ),
        out_key=F.concat_ws("/", F.col("topic"), F.col("partition").cast("string"), F.col("offset").cast("string")),
        out_value=_dead_letter_value(reason_code[F.col("dlq_reason")]),
    )
    reply = F.struct(
        F.sha2(F.concat_ws("\x1f", F.lit("reply"), F.col("rc.command_id")), 256).substr(1, 32).alias("event_id"),
        F.col("rc.command_id").alias("command_id"),
        F.col("rc.qmgr").alias("qmgr"),
        F.col("rc.ts").alias("ts"),
        F.lit(False).alias("ok"),
        F.col("p.error").alias("message"),
    )
    error_reply = _routed(
        unit=F.lit(Unit.QUEUES.value),
        unit_name=F.lit(""),
        bucket=spread,
        kind=F.lit(Kind.PASS.value),
        ts=F.unix_millis("rc.ts"),
        rank=F.lit(1),
        out_topic=F.lit(topics.REPLIES),
        out_key=F.col("rc.command_id"),
        out_value=to_avro(reply, schema_text("CommandReply")),
    )
    # each field of the decoded record to its routed column (ts as epoch ms)
    fields = {name: F.col(f"ra.{name}") for name, _ in ACTIVITY}
    fields.update(ts=F.unix_millis("ra.ts"), reply=F.lit(False), rank=F.lit(1))
    shard = F.pmod(F.xxhash64(F.col("ra.queue")), F.lit(buckets))
    sharing = sharing or Sharing()

    def owner(qmgr: Column, qsg: Column | None) -> Column:
        """The name a row's shard is kept under: its group's (``qsg``, when not null), else its queue manager's."""
        return qmgr if qsg is None else F.coalesce(qsg, qmgr)

    qsg = _group_of(F.col("ra.qmgr"), sharing)
    activity = _routed(
        unit=F.lit(Unit.QUEUES.value),
        unit_name=F.lit(""),
        bucket=unit_of(owner(F.col("ra.qmgr"), qsg), shard),
        shard=shard,
        **({} if qsg is None else {"qsg": qsg}),
        kind=F.lit(Kind.ACTIVITY.value),
        **fields,
    )

    def command(
        shard: Column, reply_here: Column, command_id: Column | None = None, qsg: Column | None = None
    ) -> Column:
        return _routed(
            unit=F.lit(Unit.QUEUES.value),
            unit_name=F.lit(""),
            qmgr=F.col("rc.qmgr"),
            bucket=unit_of(owner(F.col("rc.qmgr"), qsg), shard),
            shard=shard,
            **({} if qsg is None else {"qsg": qsg}),
            kind=F.lit(Kind.COMMAND.value),
            event_id=F.col("rc.command_id") if command_id is None else command_id,
            queue=F.col("p.name"),
            ts=F.unix_millis("rc.ts"),
            payload=F.col("rc.text"),
            reply=reply_here,
            rank=F.lit(0),
        )

    # a queue-sharing group member's commands go to its group's shards, which hold all its queues
    group = _group_of(F.col("rc.qmgr"), sharing)
    fan_out = F.transform(F.sequence(F.lit(0), F.lit(buckets - 1)), lambda b: command(b, b == 0, qsg=group))
    name_shard = F.pmod(F.xxhash64(F.col("p.name")), F.lit(buckets))
    one = F.array(command(name_shard, F.lit(True), qsg=group))
    # DEFINE and ALTER QLOCAL: a copy for every shard (each keeps every queue's definition), the queue's replying
    definition = F.transform(F.sequence(F.lit(0), F.lit(buckets - 1)), lambda b: command(b, b == name_shard, qsg=group))
    # every shard replies with its part, told which one in the command id (qmon.core.mqsc.split_part)
    parts = F.transform(
        F.sequence(F.lit(0), F.lit(buckets - 1)),
        lambda b: command(
            b,
            F.lit(True),
            F.concat(F.col("rc.command_id"), F.lit(PART_MARK), (b + 1).cast("string"), F.lit(f"/{buckets}")),
            qsg=group,
        ),
    )
    payload = F.to_json(
        F.struct(
            F.col("rj.library").alias("library"),
            F.col("rj.attached").alias("attached"),
            F.col("rj.size_kb").alias("size_kb"),
            F.col("rj.threshold_kb").alias("threshold_kb"),
            F.col("rj.receivers").alias("receivers"),
        )
    )
    journal_shard = F.pmod(F.xxhash64(F.col("rj.library")), F.lit(buckets))
    journal = _routed(
        unit=F.lit(Unit.QUEUES.value),
        unit_name=F.lit(""),
        qmgr=F.col("rj.qmgr"),
        bucket=unit_of(F.col("rj.qmgr"), journal_shard),
        shard=journal_shard,
        kind=F.lit(Kind.JOURNAL.value),
        event_id=F.col("rj.event_id"),
        ts=F.unix_millis("rj.ts"),
        payload=payload,
        reply=F.lit(False),
        rank=F.lit(1),
    )
    topic = F.col("topic")
    # activity: QueueActivity records, and the calls decoded from MQ activity trace (streaming.trace)
    is_activity = topic.isin(names[topics.ACTIVITY], names.get(topics.MQ_TRACE, names[topics.ACTIVITY]))
    rows = (
        F.when(F.col("cmd_invalid"), F.array(dead, error_reply))
        .when(F.col("dlq_reason").isNotNull(), F.array(dead))
        .when(is_activity, F.array(activity))
        .when(
            topic == names[topics.CONTROL],
            F.when(F.col("p.scope") == "qmgr", fan_out)
            .when(F.col("p.scope") == "parts", parts)
            .when(F.col("p.scope") == "definition", definition)
            .otherwise(one),
        )
        .otherwise(F.array(journal))
    )
    # the watermarked column rides along: Spark's event-time timeout needs it in the operator's input
    return dec.select(F.explode(rows).alias("x"), HORIZON).select("x.*", HORIZON)


def copies(
    routed: DataFrame, structure_buckets: dict[str, int] | None, unit_keys: list[tuple[str, str, int]]
) -> DataFrame:
    """Each activity row that names a structure, and its copy for the structure's monitor (kind S, key
    ``(S, structure, placed bucket)``: the bucket places the structure's key on a partition of its own,
    ``qmon.core.placement``); each mark (``streaming.event_order``) once for every unit of ``unit_keys``
    ((unit, unit_name, bucket))."""
    types = {f.name: f.dataType.simpleString() for f in ROUTED.fields}

    def row(changed: dict[str, Column]) -> Column:
        return F.struct(*[changed.get(c, F.col(c)).cast(types[c]).alias(c) for c in ROUTED_COLUMNS])

    copy = {
        "unit": F.lit(Unit.STRUCTURE.value),
        "unit_name": F.col("structure"),
        "bucket": _structure_bucket(F.col("structure"), structure_buckets),
        "shard": F.lit(None),
        "qsg": F.lit(None),
        "kind": F.lit(Kind.STRUCTURE_ACTIVITY.value),
    }
    marks = [row({"unit": F.lit(u), "unit_name": F.lit(n), "bucket": F.lit(b)}) for u, n, b in unit_keys]
    copied = (F.col("kind") == Kind.ACTIVITY.value) & F.col("structure").isNotNull()
    rows = (
        F.when(copied, F.array(row({}), row(copy)))
        .when(F.col("kind") == Kind.FRONTIER.value, F.array(*marks))
        .otherwise(F.array(row({})))
    )
    return routed.select(F.explode(rows).alias("x"), HORIZON).select("x.*", HORIZON)


def build(
    raw: DataFrame | dict[str, DataFrame],
    *,
    settings: Any,
    buckets: int,
    watermark_delay: str,
    ttl_ms: int,
    prefix: str = "qmon",
    structure_settings: Any = None,
    structure_buckets: dict[str, int] | None = None,
    queue_units: list[int] | None = None,
    input_tasks: int | None = None,
    mq_trace: tuple[str, str] | None = None,
    dedup_window_ms: int = 10 * 60 * 1000,
    max_lateness_ms: int = 0,
    ends: dict[tuple[str, int], int] | None = None,
    writer_plans: dict[str, TopicPlan] | None = None,
) -> DataFrame:
    """The whole query over Kafka-shaped rows; returns the rows for the Kafka sink.

    ``raw`` is one DataFrame per logical input topic, or one holding every input topic;
    ``topic`` holds physical topic names (under ``prefix``); so do the output rows.  The duplicate check
    (``streaming.dedup``) runs ahead of the monitor and remembers an event_id for ``dedup_window_ms``; the
    monitor applies each unit's records in event-time order across the input partitions, up to
    ``max_lateness_ms`` behind the slowest (``streaming.event_order``); ``ends``, the end offset of each input
    partition (physical topic, partition) a run stops at (``--available-now``): a partition read to its end
    holds nothing back.  ``writer_plans``: how each input topic's framed records are read by their schema id
    (``streaming.writer_schemas``), with a schema registry.
    """
    from qmon.core.config import duration_ms
    from qmon.core.structures import StructureSettings
    from qmon.streaming.operators import Monitor
    from qmon.streaming.rows import STATE

    names = topics.physical_map(prefix)
    # one watermark, above the union: an idle input topic never holds the event-time timers back
    dec = decode(raw, names, mq_trace, writer_plans)
    dec = dec.withColumn(HORIZON, F.col("timestamp") + F.expr(f"INTERVAL {_CENTURY_DAYS} DAYS"))
    if input_tasks:  # a task per Kafka partition is a fixed cost per batch: let fewer tasks read them all
        dec = dec.coalesce(input_tasks)
    routed = route(dec, names, buckets, structure_buckets, queue_units, settings.sharing)
    routed = routed.withWatermark(HORIZON, f"{_CENTURY_DAYS} days {duration_ms(watermark_delay)} milliseconds")
    # the check reads one row a record (the structures' copies are made after it), and marks how far each
    # input partition has got; each mark is then copied to every unit
    numbers = topic_numbers(names)
    last = {source(numbers[t], p): end - 1 for (t, p), end in (ends or {}).items() if t in numbers and end > 0}
    checked = dedup_step(routed, dedup_window_ms, HORIZON, _CENTURY_DAYS * 86_400_000, last)
    unit_keys = [(Unit.QUEUES.value, "", int(b)) for b in (queue_units or [0])]
    unit_keys += [(Unit.STRUCTURE.value, name, int(b)) for name, b in sorted((structure_buckets or {}).items())]
    routed = copies(checked, structure_buckets, unit_keys)
    grouped = routed.groupBy("unit", "unit_name", "bucket")
    args = (settings, structure_settings or StructureSettings(), ttl_ms, max_lateness_ms)
    events = grouped.applyInPandasWithState(Monitor(*args), OUTPUT, STATE, "Append", "EventTimeTimeout")
    # records applied late, counted per batch in the query's progress (observedMetrics), then dropped
    late = F.sum(F.when(F.col("topic") == LATE, F.col("order_seq")).otherwise(F.lit(0)))
    events = events.observe(ORDER_METRICS, late.alias("late_records")).filter(F.col("topic") != LATE)
    if prefix != "qmon":  # the operators speak logical names
        mapping = F.create_map(*[F.lit(x) for kv in names.items() for x in kv])
        events = events.withColumn("topic", mapping[F.col("topic")])
    return events
