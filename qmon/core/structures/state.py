"""What the operator stores per structure.  Pure."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from qmon.core.forecaster import ForecastState
from qmon.core.state_version import STATE_VERSION, StateVersionError

#: the condition (hold key in ``clear``) -> the state field with the id of its firing alert
ALERT_ID_OF = {
    "mode": "mode_alert_id",
    "full": "full_alert_id",
    "near": "near_alert_id",
    "ovf_full": "ovf_full_alert_id",
}


class StructureQueueState(TypedDict):
    """One queue's share of a structure."""

    messages: int  # messages on the queue
    elements: int  # data elements they hold (ready and staging parts, in whichever structure holds them)
    in_overflow: bool  # the queue is in the overflow structure (or approved with none: its puts are rejected)
    put_rejected: bool  # a put was rejected since it was approved (one OVERFLOW_PUT_REJECTED per queue)
    fifo: list[list[int]]  # its messages oldest first, as runs [count, ready elements, staging elements]


class StructureState(TypedDict):
    """One primary structure (and its overflow structure): the value the operator stores per structure."""

    snap: NotRequired[dict[str, Any]]  # the last snapshot's arrival clock, and whether it changed since

    v: int  # STATE_VERSION
    size_kb: int  # current size (INITSIZE, then as ALTERed)
    used: int  # data elements in use in the primary
    overflow_used: int  # data elements in use in the overflow structure
    queues: dict[str, StructureQueueState]  # (each stored encoded by the operator: qmon.core.lazy)
    mode_alert_id: str | None  # the overflow-mode episode (OVERFLOW_MODE_ENTERED), if in overflow mode
    full_alert_id: str | None  # the firing STRUCTURE_FULL episode, if any
    near_alert_id: str | None  # the firing STRUCTURE_NEAR_FULL episode, if any
    ovf_full_alert_id: str | None  # the firing OVERFLOW_STRUCTURE_FULL episode, if any
    next_scan: int | None  # event time of the next overflow-threshold scan (in overflow mode)
    last_ts: int | None  # newest event time seen
    last_clock: int | None  # the arrival clock at that time
    rejected: int  # puts rejected in this overflow-mode episode
    unknown: bool  # activity named this structure but it is not configured (warned once)
    above: bool  # usage is at or above OVFLWMAX (selection runs when it is reached from below)
    clear: dict[str, int]  # condition -> event time since when its clear condition has held (the hold)
    forecast: ForecastState | None  # the fill forecasts' samples and episodes (None: forecasts are off)


__all__ = ["ALERT_ID_OF", "STATE_VERSION", "StateVersionError", "StructureQueueState", "StructureState"]
