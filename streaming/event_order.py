"""Event-time order in the job (the rule: ``qmon.core.event_order``): the marks that tell every unit how far
each input partition has got, and what a unit holds until the frontier passes it.

The marks are made by the duplicate check's step (``streaming.slice_check``), the one step ahead of the
monitor whose Python side reads every row of a batch: each of its keys, once it has read its rows, adds one
row of kind ``FRONTIER`` per input partition it saw (``src_topic``, ``src_partition``), its ``ts`` the
greatest of that partition's it saw (activity, commands and journal status: dead letters have no time), or
``NO_TIME`` when it saw the partition's last offset of a run that stops at known offsets (``--available-now``:
a partition read to its end holds nothing back); the pipeline copies each mark to every unit
(``route.copies``).  A partition's rows are spread over the step's keys by a hash, so a unit takes, per
partition, the greatest of its marks: the greatest read from it in the batch
(``qmon.core.event_order.frontier``).  A batch whose every partition ended releases everything held.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from qmon.core.event_order import NO_TIME, advance, frontier
from qmon.streaming.rows import ROUTED_COLUMNS, Kind

#: the kinds of row whose ``ts`` is the record's event time (a dead letter has none)
TIMED = (Kind.ACTIVITY.value, Kind.COMMAND.value, Kind.JOURNAL.value)

#: the step's ``dts`` of a row with no time
UNTIMED = -(2**63)

#: a row's input partition as one number (the step's ``dsrc``): topic << SOURCE_BITS | partition
SOURCE_BITS = 32


def source(topic: int, partition: int) -> int:
    """An input partition as one number (``topic``: its ``src_topic``)."""
    return (topic << SOURCE_BITS) | partition


def mark_rows(greatest: dict[int, int], encode: Callable[[dict[str, Any]], bytes]) -> list[bytes]:
    """The marks of one hand that saw ``greatest`` (input partition as ``dsrc`` -> the greatest ``ts`` seen, or
    ``NO_TIME`` for a partition it saw read to its end), as routed rows packed by ``encode``, for no unit yet
    (``route.copies`` gives each to every unit)."""
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
        self.frontier: int | None = stored.get("frontier")
        self.rows: dict[str, list[Any]] | None = stored.get("held")
        self.late = 0  # records of this call that came after the frontier had passed them
        self.ended = False  # this call read the end of the input

    def stored(self) -> dict[str, Any]:
        out: dict[str, Any] = {"frontier": self.frontier}
        if self.rows:
            out["held"] = self.rows
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
        batch = frontier(zip(sources, marked["ts"].tolist(), strict=True), lateness_ms)
        # the end of the input (every partition the batch read ended with it): everything held is applied
        self.ended = batch == NO_TIME
        if not self.ended:
            self.frontier = advance(before, batch)
        now = self.frontier
        ts = pdf["ts"].values
        record = ~(marks | passing)
        if before is not None:
            counted = record & (kinds != Kind.STRUCTURE_COPY.value)  # (a record once, not its copy)
            self.late += int((ts[counted] < before).sum())
        if self.rows:  # the held records join this call's, in order, then all are sorted out again
            records = self._with_held(pdf[record], order)
            ts, record = records["ts"].values, np.ones(len(records), dtype=bool)
        else:
            records = pdf
        if self.ended:
            keep = np.zeros(len(records), dtype=bool)
            if record.any():
                self.frontier = advance(before, int(ts[record].max()) + 1)
        else:
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
