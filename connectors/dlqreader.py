"""Reading a dead-letter topic without changing anything: ``qmon dlq-handler --report`` and ``--dry-run``.

Nothing here writes to Kafka or commits an offset.  The DLQ and the handler's ledger are read by consumers
that are *assigned* their partitions (they join no group), with a group id of their own and auto-commit off
(the DLQ as ``connectors.topicrange`` reads a topic); the handler's committed offsets are fetched, never set.
A handler running meanwhile is not disturbed.

What the figures mean is decided by the pure modules: ``qmon.core.deadletters`` (labels, status, the report's
table) and ``qmon.core.dlqdryrun`` (the handler's decision for each record).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from qmon.connectors import avro, topicrange
from qmon.connectors.kafka import client_config
from qmon.core import deadletters
from qmon.core.config import KafkaSecurity
from qmon.core.dlqdryrun import DryRun, Plan, plan
from qmon.core.dlqretry import Progress
from qmon.core.dlqrules import RulesTable
from qmon.core.timeconv import to_ms

logger = logging.getLogger(__name__)


class DlqReadError(RuntimeError):
    """The DLQ cannot be read (it does not exist, or the broker did not answer in time)."""


@dataclass(frozen=True)
class DlqRecord:
    """One record of the DLQ: where it is, when it was put there (its Kafka timestamp, epoch ms) and its
    DeadLetter, or None when it is not one."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    dead_letter: dict[str, Any] | None

    @property
    def key(self) -> str:
        """Its key in the handler's ledger."""
        return f"{self.partition}/{self.offset}"


def decode(value: bytes | None) -> dict[str, Any] | None:
    """A DLQ record's value as a DeadLetter, or None when it is not one (the handler leaves those alone)."""
    if value is None:
        return None
    try:
        return avro.decode("DeadLetter", value)
    except Exception:  # noqa: BLE001 - not qmon's DeadLetter: counted as such, never an error
        return None


def read(
    bootstrap: str,
    topic: str,
    security: KafkaSecurity | None = None,
    *,
    since_ms: int | None = None,
    until_ms: int | None = None,
    start: dict[int, int] | None = None,
) -> list[DlqRecord]:
    """The records ``topic`` holds now (to the end of each partition as it was when reading began), put there
    at ``since_ms`` or later and before ``until_ms``, from offset ``start[partition]`` on where given."""
    out: list[DlqRecord] = []
    try:
        for r in topicrange.records(
            bootstrap, topic, security, since_ms=since_ms, start=start, group_prefix="qmon-dlq-reader"
        ):
            dl = decode(r.value)
            ts = r.timestamp_ms if r.timestamp_ms is not None else _put_ms(dl)  # else the DeadLetter's put time
            if (since_ms is None or ts >= since_ms) and (until_ms is None or ts < until_ms):
                out.append(DlqRecord(topic, r.partition, r.offset, ts, dl))
    except topicrange.NoSuchTopic:
        msg = f"the dead-letter topic {topic} does not exist (check --config's kafka.topic_prefix, or INPUTQ)"
        raise DlqReadError(msg) from None
    except topicrange.TopicReadError as exc:
        raise DlqReadError(str(exc)) from None
    return out


def _put_ms(dead_letter: dict[str, Any] | None) -> int:
    put = (dead_letter or {}).get("put_time")
    return to_ms(put) if put is not None else 0


def read_ledger(
    bootstrap: str,
    ledger_topic: str,
    security: KafkaSecurity | None = None,
    group: str = "qmon-dlq-handler",
    *,
    must_exist: bool = False,
) -> dict[str, Any]:
    """The handler's ledger (compacted ``<dlq>.ignored``): key ``partition/offset`` -> its entry, tombstones
    applied.  Empty when the topic does not exist (the handler has never run), unless ``must_exist`` (the
    handler, which has just made sure it does): then a topic the broker cannot describe yet is waited for
    rather than taken as empty."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        client_config(
            bootstrap,
            security,
            **{
                "group.id": f"{group}-ledger-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            },
        )
    )
    try:
        entries: dict[str, Any] = {}
        if not must_exist and topicrange.partitions(c, ledger_topic) is None:
            return entries
        low, high = c.get_watermark_offsets(TopicPartition(ledger_topic, 0), timeout=30)
        if high <= low:
            return entries
        c.assign([TopicPartition(ledger_topic, 0, low)])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = c.poll(1.0)
            if msg is None:
                if c.position([TopicPartition(ledger_topic, 0)])[0].offset >= high:
                    break
                continue
            if msg.error():
                continue
            key = (msg.key() or b"").decode()
            value = msg.value()
            if value is None:
                entries.pop(key, None)
            else:
                entries[key] = json.loads(value)
            offset = msg.offset()
            if offset is not None and offset + 1 >= high:
                break
        return entries
    finally:
        c.close()


def committed(bootstrap: str, topic: str, group: str, security: KafkaSecurity | None = None) -> dict[int, int]:
    """The offsets ``group`` has committed on ``topic``, by partition (none: the group has not read it)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(client_config(bootstrap, security, **{"group.id": group, "enable.auto.commit": False}))
    try:
        parts = topicrange.partitions(c, topic) or []
        found = c.committed([TopicPartition(topic, p) for p in parts], timeout=30) if parts else []
        return {tp.partition: tp.offset for tp in found if tp.offset >= 0}
    finally:
        c.close()


def existing_topics(bootstrap: str, security: KafkaSecurity | None = None) -> set[str]:
    """The topics the cluster has (listing them creates none)."""
    from confluent_kafka.admin import AdminClient

    md = AdminClient(client_config(bootstrap, security)).list_topics(timeout=30)
    return {name for name, t in md.topics.items() if t.error is None and len(t.partitions) > 0}


# ---------------------------------------------------------------- the two commands


def report(
    bootstrap: str,
    topic: str,
    security: KafkaSecurity | None,
    *,
    since_ms: int | None,
    until_ms: int,
    group: str = "qmon-dlq-handler",
) -> str:
    """``qmon dlq-handler --report``: the dead letters put on ``topic`` in the range, with the handler's status."""
    records = read(bootstrap, topic, security, since_ms=since_ms, until_ms=until_ms)
    offsets = committed(bootstrap, topic, group, security)
    ledger = read_ledger(bootstrap, f"{topic}.ignored", security, group)
    counted = deadletters.tally(
        (
            deadletters.labels(r.dead_letter),
            deadletters.status(r.partition, r.offset, offsets, ledger),
            r.timestamp_ms,
        )
        for r in records
    )
    return deadletters.report(counted, topic, since_ms, until_ms)


def dry_run(
    bootstrap: str,
    table: RulesTable,
    topic: str,
    security: KafkaSecurity | None,
    *,
    now: float,
    source: str,
    group: str = "qmon-dlq-handler",
) -> str:
    """``qmon dlq-handler --dry-run``: what the handler would do, if started now with ``table``, with each record
    it would take up: those in its ledger (from the attempts they have had) and those after its committed
    offsets (all of them when it has never run)."""
    offsets = committed(bootstrap, topic, group, security)
    ledger = read_ledger(bootstrap, f"{topic}.ignored", security, group)
    records = read(bootstrap, topic, security, start=offsets)
    topics_now = existing_topics(bootstrap, security)
    run = DryRun(table)
    for lkey, entry in sorted(ledger.items(), key=lambda kv: tuple(int(x) for x in kv[0].split("/"))):
        header = entry.get("header")
        if "state" not in entry or not header:  # left on the DLQ for good: the handler plans these no more
            run.add(f"{topic}/{lkey}", header, "ignored", Plan("IGNORE", None, None, not_a_dead_letter=not header))
            continue
        last = entry.get("last_failure")
        progress = Progress(dict(entry.get("attempts") or {}), None if last is None else last / 1000)
        run.add(
            f"{topic}/{lkey}", header, str(entry["state"]), plan(table, header, progress, now, topics_now.__contains__)
        )
    for r in records:
        if r.key in ledger:
            continue  # above, with its attempts
        run.add(
            f"{topic}/{r.key}",
            r.dead_letter,
            "new",
            plan(table, r.dead_letter, Progress(), now, topics_now.__contains__),
        )
    in_ledger = len(run.rows) - sum(1 for *_x, where, _p in run.rows if where == "new")
    heading = (
        f"dry run of {source} on {topic}: {len(run.rows) - in_ledger} record(s) after the handler's committed "
        f"offsets, {in_ledger} in its ledger to plan again; nothing is written and no offset is committed"
    )
    return run.render(heading)
