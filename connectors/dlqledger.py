"""The DLQ handler's ledger ``<dlq>.ignored`` (compacted, key ``partition/offset``): IBM MQ's DLQ handler's
"record of all messages on the DLQ that have been seen but not removed".

Each entry is a record left on the DLQ, either *waiting* for its next attempt or *ignored* for good, with
its attempt counts per rule, the time of its last failed attempt and its DeadLetter header (not its bytes).
A record that has to wait is written to the ledger in the same transaction that commits the consumer offset
past it, so the committed offset never holds back on it and a crash never loses it: the handler reads the
ledger when it starts and schedules each waiting record at its due time.  Every failed attempt updates the
record's entry in the transaction of its pass; a record that is forwarded, retried or discarded has its
entry deleted (a tombstone) in the transaction that writes it.  An attempt made in a transaction that is
then aborted by a crash is made again after the restart (it had no effect).

``connectors.dlqhandler`` keeps the ledger; ``connectors.dlqreader.read_ledger`` reads it.
"""

from __future__ import annotations

import json
import time
from typing import Any, TypedDict

from qmon.core.dlqretry import Advance, Progress, Schedule, next_step, put_seconds
from qmon.core.dlqrules import RulesTable

#: Fields of the DeadLetter kept in a ledger entry: what the rules match, and the put time RETRY waits on.
HEADER_FIELDS = ("reason", "reason_name", "dest_topic", "format", "put_appl_name")


class LedgerEntry(TypedDict, total=False):
    """A record left on the DLQ (JSON in the ledger topic, key ``partition/offset``)."""

    topic: str
    partition: int
    offset: int
    reason: str | None
    seen: int  # epoch ms: when the handler first read it
    state: str  # "waiting" (for its next attempt) or "ignored" (for good); absent in entries written without it
    attempts: dict[str, int]  # Rule.key -> attempts made
    last_failure: int | None  # epoch ms of the latest failed attempt
    due: int | None  # epoch ms of the next attempt (waiting only)
    header: dict[str, Any] | None  # the DeadLetter's HEADER_FIELDS and put_time (epoch ms); None: not a DeadLetter


def ms(seconds: float | None) -> int | None:
    return None if seconds is None else int(round(seconds * 1000))


def progress_of(entry: LedgerEntry) -> Progress:
    """The attempts an entry's record has had, as the retry schedule counts them."""
    last = entry.get("last_failure")
    return Progress(dict(entry.get("attempts") or {}), None if last is None else last / 1000)


def create_topic(admin: Any, topic: str) -> None:
    """The ledger's topic, compacted, unless it exists (``admin``: an ``AdminClient``)."""
    from confluent_kafka.admin import NewTopic

    if topic in admin.list_topics(timeout=30).topics:
        return
    fut = admin.create_topics(
        [NewTopic(topic, num_partitions=1, replication_factor=1, config={"cleanup.policy": "compact"})]
    )[topic]
    try:
        fut.result()
    except Exception as exc:  # noqa: BLE001
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise


def plan(ledger: dict[str, LedgerEntry], table: RulesTable, schedule: Schedule) -> None:
    """At start: schedule every waiting record, and every ignored one the table just read gives an attempt."""
    for lkey, entry in ledger.items():
        header = entry.get("header")
        if "state" not in entry or not header:
            continue  # an entry without a state, or not a DeadLetter: ignored for good
        step = next_step(table, header, progress_of(entry))
        if entry["state"] == "ignored" and step.final and step.action == "IGNORE":
            continue  # still nothing to do for it
        schedule.put(lkey, 0.0 if step.final else step.due)


def entry_of(
    topic: str,
    partition: int,
    offset: int,
    dl: dict[str, Any] | None,
    adv: Advance | None,
    seen: int,
) -> LedgerEntry:
    """The entry of a record left on the DLQ (``dl``: its DeadLetter, None when it is not one), after ``adv``
    (None: no attempt was planned), first read at ``seen`` (epoch ms)."""
    header = None
    if dl is not None:
        header = {k: dl.get(k) for k in HEADER_FIELDS}
        header["put_time"] = ms(put_seconds(dl))
    waiting = adv is not None and adv.outcome is None
    progress = adv.progress if adv is not None else Progress()
    return LedgerEntry(
        topic=topic,
        partition=partition,
        offset=offset,
        reason=dl.get("reason_name") if dl else None,
        seen=seen,
        state="waiting" if waiting else "ignored",
        attempts=dict(progress.attempts),
        last_failure=ms(progress.last_failure),
        due=ms(adv.step.due) if waiting and adv is not None else None,
        header=header,
    )


def write(producer: Any, topic: str, lkey: str, entry: LedgerEntry | None) -> None:
    """An entry, or its deletion (None: a tombstone), through ``producer`` (in its open transaction)."""
    value = None if entry is None else json.dumps(entry).encode()
    producer.produce(topic, key=lkey.encode(), value=value)


def fetch(fetcher: Any, entry: LedgerEntry) -> tuple[bytes | None, bytes | None] | str:
    """The DLQ record of a ledger entry: (key, value), "gone" (deleted by retention) or "unavailable"
    (``fetcher``: a read_committed ``Consumer`` of its own)."""
    from confluent_kafka import TopicPartition

    tp = TopicPartition(entry["topic"], int(entry["partition"]), int(entry["offset"]))
    try:
        low, _high = fetcher.get_watermark_offsets(tp, timeout=10)
    except Exception:  # noqa: BLE001
        return "unavailable"
    if tp.offset < low:
        return "gone"
    fetcher.assign([tp])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        msg = fetcher.poll(0.5)
        if msg is None or msg.error():
            continue
        if msg.offset() != tp.offset:
            return "gone"  # compacted or deleted between the watermark and the read
        return msg.key(), msg.value()
    return "unavailable"
