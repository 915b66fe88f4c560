"""Event-time order through the real path: however Kafka delivers the input (a backlog read a few records a
batch, one partition far behind another, commands on their own topic, quiet partitions), the live job applies
the records in ``ts`` order and gives ``qmon replay``'s answer."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from qmon.connectors import avro
from qmon.connectors.clients import IN_ORDER
from qmon.connectors.kafka import client_config, ensure_topics
from qmon.core import topics
from qmon.core.config import Config
from qmon.streaming.job import run, start_query, stop_query
from tests.conftest import assert_eventually
from tests.e2e.test_job_kafka import T0, activity, outputs

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

#: what event time alone decides (QUEUE_STALLED and the structures' holds also follow the arrival clock, which
#: a backlog does not share with ``qmon replay``)
WANTED = (topics.PERFORMANCE, topics.REPLIES, topics.OVERFLOW)


def produce(bootstrap: str, prefix: str, rows: list[tuple[str, int | None, bytes | None, dict[str, Any]]]) -> None:
    """(logical topic, partition or None (by key), key, record) in that order, each partition kept in it (an
    idempotent producer: ``clients.IN_ORDER``)."""
    producer = Producer(client_config(bootstrap, **IN_ORDER))
    for topic, partition, key, rec in rows:
        value = avro.encode({topics.ACTIVITY: "QueueActivity", topics.CONTROL: "ControlCommand"}[topic], rec)
        if partition is None:
            producer.produce(topics.physical(topic, prefix), key=key, value=value)
        else:
            producer.produce(topics.physical(topic, prefix), key=key, value=value, partition=partition)
    assert producer.flush(30) == 0


def in_ts_order(bootstrap: str, prefix: str) -> dict[tuple[str, int], int]:
    """Each input partition's records (activity and commands), read back: how many, once it is checked that
    every partition holds them in ``ts`` order, the order the job's event-time frontier relies on."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(client_config(bootstrap, **{"group.id": f"order-{prefix}", "enable.auto.commit": False}))
    counts: dict[tuple[str, int], int] = {}
    try:
        for logical in (topics.ACTIVITY, topics.CONTROL):
            name = topics.physical(logical, prefix)
            record = {topics.ACTIVITY: "QueueActivity", topics.CONTROL: "ControlCommand"}[logical]
            for p in consumer.list_topics(name, timeout=10).topics[name].partitions:
                _low, high = consumer.get_watermark_offsets(TopicPartition(name, p), timeout=10)
                consumer.assign([TopicPartition(name, p, 0)])
                times: list[int] = []
                while len(times) < high:
                    msg = consumer.poll(10)
                    assert msg is not None and msg.error() is None, f"{name}/{p}: read {len(times)} of {high}"
                    times.append(int(avro.decode(record, msg.value() or b"")["ts"].timestamp() * 1000))
                assert times == sorted(times), f"{name}/{p} is not in ts order: {times}"
                counts[(logical, p)] = len(times)
    finally:
        consumer.close()
    return counts


def ids(records: list[tuple[str, dict[str, Any]]]) -> set[tuple[str, str]]:
    return {(t, r["event_id"]) for t, r in records if t in WANTED}


def run_to_the_end(spark: Any, config: Config, bootstrap: str, checkpoint: str) -> list[tuple[str, dict[str, Any]]]:
    """``qmon run --available-now`` over the backlog (a partition read to its end holds nothing back, so its last batch applies every record)."""
    assert run(config, bootstrap, checkpoint, available_now=True, spark=spark) == 0
    return outputs(bootstrap, config.kafka.topic_prefix)


def alters_mid_stream(seed: int = 45) -> tuple[list[dict[str, Any]], list[tuple[str, int | None, bytes | None, dict]]]:
    """150 records of activity on five queues, with ALTER QLOCAL ... QSVCINT(...) commands among them: the
    records for ``qmon replay`` and the same as Kafka rows (activity keyed by queue, commands on their topic)."""
    rng = random.Random(seed)
    depth = dict.fromkeys(range(5), 0)
    replayed: list[dict[str, Any]] = []
    rows: list[tuple[str, int | None, bytes | None, dict]] = []

    def command(i: int, ts: int, text: str) -> None:
        replayed.append({"command_id": f"c{i}", "ts": T0 + ts, "qmgr": "QM1", "command": text})
        cmd = {"command_id": f"c{i}", "ts": T0 + ts, "qmgr": "QM1", "text": text, "user": None}
        rows.append((topics.CONTROL, None, b"QM1", cmd))

    command(0, 0, "ALTER QMGR PERFMEV(ENABLED)")
    for q in range(5):
        command(1 + q, 0, f"ALTER QLOCAL(Q{q}) QSVCIEV(HIGH) QSVCINT(400)")
    for i in range(150):
        ts = 10 + i * 37
        if i % 25 == 12:
            q = rng.randrange(5)
            command(100 + i, ts, f"ALTER QLOCAL(Q{q}) QSVCINT({rng.choice([150, 900, 2500])})")
            continue
        q = rng.randrange(5)
        op = "PUT" if depth[q] == 0 or rng.random() < 0.55 else "GET"
        depth[q] += 1 if op == "PUT" else -1
        rec = activity(i, op, ts, queue=f"Q{q}")
        replayed.append(rec)
        rows.append((topics.ACTIVITY, None, f"QM1/Q{q}".encode(), rec))
    return replayed, rows


def test_a_backlog_read_a_few_records_a_batch_gives_replays_answer(
    spark, kafka_bootstrap, prefix, tmp_path, replay_factory
):
    """The commands' topic is small and read ahead of the activity's backlog (12 records a batch per topic):
    an ALTER must still take effect at its ``ts``, not before the activity that happened earlier."""
    replayed, rows = alters_mid_stream()
    config = Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 2},
            "job": {"queue_shards": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds",
                    "max_offsets_per_trigger": 12, "trigger": "500 ms"},
        }
    )  # fmt: skip
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    produce(kafka_bootstrap, prefix, rows)
    produced = int(time.time() * 1000)
    live = ids(run_to_the_end(spark, config, kafka_bootstrap, str(tmp_path / "ckpt")))
    expected = {(r["topic"], r["event_id"]) for r in replay_factory(replayed, config) if r["topic"] in WANTED}
    assert len([t for t, _ in expected if t == topics.PERFORMANCE]) > 8
    assert live == expected
    # the run's end left the arrival clock where the input's last record put it (not at the moment it ended)
    assert watermark(tmp_path / "ckpt") <= produced


def watermark(checkpoint: Path) -> int:
    """The watermark the last committed batch left for the next (Spark's commit log), in ms."""
    last = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    return int(json.loads((checkpoint / "commits" / str(last)).read_text().splitlines()[1])["nextBatchWatermarkMs"])


def test_a_structures_gets_read_far_behind_its_puts_raise_nothing_replay_does_not(
    spark, kafka_bootstrap, prefix, tmp_path, replay_factory
):
    """A structure's puts on one partition, the gets that follow each of them on another, behind 150 records of
    other queues from the same first second: read a few records a batch (Spark shares them out by what each
    partition has left), the gets' partition is read many batches behind the puts'.  Usage never looks
    higher than it was, so no STRUCTURE_FULL, near-full alert or overflow selection that replay does not
    raise."""
    structure = {"strname": "MSGQ1", "size": 10, "ovflwmax": 70, "fullthreshold": 80, "ovflwstr": "OVF1",
                 "ovflwsize": 10}  # fmt: skip
    config = Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 2},
            "job": {"queue_shards": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds",
                    "max_offsets_per_trigger": 20},
            "structures": [structure],
        }
    )  # fmt: skip
    puts, gets = [], []
    for i in range(30):  # each message (2 elements) is got 150 ms after it was put: usage stays at 10 %
        puts.append(activity(i, "PUT", 1_000 * i, queue=f"1Q{i % 3}", qmgr="IMSA", structure="MSGQ1", msg_bytes=600))
        gets.append(activity(1000 + i, "GET", 1_000 * i + 150, queue=f"1Q{i % 3}", qmgr="IMSA", structure="MSGQ1",
                             msg_bytes=600))  # fmt: skip
    others = [activity(2000 + i, "PUT", i // 3, queue=f"OTHER{i % 7}", qmgr="QMB") for i in range(150)]
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    produce(kafka_bootstrap, prefix, [(topics.ACTIVITY, 0, None, r) for r in puts])
    produce(kafka_bootstrap, prefix, [(topics.ACTIVITY, 1, None, r) for r in others + gets])
    out = run_to_the_end(spark, config, kafka_bootstrap, str(tmp_path / "ckpt"))
    replayed = replay_factory(puts + others + gets, config)
    assert ids(out) == {(r["topic"], r["event_id"]) for r in replayed if r["topic"] in WANTED}
    assert not [r for r in replayed if r["topic"] in (topics.ALERTS, topics.OVERFLOW)]
    assert not [r for t, r in out if t in (topics.ALERTS, topics.OVERFLOW)]  # nor does the live job


def test_a_quiet_partition_does_not_hold_back_the_busy_ones(spark, kafka_bootstrap, prefix, tmp_path):
    """Partition 1 of the activity and the commands' topic say nothing for the whole run: a stall on
    partition 0's queue is raised as soon as the job has read the records that show it, without waiting for
    the quiet ones (a partition with nothing to read holds nothing back)."""
    config = Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 2},
            "job": {"queue_shards": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds", "trigger": "300 ms"},
            "monitor": {"perfmev": "ENABLED"},
            "queues": [{"pattern": "BUSY*", "qsvciev": "HIGH", "qsvcint": 1000}],
        }
    )
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    query = start_query(spark, config, kafka_bootstrap, str(tmp_path / "ckpt"), publish_progress=False)
    try:
        now = int(time.time() * 1000) - T0
        records = [activity(1, "PUT", now), activity(2, "PUT", now + 10), activity(3, "GET", now + 3_000)]
        produce(kafka_bootstrap, prefix, [(topics.ACTIVITY, 0, None, {**r, "queue": "BUSY.Q"}) for r in records])
        sent = time.monotonic()
        assert_eventually(
            lambda: any(
                t == topics.PERFORMANCE and r["type"] == "QSVCINT_HIGH" for t, r in outputs(kafka_bootstrap, prefix)
            ),
            timeout=60,
            query=query,
        )
        assert time.monotonic() - sent < 20  # a few triggers, not the quiet partitions' silence
    finally:
        stop_query(query)


def _normalised(topic: str, record: dict[str, Any]) -> str:
    import json

    data = avro.encode(topics.RECORD_OF[topic], record)
    return json.dumps({"topic": topic, **avro.to_jsonable(avro.decode(topics.RECORD_OF[topic], data))}, sort_keys=True)


def test_the_job_equals_the_pure_rules_over_random_streams_read_in_many_small_batches(
    spark, kafka_bootstrap, prefix, tmp_path
):
    """Property, through the real path: random activity and command streams of ten queue managers, activity
    keyed by queue over two partitions and commands on their own topic, read 40 records a batch per topic:
    the performance events, replies and notifications are exactly the pure rules' (one sort of all records),
    event ids included.  (Stall alerts fire on the arrival clock, which a backlog read all at once does not
    share with event time: they are compared through replay elsewhere.)"""
    from qmon.core.queues import MonitorSettings
    from qmon.core.reference import run_reference
    from tests.streams import streams

    # a clock that ticks by the second: many records of every queue manager at one ts, on every partition of
    # both topics, so that batches end between records of one ts
    records = streams(random.Random(20261127), 16, grain_ms=1_000, n=(40, 80))
    rows: list[tuple[str, int | None, bytes | None, dict]] = []
    for r in records:
        if "command" in r:
            cmd = {"command_id": r["command_id"], "ts": r["ts"], "qmgr": r["qmgr"], "text": r["command"], "user": None}
            rows.append((topics.CONTROL, None, r["qmgr"].encode(), cmd))
        else:
            rec = {"depth_after": None, "msg_bytes": None, "structure": None, "reason": None, **r}
            rows.append((topics.ACTIVITY, None, f"{r['qmgr']}/{r['queue']}".encode(), rec))
    config = Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 2},
            "job": {"queue_shards": 3, "shuffle_partitions": 2, "watermark_delay": "0 seconds",
                    "max_offsets_per_trigger": 40},
        }
    )  # fmt: skip
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    produce(kafka_bootstrap, prefix, rows)
    assert len(in_ts_order(kafka_bootstrap, prefix)) == 4  # (both partitions of both topics hold records)
    compared = (topics.PERFORMANCE, topics.REPLIES, topics.NOTIFY)
    out = run_to_the_end(spark, config, kafka_bootstrap, str(tmp_path / "ckpt"))
    got = sorted(_normalised(t, r) for t, r in out if t in compared)
    want = sorted(
        _normalised(e.topic, e.record) for e in run_reference(records, MonitorSettings()) if e.topic in compared
    )
    assert sum(1 for g in got if topics.PERFORMANCE in g) > 15
    missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    assert got == want, f"missing {len(missing)}: {missing[:8]}\nextra {len(extra)}: {extra[:8]}"
