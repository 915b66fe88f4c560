"""What the operator stores per queue-manager shard.  Pure."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from qmon.core.forecaster import ForecastState
from qmon.core.journals import JournalState
from qmon.core.state_version import STATE_VERSION, StateVersionError


class QueueState(TypedDict):
    depth: int
    svc_timer_start: int | None  # MQ's service timer: when it started (event time, ms), None when OFF
    svc_timer_clock: int | None  # the same instant on the arrival clock (for the stall deadline)
    attrs: dict[str, Any]  # QSVCIEV (current enabled event), QSVCINT, MAXDEPTH, QDEPTHHI/LO, QDP*EV
    defined: bool  # DEFINE QLOCAL was seen (so a second DEFINE needs REPLACE)
    reset_ts: int | None
    high_depth: int
    enq: int
    deq: int
    last_ts: int  # newest event time seen (for TTL)
    stall_alert_id: str | None  # alert_id of the firing QUEUE_STALLED episode
    # [event time, arrival clock] since the queue has been served in time while a stall fires (the hold)
    stall_ok: list[int] | None
    forecast: ForecastState | None  # the fill forecasts' samples and episodes (None: forecasts are off)
    # what DISPLAY QSTATUS shows beyond the depth (``qmon.core.queues.status``); ``unseen`` and the runs' counts
    # add up to ``depth``
    unseen: int  # messages at the head of the queue whose puts qmon did not see (the oldest's age is unknown)
    puts: list[int]  # the others' put times, oldest first, as put-time runs (``qmon.core.message_runs``)
    last_put: int | None  # LPUTDATE and LPUTTIME: event time of the newest put seen (None: none seen)
    last_get: int | None  # LGETDATE and LGETTIME: event time of the newest get seen (None: none seen)
    # a shared queue's (kept in its queue-sharing group's shard, ``qmon.core.sharing``): the member whose put, get
    # or START qmon applied last, whose PERFMEV the queue's events follow and which an alert raised by the clock
    # names; None for a queue manager's own queues and for a shared queue before its first record
    member: str | None


class ShardState(TypedDict):
    """One shard of a queue manager's queues, or of a queue-sharing group's shared queues: the value the operator
    stores per (qmgr or group, bucket)."""

    v: int  # STATE_VERSION
    perfmev: str | None  # PERFMEV set by ALTER QMGR (None: the configured default); unused in a group's shard
    # a queue-sharing group's shard: the PERFMEV each member's ALTER QMGR set (absent: the configured default)
    member_perfmev: NotRequired[dict[str, str]]
    queues: dict[str, QueueState]
    interest: NotRequired[dict[str, list[str]]]  # registrations of interest: queue or generic name -> sorted clients
    # every queue of the queue manager that DEFINE or ALTER QLOCAL named, in every shard (what LIKE copies):
    # name -> {"defined": whether a DEFINE was applied, "attrs": the attributes given}
    defs: NotRequired[dict[str, dict[str, Any]]]
    journals: NotRequired[dict[str, JournalState]]  # LIB/AMQxJRN -> its state
    # queue -> [last_ts, its next deadline on the arrival clock or None, forgettable]: what the shard-wide
    # passes (the Spark timer, the timer's firing, TTL expiry) need of a queue, so they decode only the
    # queues concerned (``qmon.core.lazy``); kept for the queues used at every ``pack``
    index: NotRequired[dict[str, list[Any]]]
    # the last snapshot's arrival clock, the queues used and forgotten since (``snapshot``)
    snap: NotRequired[dict[str, Any]]


__all__ = ["STATE_VERSION", "QueueState", "ShardState", "StateVersionError"]
