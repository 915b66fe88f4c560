"""Event-time order in the job (the rule: ``qmon.core.event_order``): the marks that tell every unit how far
each input partition has got, and what a unit holds until the frontier passes it.

The marks are made by the duplicate check's step (``streaming.slice_check``), the one step ahead of the
monitor whose Python side reads every row of a batch: each of its keys, once it has read its rows, adds one
row of kind ``FRONTIER`` per input partition it saw (``src_topic``, ``src_partition``), its ``ts`` the
greatest of that partition's it saw (activity, commands and journal status: dead letters have no time); the
pipeline copies each mark to every unit (``pipeline.copies``).  A partition's rows are spread over the step's keys by a hash, so a unit takes, per partition, the
greatest of its marks: the greatest read from it in the batch (``qmon.core.event_order.frontier``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from qmon.core.event_order import advance, frontier
from qmon.streaming.rows import ROUTED_COLUMNS, Kind

#: the kinds of row whose ``ts`` is the record's event time (an end of input's: the greatest there is)
TIMED = (Kind.ACTIVITY.value, Kind.COMMAND.value, Kind.JOURNAL.value, Kind.END.value)

#: The ``command_id`` of a ControlCommand that says "the input ends here" (``job.run`` sends one after a
#: ``--available-now`` run has read its input, and reads it in one more batch): no command, no reply; its
#: partition's mark is the greatest time there is, so a batch that reads it alone releases every record held.
END_OF_INPUT = "qmon:end-of-input"

#: a row's input partition as one number (the step's ``dsrc``): topic << SOURCE_BITS | partition
SOURCE_BITS = 32


def mark_rows(greatest: dict[int, int], encode: Callable[[dict[str, Any]], bytes]) -> list[bytes]:
    """The marks of one hand that saw ``greatest`` (input partition as ``dsrc`` -> the greatest ``ts`` seen), as
    routed rows packed by ``encode``, for no unit yet (``pipeline.copies`` gives each to every unit)."""
    mask = (1 << SOURCE_BITS) - 1
    return [
        encode(
            {
                "kind": Kind.FRONTIER.value,
                "ts": ts,
                "rank": 0,
                "src_topic": source >> SOURCE_BITS,
                "src_partition": source & mask,
                "src_offset": 0,
            }
        )
        for source, ts in greatest.items()
    ]


#: the columns of a held row kept in the unit's state: all of a routed row's but the pass-through output's
#: (a held row is a record, never a pass-through row)
HELD_COLUMNS = tuple(c for c in ROUTED_COLUMNS if not c.startswith("out_"))


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
        import numpy as np

        kinds = pdf["kind"].values
        marks = kinds == Kind.FRONTIER.value
        passing = kinds == Kind.PASS.value
        passed = pdf[passing] if passing.any() else None
        if not marks.any():  # a unit nobody marks (a structure not configured): nothing to wait for
            records = pdf[~passing] if passed is not None else pdf
            return passed, self._with_held(records, order) if self.rows else records
        before = self.frontier
        marked = pdf[marks]
        sources = zip(marked["src_topic"].tolist(), marked["src_partition"].tolist(), strict=True)
        self.frontier = advance(before, frontier(zip(sources, marked["ts"].tolist(), strict=True), lateness_ms))
        now = self.frontier
        ts = pdf["ts"].values
        record = ~(marks | passing)
        if before is not None:
            counted = record & (kinds != Kind.STRUCTURE_ACTIVITY.value)  # (a record once, not its copy)
            self.late += int((ts[counted] < before).sum())
        if self.rows:  # the held records join this call's, in order, then all are sorted out again
            records = self._with_held(pdf[record], order)
            ts, record = records["ts"].values, np.ones(len(records), dtype=bool)
        else:
            records = pdf
        keep = record & (ts >= now) if now is not None else record
        if keep.any():
            waiting = records[keep]
            self.rows = {c: waiting[c].tolist() for c in HELD_COLUMNS}
        else:
            self.rows = None
        apply = record & ~keep
        return passed, records if apply.all() else records.take(np.flatnonzero(apply))

    def _with_held(self, records: Any, order: Any) -> Any:
        """The held records and ``records`` as one frame of ``HELD_COLUMNS``, in order."""
        held = self.frame()
        self.rows = None
        if not len(records):
            return held  # (kept in order)
        return order(iter([held, records[list(HELD_COLUMNS)].reset_index(drop=True)]))
