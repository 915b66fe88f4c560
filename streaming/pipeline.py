"""The query, from raw input records to encoded output records: the route a record takes, one step a module.

``build(raw, ...)`` takes streaming DataFrames shaped like Spark's Kafka source (topic, partition, offset, key,
value, timestamp), one per input topic or one for them all, and returns one DataFrame of (topic, key, value,
order_ts, order_seq, order_idx) for the Kafka sink.  ``qmon run`` feeds it from Kafka; ``qmon replay`` from a
file it encodes into the same rows.  Both therefore run the same steps:

1. **source** (``streaming.source``): one Kafka source per input topic (``qmon run``).
2. **decode** (``streaming.decode``): each topic's records read with its own Avro record, then
3. **validate** (``streaming.validate``): checked in SQL; a record that fails is to be a DeadLetter, an invalid
   command gets an error reply too.
4. **route** (``streaming.route``): each record to the operator's units, key ``(unit, unit_name, bucket)``.
5. **order** (``streaming.dedup``, ``streaming.event_order``): one watermark on the arrival clock; the duplicate
   check over one row a record, which also marks how far each input partition has got; then ``route.copies``
   makes the structures' copies and gives each mark to every unit.
6. **monitor** (``streaming.operators.UnitOperator``, ``applyInPandasWithState``): each unit applies the rules
   (``qmon.core``) in event-time order, then
7. **encode** (``streaming.encode``): its outputs Avro-encoded into rows of ``rows.OUTPUT``.
8. **sink** (``streaming.sink``): each value framed with its schema id (with a schema registry) and written to
   its topic (``qmon run``).

One stateful operator, not one per unit kind: the input is read and shuffled once, and the fixed per-batch cost
of a Python stateful operator is paid once.
"""

from __future__ import annotations

import logging
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from qmon.core import topics
from qmon.streaming.decode import decode
from qmon.streaming.dedup import dedup_step
from qmon.streaming.event_order import source
from qmon.streaming.route import copies, route, topic_numbers
from qmon.streaming.rows import CENTURY_DAYS, HORIZON, LATE, OUTPUT, Unit
from qmon.streaming.writer_schemas import TopicPlan

logger = logging.getLogger(__name__)

#: the name of the query's observed metrics of event-time order (``late_records``: records applied late)
ORDER_METRICS = "qmon_order"


def build(
    raw: DataFrame | dict[str, DataFrame],
    *,
    settings: Any,
    shards: int,
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
    from qmon.streaming.operators import UnitOperator
    from qmon.streaming.rows import STATE

    names = topics.physical_map(prefix)
    # one watermark, above the union: an idle input topic never holds the event-time timers back
    dec = decode(raw, names, mq_trace, writer_plans)
    dec = dec.withColumn(HORIZON, F.col("timestamp") + F.expr(f"INTERVAL {CENTURY_DAYS} DAYS"))
    if input_tasks:  # a task per Kafka partition is a fixed cost per batch: let fewer tasks read them all
        dec = dec.coalesce(input_tasks)
    routed = route(dec, names, shards, structure_buckets, queue_units, settings.sharing)
    routed = routed.withWatermark(HORIZON, f"{CENTURY_DAYS} days {duration_ms(watermark_delay)} milliseconds")
    # the check reads one row a record (the structures' copies are made after it), and marks how far each
    # input partition has got; each mark is then copied to every unit
    numbers = topic_numbers(names)
    last = {source(numbers[t], p): end - 1 for (t, p), end in (ends or {}).items() if t in numbers and end > 0}
    checked = dedup_step(routed, dedup_window_ms, HORIZON, CENTURY_DAYS * 86_400_000, last)
    unit_keys = [(Unit.QUEUES.value, "", int(b)) for b in (queue_units or [0])]
    unit_keys += [(Unit.STRUCTURE.value, name, int(b)) for name, b in sorted((structure_buckets or {}).items())]
    routed = copies(checked, structure_buckets, unit_keys)
    grouped = routed.groupBy("unit", "unit_name", "bucket")
    args = (settings, structure_settings or StructureSettings(), ttl_ms, max_lateness_ms)
    events = grouped.applyInPandasWithState(UnitOperator(*args), OUTPUT, STATE, "Append", "EventTimeTimeout")
    # records applied late, counted per batch in the query's progress (observedMetrics), then dropped
    late = F.sum(F.when(F.col("topic") == LATE, F.col("order_seq")).otherwise(F.lit(0)))
    events = events.observe(ORDER_METRICS, late.alias("late_records")).filter(F.col("topic") != LATE)
    if prefix != "qmon":  # the operators speak logical names
        mapping = F.create_map(*[F.lit(x) for kv in names.items() for x in kv])
        events = events.withColumn("topic", mapping[F.col("topic")])
    return events
