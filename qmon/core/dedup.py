"""Duplicate suppression: the event ids a queue has seen lately, compact at rest and checked as stored.

A queue remembers up to ``keep`` event ids (with their ts) seen within ``window_ms``, oldest
first, and ignores a record whose id it remembers: producers may deliver a record twice.

What it remembers of an id is its **digest**: the first 8 bytes of the id's BLAKE2b hash (``digest``),
whatever the id's length (a UUID is 36 characters).  Two different ids of one queue are taken for each
other only if their digests are equal: with 256 ids remembered per queue, a chance of 256 in 2^64
(1.4e-17) per lookup; two lookups a record (its queue's and its structure's), about once in 10,000 years
at 100,000 records/s.  The remembered ids are most of a unit's state (more so with UUIDs), and every
batch ships a touched unit's whole state from the JVM to Python and back: 8 bytes per id instead of the id
itself.

A batch touches a queue's ids with a handful of records, but a queue remembers up to ``keep`` of
them (256 by default).  So the ids are never rebuilt into a dict or a set: they stay one byte string
of digests, oldest first (``Ids``), where a membership test is one search in C and a new id one
append, and their ts one machine array.  Building a dict of 256 ids and flattening it again, for every
touched queue in every batch, would cost more than the rules themselves for a small batch.

An id's ts is kept as its offset from a ``base`` (the first ts the queue remembered), 4 bytes instead of 8:
12 bytes an id instead of 16, and the ids are most of what every micro-batch ships.  When a ts does not
fit (ids spanning more than 24.8 days, or a ts that far from the base) the base moves to the oldest id
remembered, and if they still do not fit the queue keeps 8-byte ts.

At rest a queue's ids are ``(digests, ts offsets, base)``, or ``(digests, ts)`` with 8-byte ts (by a
queue whose ids do not fit, and in states stored without offsets).  Checkpoints may also hold states in
two layouts that kept the ids themselves: ``(ids joined by separators, ts)`` (a str where the digests are
bytes) and ``(ids without separators, their lengths, their ts)``; and a plain dict (the pure reference
and the tests may leave everything as a dict): all are read, and their ids digested, so that a
checkpoint keeps working whichever layout its states were stored in.

Pure: plain str, bytes, arrays and dicts.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable
from hashlib import blake2b
from itertools import islice
from typing import Any

#: bytes of an id's digest
SIZE = 8

#: what 4-byte ts offsets hold (``array("i")``)
_INT32 = range(-(2**31), 2**31)

# separator and escape of the separator-joined layout (ids joined in one str), read only
_SEP = "\x00"
_ESC = "\x01"


def digest(key: str) -> bytes:
    """What a queue remembers of an event id: the first 8 bytes of its BLAKE2b hash."""
    return blake2b(key.encode("utf-8", "surrogatepass"), digest_size=SIZE).digest()


def _unescaped(stored: str) -> str:
    """An id as the separator-joined layout stores it (ESC doubled, SEP as ESC + 2) back."""
    if _ESC not in stored:
        return stored
    out, i = [], 0
    while i < len(stored):
        ch = stored[i]
        if ch == _ESC:
            nxt = stored[i + 1]
            out.append(_ESC if nxt == _ESC else _SEP)
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def evict_oldest(recent: dict[str, int], horizon: int, keep: int) -> None:
    """Drop ids older than ``horizon`` or beyond ``keep`` from an insertion-ordered dict (oldest first)."""
    while recent:
        first = next(iter(recent))
        if len(recent) > keep or recent[first] < horizon:
            del recent[first]
        else:
            break


class Ids:
    """One queue's remembered ids (their digests), oldest first.

    The digests loaded from rest stay one byte string, ``joined``, 8 bytes each: a lookup is one search
    from ``start`` (the offset of the oldest digest still remembered; a match must fall on a multiple of 8),
    and forgetting the oldest moves ``start`` on without copying.  Ids remembered since loading are in
    ``fresh`` (a dict of digests, in order, after the loaded ones).  ``stamps`` holds every id's ts in the
    same order, ``first`` the index of the oldest remembered one; ``loaded`` how many came from ``joined``.
    A ts is held as ``ts - base``: in 4 bytes (``array("i")``) from the first ts remembered, or in 8 with
    ``base`` 0 (``array("q")``: ts given so, and ids that do not fit in 4); ``base`` is None until the first."""

    __slots__ = ("joined", "start", "stamps", "first", "loaded", "fresh", "base")

    def __init__(self, joined: bytes = b"", stamps: array | None = None, base: int | None = 0) -> None:
        self.joined, self.start = joined, 0
        if stamps is None:
            stamps, base = array("i"), None
        self.stamps, self.base = stamps, base
        self.first, self.loaded = 0, len(self.stamps)
        self.fresh: dict[bytes, int] = {}

    @classmethod
    def load(cls, stored: Any) -> Ids:
        """From what a state holds: ``(digests, ts offsets, base)`` or ``(digests, ts)``; the layouts that kept
        the ids, ``(joined ids, ts)`` and ``(ids, lengths, ts)``; or a dict; or nothing."""
        if not stored:
            return cls()
        if isinstance(stored, dict):
            return cls.of(stored)
        if not stored[1]:  # no ts (in every tuple form): no ids, and a new queue's 4-byte ts from its first
            return cls()
        if len(stored) == 3 and isinstance(stored[2], int):  # (in ``(ids, lengths, ts)`` the third is bytes)
            offsets = array("i")
            offsets.frombytes(stored[1])
            return cls(bytes(stored[0]), offsets, stored[2])
        stamps = array("q")
        if len(stored) == 2:
            stamps.frombytes(stored[1])
            if isinstance(stored[0], str):  # the ids themselves, each after a separator
                joined = stored[0]
                names = joined[1:-1].split(_SEP) if len(joined) > 1 else []
                return cls(b"".join(digest(_unescaped(k)) for k in names), stamps)
            return cls(bytes(stored[0]), stamps)
        joined, lengths_raw, ts_raw = stored  # the ids without separators
        lengths = array("I")
        lengths.frombytes(lengths_raw)
        stamps.frombytes(ts_raw)
        parts, pos = [], 0
        for n in lengths:
            parts.append(digest(joined[pos : pos + n]))
            pos += n
        return cls(b"".join(parts), stamps)

    @classmethod
    def of(cls, recent: dict[str, int]) -> Ids:
        return cls(b"".join(digest(k) for k in recent), array("q", recent.values()))

    def packed(self) -> tuple[bytes, bytes] | tuple[bytes, bytes, int]:
        """``(digests, 4-byte ts offsets, base)``; ``(digests, 8-byte ts)`` when the ts do not fit in 4."""
        joined = self.joined[self.start :] + b"".join(self.fresh)
        stamps = self.stamps[self.first :]
        if not stamps:
            return (joined, b"")
        if stamps.typecode == "i":
            return (joined, stamps.tobytes(), self.base or 0)
        low = min(stamps)  # 8-byte ts (loaded so, or given as a dict): 4 if they fit from the oldest
        if max(stamps) - low in _INT32:
            return (joined, array("i", [t - low for t in stamps]).tobytes(), low)
        return (joined, stamps.tobytes())

    def as_dict(self) -> dict[bytes, int]:
        """The digests and their ts, oldest first (for tests and inspection)."""
        joined = self.packed()[0]
        names = [joined[i : i + SIZE] for i in range(0, len(joined), SIZE)]
        base = self.base or 0
        return dict(zip(names, (s + base for s in self.stamps[self.first :]), strict=True))

    def _append(self, stamps: list[int]) -> int:
        """Remember ``stamps`` (ts, after the others) as offsets from ``base`` (set by the first); returns the
        base they are held from (0 for 8-byte ts)."""
        base = self.base
        if base is None:
            base = self.base = stamps[0]
        held = self.stamps
        if held.typecode == "q":  # 8-byte ts, base 0
            held.extend(stamps)
            return 0
        offsets = [t - base for t in stamps]
        if not (min(offsets) in _INT32 and max(offsets) in _INT32):
            return self._rebase(stamps)
        held.extend(offsets)
        return base

    def _rebase(self, stamps: list[int]) -> int:
        """Hold every remembered ts and ``stamps`` from a new base, the oldest ts: in 4 bytes if they fit,
        else in 8 (base 0).  The forgotten ids' ts are dropped (``first`` becomes 0)."""
        base = self.base or 0
        ts = [s + base for s in self.stamps[self.first :]] + stamps
        low, high = min(ts), max(ts)
        if high - low in _INT32:
            self.stamps, self.base = array("i", [t - low for t in ts]), low
        else:
            self.stamps, self.base = array("q", ts), 0
        self.loaded = max(0, self.loaded - self.first)
        self.first = 0
        return self.base

    def _stored(self, d: bytes) -> bool:
        if self.first >= self.loaded:
            return False
        joined, pos = self.joined, self.joined.find(d, self.start)
        while pos >= 0 and pos % SIZE:  # a match across two digests: look on
            pos = joined.find(d, pos + 1)
        return pos >= 0

    def seen(self, key: str, ts: int, window_ms: int, keep: int) -> bool:
        """True if ``key`` is remembered; otherwise remembers it and forgets the oldest beyond ``keep`` or
        older than ``ts - window_ms``."""
        return self._seen(digest(key), ts, window_ms, keep)

    def seen_many(self, keys: list[str], stamps: list[int], window_ms: int, keep: int) -> list[bool]:
        """``seen`` for each key in turn: exactly its answers, and what is remembered after.

        The common case in bulk: ids all new (none remembered, none twice in the batch) in ts order are
        appended at once, and the oldest forgotten once.  Why once is exact: ``seen`` forgets from the
        oldest while an id is beyond ``keep`` or older than the horizon (ts - window); with the horizons in
        order, forgetting up to the last record's horizon from where ``keep`` puts the oldest is what the
        records' passes one by one come to (each pass stops at the first id at or after its horizon, which
        the next, later horizon passes only if the first would have), and none of the batch's ids is
        looked up in between.  Anything else (a redelivery, ts out of order) is checked one by one."""
        ds = [digest(k) for k in keys]
        n = len(ds)
        if n < 2 or keep < 1 or window_ms < 0 or not self._all_new(ds, stamps):
            return [self._seen(d, ts, window_ms, keep) for d, ts in zip(ds, stamps, strict=True)]
        fresh = self.fresh
        fresh.update(zip(ds, stamps, strict=True))
        base = self._append(stamps)
        all_stamps = self.stamps
        first, end = self.first, len(all_stamps)
        horizon = stamps[-1] - window_ms - base
        oldest = max(first, end - keep)
        while oldest < end and all_stamps[oldest] < horizon:
            oldest += 1
        self._forget(oldest - first)
        return [False] * n

    def _all_new(self, ds: list[bytes], stamps: list[int]) -> bool:
        """The digests are distinct, none is remembered, and their ts are in order."""
        if len(set(ds)) != len(ds) or any(a > b for a, b in zip(stamps, stamps[1:], strict=False)):
            return False
        fresh = self.fresh
        return not any(d in fresh for d in ds) and not any(self._stored(d) for d in ds)

    def _forget(self, drop: int) -> None:
        """Forget the ``drop`` oldest ids: the loaded ones first (``start`` moves on), then ``fresh``'s."""
        if not drop:
            return
        first = self.first
        loaded_dropped = min(drop, max(0, self.loaded - first))
        self.start += SIZE * loaded_dropped
        fresh_dropped = drop - loaded_dropped
        if fresh_dropped > 8:  # (deleting a dict's first keys one by one rescans the deleted slots)
            self.fresh = dict(islice(self.fresh.items(), fresh_dropped, None))
        else:
            for _ in range(fresh_dropped):
                del self.fresh[next(iter(self.fresh))]
        self.first = first + drop

    def _seen(self, d: bytes, ts: int, window_ms: int, keep: int) -> bool:
        if d in self.fresh or self._stored(d):
            return True
        self.fresh[d] = ts
        base = self._append([ts])
        stamps = self.stamps
        horizon = ts - window_ms - base
        first, end = self.first, len(stamps)
        drop = max(0, end - first - keep)
        while first + drop < end and stamps[first + drop] < horizon:
            drop += 1
        self._forget(drop)
        return False


class Recent:
    """The duplicate check over many holders (queue states), each holder's ids loaded on first use."""

    def __init__(self, window_ms: int, keep: int) -> None:
        self.window_ms, self.keep = window_ms, keep
        #: ``keep`` 0: no check here (``monitor.dedup_state: slice``: a step ahead of the monitor checks)
        self.off = keep < 1
        self.touched: dict[int, Any] = {}  # id(holder) -> holder, since the last pack()

    def duplicate(self, holder: Any, key: str, ts: int) -> bool:
        """True if ``holder`` saw ``key`` lately; otherwise remembers it (and forgets the oldest)."""
        if self.off:
            return False
        ids = holder.get("recent")
        if type(ids) is not Ids:
            ids = holder["recent"] = Ids.load(ids)
            self.touched[id(holder)] = holder
        return ids.seen(key, ts, self.window_ms, self.keep)

    def duplicates(self, holder: Any, keys: list[str], stamps: list[int]) -> list[bool]:
        """``duplicate`` for each key in turn, in bulk (``Ids.seen_many``)."""
        if self.off:
            return [False] * len(keys)
        ids = holder.get("recent")
        if type(ids) is not Ids:
            ids = holder["recent"] = Ids.load(ids)
            self.touched[id(holder)] = holder
        return ids.seen_many(keys, stamps, self.window_ms, self.keep)

    def screen(self, recs: list[Any], holder: Callable[[Any], Any], key: Callable[[Any], str]) -> list[bool]:
        """``duplicate`` for records (``queue``, ``ts``) applied in turn, each queue's records at once:
        ``holder(rec)`` is the state holding the ids of ``rec``'s queue (given its first record), ``key(rec)``
        what the queue remembers of ``rec``."""
        if self.off:
            return [False] * len(recs)
        by_queue: dict[str, list[int]] = {}
        for i, rec in enumerate(recs):
            by_queue.setdefault(rec.queue, []).append(i)
        dups = [False] * len(recs)
        for idx in by_queue.values():
            found = self.duplicates(holder(recs[idx[0]]), [key(recs[i]) for i in idx], [recs[i].ts for i in idx])
            for i, dup in zip(idx, found, strict=True):
                if dup:
                    dups[i] = True
        return dups

    def pack(self) -> None:
        """Pack every holder touched since the last call (before the state is stored)."""
        for holder in self.touched.values():
            ids = holder.get("recent")
            if type(ids) is Ids:
                holder["recent"] = ids.packed()
        self.touched.clear()


# ---------------------------------------------------------------- monitor.dedup_state: slice
#
# The ids kept apart from the monitor, by slice of ts: a duplicate check of its own, ahead of the monitor
# (``qmon.streaming.dedup``), so that a micro-batch writes the ids of the slices its records fall in, not
# every id every touched unit remembers.  A resend carries its original's ts and event_id, so it meets
# them in the same slice.  A record has one verdict, for its queue and its structure alike: the first copy
# of a record (its queue manager, queue and event_id) in the slice is kept, the others dropped.  Every id of
# the slice is remembered (no ``dedup_max``) until the slice expires (``slice_expiry``).

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
    copy of a record is the one kept.  ``qmon.streaming.slice_check.fresh_rows`` applies it to a batch at once.
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
