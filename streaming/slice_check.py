"""``monitor.dedup_state: slice``: the duplicate check's stateful processor (``SliceCheck``) and its batch form of
the rule (``checked``); ``streaming.dedup`` builds the step around them.

A module of its own, light to import: Spark starts a new Python process on the driver at a query's first
micro-batch (``pyspark.sql.streaming.transform_with_state_driver_worker``) to ask the processor for its state,
and that process imports this module to unpickle it.  numpy and pandas are imported where they are used (the
workers have them loaded already), so that process does not import them (~0.3 s; PySpark's own part imports
neither).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, StructField, StructType

from qmon.core.dedup import slice_expiry

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

#: the step's state for a key: the digests it holds
IDS = StructType([StructField("ids", BinaryType())])

#: the step's grouping key and the digest: read, not passed on
_KEYS = ("dslice", "dpart", "ddigest")

#: the watermarked column as the step reads it: epoch milliseconds
HMS = "hms"

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
    import numpy as np

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
        import numpy as np

        if int(key[0]) < 0:  # not activity: nothing to check
            for pdf in rows:
                yield self._out(pdf, None, np.zeros(len(pdf), dtype=bool))
            return
        # a chunk at a time, as PySpark hands a key's rows over (chunks of spark.sql.execution.arrow.
        # maxRecordsPerBatch rows): a backlog's slice is never held whole in a Python worker
        stored = self.ids.get()
        met = np.empty(0, dtype=np.int64)
        before = np.frombuffer(stored[0], dtype=np.int64) if stored and stored[0] else met
        latest = 0  # (the rows' latest watermarked column, ms: PySpark hands a key over with a row at least)
        for pdf in rows:
            passed, again, met = checked(before, met, pdf["ddigest"].to_numpy(dtype=np.int64))
            if stored is None:
                latest = max(latest, int(pdf[HMS].max()))
            if passed.any():
                yield self._out(pdf, None if passed.all() else passed, again)
        if stored is None or len(met):
            self.ids.update((np.concatenate([before, met]).tobytes(),))
        if stored is None:
            # the arrival clock (the rows' broker time, from the watermarked column, or the watermark if later:
            # the watermark alone is not yet the arrival clock in a query's first batch)
            clock = latest - self.ahead_ms
            clock = max(clock, timerValues.getCurrentWatermarkInMs())
            self.handle.registerTimer(slice_expiry(int(key[0]), clock, self.window_ms))

    def _out(self, pdf: pd.DataFrame, rows: np.ndarray | None, marks: np.ndarray) -> pd.DataFrame:
        """The step's output for a chunk's ``rows`` (all when None): the watermarked column made again from its
        milliseconds (a timestamp column costs PySpark a ``pd.Timestamp`` a row to regroup: ~1.3 µs)."""
        import numpy as np
        import pandas as pd

        hms, rest = pdf[HMS].to_numpy(dtype=np.int64), pdf["rest"].to_numpy()
        if rows is not None:
            hms, rest, marks = hms[rows], rest[rows], marks[rows]
        return pd.DataFrame({self.horizon: pd.to_datetime(hms, unit="ms", utc=True), "rest": rest, DCOPY: marks})

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        self.ids.clear()
        return iter(())
