"""The duplicate check, a stateful step of its own ahead of the monitor.

The rule is ``qmon.core.dedup.SliceIds`` (a slice keeps the first copy of a record, by its queue manager,
queue and event_id); this module applies it to a micro-batch's rows at once and keeps the ids in Spark's
state.

``dedup_step(routed, window_ms, horizon, ahead_ms)`` takes the routed rows *before* an activity's structure copy is
made (``route.route``: one row a record, so a record has one verdict and the
check reads half as many rows), and groups them by ``(dslice, dstripe)``: the slice of an activity row's ts
and a stripe of the slice chosen by ``ddigest``, the record's 64-bit ``xxhash64(qmgr, queue, event_id)``
computed in the JVM (every copy of a record meets its first in one key, and a slice's rows spread over
``STRIPES`` keys).  Rows of other kinds (commands, journal status, dead letters) get the slice -1 and pass
untouched.  Python reads only what the check needs (the digest, and the watermarked column for a new key's
timer); the rest of a row travels as one Avro value (``rest``), packed before the step and unpacked after it
in the JVM, since the step's Python side costs per column of every row.  A key's rows are gathered as three
arrays (the packed values by reference) and its output yielded in frames of 10,000 rows: of a record's copies
in a batch, the first in the monitor's order is kept (the packed columns of a record that comes twice are read
to find it), with one verdict for its queue and its structure.

It is a ``transformWithStateInPandas`` (Spark refuses a second ``applyInPandasWithState``, and refuses any
stateful operator after one with an event-time timeout) in event-time mode on the watermarked column, which
its rows keep, so the monitor's timeouts still fire.  Each key holds its digests in one ``ValueState`` (a
byte string of 8-byte ints), read once when a batch touches the key and written once when it holds new ids;
an event-time timer forgets them (``qmon.core.dedup.slice_expiry``).  The processor is
``streaming.slice_check.SliceCheck``.
"""

from __future__ import annotations

import json

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro, to_avro
from pyspark.sql.types import BinaryType, StructField, StructType, TimestampType

from qmon.core.dedup import SLICE_MS
from qmon.core.event_order import NO_TIME
from qmon.streaming.event_order import SOURCE_BITS, TIMED, UNTIMED
from qmon.streaming.rows import ROUTED_COLUMNS, Kind
from qmon.streaming.slice_check import HMS, REST_SCHEMA_DICT, SliceCheck

#: keys a slice's ids are split over (by hash), so that a batch of one slice is not one task's
STRIPES = 4

#: the packed value's Avro schema (``slice_check.REST_SCHEMA_DICT``), as Spark's ``to_avro`` and ``from_avro`` take it
REST_SCHEMA = json.dumps(REST_SCHEMA_DICT)


def dedup_step(
    routed: DataFrame, window_ms: int, horizon: str, ahead_ms: int, last: dict[int, int] | None = None
) -> DataFrame:
    """The routed rows (one a record: no structure copies yet) less their duplicates, with the watermarked
    column ``horizon``, the arrival clock ``ahead_ms`` ahead (``rows.HORIZON``), and the marks of
    event-time order (``streaming.event_order``; ``last``: the last offset a run reads of each input
    partition, by its ``dsrc``): the operator ahead of the monitor."""
    activity = F.col("kind") == Kind.ACTIVITY.value
    timed = F.col("kind").isin(*TIMED)
    source = F.shiftleft(F.col("src_topic").cast("long"), SOURCE_BITS) + F.col("src_partition")
    # a row's time for the marks: NO_TIME at or after its partition's last offset of the run (a partition read
    # to its end holds nothing back), else its ts (none for a dead letter)
    at = F.when(timed, F.col("ts")).otherwise(F.lit(UNTIMED))
    if last:
        ends = F.create_map(*[F.lit(v) for s, end in sorted(last.items()) for v in (s, end)])
        at = F.when(F.col("src_offset") >= F.element_at(ends, source), F.lit(NO_TIME)).otherwise(at)
    digest = F.xxhash64("qmgr", "queue", "event_id")
    keyed = routed.select(
        F.when(activity, F.floor(F.col("ts") / F.lit(SLICE_MS))).otherwise(F.lit(-1)).cast("long").alias("dslice"),
        F.when(activity, F.pmod(digest, F.lit(STRIPES)))
        .otherwise(F.pmod(F.col("src_offset"), F.lit(STRIPES)))
        .cast("int")
        .alias("dstripe"),
        F.when(activity, digest).otherwise(F.lit(0)).cast("long").alias("ddigest"),
        F.unix_millis(F.col(horizon)).alias(HMS),
        to_avro(F.struct(*ROUTED_COLUMNS), REST_SCHEMA).alias("rest"),
        F.coalesce(source, F.lit(-1)).cast("long").alias("dsrc"),
        at.cast("long").alias("dts"),
    )
    schema = StructType([StructField(horizon, TimestampType()), StructField("rest", BinaryType())])
    out = keyed.groupBy("dslice", "dstripe").transformWithStateInPandas(
        statefulProcessor=SliceCheck(window_ms, horizon, ahead_ms),
        outputStructType=schema,
        outputMode="Append",
        timeMode="EventTime",
        eventTimeColumnName=horizon,
    )
    out = out.withColumn("rest", from_avro(F.col("rest"), REST_SCHEMA))
    return out.select(*[F.col(f"rest.{c}").alias(c) for c in ROUTED_COLUMNS], horizon)
