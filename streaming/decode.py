"""Decode: each input topic's records read with its own Avro record (one Kafka source per topic).  The
Confluent 5-byte header is stripped when present, then ``from_avro`` (PERMISSIVE: a bad record yields null,
never a failed batch); with a schema registry, a framed record is read with the writer's schema its id names,
resolved into qmon's (``streaming.writer_schemas``).  Each topic's records are then validated
(``streaming.validate``), and the topics joined in one union; the MQ activity trace topic, when read, adds the
puts and gets of its trace messages (``streaming.trace``)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

from qmon.connectors.schema import required_fields, schema_text
from qmon.core import topics
from qmon.streaming.encoded_length import encoded_length
from qmon.streaming.framing import body, schema_id
from qmon.streaming.validate import validated
from qmon.streaming.writer_schemas import NEW_ID, TopicPlan


def _decoded(df: DataFrame, col: str, record: str, topic: str, plan: TopicPlan | None = None) -> DataFrame:
    """Column ``col``: the value decoded as ``record`` when it was read from ``topic``, else null.

    PERMISSIVE yields a struct of nulls (not a null struct) for bytes that do not decode, and
    ``from_avro`` ignores bytes left over after a record (random bytes can decode into garbage):
    a real record has no null in a non-null field and is exactly as long as its encoding
    (``streaming.encoded_length``, computed from its columns: the record is decoded once, never encoded again).

    With a ``plan`` (a schema registry's), a framed record is read by its schema id: with qmon's schema when
    the id's is qmon's own, with the writer's resolved into qmon's when it resolves (its length checked with
    the writer's, read with it alone; not checked when a writer's schema has a type whose length cannot be
    computed), as null when it is a dead letter (``streaming.validate``); an id in no plan raises
    ``writer_schemas.NEW_ID`` and the query fails (``streaming.job`` plans it and starts again)."""
    schema = schema_text(record)
    mine = F.col("topic") == topic
    body = F.col("_body")
    own_length = encoded_length(F.col(col), schema)
    if own_length is None:
        raise ValueError(f"the length of a {record} record cannot be told from its columns (streaming.encoded_length)")
    if plan is None:
        df = df.withColumn(col, from_avro(F.when(mine, body), schema, {"mode": "PERMISSIVE"}))
        whole = own_length == F.length(body)
    else:
        sid = schema_id(F.col("value"))
        own = (sid.isNull() | sid.isin(*sorted(plan.own))) if plan.own else sid.isNull()
        value = F.when(own, from_avro(body, schema, {"mode": "PERMISSIVE"}))
        whole = F.when(own, own_length == F.length(body))
        for writer_id, writer in sorted(plan.writers.items()):
            resolved = from_avro(body, writer.text, {"mode": "PERMISSIVE", "avroSchema": schema})
            value = value.when(sid == writer_id, resolved)
            # the length of the record as the writer wrote it: read with the writer's schema alone, since
            # resolving into qmon's drops the fields qmon does not read
            written = (
                encoded_length(from_avro(body, writer.text, {"mode": "PERMISSIVE"}), writer.text)
                if writer.checked
                else None
            )
            whole = whole.when(sid == writer_id, F.lit(True) if written is None else written == F.length(body))
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


#: input topic -> (decoded column, Avro record) of the records read from it
INPUTS = {
    topics.ACTIVITY: ("ra", "QueueActivity"),
    topics.CONTROL: ("rc", "ControlCommand"),
    topics.JOURNAL: ("rj", "JournalStatus"),
}


def decode_topic(raw: DataFrame, logical: str, names: dict[str, str], plan: TopicPlan | None = None) -> DataFrame:
    """The records of one input topic decoded, then validated (``streaming.validate``): columns ra / rc / rj
    (only the one of ``logical`` filled, the others typed nulls, so every input topic yields the same columns),
    ``format`` (the record's name), and the validation's ``dlq_reason``, ``dlq_error``, ``p`` and
    ``cmd_invalid``.  ``plan``: how framed records are read by their schema id (``streaming.writer_schemas``);
    without one, the header is skipped and the body read with qmon's schema."""
    df = raw.withColumn("_body", body(F.col("value")))
    for other, (col, record) in INPUTS.items():
        if other == logical:
            df = _decoded(df, col, record, names[logical], plan)
        else:
            df = df.withColumn(col, from_avro(F.lit(None).cast("binary"), schema_text(record)))
    df = df.drop("_body").withColumn("format", F.lit(INPUTS[logical][1]))
    return validated(df, logical, plan)


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
    wanted = [*INPUTS, topics.MQ_TRACE] if mq_trace else list(INPUTS)
    if not isinstance(raw, dict):
        raw = {t: raw.where(F.col("topic") == names[t]) for t in wanted}
    parts = [decode_topic(raw[t], t, names, (plans or {}).get(t)) for t in INPUTS if t in raw]
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
