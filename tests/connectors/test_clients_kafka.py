"""``consume(..., to_end=True)``: reads what the topics hold when it starts, then stops by itself (real broker)."""

from __future__ import annotations

import time

import pytest

from qmon.connectors import avro
from qmon.connectors.clients import consume, produce_rows
from qmon.connectors.kafka import ensure_topics
from qmon.core import topics

pytestmark = pytest.mark.kafka

T0 = 1_700_000_000_000
LONG = 120.0  # the timeout: reaching it means to_end never ended the read


def reply(i: int) -> bytes:
    record = {"event_id": f"r{i}", "command_id": f"c{i}", "qmgr": "QM1", "ts": T0 + i, "ok": True, "message": "ok"}
    return avro.encode("CommandReply", record)


def test_to_end_reads_every_partition_to_its_end_then_stops(kafka_bootstrap, prefix):
    ensure_topics(kafka_bootstrap, 3, prefix=prefix)
    name = topics.physical(topics.REPLIES, prefix)
    # 25 records on one key: one partition holds them all, the other two stay empty
    produce_rows(kafka_bootstrap, [(name, b"QM1", reply(i)) for i in range(25)])
    started = time.monotonic()
    read = consume(kafka_bootstrap, [topics.REPLIES], prefix=prefix, to_end=True, timeout=LONG)
    assert [r["event_id"] for _, r, _ in read] == [f"r{i}" for i in range(25)]  # all of them, in order
    assert time.monotonic() - started < LONG  # it ended at the end, not at its timeout

    started = time.monotonic()
    assert list(consume(kafka_bootstrap, [topics.ALERTS], prefix=prefix, to_end=True, timeout=LONG)) == []
    assert time.monotonic() - started < LONG  # an empty topic ends too


def test_an_existing_input_topic_on_the_producers_timestamps_is_named_with_the_fix(kafka_bootstrap, prefix, caplog):
    from confluent_kafka.admin import AdminClient, NewTopic

    from qmon.connectors.kafka import client_config, create_time_topics

    admin = AdminClient(client_config(kafka_bootstrap))
    activity = topics.physical(topics.ACTIVITY, prefix)
    for fut in admin.create_topics([NewTopic(activity, num_partitions=1, replication_factor=1)]).values():
        fut.result()  # (made by hand: the broker's default, CreateTime)
    with caplog.at_level("WARNING", logger="qmon.connectors.kafka"):
        ensure_topics(kafka_bootstrap, 1, prefix=prefix)
    warned = [r.getMessage() for r in caplog.records if activity in r.getMessage()]
    assert warned and "message.timestamp.type=LogAppendTime" in warned[0]
    control = topics.physical(topics.CONTROL, prefix)  # created by qmon: append time, no warning
    assert create_time_topics(admin, [activity, control]) == [activity]
