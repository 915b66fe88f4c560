"""Reading what a topic holds over a time range, without changing anything: ``qmon dlq-handler --report`` and
``qmon report`` read so.

The consumer is *assigned* every partition of the topic (it joins no group), with a group id of its own and
auto-commit off: it commits nothing, and a consumer group reading the topic meanwhile is not disturbed.  Each
partition is read from the first record the broker holds with a Kafka timestamp at or after ``since_ms``
(``offsets_for_times``; all of it without one) up to its end offset as it was when reading began: records
written meanwhile are left for the next read.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from qmon.connectors.kafka import client_config
from qmon.core.config import KafkaSecurity

logger = logging.getLogger(__name__)

#: How long reading may go without receiving a record, while partitions are left to read, before the reader
#: gives up (seconds).
READ_TIMEOUT = 120.0


class TopicReadError(RuntimeError):
    """A topic cannot be read to its end (the broker did not answer in time)."""


class NoSuchTopic(TopicReadError):
    """The topic does not exist."""

    def __init__(self, topic: str) -> None:
        super().__init__(f"the topic {topic} does not exist")
        self.topic = topic


@dataclass(frozen=True)
class Raw:
    """One record as read: where it is, its Kafka timestamp (epoch ms; None when it has none) and its value."""

    partition: int
    offset: int
    timestamp_ms: int | None
    value: bytes | None


def consumer(bootstrap: str, security: KafkaSecurity | None, group_prefix: str, **extra: Any) -> Any:
    """A consumer that commits nothing, reading only committed transactions, with a group id of its own
    (``group_prefix`` and a random suffix: ACLs can grant the prefix)."""
    from confluent_kafka import Consumer

    conf = {
        "group.id": f"{group_prefix}-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        **extra,
    }
    return Consumer(client_config(bootstrap, security, **conf))


def partitions(consumer_: Any, topic: str) -> list[int] | None:
    """The partitions of ``topic``, or None when it does not exist."""
    described = consumer_.list_topics(topic, timeout=30).topics.get(topic)
    if described is None or described.error is not None or not described.partitions:
        return None
    return sorted(described.partitions)


def records(
    bootstrap: str,
    topic: str,
    security: KafkaSecurity | None = None,
    *,
    since_ms: int | None = None,
    start: dict[int, int] | None = None,
    group_prefix: str = "qmon-reader",
    timeout: float = READ_TIMEOUT,
) -> Iterator[Raw]:
    """The records of ``topic`` from the first put at ``since_ms`` or later (and from offset ``start[partition]``
    on, where given) to the end of each partition as it was when reading began, partition by partition in
    offset order as they arrive.  Raises ``NoSuchTopic``, or ``TopicReadError`` when no record comes for
    ``timeout`` seconds while some are left to read."""
    from confluent_kafka import KafkaError, TopicPartition

    c = consumer(bootstrap, security, group_prefix, **{"enable.partition.eof": True})
    try:
        parts = partitions(c, topic)
        if parts is None:
            raise NoSuchTopic(topic)
        ranges: dict[int, tuple[int, int]] = {}
        for p in parts:
            low, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            begin = max(low, (start or {}).get(p, low))
            if since_ms is not None:
                (found,) = c.offsets_for_times([TopicPartition(topic, p, since_ms)], timeout=30)
                begin = max(begin, found.offset if found.offset >= 0 else high)
            if begin < high:
                ranges[p] = (begin, high)
        if not ranges:
            return
        c.assign([TopicPartition(topic, p, begin) for p, (begin, _end) in ranges.items()])
        pending = set(ranges)
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                msg = f"{topic}: partitions {sorted(pending)} not read to their end: nothing came for {timeout:.0f} s"
                raise TopicReadError(msg)
            m = c.poll(0.5)
            if m is None:
                continue
            deadline = time.monotonic() + timeout
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    pending.discard(m.partition())
                else:
                    logger.warning("reading %s: %s", topic, err)
                continue
            p, offset = m.partition(), m.offset()
            if p not in pending or offset >= ranges[p][1]:
                pending.discard(p)
                continue
            if offset + 1 >= ranges[p][1]:
                pending.discard(p)
            ts_type, ts = m.timestamp()
            yield Raw(p, offset, None if ts_type == 0 or ts < 0 else ts, m.value())
    finally:
        c.close()
