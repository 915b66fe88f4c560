"""Python clients of qmon's topics: produce activity and commands, follow outputs, wait for replies."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from qmon.connectors import avro
from qmon.connectors.kafka import client_config
from qmon.connectors.registry import Framing
from qmon.core import topics
from qmon.core.config import KafkaSecurity

logger = logging.getLogger(__name__)


#: what every producer of qmon's input needs: each partition kept in the order it was produced.  librdkafka
#: retries a failed request (a partition's leader not yet known, say, just after its topic is made) while later
#: requests to the same partition go on, and only an idempotent producer keeps their order then; the job applies
#: a record that comes after the event-time frontier has passed it as a late record (``job.max_lateness``)
IN_ORDER = {"enable.idempotence": True, "acks": "all"}


def producer(bootstrap: str, security: KafkaSecurity | None = None, **extra: Any) -> Any:
    from confluent_kafka import Producer

    return Producer(client_config(bootstrap, security, **{"linger.ms": 5, **IN_ORDER, **extra}))


def produce_rows(
    bootstrap: str, rows: Iterable[tuple[str, bytes | None, bytes]], security: KafkaSecurity | None = None
) -> int:
    """(topic, key, value) rows -> Kafka; returns how many were acknowledged."""
    p = producer(bootstrap, security)
    errors: list[str] = []
    count = 0

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    for topic, key, value in rows:
        while True:
            try:
                p.produce(topic, key=key, value=value, on_delivery=delivered)
                break
            except BufferError:
                p.poll(0.1)
        count += 1
        p.poll(0)
    p.flush(60)
    if errors:
        raise RuntimeError(f"{len(errors)} records were not delivered; first error: {errors[0]}")
    return count


def send_commands(
    bootstrap: str,
    qmgr: str,
    commands: list[str],
    *,
    user: str | None = None,
    security: KafkaSecurity | None = None,
    ts: int | None = None,
    prefix: str = "qmon",
    framing: Framing | None = None,
) -> list[str]:
    """Publish MQSC commands to qmon.control; returns their command ids.  ``framing``: with a schema registry,
    the records in Confluent's wire format."""
    now = ts if ts is not None else int(time.time() * 1000)
    topic = topics.physical(topics.CONTROL, prefix)
    ids, rows = [], []
    for text in commands:
        cid = str(uuid.uuid4())
        ids.append(cid)
        record = {"command_id": cid, "ts": now, "qmgr": qmgr, "text": text, "user": user}
        value = avro.encode("ControlCommand", record)
        rows.append((topic, qmgr.encode(), framing.frame(topic, "ControlCommand", value) if framing else value))
    produce_rows(bootstrap, rows, security)
    return ids


def partitions_of(consumer: Any, names: list[str], wait: float = 10.0) -> set[tuple[str, int]]:
    """(topic, partition) of every partition of the topics that exist (a topic that does not is empty);
    waits out a topic that cannot be described yet (no leader just after its creation)."""
    from confluent_kafka import KafkaError

    deadline = time.monotonic() + wait
    while True:
        meta = consumer.list_topics(timeout=wait)
        found: set[tuple[str, int]] = set()
        failing = {}
        for name in names:
            described = meta.topics.get(name)
            if described is None or described.error is None:
                found.update((name, p) for p in (described.partitions if described else ()))
            elif described.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                failing[name] = str(described.error)
        if not failing:
            return found
        if time.monotonic() > deadline:
            raise RuntimeError(f"cannot read to the end of {failing}")
        time.sleep(0.5)


def consume(
    bootstrap: str,
    topic_names: Iterable[str],
    *,
    from_beginning: bool = True,
    timeout: float | None = 30.0,
    idle: float | None = None,
    security: KafkaSecurity | None = None,
    stop: Callable[[str, dict[str, Any]], bool] | None = None,
    prefix: str = "qmon",
    to_end: bool = False,
) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """Yield (logical topic, decoded record, message) from qmon's topics (logical names given).

    Ends after ``timeout`` seconds in all, after ``idle`` seconds without a record (counted from when the
    consumer is given its partitions, so the group's join does not count), when
    ``stop(topic, record)`` returns True, or with ``to_end`` once every partition of the topics (as they
    were when reading began) has been read to its end (records written later may be missed).
    """
    from confluent_kafka import Consumer, KafkaError

    conf = client_config(
        bootstrap,
        security,
        **{
            "group.id": f"qmon-cli-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest" if from_beginning else "latest",
            "enable.partition.eof": to_end,
        },
    )
    c = Consumer(conf)
    logical_of = {topics.physical(t, prefix): t for t in topic_names}
    assigned: list[float] = []
    c.subscribe(list(logical_of), on_assign=lambda _c, _parts: assigned.append(time.monotonic()))
    pending = partitions_of(c, list(logical_of)) if to_end else set()
    start = last = time.monotonic()
    try:
        while True:
            now = time.monotonic()
            if timeout is not None and now - start > timeout:
                if pending:
                    raise TimeoutError(f"{len(pending)} partition(s) not read to their end in {timeout} s")
                return
            if idle is not None and assigned and now - max(last, assigned[0]) > idle:
                return
            if to_end and not pending:
                return
            msg = c.poll(0.2)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    pending.discard((msg.topic(), msg.partition()))
                    continue
                if err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    continue
                raise RuntimeError(f"consuming {msg.topic()}: {err}")
            last = time.monotonic()
            physical = msg.topic() or ""
            logical = logical_of.get(physical, physical)
            name = topics.RECORD_OF.get(logical)
            if name is None:
                continue
            try:
                record = avro.decode(name, msg.value() or b"")
            except avro.AvroDecodeError as exc:
                record = {"undecodable": str(exc)}
            yield logical, record, msg
            if stop is not None and stop(logical, record):
                return
    finally:
        c.close()


def wait_for_replies(
    bootstrap: str,
    command_ids: list[str],
    *,
    timeout: float = 120.0,
    security: KafkaSecurity | None = None,
    prefix: str = "qmon",
) -> dict[str, dict[str, Any]]:
    """The replies to ``command_ids`` (those that arrive within ``timeout``)."""
    wanted = set(command_ids)
    replies: dict[str, dict[str, Any]] = {}

    def done(topic: str, record: dict[str, Any]) -> bool:
        if record.get("command_id") in wanted:
            replies[record["command_id"]] = record
        return wanted <= replies.keys()

    for _ in consume(bootstrap, [topics.REPLIES], timeout=timeout, security=security, stop=done, prefix=prefix):
        pass
    return replies


def produce_paced(
    bootstrap: str,
    items: Iterable[Any],
    *,
    duration: float | None,
    stop: Any = None,
    security: KafkaSecurity | None = None,
    prefix: str = "qmon",
    progress: Callable[[float, int], None] | None = None,
    framing: Framing | None = None,
) -> int:
    """Produce simulator items (``qmon.app.simulator.Item``) in real time: each when the wall clock reaches
    its event time.  Ends after ``duration`` seconds or when ``stop`` is set; returns the count.  ``framing``:
    with a schema registry, records in Confluent's wire format (raw bytes, malformed or trace, as they are)."""
    p = producer(bootstrap, security)
    t_start = time.monotonic()
    first_ts: int | None = None
    count = 0
    last_progress = t_start
    try:
        for item in items:
            if first_ts is None:
                first_ts = item.ts
            due = t_start + (item.ts - first_ts) / 1000.0
            while True:
                now = time.monotonic()
                if (stop is not None and stop.is_set()) or (duration is not None and now - t_start >= duration):
                    return count
                if now >= due:
                    break
                p.poll(0)
                time.sleep(min(0.05, due - now))
            topic = topics.physical(item.topic, prefix)
            if isinstance(item.value, bytes):
                value = item.value
            else:
                record = topics.RECORD_OF[item.topic]
                value = avro.encode(record, item.value)
                value = framing.frame(topic, record, value) if framing is not None else value
            while True:
                try:
                    p.produce(topic, key=item.key, value=value)
                    break
                except BufferError:
                    p.poll(0.1)
            count += 1
            if progress is not None and time.monotonic() - last_progress >= 1.0:
                last_progress = time.monotonic()
                progress(last_progress - t_start, count)
        return count
    finally:
        p.flush(30)
