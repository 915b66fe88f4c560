"""What the operator stores per queue-manager shard, and how older stored versions are read.  Pure."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from qmon.core.journals import JournalState
from qmon.core.journals import migrate as migrate_journals

#: the version of a shard's state (``ShardState``); older versions are migrated when loaded (``migrate``).
#: 1: the first layout.  2: ``svc_timer_start``, ``svc_timer_clock``, ``stall_alert_id`` (``timer``,
#: ``timer_clock``, ``stall`` in 1) and the journals' ``*_alert_id`` fields.  3: the ``index``.  4: nothing for the
#: rules to migrate: the operator stores each queue by position (``qmon.streaming.state``), which a build reading
#: version 3 would take for a map; this number makes such a build refuse it.
STATE_VERSION = 4


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
    recent: Any  # event_id -> ts, for duplicate suppression (packed at rest: qmon.core.dedup)
    stall_alert_id: str | None  # alert_id of the firing QUEUE_STALLED episode
    # [event time, arrival clock] since the queue has been served in time while a stall fires (the hold);
    # absent in states stored without a hold (read with ``.get``)
    stall_ok: NotRequired[list[int] | None]


class ShardState(TypedDict):
    """One shard of a queue manager's queues: the value the operator stores per (qmgr, bucket)."""

    v: int  # STATE_VERSION
    perfmev: str | None  # PERFMEV set by ALTER QMGR (None: the configured default)
    queues: dict[str, QueueState]
    interest: NotRequired[dict[str, list[str]]]  # registrations of interest: queue or generic name -> sorted clients
    journals: NotRequired[dict[str, JournalState]]  # LIB/AMQxJRN -> its state
    # queue -> [last_ts, its next deadline on the arrival clock or None, forgettable]: what the shard-wide
    # passes (the Spark timer, the timer's firing, TTL expiry) need of a queue, so they decode only the
    # queues concerned (``qmon.core.lazy``); kept for the queues used at every ``pack``
    index: NotRequired[dict[str, list[Any]]]
    # the last snapshot's arrival clock, the queues used and forgotten since (``snapshot``)
    snap: NotRequired[dict[str, Any]]


def migrate(state: dict[str, Any]) -> ShardState:
    """A shard's state of a lower version, brought to ``STATE_VERSION`` in place (a newer one is refused)."""
    version = state.get("v")
    if not isinstance(version, int) or version > STATE_VERSION:
        raise ValueError(f"queue state has version {version!r}, this qmon reads up to {STATE_VERSION}")
    if version < 2:
        for q in state["queues"].values():  # (a version 1 or 2 shard holds its queues as plain maps)
            q["svc_timer_start"] = q.pop("timer")
            q["svc_timer_clock"] = q.pop("timer_clock")
            q["stall_alert_id"] = q.pop("stall")
        migrate_journals(state.get("journals") or {})
    if version < 3:
        state.pop("index", None)  # built by the monitor from every queue, once
    state["v"] = STATE_VERSION
    return state  # type: ignore[return-value]
