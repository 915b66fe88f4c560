"""Queue-sharing groups and their shared queues (IBM MQ for z/OS, *Shared queues and queue-sharing groups*):
which queue of which queue manager is one shared queue, and the name its state is kept under.  Pure.

A queue-sharing group is declared in the configuration (``qsgs``): its name, its members (queue managers,
as records name them) and the names of its shared queues (patterns, ``*`` and ``?``).  A queue of a member
whose name matches is the group's shared queue: every member's puts, gets and commands for it reach one
queue, whose identity is (group, queue) rather than (queue manager, queue) (``owner``).  The rules keep it in
a shard of the group's (``qmon.core.queues``), the pure reference in the group's monitor
(``qmon.core.reference``), and the Spark job routes its records to the group's key (``streaming.pipeline``).

Which queues are shared is decided by the configuration only, so that the job can route every record by its
queue manager and queue alone: ``DEFINE QLOCAL(name) QSGDISP(SHARED)`` is accepted for a queue the
configuration shares, and answered with an error naming the setting for any other (``qmon.core.queues``).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class QueueSharingGroup:
    """One queue-sharing group: its name (1-4 characters, never a queue manager's), its members and the name
    patterns of its shared queues."""

    name: str
    members: tuple[str, ...]
    shared_queues: tuple[str, ...] = ()

    def shares(self, queue: str) -> bool:
        """Whether ``queue`` (of a member) is one of the group's shared queues."""
        return any(fnmatch.fnmatchcase(queue, pattern) for pattern in self.shared_queues)


@dataclass(frozen=True)
class Sharing:
    """Every queue-sharing group of the configuration (a queue manager is a member of one at most)."""

    groups: tuple[QueueSharingGroup, ...] = ()

    @cached_property
    def _by_member(self) -> dict[str, QueueSharingGroup]:
        return {member: group for group in self.groups for member in group.members}

    @cached_property
    def _by_name(self) -> dict[str, QueueSharingGroup]:
        return {group.name: group for group in self.groups}

    def group_of(self, qmgr: str) -> QueueSharingGroup | None:
        """The group ``qmgr`` is a member of, if any."""
        return self._by_member.get(qmgr)

    def group_named(self, name: str) -> QueueSharingGroup | None:
        """The group called ``name``, if any (a shard or monitor of that name is the group's)."""
        return self._by_name.get(name)

    def shared(self, qmgr: str, queue: str) -> str | None:
        """The name of the group whose shared queue ``queue`` of ``qmgr`` is, or None (the queue manager's own)."""
        group = self._by_member.get(qmgr)
        return group.name if group is not None and group.shares(queue) else None

    def owner(self, qmgr: str, queue: str) -> str:
        """The name a queue's state is kept under: its group's for a shared queue, else its queue manager's."""
        return self.shared(qmgr, queue) or qmgr
