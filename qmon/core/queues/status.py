"""What DISPLAY QSTATUS shows of a queue beyond its depth, from the puts and gets qmon sees: the age of the
oldest message (MSGAGE), the last put (LPUTDATE, LPUTTIME) and the last get (LGETDATE, LGETTIME) (IBM MQ,
*DISPLAY QSTATUS*).  Pure.

* The oldest message's age comes from the puts' times, taken off FIFO by the gets, kept as put-time runs
  (``qmon.core.message_runs``: exact while a queue holds no more than ``MAX_RUNS`` put instants, within its
  run beyond).
* Messages whose puts qmon did not see (a record's ``depth_after`` shows more messages than it counts: qmon
  started against a running queue manager, or missed records) are counted as the oldest (``unseen``): the
  age is unknown, None, until as many gets have taken them.  A depth below qmon's count (gets it did not see,
  messages expired) takes the oldest off.  So ``unseen`` and the runs' counts add up to the depth.
* The last put and get are the newest event times of the puts and gets qmon saw (a record applied out of
  event-time order does not move them back), None until it sees one.  Failed operations count for
  nothing.  A START keeps them, since the puts and gets did happen (MQ's own are blank after a queue-manager
  restart until the next put or get).
"""

from __future__ import annotations

from qmon.core.message_runs import oldest_time, push_time, take_times
from qmon.core.queues.state import QueueState


def oldest_put(q: QueueState) -> int | None:
    """The put time (event time, ms) of the oldest message on ``q``; None when it is empty or when the puts of
    its oldest messages were not seen."""
    return None if q["unseen"] else oldest_time(q["puts"])


def msg_age(q: QueueState, now_ts: int) -> int | None:
    """MSGAGE at ``now_ts``: the oldest message's age in whole seconds (never below 0), or None (``oldest_put``)."""
    put = oldest_put(q)
    return None if put is None else max(0, now_ts - put) // 1000


def recount(q: QueueState, have: int, want: int) -> None:
    """``q``'s messages go from ``have`` to ``want``: the ones more are unseen puts (the oldest), the ones fewer
    the oldest gone."""
    if want > have:
        q["unseen"] += want - have
    elif want < have:
        gone = have - want
        unseen = q["unseen"]
        if unseen >= gone:
            q["unseen"] = unseen - gone
        else:
            q["unseen"] = 0
            take_times(q["puts"], gone - unseen)


def on_put(q: QueueState, before: int, after: int, ts: int) -> None:
    """A put at ``ts`` that found ``before`` messages and left ``after`` (``q["depth"]`` not yet changed)."""
    if before != q["depth"]:
        recount(q, q["depth"], before)
    push_time(q["puts"], ts)
    if after != before + 1:
        recount(q, before + 1, after)
    lput = q["last_put"]
    if lput is None or ts > lput:
        q["last_put"] = ts


def on_get(q: QueueState, before: int, after: int, ts: int) -> None:
    """A get at ``ts`` that found ``before`` messages and left ``after`` (``q["depth"]`` not yet changed)."""
    if before != q["depth"]:
        recount(q, q["depth"], before)
    if before > 0:
        if q["unseen"]:
            q["unseen"] -= 1
        else:
            take_times(q["puts"])
    if after != max(0, before - 1):
        recount(q, max(0, before - 1), after)
    lget = q["last_get"]
    if lget is None or ts > lget:
        q["last_get"] = ts
