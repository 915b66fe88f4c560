"""Registration of interest and work-available notifications (IMS, *IMS Shared Queues Functions and
Facilities*).  Pure.

An IMS system registers interest in a queue name and is told when there is work,
so many consumers can share queues without polling:

* a WorkAvailable record per registered client when the queue goes from empty to
  non-empty, and once at registration if the queue already holds work;
* never when it goes from non-empty to empty; none after DEREGISTER;
* a generic name (``1TRAN*``: an MQ generic name, a prefix and a final ``*``)
  registers for every matching queue, including queues first seen later;
* IMS never registers interest in staging, suspend, APPC-ready and OTMA-ready
  queues (``NO_INTEREST_TYPES``): registering such a name, or a generic name that
  can only match such queues (``2*``), is refused by the MQSC parser, and a generic
  registration that also matches other queues (``*``, ``QUEUE(*)``) never covers them;
* only one IMS of a shared-queues group should register interest in an LTERM ready
  queue (type 5): a second client's registration is accepted with a warning
  (``Registry.lterm_warning``);
* ``DEREGISTER INTEREST QUEUE(*) CLIENT(id)`` drops every registration of the
  client, as CQS does for an IMS that terminates (``Registry.deregister_all``).

The registry is plain dicts (name -> sorted client list) inside the queue
monitor's state, so it pickles with it and survives restarts.  Every shard of a
queue manager holds all of its registrations (the job delivers every interest
command to every shard), so any shard can answer any interest command.
"""

from __future__ import annotations

from typing import Any

from qmon.core import topics
from qmon.core.ids import event_id
from qmon.core.structures import QUEUE_TYPES

#: IMS queue types (the first character of an IMS queue name) in which IMS never registers
#: interest (the IMS shared queues presentation: "IMS does not register interest in Staging Queues, Suspend Queue, APPC
#: Ready Queue, OTMA Ready Queue").
NO_INTEREST_TYPES = {t: QUEUE_TYPES[t] for t in ("2", "3", "6", "7", "9")}

#: The LTERM ready queue type: "only one IMS in the shared queues group will (should) register
#: interest in the output queue for LTERMZ" (the IMS shared queues presentation).
LTERM_READY = "5"

#: A reply lists at most this many names or clients, then says how many more there are.
_LIST_MAX = 50


def refused(name: str) -> str | None:
    """The kind of queue (e.g. ``transaction staging``) when interest can never be registered in
    ``name``, else None.  For a generic name: when every queue it can match is of a refused type
    (``2*``); ``*`` and ``1*`` are not refused, they just never cover refused queues."""
    return NO_INTEREST_TYPES.get(name[:1])


def generic(name: str) -> bool:
    return name.endswith("*")


def matches(pattern: str, queue: str) -> bool:
    """Whether a registration under ``pattern`` covers ``queue``: the exact name, or an MQ generic
    name (a prefix and a final ``*``) the queue name begins with.  Never a queue of a refused type,
    whatever the pattern: a generic registration (``*``) must not tell IMS of work on a staging,
    suspend, APPC-ready or OTMA-ready queue."""
    if refused(queue):
        return False
    return queue == pattern or (generic(pattern) and queue.startswith(pattern[:-1]))


def overlap(a: str, b: str) -> str | None:
    """The queue names both ``a`` and ``b`` cover, as one name (exact or generic), or None.

    Generic names are prefixes, so two of them overlap exactly when one prefix begins with the
    other, and the overlap is the longer one."""
    ga, gb = generic(a), generic(b)
    if not ga and not gb:
        return a if a == b else None
    if ga and not gb:
        return b if b.startswith(a[:-1]) else None
    if gb and not ga:
        return a if a.startswith(b[:-1]) else None
    if a[:-1].startswith(b[:-1]):
        return a
    return b if b[:-1].startswith(a[:-1]) else None


def covers_lterm_ready(name: str) -> bool:
    """Whether ``name`` (exact or generic) covers any LTERM ready queue name."""
    return name.startswith(LTERM_READY) or name == "*"


def listing(items: list[str]) -> str:
    """``a, b, c`` — at most ``_LIST_MAX`` items, then how many more."""
    shown = ", ".join(items[:_LIST_MAX])
    return shown + (f" and {len(items) - _LIST_MAX} more" if len(items) > _LIST_MAX else "")


class Registry:
    """The registrations of one queue manager, as one queue-monitor shard holds them."""

    #: DEREGISTER INTEREST QUEUE(*) CLIENT(id) drops every registration of the client.
    EVERYTHING = "*"

    def __init__(self, state: dict[str, list[str]]):
        self.state = state  # pattern -> sorted clients

    def register(self, pattern: str, client: str) -> bool:
        """True if new; False if the client was already registered for the pattern."""
        clients = self.state.setdefault(pattern, [])
        if client in clients:
            return False
        clients.append(client)
        clients.sort()
        return True

    def deregister(self, pattern: str, client: str) -> bool:
        clients = self.state.get(pattern)
        if not clients or client not in clients:
            return False
        clients.remove(client)
        if not clients:
            del self.state[pattern]
        return True

    def deregister_all(self, client: str) -> list[str]:
        """Drop every registration of ``client``, exact and generic; the names it had, sorted."""
        names = sorted(p for p, clients in self.state.items() if client in clients)
        for name in names:
            self.deregister(name, client)
        return names

    def _covering(self, queue: str) -> list[str]:
        """The registered names that cover ``queue``.  With many registrations (every shard holds
        all of its queue manager's) the exact name and each of its prefixes + ``*`` are looked up,
        at most 50 lookups, instead of testing every registration."""
        if refused(queue):
            return []
        if len(self.state) <= len(queue) + 1:
            return [p for p in self.state if matches(p, queue)]
        keys = [queue, *(queue[:i] + "*" for i in range(len(queue) + 1))]
        return [k for k in keys if k in self.state]

    def clients_for(self, queue: str) -> list[str]:
        """Every client registered for ``queue`` by exact or generic name, each once, sorted."""
        out: set[str] = set()
        for pattern in self._covering(queue):
            out.update(self.state[pattern])
        return sorted(out)

    def covered_otherwise(self, client: str, queue: str, pattern: str) -> bool:
        """Whether ``client`` has interest in ``queue`` by a registration other than ``pattern``
        (then a new registration under ``pattern`` tells it nothing new)."""
        return any(p != pattern and client in self.state[p] for p in self._covering(queue))

    def lterm_sharers(self, pattern: str, client: str) -> list[tuple[str, str]]:
        """(other client, its registered name) for every registration of another client that
        covers an LTERM ready queue ``pattern`` covers too; sorted."""
        if not covers_lterm_ready(pattern):
            return []
        if generic(pattern):  # a scan, but generic registrations of LTERM names are few
            names = [p for p in self.state if (o := overlap(pattern, p)) is not None and covers_lterm_ready(o)]
        else:
            names = [pattern, *(pattern[:i] + "*" for i in range(len(pattern) + 1))]
        return sorted((c, name) for name in names for c in self.state.get(name, ()) if c != client)

    def lterm_warning(self, pattern: str, client: str) -> str:
        """The warning for a reply when another client already has interest in an LTERM ready queue
        that ``pattern`` covers (the IMS shared queues presentation: only one IMS should), or "" when none
        has."""
        sharers = self.lterm_sharers(pattern, client)
        if not sharers:
            return ""
        what = (
            f"{pattern} covers LTERM ready queues (type {LTERM_READY}) in which"
            if generic(pattern)
            else f"{pattern} is an LTERM ready queue (type {LTERM_READY}) in which"
        )
        who = listing([f"{c} ({name})" for c, name in sharers])
        return (
            f" Warning: {what} other clients already have interest registered: {who}. Only one IMS "
            "of a shared-queues group should register interest in an LTERM's output queue; every "
            "registered client is told of the same work."
        )


def work_available(
    qmgr: str, queue: str, client: str, depth: int, ts: int, source: str
) -> tuple[str, str, dict[str, Any]]:
    """(topic, key, WorkAvailable record); the event_id derives from the input that caused it."""
    record = {
        "event_id": event_id("notify", qmgr, queue, client, source),
        "client": client,
        "qmgr": qmgr,
        "queue": queue,
        "depth": depth,
        "ts": ts,
    }
    return topics.NOTIFY, f"{qmgr}/{queue}", record
