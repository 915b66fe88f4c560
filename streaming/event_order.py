"""Every input task's frontier mark, for every unit: what lets each unit apply its records in event-time order
across the input partitions (the rule: ``qmon.core.event_order``).

``with_marks(routed, unit_keys)`` passes a task's routed rows through unchanged (Arrow batches, not
converted) and adds, once the task has read its input, one row of kind ``FRONTIER`` for each unit key, its
``ts`` the task's mark: the smallest, over the partitions the task read, of the greatest ``ts`` read from each
(activity, commands and journal status: dead letters have no time).  It runs in the input tasks, ahead of any
shuffle, so a task sees every record it read of its partitions; every unit thus learns, in the batch itself,
how far every partition the batch read has got.  A task that read nothing adds nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from qmon.core.event_order import NO_TIME, advance, frontier
from qmon.streaming.rows import Kind

#: the kinds of row whose ``ts`` is the record's event time (an end of input's: the greatest there is)
TIMED = (Kind.ACTIVITY.value, Kind.COMMAND.value, Kind.JOURNAL.value, Kind.END.value)

#: The ``command_id`` of a ControlCommand that says "the input ends here" (``job.run`` sends one after a
#: ``--available-now`` run has read its input, and reads it in one more batch): no command, no reply; its
#: partition's mark is the greatest time there is, so a batch that reads it alone releases every record held.
END_OF_INPUT = "qmon:end-of-input"


def with_marks(routed: DataFrame, unit_keys: list[tuple[str, str, int]], horizon: str) -> DataFrame:
    """``routed`` with each input task's marks for ``unit_keys`` ((unit, unit_name, bucket) of every unit);
    ``horizon``: the column the watermark is defined on (a mark carries the task's lowest, so that it never
    moves the watermark)."""
    schema = routed.schema
    keys = list(unit_keys)

    def marks(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc

        greatest: dict[tuple[int, int], int] = {}
        lowest_horizon = None
        arrow_schema = None
        for batch in batches:
            if batch.num_rows == 0:
                continue
            arrow_schema = batch.schema
            yield batch
            timed = pc.is_in(batch.column("kind"), value_set=pa.array(TIMED))
            if pc.any(timed).as_py():
                rows = pa.table(
                    [batch.column("src_topic"), batch.column("src_partition"), batch.column("ts")],
                    names=["t", "p", "ts"],
                ).filter(timed)
                most = rows.group_by(["t", "p"]).aggregate([("ts", "max")]).to_pydict()
                for t, p, ts in zip(most["t"], most["p"], most["ts_max"], strict=True):
                    if ts is not None and ts > greatest.get((t, p), -(2**63)):
                        greatest[(t, p)] = ts
            h = pc.min(batch.column(horizon)).as_py()
            if h is not None and (lowest_horizon is None or h < lowest_horizon):
                lowest_horizon = h
        if lowest_horizon is None or arrow_schema is None:
            return  # the task read nothing
        mark = min(greatest.values(), default=NO_TIME)
        n = len(keys)
        columns = {f.name: pa.nulls(n, type=f.type) for f in arrow_schema}
        values = {
            "unit": [k[0] for k in keys],
            "unit_name": [k[1] for k in keys],
            "bucket": [k[2] for k in keys],
            "kind": [Kind.FRONTIER.value] * n,
            "ts": [mark] * n,
            "rank": [0] * n,
            "src_offset": [0] * n,
            horizon: [lowest_horizon] * n,
        }
        for name, value in values.items():
            columns[name] = pa.array(value, columns[name].type)
        yield pa.RecordBatch.from_arrays([columns[f.name] for f in arrow_schema], schema=arrow_schema)

    return routed.mapInArrow(marks, schema).filter(F.col("kind") != Kind.END.value)


#: the columns of a held row kept in the unit's state (the rest are null for a held row, or Spark's own)
HELD_COLUMNS = (
    "unit",
    "unit_name",
    "bucket",
    "shard",
    "kind",
    "qmgr",
    "event_id",
    "queue",
    "op",
    "ts",
    "depth_after",
    "msg_bytes",
    "structure",
    "reason",
    "payload",
    "reply",
    "rank",
    "src_topic",
    "src_partition",
    "src_offset",
    "clock",
)


class Held:
    """A unit's records waiting for the frontier, and the frontier it has reached (kept in its state)."""

    def __init__(self, stored: dict[str, Any] | None = None):
        stored = stored or {}
        self.frontier: int | None = stored.get("f")
        self.rows: dict[str, list[Any]] | None = stored.get("h")
        self.late = 0  # records of this call that came after the frontier had passed them

    def stored(self) -> dict[str, Any]:
        out: dict[str, Any] = {"f": self.frontier}
        if self.rows:
            out["h"] = self.rows
        return out

    def __bool__(self) -> bool:
        return bool(self.rows)

    def frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows) if self.rows else None

    def release_all(self) -> Any:
        """Every held row (a batch read nothing: every partition is at its end), in order; None if none."""
        rows, self.rows = self.frame(), None
        if rows is not None and len(rows):
            self.frontier = advance(self.frontier, int(rows["ts"].max()) + 1)
        return rows

    def admit(self, pdf: Any, lateness_ms: int, order: Any) -> tuple[Any, Any]:
        """A call's rows (in order; marks among them) -> (the rows passed through, to output now or None; the
        records to apply now, in order).  The records past the frontier are kept.  ``order(frames)``: the rows
        of several frames as one, in the operator's order."""
        kinds = pdf["kind"].values
        marks = kinds == Kind.FRONTIER.value
        passing = kinds == Kind.PASS.value
        passed = pdf[passing] if passing.any() else None
        records = pdf[~(marks | passing)] if (marks | passing).any() else pdf
        if not marks.any():  # a unit no task marks (a structure not configured): nothing to wait for
            return passed, self._with_held(records, order) if self.rows else records
        before = self.frontier
        self.frontier = advance(before, frontier(pdf["ts"].values[marks].tolist(), lateness_ms))
        if before is not None:
            counted = records["kind"].values != Kind.STRUCTURE_ACTIVITY.value  # (a record once, not its copy)
            self.late += int((records["ts"].values[counted] < before).sum())
        if self.rows:
            records = self._with_held(records, order)
        now = self.frontier
        keep = records["ts"].values >= now if now is not None else np.ones(len(records), dtype=bool)
        if keep.any():
            waiting = records[keep]
            self.rows = {c: waiting[c].tolist() for c in HELD_COLUMNS}
            return passed, records[~keep]
        self.rows = None
        return passed, records

    def _with_held(self, records: Any, order: Any) -> Any:
        """The held records and ``records`` as one frame of ``HELD_COLUMNS``, in order."""
        held = self.frame()
        self.rows = None
        if not len(records):
            return held  # (kept in order)
        return order(iter([held, records[list(HELD_COLUMNS)].reset_index(drop=True)]))
