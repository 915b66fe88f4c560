"""Seeding queue depths from what the queue manager says (``qmon seed-depth``).  Pure.

Activity trace carries no queue depth, so qmon counts from zero: a queue that held messages when the trace
started would read too low for ever.  An operator pastes the output of ``DISPLAY QLOCAL(*) CURDEPTH`` (or
``DISPLAY QSTATUS(*) CURDEPTH``) from runmqsc; each queue becomes a START record with ``depth_after`` set,
which qmon applies as the queue manager's own start-up: the depth is set, statistics reset, the service
timer started if the queue is not empty (IBM MQ, *Queue service interval events*), and a firing
QUEUE_STALLED resolved.
"""

from __future__ import annotations

import re
from typing import Any

from qmon.core.ids import event_id
from qmon.core.records import Activity

_ATTR = re.compile(r"\b(QUEUE|CURDEPTH)\(\s*([^)]*?)\s*\)")


def depths_from_display(text: str) -> list[tuple[str, int]]:
    """(queue, CURDEPTH) pairs from runmqsc DISPLAY output, in order; a queue without CURDEPTH is skipped."""
    out: list[tuple[str, int]] = []
    queue: str | None = None
    for m in _ATTR.finditer(text):
        name, value = m.group(1), m.group(2)
        if name == "QUEUE":
            queue = value
        elif queue is not None and value.isdigit():
            out.append((queue, int(value)))
            queue = None
    return out


def start_records(qmgr: str, depths: list[tuple[str, int]], ts: int) -> list[dict[str, Any]]:
    """QueueActivity START records that set each queue's depth at ``ts``."""
    return [
        Activity(
            event_id=event_id("seed-depth", qmgr, queue, depth, ts),
            qmgr=qmgr,
            queue=queue,
            op="START",
            ts=ts,
            depth_after=depth,
        ).record()
        for queue, depth in depths
    ]
