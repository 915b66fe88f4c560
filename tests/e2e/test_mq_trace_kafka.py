"""The real path for MQ activity trace: PCF message bodies produced to ``<prefix>.mq.trace`` (as IBM's Kafka
Connect MQ source copies them: raw bytes) raise the same service-interval events as the same calls sent as
QueueActivity records; an unreadable message lands on the DLQ whole."""

from __future__ import annotations

from typing import Any

import pytest

from qmon.connectors import avro
from qmon.connectors.clients import consume, produce_rows, send_commands
from qmon.connectors.kafka import ensure_topics
from qmon.core import pcf, topics
from qmon.core.config import Config
from qmon.streaming.job import run

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

T = 1_700_000_000_000
CALLS = [("PUT", 0), ("PUT", 100), ("GET", 3_100), ("GET", 3_200)]


def config_for(prefix: str, trace: Any) -> Config:
    return Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 2},
            "job": {"queue_buckets": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds"},
            "monitor": {"snapshot_interval": "0 seconds"},
            "mq_trace": {"enabled": trace},
        }
    )


def perf_events(bootstrap: str, prefix: str) -> list[tuple[str, str, int]]:
    out = consume(bootstrap, [topics.PERFORMANCE], prefix=prefix, idle=4, timeout=60)
    return sorted((r["type"], r["queue"], avro_ms(r["ts"])) for _, r, _ in out)


def avro_ms(ts: Any) -> int:
    return ts if isinstance(ts, int) else round(ts.timestamp() * 1000)


def setup(bootstrap: str, prefix: str) -> None:
    send_commands(
        bootstrap,
        "QM1",
        ["ALTER QMGR PERFMEV(ENABLED)", "ALTER QLOCAL(PAY.IN) QSVCIEV(HIGH) QSVCINT(1000)"],
        ts=T - 10,
        prefix=prefix,
    )


def test_trace_bytes_raise_the_same_events_as_activity_records(kafka_bootstrap, spark, tmp_path):
    import uuid

    a, b = f"t{uuid.uuid4().hex[:8]}", f"t{uuid.uuid4().hex[:8]}"
    # the same calls as QueueActivity records ...
    ensure_topics(kafka_bootstrap, 2, prefix=a)
    setup(kafka_bootstrap, a)
    rows = [
        (
            topics.physical(topics.ACTIVITY, a),
            b"QM1/PAY.IN",
            avro.encode(
                "QueueActivity",
                {
                    "event_id": f"x{i}",
                    "qmgr": "QM1",
                    "queue": "PAY.IN",
                    "op": op,
                    "ts": T + dt,
                    "depth_after": None,
                    "msg_bytes": 100,
                    "structure": None,
                    "reason": None,
                },
            ),
        )
        for i, (op, dt) in enumerate(CALLS)
    ]
    produce_rows(kafka_bootstrap, rows)
    assert run(config_for(a, False), kafka_bootstrap, str(tmp_path / "a"), available_now=True, spark=spark) == 0
    expected = perf_events(kafka_bootstrap, a)
    assert [e[0] for e in expected] == ["QSVCINT_HIGH", "QSVCINT_OK"]
    # ... and as two activity trace messages, one little-, one big-endian, plus one that is not PCF
    config = config_for(b, True)
    ensure_topics(kafka_bootstrap, 2, prefix=b, mq_trace=True)
    setup(kafka_bootstrap, b)
    le, be = pcf.Encoder("<"), pcf.Encoder(">")
    first = le.trace("QM1", [le.call(pcf.XF_PUT, "PAY.IN", ts_ms=T + dt, msg_length=100) for _, dt in CALLS[:2]])
    second = be.trace("QM1", [be.call(pcf.XF_GET, "PAY.IN", ts_ms=T + dt, msg_length=100) for _, dt in CALLS[2:]])
    trace = topics.physical(topics.MQ_TRACE, b)
    produce_rows(kafka_bootstrap, [(trace, None, first), (trace, None, second), (trace, None, b"garbage")])
    assert run(config, kafka_bootstrap, str(tmp_path / "b"), available_now=True, spark=spark) == 0
    assert perf_events(kafka_bootstrap, b) == expected
    dead = [r for _, r, _ in consume(kafka_bootstrap, [topics.DLQ], prefix=b, idle=4, timeout=60)]
    assert [(d["reason_name"], d["value"]) for d in dead] == [("QMON_BAD_PCF", b"garbage")]
    assert dead[0]["error"].startswith("at byte 0: not an activity trace message")


def test_auto_keeps_what_the_checkpoint_was_started_with(kafka_bootstrap, spark, tmp_path):
    """The trace topic appearing after a checkpoint was started without it (``qmon simulate --format
    mq-trace``, the connector) must not change the query's sources, which Spark refuses on a checkpoint; a new
    checkpoint reads it."""
    import uuid

    prefix = f"t{uuid.uuid4().hex[:8]}"
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)  # no trace topic yet
    setup(kafka_bootstrap, prefix)
    activity = topics.physical(topics.ACTIVITY, prefix)

    def record(i: int, op: str, dt: int) -> tuple[str, bytes, bytes]:
        rec = {"event_id": f"x{i}", "qmgr": "QM1", "queue": "PAY.IN", "op": op, "ts": T + dt}
        rec |= {"depth_after": None, "msg_bytes": 100, "structure": None, "reason": None}
        return (activity, b"QM1/PAY.IN", avro.encode("QueueActivity", rec))

    config = config_for(prefix, "auto")
    produce_rows(kafka_bootstrap, [record(i, op, dt) for i, (op, dt) in enumerate(CALLS[:2])])
    ckpt = str(tmp_path / "ckpt")
    assert run(config, kafka_bootstrap, ckpt, available_now=True, spark=spark) == 0
    ensure_topics(kafka_bootstrap, 2, prefix=prefix, mq_trace=True)  # the topic appears
    produce_rows(kafka_bootstrap, [(topics.physical(topics.MQ_TRACE, prefix), None, b"garbage")])
    produce_rows(kafka_bootstrap, [record(i, op, dt) for i, (op, dt) in enumerate(CALLS[2:], 2)])
    assert run(config, kafka_bootstrap, ckpt, available_now=True, spark=spark) == 0  # same sources as before
    assert [e[0] for e in perf_events(kafka_bootstrap, prefix)] == ["QSVCINT_HIGH", "QSVCINT_OK"]
    assert list(consume(kafka_bootstrap, [topics.DLQ], prefix=prefix, idle=3, timeout=30)) == []
    # a new checkpoint finds the topic and reads it
    assert run(config, kafka_bootstrap, str(tmp_path / "new"), available_now=True, spark=spark) == 0
    dead = [r for _, r, _ in consume(kafka_bootstrap, [topics.DLQ], prefix=prefix, idle=4, timeout=60)]
    assert [(d["reason_name"], d["value"]) for d in dead] == [("QMON_BAD_PCF", b"garbage")]
