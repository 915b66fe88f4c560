"""Queue-sharing groups and their shared queues (IBM MQ for z/OS, *Shared queues and queue-sharing groups*):
which queue of which queue manager is one shared queue, and the name its state is kept under.  Pure.

A queue-sharing group is declared in the configuration (``qsgs``): its name, its members (queue managers,
as records name them) and the names of queues shared from the start (patterns, ``*`` and ``?``).  A queue of a
member whose name matches, or that a member defined with ``QSGDISP(SHARED)``, is the group's shared queue: every
member's puts, gets and commands for it reach one queue, whose identity is (group, queue) rather than (queue
manager, queue).  Every queue of a member reaches its group's shard (``qmon.core.queues.queue_sharing_group``),
which decides from its state which queue a record is about.
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
