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
            "job": {"queue_shards": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds"},
            "monitor": {"snapshot_interval": "0 seconds"},
            "mq_trace": {"enabled": trace},
        }
    )


def perf_events(bootstrap: str, prefix: str) -> list[tuple[str, str, int]]:
    out = consume(bootstrap, [topics.PERFORMANCE], prefix=prefix, to_end=True, timeout=60)
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
    dead = [r for _, r, _ in consume(kafka_bootstrap, [topics.DLQ], prefix=b, to_end=True, timeout=60)]
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
    assert list(consume(kafka_bootstrap, [topics.DLQ], prefix=prefix, to_end=True, timeout=30)) == []
    # a new checkpoint finds the topic and reads it
    assert run(config, kafka_bootstrap, str(tmp_path / "new"), available_now=True, spark=spark) == 0
    dead = [r for _, r, _ in consume(kafka_bootstrap, [topics.DLQ], prefix=prefix, to_end=True, timeout=60)]
    assert [(d["reason_name"], d["value"]) for d in dead] == [("QMON_BAD_PCF", b"garbage")]


def test_qmon_seed_depth_and_qmon_produce_of_trace_lines_through_the_job(kafka_bootstrap, spark, tmp_path):
    """The commands an MQ shop runs, as subprocesses: ``qmon seed-depth`` from pasted DISPLAY output sets the
    depth, ``qmon produce`` sends captured trace lines to the trace topic as raw bytes; the job counts the
    trace's puts and gets from the seeded depth (RESET QSTATS: HIQDEPTH 5 + 2 puts) and dead-letters the
    line that is not PCF."""
    import base64
    import json
    import os
    import subprocess
    import sys
    import time
    import uuid
    from pathlib import Path

    prefix = f"t{uuid.uuid4().hex[:8]}"
    cfg = tmp_path / "qmon.yaml"
    cfg.write_text(f"kafka:\n  topic_prefix: {prefix}\n  partitions: 2\n")
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}

    def qmon(*args: str, stdin: str | None = None) -> None:
        cmd = [sys.executable, "-m", "qmon", "--log-level", "WARNING", *args]
        done = subprocess.run(
            [*cmd, "--config", str(cfg), "--bootstrap", kafka_bootstrap],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
        )
        assert done.returncode == 0, done.stdout + done.stderr

    display = (
        "AMQ8409I: Display Queue details.\n   QUEUE(PAY.IN)                           CURDEPTH(5)\n"
        "AMQ8409I: Display Queue details.\n   QUEUE(EMPTY.Q)                          CURDEPTH(0)\n"
    )
    qmon("seed-depth", "-m", "QM1", stdin=display)
    t = int(time.time() * 1000) + 1_000  # after the seed's START records (stamped now)
    e = pcf.Encoder()
    body = e.trace(
        "QM1",
        [
            e.call(pcf.XF_PUT, "PAY.IN", ts_ms=t, msg_length=10),
            e.call(pcf.XF_PUT, "PAY.IN", ts_ms=t + 1, msg_length=10),
            e.call(pcf.XF_GET, "PAY.IN", ts_ms=t + 2, msg_length=10),
        ],
    )
    lines = tmp_path / "trace.jsonl"
    lines.write_text(
        json.dumps({"mq_trace": base64.b64encode(body).decode()})
        + "\n"
        + json.dumps({"mq_trace": base64.b64encode(b"not pcf at all").decode()})
        + "\n"
    )
    qmon("produce", str(lines))
    send_commands(kafka_bootstrap, "QM1", ["RESET QSTATS(PAY.IN)"], ts=t + 10_000, prefix=prefix)
    assert (
        run(config_for(prefix, "auto"), kafka_bootstrap, str(tmp_path / "ckpt"), available_now=True, spark=spark) == 0
    )
    replies = [
        r["message"] for _, r, _ in consume(kafka_bootstrap, [topics.REPLIES], prefix=prefix, to_end=True, timeout=60)
    ]
    assert len(replies) == 1 and "HIQDEPTH(7) MSGSIN(2) MSGSOUT(1)" in replies[0], replies
    dead = [r for _, r, _ in consume(kafka_bootstrap, [topics.DLQ], prefix=prefix, to_end=True, timeout=60)]
    assert [(d["reason_name"], d["value"]) for d in dead] == [("QMON_BAD_PCF", b"not pcf at all")]
