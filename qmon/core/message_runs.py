"""Message runs: a queue's messages, oldest first, kept as runs of consecutive messages, at most ``MAX_RUNS``
runs a queue, so that what qmon keeps of a queue is bounded however many messages it holds.  Pure.

A run is a list ``[count, a, b]``: ``count`` consecutive messages and two figures about them.  Gets take
messages from the front (FIFO); a put adds one at the back, joining the newest run when the run can take it
exactly, else as a run of its own; past ``MAX_RUNS`` two neighbouring runs merge into one, and from then on
that run's messages are known only together.

* **Size runs** ``[count, ready elements, staging elements]``, totals (a CQS structure's queue: the data
  elements its messages take, ``qmon.core.structures``).  A message of the newest run's size joins it.  Past
  the bound the two oldest runs merge; a get then frees the run's average (rounded down) and the run's last
  get the rest, so totals stay exact.
"""

from __future__ import annotations

#: runs kept per queue
MAX_RUNS = 64


# ---------------------------------------------------------------- size runs


def push_size(runs: list[list[int]], ready: int, staging: int) -> None:
    """Queue a message of ``ready`` + ``staging`` elements.  A message of the newest run's size joins it.  Past
    ``MAX_RUNS`` the two oldest runs merge: their messages then free the run's average, the last one the rest
    (totals stay exact)."""
    if runs:
        last = runs[-1]
        c, r, s = last
        if r == ready * c and s == staging * c:
            last[0], last[1], last[2] = c + 1, r + ready, s + staging
            return
    runs.append([1, ready, staging])
    if len(runs) > MAX_RUNS:
        (c1, r1, s1), (c2, r2, s2) = runs[0], runs[1]
        runs[0:2] = [[c1 + c2, r1 + r2, s1 + s2]]


def take_size(runs: list[list[int]], want: tuple[int, int] | None = None) -> tuple[int, int] | None:
    """Take the oldest message (or the oldest of exactly ``want`` = (ready, staging) elements, if one is
    queued); returns its (ready, staging) elements, or None when nothing is queued."""
    if not runs:
        return None
    i = 0
    if want is not None:
        for j, (c, r, s) in enumerate(runs):
            if r == want[0] * c and s == want[1] * c:
                i = j
                break
    run = runs[i]
    c, r, s = run
    if c == 1:
        del runs[i]
        return r, s
    fr, fs = r // c, s // c
    run[0], run[1], run[2] = c - 1, r - fr, s - fs
    return fr, fs
