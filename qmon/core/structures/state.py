"""What the operator stores per structure, and how older stored versions are read.  Pure."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from qmon.core.structures.data_elements import STAGING_TYPES, queue_type, staging_queue

#: the version of a structure's state (``StructureState``); older versions are migrated when loaded (``migrate``).
#: 1: no per-queue FIFO.  2: FIFO runs, ``above``, ``clear``.  3: the firing alerts' ids in ``*_alert_id``
#: (were ``mode``, ``full``, ``near``, ``ovf_full``).  4: nothing for the rules to migrate: the operator stores
#: each queue's share by position (``qmon.streaming.state``), which a build reading version 3 would take for
#: a map; this number makes such a build refuse it.
STATE_VERSION = 4
#: the condition (hold key in ``clear``) -> the state field with the id of its firing alert
ALERT_ID_OF = {
    "mode": "mode_alert_id",
    "full": "full_alert_id",
    "near": "near_alert_id",
    "ovf_full": "ovf_full_alert_id",
}


class StructureQueueState(TypedDict):
    """One queue's share of a structure."""

    msgs: int  # messages on the queue
    el: int  # data elements they hold (ready and staging parts, in whichever structure holds them)
    ovf: bool  # the queue is in the overflow structure (or approved with none: its puts are rejected)
    rej: bool  # a put was rejected since it was approved (one OVERFLOW_PUT_REJECTED per queue)
    fifo: list[list[int]]  # its messages oldest first, as runs [count, ready elements, staging elements]
    recent: NotRequired[Any]  # remembered event ids (qmon.core.dedup; packed at rest)


class StructureState(TypedDict):
    """One primary structure (and its overflow structure): the value the operator stores per structure."""

    snap: NotRequired[dict[str, Any]]  # the last snapshot's arrival clock, and whether it changed since

    v: int  # STATE_VERSION
    size_kb: int  # current size (INITSIZE, then as ALTERed)
    used: int  # data elements in use in the primary
    ovf_used: int  # data elements in use in the overflow structure
    queues: dict[str, StructureQueueState]  # (each stored encoded by the operator: qmon.core.lazy)
    mode_alert_id: str | None  # the overflow-mode episode (OVERFLOW_MODE_ENTERED), if in overflow mode
    full_alert_id: str | None  # the firing STRUCTURE_FULL episode, if any
    near_alert_id: str | None  # the firing STRUCTURE_NEAR_FULL episode, if any
    ovf_full_alert_id: str | None  # the firing OVERFLOW_STRUCTURE_FULL episode, if any
    next_scan: int | None  # event time of the next overflow-threshold scan (in overflow mode)
    last_ts: int | None  # newest event time seen
    last_clock: int | None  # the arrival clock at that time
    recent: dict[str, int]  # (unused since state 2: ids are remembered per queue)
    rejected: int  # puts rejected in this overflow-mode episode
    unknown: bool  # activity named this structure but it is not configured (warned once)
    above: bool  # usage is at or above OVFLWMAX (selection runs when it is reached from below)
    clear: dict[str, int]  # condition -> event time since when its clear condition has held (the hold)


def migrate(state: dict[str, Any]) -> StructureState:
    """A structure's state of a lower version, brought to ``STATE_VERSION`` in place (a newer one is refused)."""
    version = state.get("v", 1)
    if not isinstance(version, int) or version > STATE_VERSION:
        raise ValueError(f"structure state has version {version!r}, this qmon reads up to {STATE_VERSION}")
    if version < 2:
        _migrate_1(state)
    if version < 3:
        for old, new in ALERT_ID_OF.items():
            state[new] = state.pop(old, None)
    state["v"] = STATE_VERSION
    return state  # type: ignore[return-value]


def _migrate_1(state: dict[str, Any]) -> None:
    """State version 1 (no per-queue FIFO, no ``above``) to 2: a queue's messages become one run of its
    totals, so its gets free the average and the last one the rest.  Version 1 did not link a long
    message's staging part to its ready part, so a ready queue's run takes all of its staging queue's
    elements: draining the ready queue frees them, and usage returns to 0 once everything is got."""
    queues = state["queues"]
    for name, q in sorted(queues.items(), key=lambda kv: queue_type(kv[0]) in STAGING_TYPES):
        if "fifo" in q:
            continue
        staging = staging_queue(name)
        sq = queues.get(staging) if staging else None
        if q["msgs"] > 0 and sq is not None and "fifo" not in sq and sq["el"] > 0:
            q["fifo"] = [[q["msgs"], q["el"], sq["el"]]]
            sq["fifo"] = []  # its elements are freed with the ready queue's messages
        else:
            q["fifo"] = [[q["msgs"], q["el"], 0]] if q["msgs"] > 0 else []
    state.setdefault("above", False)
    state.setdefault("clear", {})
