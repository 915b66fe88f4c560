"""Topic names: one name for one thing, everywhere."""

ACTIVITY = "qmon.activity"
CONTROL = "qmon.control"
JOURNAL = "qmon.journal"
PERFORMANCE = "qmon.events.performance"
ALERTS = "qmon.events.alerts"
OVERFLOW = "qmon.events.overflow"
NOTIFY = "qmon.events.notify"
REPLIES = "qmon.control.replies"
DLQ = "qmon.dlq"

INPUTS = (ACTIVITY, CONTROL, JOURNAL)
OUTPUTS = (PERFORMANCE, ALERTS, OVERFLOW, NOTIFY, REPLIES, DLQ)

#: The Avro record (schema file in avro/) carried by each topic.
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
    return {name: physical(name, prefix) for name in (*INPUTS, *OUTPUTS)}
