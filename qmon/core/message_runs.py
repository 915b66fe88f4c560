"""Message runs: a queue's messages, oldest first, kept as runs of consecutive messages, at most ``MAX_RUNS``
runs a queue, so that what qmon keeps of a queue is bounded however many messages it holds.  Pure.

A run is ``count`` consecutive messages and what is known of them together.  Gets take messages from the front
(FIFO); a put adds one at the back, joining the newest run when the run can take it exactly, else as a run of
its own; past ``MAX_RUNS`` two neighbouring runs merge into one, and from then on that run's messages are
known only together.  Two kinds:

* **Size runs** ``[count, ready elements, staging elements]``, totals (a CQS structure's queue: the data
  elements its messages take, ``qmon.core.structures``).  A message of the newest run's size joins it.  Past
  the bound the two oldest runs merge; a get then frees the run's average (rounded down) and the run's last
  get the rest, so totals stay exact.
* **Put-time runs**: when the messages were put, event time in ms (an MQ queue, for the age of its oldest
  message: ``qmon.core.queues.status``).  Put times are large numbers, all different, and a queue can hold a
  run a message, so a queue's runs are one flat list of small numbers: ``[newest put, count, gap, span,
  count, gap, span, ...]``, oldest run first, where a run's gap is the time from the previous run's last put
  to its first put (0 for the oldest run) and its span the time from its first put to its last
  (``time_runs`` gives them as (count, first put, last put)).  A message put at the newest put joins the
  newest run, and so does one put before it (a record applied out of event-time order counts as put with the
  newest).  Past the bound the two neighbouring runs whose merged run spans the shortest time merge (the
  oldest such pair on a tie): runs stay fine where puts come in bursts and coarsen where they are spread out.
  A run's last put is exact, and so is its first until a get takes from a run made by a merge; from then on
  the run's messages are taken as put evenly from its first to its last put (its first put moves to its next
  message's place on that line, rounded down to the millisecond).  So the put time given for the oldest
  message is exact while the queue has held no more than ``MAX_RUNS`` put instants at once, and otherwise
  within its run: off by at most the run's span when it was last merged.
"""

from __future__ import annotations

from operator import add

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


# ---------------------------------------------------------------- put-time runs


def push_time(runs: list[int], ts: int) -> None:
    """Queue a message put at ``ts``.  A put at or before the newest put joins the newest run.  Past ``MAX_RUNS``
    the two neighbouring runs whose merged run spans the shortest time merge (the oldest such pair on a tie)."""
    if not runs:
        runs.extend((ts, 1, 0, 0))
        return
    newest = runs[0]
    if ts <= newest:
        runs[-3] += 1
        return
    runs[0] = ts
    runs.extend((1, ts - newest, 0))
    if len(runs) > 1 + 3 * MAX_RUNS:
        spans = runs[3::3]
        merged = list(map(add, map(add, spans, runs[5::3]), spans[1:]))  # each pair's: span, gap, span
        k = merged.index(min(merged))
        i = 1 + 3 * k
        runs[i : i + 6] = [runs[i] + runs[i + 3], runs[i + 1], merged[k]]


def take_times(runs: list[int], n: int = 1) -> None:
    """Take the ``n`` oldest messages (as many as there are, if fewer).  What is left of a run of ``c`` messages
    starts where its next message falls when the ``c`` are spread evenly over its span, rounded down to the
    millisecond (exact for a run of one instant, and at a run's last message)."""
    while n > 0 and runs:
        c = runs[1]
        if c > n:
            span = runs[3]
            runs[1], runs[3] = c - n, span - span * n // (c - 1)
            return
        n -= c
        del runs[1:4]
        if len(runs) == 1:
            runs.clear()
        else:
            runs[2] = 0


def oldest_time(runs: list[int]) -> int | None:
    """The put time of the oldest message, or None when there is none."""
    return runs[0] - sum(runs[2::3]) - sum(runs[3::3]) if runs else None


def time_runs(runs: list[int]) -> list[tuple[int, int, int]]:
    """Each run as (count, first put, last put), oldest first."""
    out: list[tuple[int, int, int]] = []
    last = oldest_time(runs)
    for i in range(1, len(runs), 3):
        assert last is not None
        first = last + runs[i + 1]
        last = first + runs[i + 2]
        out.append((runs[i], first, last))
    return out
