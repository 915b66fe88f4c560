"""Validate: every decoded input record checked in SQL, one set of checks for each input topic's record
(``validated``).  A record that fails gets the reason code and error text of its first failing check
(``dlq_reason``, ``dlq_error``: ``route`` makes its DeadLetter, with its original key and value bytes); a
command that passes is parsed (MQSC, ``streaming.udfs``) and an invalid one gets ``QMON_INVALID_COMMAND`` (an
error reply *and* a dead letter).  Nothing here fails a batch."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from qmon.core import topics
from qmon.streaming.framing import schema_id
from qmon.streaming.writer_schemas import MISMATCH, UNKNOWN, TopicPlan

#: the longest queue manager or queue name qmon accepts (IBM MQ's MQ_Q_NAME_LENGTH is 48)
_MAX_NAME = 48
# Timestamps qmon accepts: 1970-01-01 .. 9999-12-31 (anything else cannot be a time of day).
_TS_MIN = 0
_TS_MAX = 253_402_300_799_999


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


def _schema_checks(plan: TopicPlan | None) -> list[tuple[Column, str, Column]]:
    """A framed record whose id the plan makes a dead letter: its reason and error, ahead of every other check."""
    if plan is None or not plan.dead:
        return []
    sid = schema_id(F.col("value"))
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


#: a command's parse when it has none (the activity and journal topics)
_PARSED_NULL = "struct<ok:boolean,error:string,scope:string,name:string>"

#: input topic -> the checks of the records read from it, over their decoded column
CHECKS: dict[str, Callable[[], list[tuple[Column, str, Column]]]] = {
    topics.ACTIVITY: _activity_checks,
    topics.CONTROL: _control_checks,
    topics.JOURNAL: _journal_checks,
}


def validated(df: DataFrame, logical: str, plan: TopicPlan | None = None) -> DataFrame:
    """The records of input topic ``logical``, decoded, with ``dlq_reason`` / ``dlq_error`` (null when valid),
    ``p`` (a command's parse) and ``cmd_invalid``.  ``plan``: the schema ids whose records are dead letters
    (``streaming.writer_schemas``), checked ahead of every other check.

    Per topic, so the MQSC parser (a Python UDF, which Spark feeds every row of its input) sees commands only,
    never the activity stream."""
    from qmon.streaming.udfs import parse_mqsc

    name, error = _reason([*_schema_checks(plan), *CHECKS[logical]()])
    df = df.withColumn("dlq_reason", name).withColumn("dlq_error", error)
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
