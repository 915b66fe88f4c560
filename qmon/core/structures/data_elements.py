"""Data elements and long messages: what a message takes of a structure (what a queue keeps of its messages'
sizes, and the order its gets free them in, is ``qmon.core.message_runs``).

A structure of K KB holds 2·K data elements of 512 bytes; a message takes ceil(bytes / 512) elements, at
least 1.  IMS queue names begin with their queue-type digit; a message longer than ``lgmsgsz`` puts its
first ``lgmsgsz`` bytes on its ready queue and the rest on the staging queue (1→2, 5→6) (IMS shared
queues, conference presentation).  Pure.
"""

from __future__ import annotations

ELEMENT_BYTES = 512

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


def usage_pct(used: int, capacity: int) -> float:
    """Usage for display (rounded); decisions use ``at_or_above`` on exact counts."""
    return min(100.0, round(100.0 * used / capacity, 2)) if capacity > 0 else 100.0
