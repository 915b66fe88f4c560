"""Topic names: one name for one thing, everywhere."""

ACTIVITY = "qmon.activity"
CONTROL = "qmon.control"
JOURNAL = "qmon.journal"
MQ_TRACE = "qmon.mq.trace"  # IBM MQ application activity trace (PCF), as the Kafka Connect MQ source copies it
PERFORMANCE = "qmon.events.performance"
ALERTS = "qmon.events.alerts"
OVERFLOW = "qmon.events.overflow"
NOTIFY = "qmon.events.notify"
REPLIES = "qmon.control.replies"
DLQ = "qmon.dlq"
SNAPSHOT = "qmon.events.snapshot"
PROGRESS = "qmon.events.progress"

INPUTS = (ACTIVITY, CONTROL, JOURNAL)
OUTPUTS = (PERFORMANCE, ALERTS, OVERFLOW, NOTIFY, REPLIES, DLQ)
#: what the job publishes for gauges and its own health (``qmon metrics``), beside the events: the units'
#: periodic snapshots and the query's progress (not followed by ``qmon tail`` by default, not in a replay)
STATUS = (SNAPSHOT, PROGRESS)

#: The Avro record (schema file in avro/) carried by each topic (``MQ_TRACE`` carries PCF bytes, no Avro).
RECORD_OF = {
    ACTIVITY: "QueueActivity",
    CONTROL: "ControlCommand",
    JOURNAL: "JournalStatus",
    PERFORMANCE: "PerformanceEvent",
    ALERTS: "Alert",
    OVERFLOW: "OverflowCandidates",
    NOTIFY: "WorkAvailable",
    REPLIES: "CommandReply",
    DLQ: "DeadLetter",
    SNAPSHOT: "Snapshot",
    PROGRESS: "QueryProgress",
}


def physical(name: str, prefix: str = "qmon") -> str:
    """The topic a logical name maps to under ``prefix`` (``qmon.dlq`` -> ``<prefix>.dlq``).

    The rules and records always speak of the logical names; a prefix lets several qmon
    installations (or tests) share one Kafka cluster.
    """
    if prefix == "qmon":
        return name
    return prefix + name[len("qmon") :]


def physical_map(prefix: str = "qmon") -> dict[str, str]:
    return {name: physical(name, prefix) for name in (*INPUTS, MQ_TRACE, *OUTPUTS, *STATUS)}
