"""The DLQ handler through the real broker: dead letters made by the job are retried, forwarded and
ignored per rule; ignored records are rescanned; a killed handler loses and duplicates nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from typing import Any

import pytest

from connectors import avro
from connectors.clients import produce_rows, send_commands
from connectors.dlqhandler import Handler
from connectors.kafka import client_config, ensure_topics
from qmon import topics
from qmon.config import Config
from qmon.dlqrules import parse_rules
from streaming.job import run
from tests.conftest import ROOT

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

T0 = 1_700_000_000_000


def read_raw(bootstrap: str, topic: str, idle: float = 3.0) -> list[tuple[bytes | None, bytes | None, dict]]:
    from confluent_kafka import Consumer

    c = Consumer(client_config(bootstrap, **{"group.id": f"t-{uuid.uuid4()}", "auto.offset.reset": "earliest",
                                             "enable.auto.commit": False}))
    c.subscribe([topic])
    out = []
    last = time.monotonic()
    deadline = last + 60
    while time.monotonic() - last < idle and time.monotonic() < deadline:
        m = c.poll(0.3)
        if m is None or m.error():
            continue
        last = time.monotonic()
        out.append((m.key(), m.value(), dict((k, v) for k, v in (m.headers() or []))))
    c.close()
    return out


def create(bootstrap: str, *names: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(client_config(bootstrap))
    for fut in admin.create_topics([NewTopic(n, num_partitions=1, replication_factor=1) for n in names]).values():
        fut.result()


def make_dead_letters(spark: Any, bootstrap: str, prefix: str, tmp_path: Any) -> dict[str, bytes]:
    config = Config.model_validate({"kafka": {"topic_prefix": prefix, "partitions": 1},
                                    "job": {"queue_buckets": 1, "shuffle_partitions": 2,
                                            "watermark_delay": "0 seconds"}})
    ensure_topics(bootstrap, 1, prefix=prefix)
    good = {"event_id": "a1", "qmgr": "QM1", "queue": "Q1", "op": "PUT", "ts": T0, "depth_after": None,
            "msg_bytes": 10, "structure": None, "reason": None}
    values = {"undecodable": b"\x07garbage", "too_long": avro.encode("QueueActivity", {**good, "queue": "Q" * 60})}
    produce_rows(bootstrap, [(topics.physical(topics.ACTIVITY, prefix), b"k", v) for v in values.values()])
    send_commands(bootstrap, "QM1", ["DROP TABLE QUEUES"], ts=T0, prefix=prefix)
    assert run(config, bootstrap, str(tmp_path / "ckpt"), available_now=True, spark=spark) == 0
    return values


def test_retry_forward_ignore_and_rescan(spark, kafka_bootstrap, tmp_path):
    prefix = f"d{uuid.uuid4().hex[:8]}"
    values = make_dead_letters(spark, kafka_bootstrap, prefix, tmp_path)
    fwd, missing = f"{prefix}.fwd.commands", f"{prefix}.later"
    create(kafka_bootstrap, fwd)
    table = parse_rules(f"""
* test table
INPUTQ({prefix}.dlq) RETRYINT(1) WAIT(NO)
REASON(QMON_INVALID_COMMAND) ACTION(FWD) FWDQ({fwd}) HEADER(YES)
REASON(QMON_INVALID_FIELD) DESTQ(*.activity) ACTION(RETRY) RETRY(2)
REASON(QMON_UNDECODABLE) ACTION(FWD) FWDQ({missing}) HEADER(NO) RETRY(2)
""")
    lines: list[str] = []
    totals = Handler(kafka_bootstrap, table, prefix=prefix, printer=lines.append).run()
    assert (totals.processed, totals.forwarded, totals.retried, totals.ignored) == (3, 1, 1, 1)
    assert lines[-1].startswith("dlq-handler stopped after scan") and \
        "processed 3, forwarded 1, retried 1, discarded 0, ignored 1; 1 record(s) left on the DLQ" in lines[-1], lines
    scans = [line for line in lines if line.startswith("dlq-handler scan ")]
    assert scans and sum(int(line.split("processed ")[1].split(",")[0]) for line in scans) == 3, lines

    forwarded = read_raw(kafka_bootstrap, fwd)
    assert len(forwarded) == 1
    dl = avro.decode("DeadLetter", forwarded[0][1])  # HEADER(YES): the whole DeadLetter, untouched
    assert dl["reason_name"] == "QMON_INVALID_COMMAND" and forwarded[0][2]["qmon.dlq.reason"] == b"QMON_INVALID_COMMAND"
    activity = [v for _, v, _ in read_raw(kafka_bootstrap, topics.physical(topics.ACTIVITY, prefix))]
    assert activity.count(values["too_long"]) == 2  # RETRY: the original bytes back on their topic

    # the undecodable record stays on the DLQ (ledger); once its forward queue exists, a rescan moves it
    create(kafka_bootstrap, missing)
    totals = Handler(kafka_bootstrap, table, prefix=prefix, printer=lines.append).run()
    assert (totals.processed, totals.forwarded) == (1, 1)
    moved = read_raw(kafka_bootstrap, missing)
    assert [v for _, v, _ in moved] == [values["undecodable"]]  # HEADER(NO): the original bytes only
    # a third run has nothing to do: nothing is processed twice
    totals = Handler(kafka_bootstrap, table, prefix=prefix, printer=lines.append).run()
    assert totals.processed == 0
    assert len(read_raw(kafka_bootstrap, fwd)) == 1 and len(read_raw(kafka_bootstrap, missing)) == 1


def test_a_killed_handler_loses_and_duplicates_nothing(spark, kafka_bootstrap, tmp_path):
    prefix = f"k{uuid.uuid4().hex[:8]}"
    make_dead_letters(spark, kafka_bootstrap, prefix, tmp_path)
    out = f"{prefix}.all"
    create(kafka_bootstrap, out)
    rules = tmp_path / "kill.rules"
    rules.write_text(f"INPUTQ({prefix}.dlq) RETRYINT(1) WAIT(NO)\n"
                     f"REASON(QMON_INVALID_FIELD) ACTION(RETRY)\n"
                     f"ACTION(FWD) FWDQ({out}) HEADER(YES)\n")
    cfg = tmp_path / "qmon.yaml"
    cfg.write_text(f"kafka:\n  topic_prefix: {prefix}\n")
    cli = [sys.executable, "-m", "qmon.cli", "dlq-handler", "--rules", str(rules), "--config", str(cfg),
           "--bootstrap", kafka_bootstrap]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # the first handler writes its batch (forwards, a retry) and is killed before it commits
    proc = subprocess.Popen(cli, env={**env, "QMON_FAULT_PAUSE_BEFORE_COMMIT": "60"}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(8)
    assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""  # paused inside its transaction
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    forwarded = read_raw(kafka_bootstrap, out)
    assert sorted(avro.decode("DeadLetter", v)["reason_name"] for _, v, _ in forwarded) == [
        "QMON_INVALID_COMMAND", "QMON_UNDECODABLE"]  # each exactly once, whatever the kill interrupted
    retried = [v for _, v, h in read_raw(kafka_bootstrap, topics.physical(topics.ACTIVITY, prefix))
               if "qmon.dlq.source" in h]
    assert len(retried) == 1
