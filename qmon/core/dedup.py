"""Duplicate suppression: the event ids a queue has seen lately, compact at rest and checked as stored.

A queue remembers up to ``keep`` event ids (with their ts) seen within ``window_ms``, oldest
first, and ignores a record whose id it remembers (SPEC: producers may deliver a record twice).

A batch touches a queue's ids with a handful of records, but a queue remembers up to ``keep`` of
them (256 by default).  So the ids are never rebuilt into a dict: they stay one string, each id
followed by a separator (``Ids``), where a membership test is one substring search and a new id
one append, both in C, and their ts one machine array.  Building a dict of 256 ids and flattening
it again cost ~15 µs per touched queue per batch, more than the rules themselves for a small batch.

At rest a queue's ids are ``(joined, ts)``: the string and the array's bytes.  Exact: an id that
contains the separator (or the escape character) is escaped injectively before it is stored or
looked up, so ids never run into each other.  States written before 0.4 hold ``(ids without
separators, their lengths, their ts)`` or a plain dict (the pure reference and the tests may leave
everything as a dict); both are read.

Pure: plain str, bytes, arrays and dicts.
"""

from __future__ import annotations

from array import array
from typing import Any

SEP = "\x00"
_ESC = "\x01"


def _escaped(key: str) -> str:
    """``key`` as stored: without SEP (injective: ESC doubles, SEP becomes ESC + 2)."""
    if SEP in key or _ESC in key:
        return key.replace(_ESC, _ESC + _ESC).replace(SEP, _ESC + "\x02")
    return key


def _unescaped(stored: str) -> str:
    if _ESC not in stored:
        return stored
    out, i = [], 0
    while i < len(stored):
        ch = stored[i]
        if ch == _ESC:
            nxt = stored[i + 1]
            out.append(_ESC if nxt == _ESC else SEP)
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
    """One queue's remembered ids, oldest first.

    The ids loaded from rest stay one string, ``joined`` = SEP + id + SEP + id + SEP ...: a lookup is one
    substring search from ``start`` (the SEP before the oldest id still remembered), and forgetting the
    oldest moves ``start`` on without copying.  Ids remembered since loading are in ``fresh`` (a dict, in
    order, after the loaded ones).  ``stamps`` holds every id's ts in the same order, ``first`` the index of
    the oldest remembered one; ``loaded`` how many came from ``joined``."""

    __slots__ = ("joined", "start", "stamps", "first", "loaded", "fresh")

    def __init__(self, joined: str = SEP, stamps: array | None = None) -> None:
        self.joined, self.start = joined, 0
        self.stamps = stamps if stamps is not None else array("q")
        self.first, self.loaded = 0, len(self.stamps)
        self.fresh: dict[str, int] = {}

    @classmethod
    def load(cls, stored: Any) -> Ids:
        """From what a state holds: ``(joined, ts)``; before 0.4 ``(ids, lengths, ts)`` or a dict; or nothing."""
        if not stored:
            return cls()
        if isinstance(stored, dict):
            return cls.of(stored)
        stamps = array("q")
        if len(stored) == 2:
            stamps.frombytes(stored[1])
            return cls(stored[0], stamps)
        joined, lengths_raw, ts_raw = stored  # before 0.4
        lengths = array("I")
        lengths.frombytes(lengths_raw)
        stamps.frombytes(ts_raw)
        parts, pos = [], 0
        for n in lengths:
            parts.append(_escaped(joined[pos : pos + n]))
            pos += n
        return cls(SEP + "".join(p + SEP for p in parts), stamps)

    @classmethod
    def of(cls, recent: dict[str, int]) -> Ids:
        return cls(SEP + "".join(_escaped(k) + SEP for k in recent), array("q", recent.values()))

    def packed(self) -> tuple[str, bytes]:
        joined = self.joined[self.start :] + "".join(k + SEP for k in self.fresh)
        return (joined, self.stamps[self.first :].tobytes())

    def as_dict(self) -> dict[str, int]:
        """The ids and their ts, oldest first (for tests and inspection)."""
        joined = self.packed()[0]
        names = joined[1:-1].split(SEP) if len(joined) > 1 else []
        return {_unescaped(k): ts for k, ts in zip(names, self.stamps[self.first :], strict=True)}

    def seen(self, key: str, ts: int, window_ms: int, keep: int) -> bool:
        """True if ``key`` is remembered; otherwise remembers it and forgets the oldest beyond ``keep`` or
        older than ``ts - window_ms``."""
        stored = _escaped(key)
        if stored in self.fresh:
            return True
        if self.first < self.loaded and self.joined.find(SEP + stored + SEP, self.start) >= 0:
            return True
        self.fresh[stored] = ts
        stamps = self.stamps
        stamps.append(ts)
        horizon = ts - window_ms
        first, end = self.first, len(stamps)
        drop = max(0, end - first - keep)
        while first + drop < end and stamps[first + drop] < horizon:
            drop += 1
        for _ in range(drop):
            if first < self.loaded:
                self.start = self.joined.index(SEP, self.start + 1)
            else:
                del self.fresh[next(iter(self.fresh))]
            first += 1
        self.first = first
        return False


class Recent:
    """The duplicate check over many holders (queue states), each holder's ids loaded on first use."""

    def __init__(self, window_ms: int, keep: int) -> None:
        self.window_ms, self.keep = window_ms, keep
        self.touched: dict[int, Any] = {}  # id(holder) -> holder, since the last pack()

    def duplicate(self, holder: Any, key: str, ts: int) -> bool:
        """True if ``holder`` saw ``key`` lately; otherwise remembers it (and forgets the oldest)."""
        ids = holder.get("recent")
        if type(ids) is not Ids:
            ids = holder["recent"] = Ids.load(ids)
            self.touched[id(holder)] = holder
        return ids.seen(key, ts, self.window_ms, self.keep)

    def pack(self) -> None:
        """Pack every holder touched since the last call (before the state is stored)."""
        for holder in self.touched.values():
            ids = holder.get("recent")
            if type(ids) is Ids:
                holder["recent"] = ids.packed()
        self.touched.clear()
