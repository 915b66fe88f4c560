"""``monitor.dedup_state: slice``: the duplicate check as a stateful step of its own, ahead of the monitor.

The rule is ``qmon.core.dedup.SliceIds`` (a side keeps the first copy of a record's id in the record's
slice of ts); this module applies it to a micro-batch's rows at once and keeps the ids in Spark's state.

``dedup_step(routed, window_ms)`` groups the routed rows by ``(dslice, dpart)``: the slice of an
activity row's ts and a part of the slice chosen by the hash of its queue manager, queue and event_id (so
that every copy of a record, on both sides, meets its first in one key, and a slice's rows spread over
``PARTS`` keys).  Rows of other kinds (commands, journal status, dead letters) get the slice -1 and pass
untouched.  It is a ``transformWithStateInPandas`` (Spark refuses a second ``applyInPandasWithState``,
and refuses any stateful operator after one with an event-time timeout) in event-time mode on the
watermarked column, which its rows keep, so the monitor's timeouts still fire.  Each key holds its ids in
one ``ValueState`` (two byte strings of 8-byte digests: the queue side's and the structure side's),
read once and written once when a batch touches the key; an event-time timer forgets them
(``qmon.core.dedup.slice_expiry``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, StructField, StructType, TimestampType

from qmon.core.dedup import SLICE_MS, record_digest, slice_expiry
from qmon.streaming.rows import ROUTED, ROUTED_COLUMNS, Kind

#: keys a slice's ids are split over (by hash), so that a batch of one slice is not one task's
PARTS = 4

#: the step's state for a key: the digests its queue side (``q``) and structure side (``s``) hold
IDS = StructType([StructField("q", BinaryType()), StructField("s", BinaryType())])

_EMPTY = np.empty(0, dtype=np.int64)


def fresh_rows(
    held_q: np.ndarray, held_s: np.ndarray, digests: np.ndarray, structure_side: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``SliceIds.seen`` for rows in order, at once: which rows are kept (not duplicates), and what each
    side holds after.  A row is kept when its side does not hold its digest and no earlier row of its side
    in ``digests`` has it."""
    keep = np.zeros(len(digests), dtype=bool)
    held_after = []
    for side, held in ((False, held_q), (True, held_s)):
        idx = np.flatnonzero(structure_side == side)
        if not len(idx):
            held_after.append(held)
            continue
        mine = digests[idx]
        first = np.zeros(len(idx), dtype=bool)
        first[np.unique(mine, return_index=True)[1]] = True  # (the first row of each digest)
        if len(held):
            first &= ~np.isin(mine, held)
        keep[idx] = first
        held_after.append(np.concatenate([held, mine[first]]) if first.any() else held)
    return keep, held_after[0], held_after[1]


def _held(raw: bytes | None) -> np.ndarray:
    return np.frombuffer(raw, dtype=np.int64) if raw else _EMPTY


class SliceCheck(StatefulProcessor):
    """The step: one key is a part of one slice (``dslice`` -1: rows passed through untouched)."""

    def __init__(self, window_ms: int) -> None:
        self.window_ms = window_ms

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.ids = handle.getValueState("ids", IDS)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        frames = list(rows)
        pdf = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        pdf = pdf.drop(columns=["dslice", "dpart"])
        if int(key[0]) < 0:  # not activity: nothing to check
            yield pdf
            return
        # the monitor's order, (ts, rank, partition, offset): the first copy of a record is the one kept
        order = np.lexsort([pdf[c].to_numpy() for c in ("src_offset", "src_partition", "rank", "ts")])
        pdf = pdf.iloc[order]
        digests = np.fromiter(
            (record_digest(m, q, e) for m, q, e in zip(pdf["qmgr"], pdf["queue"], pdf["event_id"], strict=True)),
            dtype=np.int64,
            count=len(pdf),
        )
        stored = self.ids.get()
        held_q, held_s = (_held(stored[0]), _held(stored[1])) if stored else (_EMPTY, _EMPTY)
        keep, held_q, held_s = fresh_rows(held_q, held_s, digests, (pdf["kind"] == Kind.STRUCTURE_ACTIVITY).to_numpy())
        if stored is None or keep.any():
            self.ids.update((held_q.tobytes(), held_s.tobytes()))
        if stored is None:
            # (the arrival clock: the broker's time of the rows, or the watermark if later; the watermark alone
            # is not yet the arrival clock in a query's first batch)
            clock = max(int(pdf["clock"].max()), timerValues.getCurrentWatermarkInMs())
            self.handle.registerTimer(slice_expiry(int(key[0]), clock, self.window_ms))
        if keep.all():
            yield pdf
        elif keep.any():
            yield pdf[keep]

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        self.ids.clear()
        return iter(())


def dedup_step(routed: DataFrame, window_ms: int, horizon: str) -> DataFrame:
    """The routed rows less their duplicates (``monitor.dedup_state: slice``), with the watermarked column
    ``horizon``: the operator ahead of the monitor."""
    checked = F.col("kind").isin(Kind.ACTIVITY.value, Kind.STRUCTURE_ACTIVITY.value)
    keyed = routed.withColumn(
        "dslice", F.when(checked, F.floor(F.col("ts") / F.lit(SLICE_MS))).otherwise(F.lit(-1)).cast("long")
    ).withColumn(
        "dpart",
        F.when(checked, F.pmod(F.hash("qmgr", "queue", "event_id"), F.lit(PARTS)))
        .otherwise(F.pmod(F.col("src_offset"), F.lit(PARTS)))
        .cast("int"),
    )
    schema = StructType([*ROUTED.fields, StructField(horizon, TimestampType())])
    out = keyed.groupBy("dslice", "dpart").transformWithStateInPandas(
        statefulProcessor=SliceCheck(window_ms),
        outputStructType=schema,
        outputMode="Append",
        timeMode="EventTime",
        eventTimeColumnName=horizon,
    )
    return out.select(*ROUTED_COLUMNS, horizon)
