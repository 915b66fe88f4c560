"""One queue-manager shard's rules in one object: ``QueueMonitor`` applies activity, commands and timers to a
shard's state and returns the records they raise.  Its rules live by concept: service interval and depth
events (``service_interval``), the stall alert (``stall``), MQSC and statistics (``commands``), bounded state
(``retention``), snapshots (``snapshot``).  Pure."""

from __future__ import annotations

from qmon.core.queues.commands import Commands, command_reply
from qmon.core.queues.retention import Retention
from qmon.core.queues.service_interval import ServiceInterval
from qmon.core.queues.snapshot import Snapshots
from qmon.core.queues.stall import StallAlert


class QueueMonitor(ServiceInterval, StallAlert, Commands, Retention, Snapshots):
    """The per-queue rules for one shard of one queue manager."""


__all__ = ["QueueMonitor", "command_reply"]
