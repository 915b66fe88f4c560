"""The duplicate check's stateful processor (``SliceCheck``): the rule, ``qmon.core.dedup.SliceIds``, over a
key's records in the monitor's order (``first_copies_order``); ``streaming.dedup`` builds the step around it.

A module of its own, light to import: Spark starts a new Python process on the driver at a query's first
micro-batch (``pyspark.sql.streaming.transform_with_state_driver_worker``) to ask the processor for its state,
and that process imports this module to unpickle it.  numpy, pandas and fastavro are imported where they are
used (the workers have them loaded already), so that process does not spend its start importing them
(PySpark's own part imports none of them).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Any

from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, StructField, StructType

from qmon.core.dedup import SliceIds, slice_expiry
from qmon.streaming.event_order import UNTIMED, mark_rows
from qmon.streaming.rows import ROUTED

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

#: the step's state for a key: the digests it holds
IDS = StructType([StructField("ids", BinaryType())])

#: the watermarked column as the step reads it: epoch milliseconds
HMS = "hms"

#: the rows of one output frame (as PySpark's own chunks: spark.sql.execution.arrow.maxRecordsPerBatch)
OUT_ROWS = 10_000

#: a row's routed columns travel through the step packed in one Avro value, ``rest``: the step's Python side
#: costs per column of every row, and it reads them only for a record that comes twice in a batch
_AVRO = {"string": "string", "int": "int", "bigint": "long", "boolean": "boolean", "binary": "bytes"}
REST_SCHEMA_DICT = {
    "type": "record",
    "name": "Rest",
    "fields": [{"name": f.name, "type": ["null", _AVRO[f.dataType.simpleString()]]} for f in ROUTED.fields],
}


@cache
def _rest_schema() -> Any:
    """fastavro's parsed ``REST_SCHEMA_DICT``, made when a record first comes twice."""
    import fastavro

    return fastavro.parse_schema(REST_SCHEMA_DICT)


def first_copies_order(digests: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """The positions of a key's rows in an order where each record's copies come as in the monitor's order,
    (ts, rank, partition, offset), so that the first is the one kept: as given when no record comes twice
    (the common case: nothing is decoded), else with the copies' packed columns read and sorted."""
    import io

    import fastavro
    import numpy as np

    n = len(digests)
    uniq, inverse, counts = np.unique(digests, return_inverse=True, return_counts=True)
    if len(uniq) == n:
        return np.arange(n)
    twice = np.flatnonzero(counts[inverse] > 1)
    keys = []
    for i in twice:
        r: Any = fastavro.schemaless_reader(io.BytesIO(rest[int(i)]), _rest_schema(), None)
        keys.append((r["ts"], r["rank"], r["src_partition"], r["src_offset"]))
    order = np.arange(n)
    order[twice] = twice[sorted(range(len(twice)), key=keys.__getitem__)]
    return order


class SliceCheck(StatefulProcessor):
    """The step: one key is a stripe of one slice (``dslice`` -1: rows passed through untouched)."""

    def __init__(self, window_ms: int, horizon: str, ahead_ms: int) -> None:
        self.window_ms, self.horizon, self.ahead_ms = window_ms, horizon, ahead_ms

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.ids = handle.getValueState("ids", IDS)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        import numpy as np

        # a key's chunks (PySpark hands them over as they come) gathered as three arrays, the packed values by
        # reference, not as frames: a record's copies may be in any chunk, and the first in the monitor's order
        # is the one kept, for its queue and its structure at once
        digests, hms, rest, sources, times = [], [], [], [], []
        for pdf in rows:
            digests.append(pdf["ddigest"].to_numpy(dtype=np.int64))
            hms.append(pdf[HMS].to_numpy(dtype=np.int64))
            rest.append(pdf["rest"].to_numpy())
            sources.append(pdf["dsrc"].to_numpy(dtype=np.int64))
            times.append(pdf["dts"].to_numpy(dtype=np.int64))
        if not hms:  # (PySpark hands a key over with a row at least)
            return
        h, r = np.concatenate(hms), np.concatenate(rest)
        del hms, rest
        marks = self._marks(np.concatenate(sources), np.concatenate(times))
        if int(key[0]) < 0:  # not activity: nothing to check
            yield from self._out(h, r, None, marks)
            return
        d = np.concatenate(digests)
        order = first_copies_order(d, r)
        stored = self.ids.get()
        held = np.frombuffer(stored[0], dtype=np.int64) if stored and stored[0] else d[:0]
        ids = SliceIds(held.tolist())
        keep = np.fromiter((not ids.seen(k) for k in d[order].tolist()), dtype=bool, count=len(d))
        if stored is None or keep.any():
            self.ids.update((np.fromiter(ids.held, dtype=np.int64, count=len(ids.held)).tobytes(),))
        if stored is None:
            # the arrival clock (the rows' broker time, from the watermarked column, or the watermark if later:
            # the watermark alone is not yet the arrival clock in a query's first batch)
            clock = int(h.max()) - self.ahead_ms
            clock = max(clock, timerValues.getCurrentWatermarkInMs())
            self.handle.registerTimer(slice_expiry(int(key[0]), clock, self.window_ms))
        # (all kept: no record came twice, and ``order`` is the rows' own)
        yield from self._out(h, r, None if keep.all() else order[keep], marks)

    def _marks(self, sources: np.ndarray, times: np.ndarray) -> list[bytes]:
        """The marks of what this key saw (``streaming.event_order``), packed: per input partition (``dsrc``),
        the greatest of its rows' ``dts`` (``NO_TIME`` once it saw the partition's last offset of the run;
        none for a partition of which it saw only rows with no time); the pipeline copies each for every
        unit."""
        import io

        import fastavro
        import numpy as np

        greatest: dict[int, int] = {}
        for s in np.unique(sources[sources >= 0]).tolist():
            if (ts := int(times[sources == s].max())) != UNTIMED:
                greatest[s] = ts
        if not greatest:
            return []

        def encode(row: dict[str, Any]) -> bytes:
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, _rest_schema(), row)
            return buf.getvalue()

        return mark_rows(greatest, encode)

    def _out(
        self, hms: np.ndarray, rest: np.ndarray, rows: np.ndarray | None, marks: list[bytes]
    ) -> Iterator[pd.DataFrame]:
        """The step's output, ``rows`` (all when None) then ``marks``, in frames of ``OUT_ROWS``: the
        watermarked column made again from its milliseconds (a timestamp column costs PySpark a
        ``pd.Timestamp`` a row to regroup); a mark's the key's lowest, so that it never moves the watermark."""
        import numpy as np
        import pandas as pd

        if marks:
            lowest = np.full(len(marks), hms.min(), dtype=np.int64)
            packed = np.empty(len(marks), dtype=object)
            packed[:] = marks
            hms, rest = (
                np.concatenate([hms if rows is None else hms[rows], lowest]),
                np.concatenate([rest if rows is None else rest[rows], packed]),
            )
        elif rows is not None:
            hms, rest = hms[rows], rest[rows]
        for a in range(0, len(hms), OUT_ROWS):
            at = pd.to_datetime(hms[a : a + OUT_ROWS], unit="ms", utc=True)
            yield pd.DataFrame({self.horizon: at, "rest": rest[a : a + OUT_ROWS]})

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        self.ids.clear()
        return iter(())
