"""Registration of interest and work-available notifications (SPEC §6, seed 004).  Pure.

An IMS system registers interest in a queue name and is told when there is work,
so many consumers can share queues without polling:

* a WorkAvailable record per registered client when the queue goes from empty to
  non-empty, and once at registration if the queue already holds work;
* never when it goes from non-empty to empty; none after DEREGISTER;
* a generic name (``1TRAN*``: MQ generic names end in ``*``) registers for every
  matching queue, including queues first seen later;
* staging, suspend, APPC-ready and OTMA-ready queues are refused by the MQSC parser
  (``qmon.mqsc.NO_INTEREST_TYPES``), as IMS never registers them.

The registry is plain dicts (pattern -> sorted client list) inside the queue
monitor's state, so it pickles with it and survives restarts.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from qmon import topics
from qmon.ids import event_id


def matches(pattern: str, queue: str) -> bool:
    """An exact name, or an MQ generic name (trailing ``*``; ``?`` and inner ``*`` as globs)."""
    return queue == pattern or (any(c in pattern for c in "*?") and fnmatch.fnmatchcase(queue, pattern))


class Registry:
    """The registrations of one queue-monitor shard."""

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

    def clients_for(self, queue: str) -> list[str]:
        """Every client registered for ``queue`` by exact or generic name, each once, sorted."""
        out: set[str] = set()
        for pattern, clients in self.state.items():
            if matches(pattern, queue):
                out.update(clients)
        return sorted(out)


def work_available(qmgr: str, queue: str, client: str, depth: int, ts: int, source: str) -> tuple[str, str, dict[str, Any]]:
    """(topic, key, WorkAvailable record); the event_id derives from the input that caused it."""
    record = {"event_id": event_id("notify", qmgr, queue, client, source), "client": client, "qmgr": qmgr,
              "queue": queue, "depth": depth, "ts": ts}
    return topics.NOTIFY, f"{qmgr}/{queue}", record
