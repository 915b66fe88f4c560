"""``monitor.dedup_state: slice``: the duplicate check as a stateful step of its own, ahead of the monitor.

The rule is ``qmon.core.dedup.SliceIds`` (a slice keeps the first copy of a record, by its queue manager,
queue and event_id); this module applies it to a micro-batch's rows at once and keeps the ids in Spark's
state.

``dedup_step(routed, window_ms, horizon)`` takes the routed rows *before* an activity's structure copy is
made (``pipeline.route(..., structure_rows=False)``: one row a record, so a record has one verdict and the
check reads half as many rows), and groups them by ``(dslice, dpart)``: the slice of an activity row's ts
and a part of the slice chosen by ``ddigest``, the record's 64-bit ``xxhash64(qmgr, queue, event_id)``
computed in the JVM (every copy of a record meets its first in one key, and a slice's rows spread over
``PARTS`` keys).  Rows of other kinds (commands, journal status, dead letters) get the slice -1 and pass
untouched.  Python reads only what the check needs (``READ``); the rest of a row travels as one Avro value
(``rest``), packed before the step and unpacked after it in the JVM, since the step's Python side costs per
column of every row.

It is a ``transformWithStateInPandas`` (Spark refuses a second ``applyInPandasWithState``, and refuses any
stateful operator after one with an event-time timeout) in event-time mode on the watermarked column, which
its rows keep, so the monitor's timeouts still fire.  Each key holds its digests in one ``ValueState`` (a
byte string of 8-byte ints), read once and written once when a batch touches the key; an event-time timer
forgets them (``qmon.core.dedup.slice_expiry``).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import fastavro
import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro, to_avro
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, StructField, StructType, TimestampType

from qmon.core.dedup import SLICE_MS, slice_expiry
from qmon.streaming.rows import ROUTED, ROUTED_COLUMNS, Kind

#: keys a slice's ids are split over (by hash), so that a batch of one slice is not one task's
PARTS = 4

#: a row's routed columns travel through the step packed in one Avro value, ``rest``: the step's Python side
#: costs per column of every row, and it reads them only for a record that comes twice in a batch
_AVRO = {"string": "string", "int": "int", "bigint": "long", "boolean": "boolean", "binary": "bytes"}
REST_SCHEMA_DICT = {
    "type": "record",
    "name": "Rest",
    "fields": [{"name": f.name, "type": ["null", _AVRO[f.dataType.simpleString()]]} for f in ROUTED.fields],
}
REST_SCHEMA = json.dumps(REST_SCHEMA_DICT)
_PARSED = fastavro.parse_schema(REST_SCHEMA_DICT)

#: the step's state for a key: the digests it holds
IDS = StructType([StructField("ids", BinaryType())])

_EMPTY = np.empty(0, dtype=np.int64)


def fresh_rows(held: np.ndarray, digests: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``SliceIds.seen`` for records in order, at once: which are kept (not duplicates), and what the key
    holds after.  A record is kept when the key does not hold its digest and no earlier record in
    ``digests`` has it."""
    keep = np.zeros(len(digests), dtype=bool)
    keep[np.unique(digests, return_index=True)[1]] = True  # (the first record of each digest)
    if len(held):
        keep &= ~np.isin(digests, held)
    return keep, (np.concatenate([held, digests[keep]]) if keep.any() else held)


def first_copies_order(digests: np.ndarray, rest: pd.Series) -> np.ndarray:
    """The positions of a key's rows in an order where each record's copies come as in the monitor's order,
    (ts, rank, partition, offset), so that the first is the one kept: as given when no record comes twice
    (the common case: nothing is decoded), else with the copies' packed columns read and sorted."""
    n = len(digests)
    uniq, inverse, counts = np.unique(digests, return_inverse=True, return_counts=True)
    if len(uniq) == n:
        return np.arange(n)
    twice = np.flatnonzero(counts[inverse] > 1)
    keys = []
    for i in twice:
        r: Any = fastavro.schemaless_reader(io.BytesIO(rest.iat[int(i)]), _PARSED, None)
        keys.append((r["ts"], r["rank"], r["src_partition"], r["src_offset"]))
    order = np.arange(n)
    order[twice] = twice[sorted(range(len(twice)), key=keys.__getitem__)]
    return order


class SliceCheck(StatefulProcessor):
    """The step: one key is a part of one slice (``dslice`` -1: rows passed through untouched)."""

    def __init__(self, window_ms: int, horizon: str, ahead_ms: int) -> None:
        self.window_ms, self.horizon, self.ahead_ms = window_ms, horizon, ahead_ms

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.ids = handle.getValueState("ids", IDS)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        frames = list(rows)
        pdf = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        out = [c for c in pdf.columns if c not in ("dslice", "dpart", "ddigest")]
        if int(key[0]) < 0:  # not activity: nothing to check
            yield pdf[out]
            return
        digests = pdf["ddigest"].to_numpy(dtype=np.int64)
        order = first_copies_order(digests, pdf["rest"])
        digests = digests[order]
        stored = self.ids.get()
        held = np.frombuffer(stored[0], dtype=np.int64) if stored and stored[0] else _EMPTY
        keep, held = fresh_rows(held, digests)
        if stored is None or keep.any():
            self.ids.update((held.tobytes(),))
        if stored is None:
            # the arrival clock (the rows' broker time, from the watermarked column, or the watermark if later:
            # the watermark alone is not yet the arrival clock in a query's first batch)
            clock = int(pd.Timestamp(pdf[self.horizon].max()).timestamp() * 1000) - self.ahead_ms
            clock = max(clock, timerValues.getCurrentWatermarkInMs())
            self.handle.registerTimer(slice_expiry(int(key[0]), clock, self.window_ms))
        if keep.all():
            yield pdf[out]
        elif keep.any():
            yield pdf[out].iloc[order[keep]]

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        self.ids.clear()
        return iter(())


def dedup_step(routed: DataFrame, window_ms: int, horizon: str, ahead_ms: int) -> DataFrame:
    """The routed rows (one a record: no structure copies yet) less their duplicates (``monitor.dedup_state:
    slice``), with the watermarked column ``horizon``, the arrival clock ``ahead_ms`` ahead
    (``pipeline.HORIZON``): the operator ahead of the monitor."""
    checked = F.col("kind") == Kind.ACTIVITY.value
    digest = F.xxhash64("qmgr", "queue", "event_id")
    keyed = routed.select(
        F.when(checked, F.floor(F.col("ts") / F.lit(SLICE_MS))).otherwise(F.lit(-1)).cast("long").alias("dslice"),
        F.when(checked, F.pmod(digest, F.lit(PARTS)))
        .otherwise(F.pmod(F.col("src_offset"), F.lit(PARTS)))
        .cast("int")
        .alias("dpart"),
        F.when(checked, digest).otherwise(F.lit(0)).cast("long").alias("ddigest"),
        horizon,
        to_avro(F.struct(*ROUTED_COLUMNS), REST_SCHEMA).alias("rest"),
    )
    schema = StructType([StructField(horizon, TimestampType()), StructField("rest", BinaryType())])
    out = keyed.groupBy("dslice", "dpart").transformWithStateInPandas(
        statefulProcessor=SliceCheck(window_ms, horizon, ahead_ms),
        outputStructType=schema,
        outputMode="Append",
        timeMode="EventTime",
        eventTimeColumnName=horizon,
    )
    out = out.withColumn("rest", from_avro(F.col("rest"), REST_SCHEMA))
    return out.select(*[F.col(f"rest.{c}").alias(c) for c in ROUTED_COLUMNS], horizon)
