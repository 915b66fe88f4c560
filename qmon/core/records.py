"""The record types the rules take (``Activity``, generated from ``avro/QueueActivity.avsc`` into
``qmon.core.queue_activity`` and named here too) and produce (``Emit``, ``Alert`` records), and small helpers
they share.  Pure."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, NamedTuple, TypedDict

from qmon.core.queue_activity import Activity as Activity  # (named here: the rules import it from here)
from qmon.core.timeconv import from_ms


class Emit(NamedTuple):
    """One output record of the rules: its topic, its Kafka key and its fields (one type for every rule)."""

    topic: str
    key: str
    record: dict[str, Any]


class QueueSnapshot(TypedDict):
    """One queue in a queue shard's ``Snapshot`` (``avro/Snapshot.avsc``, whose fields a test holds equal)."""

    queue: str
    depth: int
    service_timer_start: int | None
    oldest_message_put: int | None
    last_put: int | None
    last_get: int | None


class Snapshot(TypedDict, total=False):
    """A ``Snapshot`` record (``avro/Snapshot.avsc``) as the rules write it and its readers (the demo's view,
    the exporter) read it: a queue shard's carries ``qmgr`` and ``queues``, a structure's ``structure`` and its
    usage.  One declaration for both sides, so a renamed field is a type error on either."""

    event_id: str
    ts: Any  # epoch ms as written; a datetime once Avro-decoded
    qmgr: str | None  # a queue shard's queue manager, or a queue-sharing group's name for its shared queues
    qsg: str | None  # a queue-sharing group's shard: the group's name (its shared queues), else None
    queues: list[QueueSnapshot]
    forgotten: list[str]
    structure: str | None
    size_kb: int | None
    capacity_elements: int | None
    used_elements: int | None
    overflow_structure: str | None
    overflow_size_kb: int | None
    overflow_capacity_elements: int | None
    overflow_used_elements: int | None
    overflow_mode: bool | None
    queues_in_overflow: int | None
    ovflwmax: int | None
    fullthreshold: int | None
    ovflwmax_eta: int | None
    full_eta: int | None
    overflow_full_eta: int | None


class SubjectKind(StrEnum):
    """What an alert is about (the ``subject_kind`` field of an Alert record)."""

    STRUCTURE = "STRUCTURE"  # a CF structure (subject: STRNAME)
    # a queue of a queue manager (subject: the queue name; qmgr: its queue manager), or a shared queue of a
    # queue-sharing group (qsg: the group; qmgr: the member whose operation raised the alert)
    QUEUE = "QUEUE"
    JOURNAL = "JOURNAL"  # an IBM i journal (subject: LIB/AMQxJRN; qmgr: its queue manager)


def alert(
    eid: str,
    type_: str,
    state: str,
    alert_id: str,
    severity: str,
    *,
    subject_kind: SubjectKind,
    subject: str,
    ts: int,
    structure: str | None = None,
    summary: str,
    action: str,
    queue: str | None = None,
    qmgr: str | None = None,
    message: str | None = None,
    eta: int | None = None,
    qsg: str | None = None,
    **numbers: Any,
) -> dict[str, Any]:
    """An Alert record; ``numbers``: usage_before_pct, usage_after_pct, size_kb_before/after; ``eta``: the instant
    a FIRING forecast predicts; ``qsg``: the queue-sharing group of a shared queue (``qmgr`` then names the
    member)."""
    return {
        "event_id": eid,
        "type": type_,
        "state": state,
        "alert_id": alert_id,
        "severity": severity,
        "subject_kind": str(subject_kind),
        "subject": subject,
        "structure": structure,
        "queue": queue,
        "qmgr": qmgr,
        "ts": ts,
        "usage_before_pct": numbers.get("usage_before_pct"),
        "usage_after_pct": numbers.get("usage_after_pct"),
        "size_kb_before": numbers.get("size_kb_before"),
        "size_kb_after": numbers.get("size_kb_after"),
        "message": message,
        "summary": summary,
        "action": action,
        "eta": eta,
        "qsg": qsg,
    }


def iso(ms: int) -> str:
    """Epoch milliseconds as an ISO-8601 UTC time with milliseconds, exactly (no float on the way)."""
    return from_ms(ms).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def minutes(ms: int) -> str:
    """A duration to the minute, as an alert says it: ``0 min``, ``12 min``, ``1 h 5 min``."""
    m = (ms + 30_000) // 60_000
    return f"{m // 60} h {m % 60} min" if m >= 60 else f"{m} min"


def within(ms: int) -> str:
    """When, from now, as an alert says it: ``in under a minute``, ``in about 12 min``."""
    return "in under a minute" if ms < 30_000 else f"in about {minutes(ms)}"
