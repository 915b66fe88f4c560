"""``monitor.dedup_state: slice``: the duplicate check as a stateful step of its own, ahead of the monitor.

The rule is ``qmon.core.dedup.SliceIds`` (a slice keeps the first copy of a record, by its queue manager,
queue and event_id); this module applies it to a micro-batch's rows at once and keeps the ids in Spark's
state.

``dedup_step(routed, window_ms, horizon, ahead_ms)`` takes the routed rows *before* an activity's structure copy is
made (``pipeline.route(..., structure_rows=False)``: one row a record, so a record has one verdict and the
check reads half as many rows), and groups them by ``(dslice, dpart)``: the slice of an activity row's ts
and a part of the slice chosen by ``ddigest``, the record's 64-bit ``xxhash64(qmgr, queue, event_id)``
computed in the JVM (every copy of a record meets its first in one key, and a slice's rows spread over
``PARTS`` keys).  Rows of other kinds (commands, journal status, dead letters) get the slice -1 and pass
untouched.  Python reads only what the check needs (the digest, and the watermarked column for a new key's
timer); the rest of a row travels as one Avro value (``rest``), packed before the step and unpacked after it
in the JVM, since the step's Python side costs per column of every row.  It takes a key's rows a chunk at a
time, as they come (a backlog's slice is never held whole in a Python worker): a record's copies within a
batch all pass, each after the first met marked ``dcopy``, and the monitor, which sorts its rows, keeps the
first copy in its order (``operators.first_copies``).

It is a ``transformWithStateInPandas`` (Spark refuses a second ``applyInPandasWithState``, and refuses any
stateful operator after one with an event-time timeout) in event-time mode on the watermarked column, which
its rows keep, so the monitor's timeouts still fire.  Each key holds its digests in one ``ValueState`` (a
byte string of 8-byte ints), read once and written once when a batch touches the key; an event-time timer
forgets them (``qmon.core.dedup.slice_expiry``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro, to_avro
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, BooleanType, StructField, StructType, TimestampType

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

#: the step's state for a key: the digests it holds
IDS = StructType([StructField("ids", BinaryType())])

_EMPTY = np.empty(0, dtype=np.int64)

#: the step's grouping key and the digest: read, not passed on
_KEYS = ("dslice", "dpart", "ddigest")

#: the watermarked column as the step reads it: epoch milliseconds
_HMS = "hms"

#: the step's output: a row passed, marked ``dcopy`` when its record was met before it in the batch
DCOPY = "dcopy"


def checked(before: np.ndarray, met: np.ndarray, digests: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The check of a chunk of a key's rows, in the order they come: which pass (the key did not hold their
    digest before the batch, ``before``), which of those are marked (their digest was met before them in
    the batch: in ``met``, or earlier in ``digests``), and the digests met after the chunk.

    Copies within a batch all pass, the later met marked, since the rows do not come in the monitor's order:
    the monitor keeps the first copy in its order (``operators.first_copies``).  With it, the step is
    ``SliceIds.seen`` over the batch's records in the monitor's order, whatever order and chunks they come
    in; the key holds ``before`` and ``met`` after the batch."""
    passed = ~np.isin(digests, before) if len(before) else np.ones(len(digests), dtype=bool)
    first = np.zeros(len(digests), dtype=bool)
    first[np.unique(digests, return_index=True)[1]] = True  # (the first row of each digest in the chunk)
    if len(met):
        first &= ~np.isin(digests, met)
    new = first & passed
    return passed, passed & ~first, (np.concatenate([met, digests[new]]) if new.any() else met)


class SliceCheck(StatefulProcessor):
    """The step: one key is a part of one slice (``dslice`` -1: rows passed through untouched)."""

    def __init__(self, window_ms: int, horizon: str, ahead_ms: int) -> None:
        self.window_ms, self.horizon, self.ahead_ms = window_ms, horizon, ahead_ms

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.ids = handle.getValueState("ids", IDS)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        if int(key[0]) < 0:  # not activity: nothing to check
            for pdf in rows:
                yield self._out(pdf, None, np.zeros(len(pdf), dtype=bool))
            return
        # a chunk at a time, as PySpark hands a key's rows over (chunks of spark.sql.execution.arrow.
        # maxRecordsPerBatch rows): a backlog's slice is never held whole in a Python worker
        stored = self.ids.get()
        before = np.frombuffer(stored[0], dtype=np.int64) if stored and stored[0] else _EMPTY
        met = _EMPTY
        latest = None
        for pdf in rows:
            passed, again, met = checked(before, met, pdf["ddigest"].to_numpy(dtype=np.int64))
            if stored is None:
                top = int(pdf[_HMS].max())
                latest = top if latest is None or top > latest else latest
            if passed.any():
                yield self._out(pdf, None if passed.all() else passed, again)
        if stored is None or len(met):
            self.ids.update((np.concatenate([before, met]).tobytes(),))
        if stored is None:
            # the arrival clock (the rows' broker time, from the watermarked column, or the watermark if later:
            # the watermark alone is not yet the arrival clock in a query's first batch)
            clock = int(latest) - self.ahead_ms
            clock = max(clock, timerValues.getCurrentWatermarkInMs())
            self.handle.registerTimer(slice_expiry(int(key[0]), clock, self.window_ms))

    def _out(self, pdf: pd.DataFrame, rows: np.ndarray | None, marks: np.ndarray) -> pd.DataFrame:
        """The step's output for a chunk's ``rows`` (all when None): the watermarked column made again from its
        milliseconds (a timestamp column costs PySpark a ``pd.Timestamp`` a row to regroup: ~1.3 µs)."""
        hms, rest = pdf[_HMS].to_numpy(dtype=np.int64), pdf["rest"].to_numpy()
        if rows is not None:
            hms, rest, marks = hms[rows], rest[rows], marks[rows]
        return pd.DataFrame({self.horizon: pd.to_datetime(hms, unit="ms", utc=True), "rest": rest, DCOPY: marks})

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        self.ids.clear()
        return iter(())


def dedup_step(routed: DataFrame, window_ms: int, horizon: str, ahead_ms: int) -> DataFrame:
    """The routed rows (one a record: no structure copies yet) less their duplicates (``monitor.dedup_state:
    slice``), with the watermarked column ``horizon``, the arrival clock ``ahead_ms`` ahead
    (``pipeline.HORIZON``): the operator ahead of the monitor."""
    activity = F.col("kind") == Kind.ACTIVITY.value
    digest = F.xxhash64("qmgr", "queue", "event_id")
    keyed = routed.select(
        F.when(activity, F.floor(F.col("ts") / F.lit(SLICE_MS))).otherwise(F.lit(-1)).cast("long").alias("dslice"),
        F.when(activity, F.pmod(digest, F.lit(PARTS)))
        .otherwise(F.pmod(F.col("src_offset"), F.lit(PARTS)))
        .cast("int")
        .alias("dpart"),
        F.when(activity, digest).otherwise(F.lit(0)).cast("long").alias("ddigest"),
        F.unix_millis(F.col(horizon)).alias(_HMS),
        to_avro(F.struct(*ROUTED_COLUMNS), REST_SCHEMA).alias("rest"),
    )
    schema = StructType(
        [StructField(horizon, TimestampType()), StructField("rest", BinaryType()), StructField(DCOPY, BooleanType())]
    )
    out = keyed.groupBy("dslice", "dpart").transformWithStateInPandas(
        statefulProcessor=SliceCheck(window_ms, horizon, ahead_ms),
        outputStructType=schema,
        outputMode="Append",
        timeMode="EventTime",
        eventTimeColumnName=horizon,
    )
    out = out.withColumn("rest", from_avro(F.col("rest"), REST_SCHEMA))
    return out.select(*[F.col(f"rest.{c}").alias(c) for c in ROUTED_COLUMNS], horizon, DCOPY)
