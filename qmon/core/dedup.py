"""Duplicate suppression: the event ids a queue has seen lately, compact at rest.

A queue remembers up to ``keep`` event ids (with their ts) seen within ``window_ms``, oldest
first, and ignores a record whose id it remembers (SPEC: producers may deliver a record twice).

The Spark operator keeps a whole shard's state as one pickled value, so every micro-batch loads
and saves it.  Stored as dicts, the remembered ids cost pickling time in *every* batch in
proportion to *all* of them (10,000 queues × 256 ids is 2.5 million entries).  So at rest a
queue's ids are packed into three flat values (the ids joined in one string, their lengths and
their ts as machine arrays), which pickle as a few memory copies; a queue's ids are unpacked when
a record for it arrives, and only the queues a batch touched are packed again.

Pure: plain str, bytes and dicts; the pure reference and the tests may leave everything unpacked.
"""

from __future__ import annotations

from array import array
from typing import Any

Packed = tuple[str, bytes, bytes]


def evict_oldest(recent: dict[str, int], horizon: int, keep: int) -> None:
    """Drop ids older than ``horizon`` or beyond ``keep`` from an insertion-ordered dict (oldest first)."""
    while recent:
        first = next(iter(recent))
        if len(recent) > keep or recent[first] < horizon:
            del recent[first]
        else:
            break


def pack(recent: dict[str, int]) -> Packed:
    """The ids in order, as (joined ids, their lengths, their ts)."""
    return ("".join(recent), array("I", map(len, recent)).tobytes(), array("q", recent.values()).tobytes())


def unpack(packed: Packed) -> dict[str, int]:
    joined, lengths_raw, ts_raw = packed
    lengths, stamps = array("I"), array("q")
    lengths.frombytes(lengths_raw)
    stamps.frombytes(ts_raw)
    out: dict[str, int] = {}
    pos = 0
    for n, ts in zip(lengths, stamps, strict=True):
        out[joined[pos : pos + n]] = ts
        pos += n
    return out


class Recent:
    """The duplicate check over many holders (queue states), unpacking each on first use."""

    def __init__(self, window_ms: int, keep: int) -> None:
        self.window_ms, self.keep = window_ms, keep
        self.touched: dict[int, Any] = {}  # id(holder) -> holder, since the last pack()

    def duplicate(self, holder: Any, key: str, ts: int) -> bool:
        """True if ``holder`` saw ``key`` lately; otherwise remembers it (and forgets the oldest)."""
        recent = holder.get("recent")
        if type(recent) is not dict:
            recent = holder["recent"] = unpack(recent) if recent else {}
        self.touched[id(holder)] = holder
        if key in recent:
            return True
        recent[key] = ts
        evict_oldest(recent, ts - self.window_ms, self.keep)
        return False

    def pack(self) -> None:
        """Pack every holder touched since the last call (before the state is stored)."""
        for holder in self.touched.values():
            if type(holder.get("recent")) is dict:
                holder["recent"] = pack(holder["recent"])
        self.touched.clear()
