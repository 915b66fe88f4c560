"""Reliability through the real broker: hostile input, a job killed with SIGKILL while a workload streams."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from typing import Any

import pytest

from qmon.connectors import avro
from qmon.connectors.clients import consume, produce_rows
from qmon.connectors.kafka import ensure_topics
from qmon.core import topics
from qmon.core.config import Config
from qmon.core.queues import MonitorSettings
from qmon.core.reference import run_reference
from qmon.streaming.job import run
from tests.conftest import ROOT, descendants, java_noise

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

T0 = 1_700_000_000_000


def act(i: int, **kw: Any) -> dict[str, Any]:
    rec = {
        "event_id": f"f{i}",
        "qmgr": "QM1",
        "queue": "Q1",
        "op": "PUT",
        "ts": T0 + i,
        "depth_after": None,
        "msg_bytes": 10,
        "structure": None,
        "reason": None,
    }
    rec.update(kw)
    return rec


def cmd(i: int, text: str, **kw: Any) -> dict[str, Any]:
    return {"command_id": f"c{i}", "ts": T0 + i, "qmgr": "QM1", "text": text, "user": None, **kw}


def _varint(n: int) -> bytes:
    """``n`` as Avro writes a length: a base-128 varint, low group first."""
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes([*out, n])


def test_hostile_input_never_stops_the_job_and_every_record_is_processed_or_dead_lettered(
    spark, kafka_bootstrap, tmp_path
):
    prefix = f"h{uuid.uuid4().hex[:8]}"
    rng = random.Random(4)
    good_act = [
        act(
            i,
            queue=rng.choice(["Q1", "Q" * 48, "ÄÖÜ.Q"]),
            qmgr=rng.choice(["QM1", "NEVER.SEEN.QM", "X" * 48]),
            ts=rng.choice([0, 1, T0 + i, 253_402_300_799_999]),
            depth_after=rng.choice([None, 0, 10**12]),
        )
        for i in range(40)
    ]
    bad_act = [rng.randbytes(rng.randint(0, 200)) for _ in range(30)]
    # garbage that declares a string, bytes or array of 2 GB, which Avro would allocate before reading it
    bad_act += [_varint(2 * (2**31 - 16)) + rng.randbytes(20) for _ in range(3)]
    valid = avro.encode("QueueActivity", act(999))
    bad_act += [valid[:n] for n in range(1, len(valid), 3)]  # truncated
    bad_act += [avro.encode("ControlCommand", cmd(1, "PING QMGR"))]  # wrong schema
    bad_act += [
        avro.encode("QueueActivity", act(1000 + i, **kw))
        for i, kw in enumerate(
            [
                {"queue": "Q" * 100_000},
                {"qmgr": ""},
                {"event_id": ""},
                {"depth_after": -1},
                {"msg_bytes": -5},
                {"ts": -1},
                {"structure": "S" * 17},
            ]
        )
    ]
    good_cmd = [
        cmd(i, t)
        for i, t in enumerate(["PING QMGR", "ALTER QMGR PERFMEV(ENABLED)", "ALTER QLOCAL(Q1) QSVCINT(5) QSVCIEV(HIGH)"])
    ]
    bad_cmd_records = [
        cmd(10 + i, t)
        for i, t in enumerate(
            [
                "ALTER QLOCAL(Q1) QSVCINT(" + "9" * 10_000 + ")",
                "",
                "DEFINE QLOCAL(" + "Q" * 49 + ")",
                "\x00\x01\x02",
                "REGISTER INTEREST QUEUE(9OTMA) CLIENT(X)",
            ]
        )
    ]
    bad_cmd = (
        [avro.encode("ControlCommand", c) for c in bad_cmd_records]
        + [rng.randbytes(30) for _ in range(5)]
        + [_varint(2 * 2**30)]
    )
    bad_jrn = [rng.randbytes(25) for _ in range(5)] + [_varint(2 * 2**30) * 3]
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    rows = [(topics.physical(topics.ACTIVITY, prefix), b"k", avro.encode("QueueActivity", r)) for r in good_act]
    rows += [(topics.physical(topics.ACTIVITY, prefix), b"k", v) for v in bad_act]
    rows += [(topics.physical(topics.CONTROL, prefix), b"QM1", avro.encode("ControlCommand", c)) for c in good_cmd]
    rows += [(topics.physical(topics.CONTROL, prefix), b"QM1", v) for v in bad_cmd]
    rows += [(topics.physical(topics.JOURNAL, prefix), None, v) for v in bad_jrn]
    rng.shuffle(rows)
    produce_rows(kafka_bootstrap, rows)
    config = Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 2},
            "job": {"queue_shards": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds"},
        }
    )
    assert run(config, kafka_bootstrap, str(tmp_path / "ckpt"), available_now=True, spark=spark) == 0
    out = [(t, r) for t, r, _ in consume(kafka_bootstrap, topics.OUTPUTS, prefix=prefix, to_end=True, timeout=120)]
    dead = [r for t, r in out if t == topics.DLQ]
    expected_dead = len(bad_act) + len(bad_cmd) + len(bad_jrn)
    # counts add up: every bad record dead-lettered once, with its original bytes; nothing else was
    assert sorted(bytes(d["value"]) for d in dead) == sorted([*bad_act, *bad_cmd, *bad_jrn])
    assert len(dead) == expected_dead
    replies = [r for t, r in out if t == topics.REPLIES]
    assert sorted(r["command_id"] for r in replies) == sorted(c["command_id"] for c in [*good_cmd, *bad_cmd_records])


def _workload(n: int, alters: bool = False) -> list[dict[str, Any]]:
    """Activity on twelve queues of QM1; with ``alters``, an ALTER QLOCAL ... QSVCINT(...) every 75 records."""
    rng = random.Random(11)
    out: list[Any] = []
    depth: dict[Any, int] = {}
    for i in range(n):
        q = f"Q{rng.randrange(12)}"
        if alters and i % 75 == 40:
            text = f"ALTER QLOCAL({q}) QSVCINT({rng.choice([300, 1500, 4000])})"
            out.append({"command_id": f"a{i}", "ts": T0 + i * 700, "qmgr": "QM1", "command": text})
            continue
        op = "PUT" if depth.get(q, 0) == 0 or rng.random() < 0.6 else "GET"
        depth[q] = depth.get(q, 0) + (1 if op == "PUT" else -1)
        out.append(act(i, queue=q, op=op, ts=T0 + i * 700))
    return out


def test_qmon_run_killed_mid_stream_resumes_and_ctrl_c_stops_it_cleanly_losing_nothing(kafka_bootstrap, tmp_path):
    """SIGKILL to the job, its JVM and its workers while records (activity, and ALTER QLOCAL commands on their
    own topic) stream in, as a host crash would; the next start resumes from the checkpoint and reads the
    backlog a few records a batch, the commands' small topic ahead of the activity's, takes the rest of the
    stream and is stopped by Ctrl-C at a terminal (SIGINT to the foreground process group: the
    job, and its JVM and Python workers unless they are kept apart): exit status 0, no stack trace or ERROR
    line on stderr.  The outputs of the two runs are the uninterrupted result (the pure rules over one sort
    of the records), a repeat only as the same event_id.  (SIGTERM takes the same path as SIGINT:
    ``tests/streaming/test_stop.py``; a stop while a batch runs: ``tests/e2e/test_demo.py``.)"""
    prefix = f"x{uuid.uuid4().hex[:8]}"
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    cfg = tmp_path / "qmon.yaml"
    queues = [{"pattern": "Q*", "qsvciev": "HIGH", "qsvcint": 1500}]
    job = {"queue_shards": 2, "shuffle_partitions": 2, "trigger": "300 ms", "watermark_delay": "0 seconds"}
    cfg.write_text(
        json.dumps(
            {"kafka": {"topic_prefix": prefix, "partitions": 2}, "monitor": {"perfmev": "ENABLED"}, "queues": queues}
            | {"job": job | {"max_offsets_per_trigger": 50}}
        )
    )
    ckpt = tmp_path / "ckpt"
    cli = [sys.executable, "-m", "qmon", "run", "--config", str(cfg), "--bootstrap", kafka_bootstrap]
    cli += ["--checkpoint", str(ckpt)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    src, control = topics.physical(topics.ACTIVITY, prefix), topics.physical(topics.CONTROL, prefix)
    work = _workload(900, alters=True)
    settings = MonitorSettings(
        perfmev="ENABLED", queue_defaults=Config.model_validate({"queues": queues}).monitor_settings().queue_defaults
    )
    want = {e.record["event_id"] for e in run_reference(work, settings) if e.topic == topics.PERFORMANCE}

    def send(rows: list[dict[str, Any]]) -> None:
        out = []
        for r in rows:
            if "command" in r:
                c = {"command_id": r["command_id"], "ts": r["ts"], "qmgr": "QM1", "text": r["command"], "user": None}
                out.append((control, b"QM1", avro.encode("ControlCommand", c)))
            else:
                out.append((src, f"QM1/{r['queue']}".encode(), avro.encode("QueueActivity", r)))
        produce_rows(kafka_bootstrap, out)

    def commits() -> int:
        return len(list((ckpt / "commits").glob("[0-9]*"))) if (ckpt / "commits").is_dir() else 0

    def got() -> list[str]:
        return [
            r["event_id"] for _t, r, _ in consume(kafka_bootstrap, [topics.PERFORMANCE], prefix=prefix, to_end=True)
        ]

    def stream(chunk: list[dict[str, Any]], midway: threading.Event) -> None:
        """The chunk's first records, then, once the job has committed a batch of them, the rest as a stream."""
        done_before = commits()
        send(chunk[:30])
        deadline = time.monotonic() + 180
        while commits() == done_before and time.monotonic() < deadline:
            time.sleep(0.3)
        for i in range(30, len(chunk), 30):
            send(chunk[i : i + 30])
            if i == 120:
                midway.set()
            time.sleep(0.3)
        midway.set()

    for chunk, stop in ((work[:450], "sigkill"), (work[450:], "ctrl-c")):
        proc = subprocess.Popen(
            cli, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        midway = threading.Event()
        sender = threading.Thread(target=stream, args=(chunk, midway))
        try:
            sender.start()
            assert midway.wait(240), "the job never committed a batch"
            if stop == "sigkill":  # the job, its JVM and its workers, without warning
                for pid in [proc.pid, *descendants(proc.pid)]:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            else:  # once everything sent has come out
                sender.join()
                deadline = time.monotonic() + 240
                while not want <= set(got()) and time.monotonic() < deadline:
                    assert proc.poll() is None, proc.communicate()[1][-3000:]
                    time.sleep(1)
                os.killpg(proc.pid, signal.SIGINT)
            _out, err = proc.communicate(timeout=180)
        finally:
            sender.join()
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert proc.returncode == 0, err[-3000:]
    assert not java_noise(err), java_noise(err)
    assert want and set(got()) == want  # nothing lost, nothing made up; a repeat only as the same event_id


def test_broker_outage_of_30_seconds_mid_stream_loses_nothing(tmp_path):
    """Stop the broker for 30 s while the job runs, start it again: the job carries on by itself
    (or restarts its query with backoff) and every expected event arrives."""
    from qmon.devservers.kafka import LocalKafka

    broker = LocalKafka(workdir=tmp_path / "kafka").start()
    proc = None
    try:
        bootstrap = broker.bootstrap
        prefix = "qmon"
        ensure_topics(bootstrap, 2, prefix=prefix)
        cfg = tmp_path / "qmon.yaml"
        cfg.write_text(
            json.dumps(
                {
                    "kafka": {"partitions": 2},
                    "monitor": {"perfmev": "ENABLED"},
                    "queues": [{"pattern": "Q*", "qsvciev": "HIGH", "qsvcint": 1500}],
                    "job": {
                        "queue_shards": 2,
                        "shuffle_partitions": 2,
                        "trigger": "500 ms",
                        "watermark_delay": "0 seconds",
                    },
                }
            )
        )
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        log = open(tmp_path / "job.log", "w")
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "qmon",
                "run",
                "--config",
                str(cfg),
                "--bootstrap",
                bootstrap,
                "--checkpoint",
                str(tmp_path / "ckpt"),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        work = _workload(600)
        src = topics.physical(topics.ACTIVITY, prefix)

        def send(chunk: list[dict[str, Any]]) -> None:
            produce_rows(
                bootstrap, [(src, f"QM1/{r['queue']}".encode(), avro.encode("QueueActivity", r)) for r in chunk]
            )

        send(work[:300])
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if any(True for _ in consume(bootstrap, [topics.PERFORMANCE], idle=1, timeout=5)):
                break
        broker.stop()
        time.sleep(30)
        broker.start()
        send(work[300:])
        settings = MonitorSettings(
            perfmev="ENABLED",
            queue_defaults=Config.model_validate({"queues": [{"pattern": "Q*", "qsvciev": "HIGH", "qsvcint": 1500}]})
            .monitor_settings()
            .queue_defaults,
        )
        want = {e.record["event_id"] for e in run_reference(work, settings) if e.topic == topics.PERFORMANCE}
        got: set[str] = set()
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not want <= got:
            got = {r["event_id"] for t, r, _ in consume(bootstrap, [topics.PERFORMANCE], to_end=True, timeout=30)}
            assert proc.poll() is None, (tmp_path / "job.log").read_text()[-3000:]
            if not want <= got:
                time.sleep(1)
        assert want <= got, f"{len(want - got)} of {len(want)} events missing"
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        broker.stop()
