"""The duplicate check: a record whose event_id repeats for the same queue of the same queue manager is
ignored (producers may deliver a record twice).  It runs once, ahead of the rules (``qmon.streaming.dedup``),
so the queue and structure rules never see a duplicate.  Pure.

The ids are kept by slice of ts, so that a micro-batch writes the ids of the slices its records fall in,
not every id every unit it touches remembers.  A resend carries its original's ts and event_id, so it meets
them in the same slice.  A record has one verdict, for its queue and its structure alike: the first copy
of a record (its queue manager, queue and event_id) in the slice is kept, the others dropped.  Every id of
the slice is remembered until the slice expires (``slice_expiry``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

#: ms of ts in a slice
SLICE_MS = 10_000


def slice_of(ts: int) -> int:
    """The slice a record's ts (epoch ms, >= 0) falls in."""
    return ts // SLICE_MS


def slice_expiry(slice_: int, clock_ms: int, window_ms: int) -> int:
    """When a slice's ids are forgotten, on the watermark's timeline (the broker's time less
    ``job.watermark_delay``), given the arrival clock when the slice was first seen (its records' broker
    time): ``window_ms`` after the slice's end, and never sooner than ``window_ms`` after it was first seen
    (a backlog's old records are still checked against the records that follow them)."""
    return max((slice_ + 1) * SLICE_MS, clock_ms) + window_ms


class SliceIds:
    """One slice's remembered records, the per-record rule: a record is a duplicate when the slice holds its
    key (its queue manager, queue and event_id; the step holds a 64-bit hash of them); otherwise the slice
    remembers it.  Records are given in the monitor's order, (ts, rank, partition, offset), so the first
    copy of a record is the one kept.  ``qmon.streaming.slice_check.SliceCheck`` applies it to a batch's records.
    (The step holds a 64-bit hash of the key: two records whose hashes collide, odds of about 2**-64 a pair,
    count as one.)"""

    __slots__ = ("held",)

    def __init__(self, held: Iterable[Any] = ()) -> None:
        self.held = set(held)

    def seen(self, key: Any) -> bool:
        if key in self.held:
            return True
        self.held.add(key)
        return False
