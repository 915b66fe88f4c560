"""A queue-sharing group's shard (IBM MQ for z/OS, *Shared queues and queue-sharing groups*): every queue of the
group's members whose name falls in the shard, shared or not.  Pure.

In IBM MQ a queue is shared because an operator defines it so, on any member: ``DEFINE QLOCAL(name)
QSGDISP(SHARED)``.  The job therefore sends every record and command of a member's queues to its group's shard
of the queue's name, and the shard decides from what it holds which queue a record is about:

* a **shared queue**, one for every member: a name that matches the group's ``shared_queues`` in the
  configuration, or that a member has defined with QSGDISP(SHARED).  Its state is the group's
  (``QueueMonitor`` under the group's name), and its records name the group and the member;
* otherwise the member's **own queue** of that name: its state is the member's (``QueueMonitor`` under the
  member's name, kept beside the group's), and its records are those the queue manager alone would give.

``DEFINE QLOCAL(name) QSGDISP(SHARED)`` of a name a member already has activity or attributes for as its own
queue is refused: that queue's depth, timer and statistics are the member's, and they cannot become every
member's.  ``ALTER ... QSGDISP(SHARED)`` changes no queue into a shared one (in MQ, QSGDISP on ALTER says which
definition is altered).  A command for the whole queue manager (ALTER QMGR, PING, interest, generic names) is
the member's; a member's ALTER QMGR also sets the PERFMEV its operations on the shared queues follow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from qmon.core.mqsc import LIKE, QSGDISP, Command, canonical
from qmon.core.queues.commands import command_reply, display_reply
from qmon.core.queues.monitor import QueueMonitor
from qmon.core.records import Activity, Emit
from qmon.core.sharing import QueueSharingGroup


class QueueSharingGroupShard:
    """``shared``: the group's monitor of its shared queues; ``member(name)``: a member's monitor of its own
    queues (made or loaded when first asked for)."""

    def __init__(self, group: QueueSharingGroup, shared: QueueMonitor, member: Callable[[str], QueueMonitor]):
        self.group, self.shared, self.member = group, shared, member

    def is_shared(self, queue: str) -> bool:
        """Whether ``queue`` is the group's shared queue: by the configuration, or because a member defined it
        with QSGDISP(SHARED) (the group's monitor holds no other queue)."""
        return self.group.shares(queue) or queue in self.shared.queues

    def monitor_of(self, qmgr: str, queue: str) -> QueueMonitor:
        """The monitor whose state ``queue`` of member ``qmgr`` is."""
        return self.shared if self.is_shared(queue) else self.member(qmgr)

    def on_activity(self, rec: Activity) -> list[Emit]:
        return self.monitor_of(rec.qmgr, rec.queue).on_activity(rec)

    def on_command(
        self, cmd: Command, ts: int, command_id: str, reply: bool, member: str, own: bool = True
    ) -> list[Emit]:
        """A command sent to ``member`` (``own``: as ``QueueMonitor.on_command``'s)."""
        if cmd.verb == "DISPLAY" and cmd.scope == "parts":  # the member's own queues and the shared ones
            blocks = [*self.member(member).display_blocks(cmd, ts), *self.shared.display_blocks(cmd, ts)]
            return [display_reply(cmd, blocks, command_id, member, ts)] if reply else []
        if cmd.scope not in ("queue", "definition"):
            out = self.member(member).on_command(cmd, ts, command_id, reply)
            if cmd.obj == "QMGR" and cmd.verb == "ALTER":  # the PERFMEV of its operations on the shared queues
                self.shared.on_command(cmd, ts, command_id, False, member)
            return out
        name = cmd.name
        assert name is not None
        like = self._like(cmd, member)
        if self.is_shared(name):
            return self.shared.on_command(cmd, ts, command_id, reply, member, like, own)
        if cmd.obj == "QLOCAL" and cmd.attrs.get(QSGDISP) == "SHARED":
            refused = self._not_shareable(cmd, name)
            if refused is None:  # defined as a shared queue: the group's from now on
                return self.shared.on_command(cmd, ts, command_id, reply, member, like, own)
            return [command_reply(command_id, member, ts, False, f"{canonical(cmd)}: {refused}")] if reply else []
        return self.member(member).on_command(cmd, ts, command_id, reply, None, like, own)

    def _like(self, cmd: Command, member: str) -> dict[str, Any] | None:
        """The attributes of the queue ``cmd``'s LIKE names: the group's shared queue's, else the member's own."""
        source = cmd.attrs.get(LIKE)
        if source is None:
            return None
        if self.group.shares(source) or source in self.shared.state.get("defs", {}):
            return self.shared.definition(source)
        return self.member(member).definition(source)

    def _not_shareable(self, cmd: Command, name: str) -> str | None:
        """Why ``cmd`` (with QSGDISP(SHARED)) cannot make ``name``, not a shared queue yet, one; None when it can."""
        if cmd.verb != "DEFINE":
            return (
                f"QSGDISP(SHARED): {name} is not a shared queue of queue-sharing group {self.group.name}; "
                f"DEFINE QLOCAL({name}) QSGDISP(SHARED) on any member makes it one."
            )
        own = [m for m in self.group.members if name in self.member(m).queues]
        if own:
            return (
                f"QSGDISP(SHARED): {name} is already a queue of {', '.join(own)} alone (qmon holds its depth, "
                f"timer and statistics there), so it cannot become a shared queue of queue-sharing group "
                f"{self.group.name}; define the shared queue before any activity or attributes for that name, or "
                f"declare it in the group's shared_queues (qsgs) before the members use it."
            )
        return None
