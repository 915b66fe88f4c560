"""Data elements and long messages: what a message takes of a structure, and the order gets free it.

A structure of K KB holds 2·K data elements of 512 bytes; a message takes ceil(bytes / 512) elements, at
least 1.  IMS queue names begin with their queue-type digit; a message longer than ``lgmsgsz`` puts its
first ``lgmsgsz`` bytes on its ready queue and the rest on the staging queue (1→2, 5→6) (IMS shared
queues, conference presentation).  Pure.
"""

from __future__ import annotations

ELEMENT_BYTES = 512

#: runs of message sizes kept per queue (see fifo_push); bounded state per queue
FIFO_MAX_RUNS = 64

#: IMS queue types (IMS, *IMS Shared Queues Functions and Facilities*): first character of the queue name.
QUEUE_TYPES = {
    "1": "transaction ready",
    "2": "transaction staging",
    "3": "suspend",
    "4": "serial",
    "5": "LTERM ready",
    "6": "LTERM staging",
    "7": "APPC ready",
    "8": "remote ready",
    "9": "OTMA ready",
}
STAGING_OF = {"1": "2", "5": "6"}
STAGING_TYPES = frozenset({"2", "6"})


def queue_type(queue: str) -> str | None:
    """The IMS queue-type digit of ``queue``, or None for a name that is not an IMS queue name."""
    return queue[0] if queue and queue[0] in QUEUE_TYPES else None


def staging_queue(queue: str) -> str | None:
    """The staging queue that holds the rest of a long message put to ``queue`` (1→2, 5→6)."""
    t = queue_type(queue)
    return STAGING_OF[t] + queue[1:] if t in STAGING_OF else None


def elements(nbytes: int | None) -> int:
    """Data elements a message of ``nbytes`` takes: ceil(bytes / 512), at least 1."""
    return max(1, -(-int(nbytes or 0) // ELEMENT_BYTES))


def at_or_above(used: int, capacity: int, pct: int | float) -> bool:
    """``used / capacity >= pct %`` on exact counts (69.995 % is below 70 %)."""
    return used * 100 >= pct * capacity


def fifo_push(fifo: list[list[int]], ready: int, staging: int) -> None:
    """Queue a message of ``ready`` + ``staging`` elements.  Runs ``[count, ready, staging]`` hold
    totals; a message of the newest run's size joins it.  Past FIFO_MAX_RUNS the two oldest runs
    merge: their messages then free the run's average, the last one the rest (totals stay exact)."""
    if fifo:
        last = fifo[-1]
        c, r, s = last
        if r == ready * c and s == staging * c:
            last[0], last[1], last[2] = c + 1, r + ready, s + staging
            return
    fifo.append([1, ready, staging])
    if len(fifo) > FIFO_MAX_RUNS:
        (c1, r1, s1), (c2, r2, s2) = fifo[0], fifo[1]
        fifo[0:2] = [[c1 + c2, r1 + r2, s1 + s2]]


def fifo_take(fifo: list[list[int]], want: tuple[int, int] | None = None) -> tuple[int, int] | None:
    """Take the oldest message (or the oldest of exactly ``want`` = (ready, staging) elements, if
    one is queued); returns its (ready, staging) elements, or None when nothing is queued."""
    if not fifo:
        return None
    i = 0
    if want is not None:
        for j, (c, r, s) in enumerate(fifo):
            if r == want[0] * c and s == want[1] * c:
                i = j
                break
    run = fifo[i]
    c, r, s = run
    if c == 1:
        del fifo[i]
        return r, s
    fr, fs = r // c, s // c
    run[0], run[1], run[2] = c - 1, r - fr, s - fs
    return fr, fs


def usage_pct(used: int, capacity: int) -> float:
    """Usage for display (rounded); decisions use ``at_or_above`` on exact counts."""
    return min(100.0, round(100.0 * used / capacity, 2)) if capacity > 0 else 100.0
