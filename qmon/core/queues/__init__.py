"""Per-queue rules of IBM MQ: queue service interval events, queue depth events,
statistics, and qmon's stall alert.  Pure: no Spark, no Kafka, no clock.

The rules follow IBM MQ, *Queue service interval events* (its "Queue service interval events
algorithm") and *Queue depth events*, plus qmon's stall alert:

* The service timer is reset to the operation's time after a PUT to an empty
  queue and after a GET that leaves the queue non-empty; a GET that empties the
  queue turns it OFF; START sets it to the start time when depth > 0.
* After a PUT or GET the elapsed time ``t - start`` is compared with QSVCINT:
  ``elapsed > QSVCINT`` with HIGH enabled gives QSVCINT_HIGH (on a put or a
  get); ``elapsed <= QSVCINT`` on a GET with OK enabled gives QSVCINT_OK.
  Equality is OK, never High.  High and OK enable each other (flip-flop).
* Events need PERFMEV ENABLED on the queue manager; timer and statistics are
  kept regardless, so enabling takes effect on the next put or get.
* An event's statistics run from the previous reset up to and including the
  generating operation; then they reset.
* A queue seen non-empty while its timer is OFF (qmon started against a running
  queue manager: a PUT whose ``depth_after`` shows messages were there before) has
  its timer started at that record's time, as at queue-manager start-up.
* The stall alert (beyond MQ) fires once when a watched queue goes longer than
  QSVCINT without a get.  It resolves once the queue has been *served in time* —
  gets within QSVCINT of the service timer's start, or emptied — for
  ``stall_clear_hold`` of event time (or at once on START); a late get or a new
  gap longer than QSVCINT within the hold keeps the same episode going.  A slow or
  erratic consumer is one episode, not one per get.

The monitor is a *shard* of one queue manager: the Spark job splits a queue
manager's queues over a few shards so that the fixed per-key cost of
a stateful operator is paid per shard, not per queue.  A shard holds the
queue-manager settings (PERFMEV) itself, because every command that concerns
the whole queue manager is delivered to every shard.

A queue-sharing group's shared queues (``qmon.core.sharing``) are a monitor of their own, under the group's
name, in the group's shard (``queue_sharing_group``) beside each member's own queues: every member's puts, gets
and commands of a shared queue reach its one state there.  The group's monitor keeps each member's PERFMEV and,
for each queue, the member of its latest record; an operation follows its member's PERFMEV, and the records name
the group (``qsg``) and the member (``qmgr``).

State is made of plain dicts and lists only, so that it pickles compactly and
survives code changes that do not change its shape.
"""

from qmon.core.queues.monitor import QueueMonitor, command_reply
from qmon.core.queues.settings import MQ_DEFAULTS, MonitorSettings, QueueDefaults
from qmon.core.queues.shard import REASON_NAMES
from qmon.core.queues.state import STATE_VERSION, QueueState, ShardState

__all__ = [
    "MQ_DEFAULTS",
    "REASON_NAMES",
    "STATE_VERSION",
    "MonitorSettings",
    "QueueDefaults",
    "QueueMonitor",
    "QueueState",
    "ShardState",
    "command_reply",
]
