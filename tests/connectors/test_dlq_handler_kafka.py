"""The DLQ handler through the real broker: dead letters made by the job are retried, forwarded and
ignored per rule; ignored records are rescanned; a killed handler loses and duplicates nothing; a
record waiting for a retry holds up no other record; a record whose rules all failed is attempted
exactly RETRY times in total."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from qmon.connectors import avro
from qmon.connectors.clients import partitions_of, produce_rows, send_commands
from qmon.connectors.dlqhandler import Handler
from qmon.connectors.kafka import client_config, ensure_topics
from qmon.core import topics
from qmon.core.config import Config
from qmon.core.dlqrules import parse_rules
from qmon.streaming.job import run
from tests.conftest import ROOT

pytestmark = [pytest.mark.kafka]  # the tests that also run the job are marked spark

T0 = 1_700_000_000_000


def read_raw(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes | None, dict]]:
    """Every record ``topic`` holds now (committed), read to the end of each partition."""
    from confluent_kafka import Consumer, KafkaError

    c = Consumer(
        client_config(
            bootstrap,
            **{
                "group.id": f"t-{uuid.uuid4()}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
            },
        )
    )
    pending = partitions_of(c, [topic])
    c.subscribe([topic])
    out = []
    deadline = time.monotonic() + 60
    while pending and time.monotonic() < deadline:
        m = c.poll(0.3)
        if m is None:
            continue
        err = m.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                pending.discard((topic, m.partition()))
            continue
        out.append((m.key(), m.value(), dict(m.headers() or [])))
    c.close()
    assert not pending, f"{topic}: partitions {sorted(pending)} not read to their end in 60 s"
    return out


def create(bootstrap: str, *names: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(client_config(bootstrap))
    for fut in admin.create_topics([NewTopic(n, num_partitions=1, replication_factor=1) for n in names]).values():
        fut.result()


def make_dead_letters(spark: Any, bootstrap: str, prefix: str, tmp_path: Any) -> dict[str, bytes]:
    config = Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 1},
            "job": {"queue_shards": 1, "shuffle_partitions": 2, "watermark_delay": "0 seconds"},
        }
    )
    ensure_topics(bootstrap, 1, prefix=prefix)
    good = {
        "event_id": "a1",
        "qmgr": "QM1",
        "queue": "Q1",
        "op": "PUT",
        "ts": T0,
        "depth_after": None,
        "msg_bytes": 10,
        "structure": None,
        "reason": None,
    }
    values = {"undecodable": b"\x07garbage", "too_long": avro.encode("QueueActivity", {**good, "queue": "Q" * 60})}
    produce_rows(bootstrap, [(topics.physical(topics.ACTIVITY, prefix), b"k", v) for v in values.values()])
    send_commands(bootstrap, "QM1", ["DROP TABLE QUEUES"], ts=T0, prefix=prefix)
    assert run(config, bootstrap, str(tmp_path / "ckpt"), available_now=True, spark=spark) == 0
    return values


@pytest.mark.spark
def test_retry_forward_ignore_and_rescan(spark, kafka_bootstrap, tmp_path):
    prefix = f"d{uuid.uuid4().hex[:8]}"
    values = make_dead_letters(spark, kafka_bootstrap, prefix, tmp_path)
    fwd, missing = f"{prefix}.fwd.commands", f"{prefix}.later"
    create(kafka_bootstrap, fwd)
    table_text = f"""
* test table
INPUTQ({prefix}.dlq) RETRYINT(1) WAIT(NO)
REASON(QMON_INVALID_COMMAND) ACTION(FWD) FWDQ({fwd}) HEADER(YES)
REASON(QMON_INVALID_FIELD) DESTQ(*.activity) ACTION(RETRY) RETRY(2)
REASON(QMON_UNDECODABLE) ACTION(FWD) FWDQ({missing}) HEADER(NO) RETRY(2)
"""
    table = parse_rules(table_text)
    lines: list[str] = []
    totals = Handler(kafka_bootstrap, table, prefix=prefix, printer=lines.append).run()
    assert (totals.processed, totals.forwarded, totals.retried, totals.ignored) == (3, 1, 1, 1)
    assert (
        lines[-1].startswith("dlq-handler stopped after scan")
        and "processed 3, forwarded 1, retried 1, discarded 0, ignored 1; " in lines[-1]
        and "1 record(s) left on the DLQ (ignored), 0 waiting for a retry" in lines[-1]
    ), lines
    assert (totals.attempts, totals.failed) == (4, 2)  # FWD 1, RETRY 1, the missing topic's RETRY(2): 2 failed
    scans = [line for line in lines if line.startswith("dlq-handler scan ")]
    assert scans and sum(int(line.split("processed ")[1].split(",")[0]) for line in scans) == 3, lines

    forwarded = read_raw(kafka_bootstrap, fwd)
    assert len(forwarded) == 1
    dl = avro.decode("DeadLetter", forwarded[0][1])  # HEADER(YES): the whole DeadLetter, untouched
    assert dl["reason_name"] == "QMON_INVALID_COMMAND" and forwarded[0][2]["qmon.dlq.reason"] == b"QMON_INVALID_COMMAND"
    activity = [v for _, v, _ in read_raw(kafka_bootstrap, topics.physical(topics.ACTIVITY, prefix))]
    assert activity.count(values["too_long"]) == 2  # RETRY: the original bytes back on their topic

    # the undecodable record stays on the DLQ (ledger), ignored for good: its rule's 2 attempts are used up,
    # so a restart with the same table does not attempt it again, even once its forward topic exists
    create(kafka_bootstrap, missing)
    totals = Handler(kafka_bootstrap, table, prefix=prefix, printer=lines.append).run()
    assert (totals.processed, totals.attempts) == (0, 0)
    # rules are read at start (as IBM MQ's DLQ handler reads them): a table whose rule allows 3 attempts gives it exactly one more
    more = parse_rules(
        table_text.replace(f"FWDQ({missing}) HEADER(NO) RETRY(2)", f"FWDQ({missing}) HEADER(NO) RETRY(3)")
    )
    assert more.rules[2].retry == 3
    totals = Handler(kafka_bootstrap, more, prefix=prefix, printer=lines.append).run()
    assert (totals.processed, totals.forwarded, totals.attempts) == (1, 1, 1)
    moved = read_raw(kafka_bootstrap, missing)
    assert [v for _, v, _ in moved] == [values["undecodable"]]  # HEADER(NO): the original bytes only
    # a fourth run has nothing to do: nothing is processed twice
    totals = Handler(kafka_bootstrap, more, prefix=prefix, printer=lines.append).run()
    assert totals.processed == 0
    assert len(read_raw(kafka_bootstrap, fwd)) == 1 and len(read_raw(kafka_bootstrap, missing)) == 1


def test_a_killed_handler_loses_and_duplicates_nothing(kafka_bootstrap, tmp_path):
    prefix = f"k{uuid.uuid4().hex[:8]}"
    ensure_topics(kafka_bootstrap, 1, prefix=prefix)
    activity, control = topics.physical(topics.ACTIVITY, prefix), topics.physical(topics.CONTROL, prefix)
    produce_rows(
        kafka_bootstrap,
        [
            (f"{prefix}.dlq", b"k", dead_letter(reason, dest, T0, value))
            for reason, dest, value in (
                ("QMON_INVALID_FIELD", activity, b"too long a queue name"),
                ("QMON_INVALID_COMMAND", control, b"DROP TABLE QUEUES"),
                ("QMON_UNDECODABLE", activity, b"\x07garbage"),
            )
        ],
    )
    out = f"{prefix}.all"
    create(kafka_bootstrap, out)
    rules = tmp_path / "kill.rules"
    rules.write_text(
        f"INPUTQ({prefix}.dlq) RETRYINT(1) WAIT(NO)\n"
        f"REASON(QMON_INVALID_FIELD) ACTION(RETRY)\n"
        f"ACTION(FWD) FWDQ({out}) HEADER(YES)\n"
    )
    cfg = tmp_path / "qmon.yaml"
    cfg.write_text(f"kafka:\n  topic_prefix: {prefix}\n")
    cli = [
        sys.executable,
        "-m",
        "qmon",
        "dlq-handler",
        "--rules",
        str(rules),
        "--config",
        str(cfg),
        "--bootstrap",
        kafka_bootstrap,
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # the first handler writes its batch (forwards, a retry) and is killed before it commits
    log = tmp_path / "first.log"
    with open(log, "w") as first:
        paused = [sys.executable, str(Path(__file__).with_name("paused_dlq_handler.py")), *cli[3:]]
        proc = subprocess.Popen(paused, env=env, stdout=first, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while "before the commit" not in log.read_text() and time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        time.sleep(0.2)
    assert proc.poll() is None, log.read_text()  # paused inside its transaction
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    forwarded = read_raw(kafka_bootstrap, out)
    assert sorted(avro.decode("DeadLetter", v)["reason_name"] for _, v, _ in forwarded) == [
        "QMON_INVALID_COMMAND",
        "QMON_UNDECODABLE",
    ]  # each exactly once, whatever the kill interrupted
    retried = [
        v for _, v, h in read_raw(kafka_bootstrap, topics.physical(topics.ACTIVITY, prefix)) if "qmon.dlq.source" in h
    ]
    assert len(retried) == 1


# ---------------------------------------------------------------- scheduling (no Spark needed)


def dead_letter(reason: str, dest: str, put_ms: int, value: bytes) -> bytes:
    from qmon.core.reasons import CODE

    return avro.encode(
        "DeadLetter",
        {
            "event_id": uuid.uuid4().hex,
            "reason": CODE[reason],
            "reason_name": reason,
            "dest_topic": dest,
            "format": "QueueActivity",
            "put_appl_name": "qmon",
            "put_time": put_ms,
            "partition": 0,
            "offset": 0,
            "error": "made by the test",
            "key": b"k",
            "value": value,
        },
    )


def wait_for_records(bootstrap: str, topic: str, count: int, timeout: float) -> list[bytes]:
    """The values of the first ``count`` committed records of ``topic``, polling for at most ``timeout`` s."""
    from confluent_kafka import Consumer

    c = Consumer(
        client_config(
            bootstrap,
            **{
                "group.id": f"t-{uuid.uuid4()}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            },
        )
    )
    c.subscribe([topic])
    out: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < count and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                out.append(m.value() or b"")
    finally:
        c.close()
    return out


def ledger_entries(bootstrap: str, dlq: str) -> dict[str, Any]:
    import json

    entries: dict[str, Any] = {}
    for key, value, _ in read_raw(bootstrap, f"{dlq}.ignored"):
        if value is None:
            entries.pop((key or b"").decode(), None)
        else:
            entries[(key or b"").decode()] = json.loads(value)
    return entries


def test_a_retry_to_a_missing_topic_does_not_delay_a_later_record_a_fwd_rule_handles(kafka_bootstrap):
    prefix = f"s{uuid.uuid4().hex[:8]}"
    dlq, fwd, gone, group = f"{prefix}.dlq", f"{prefix}.fwd", f"{prefix}.gone", f"{prefix}-handler"
    create(kafka_bootstrap, dlq, fwd)
    retryint = 30  # the RETRY's first attempt is due 30 s after its put time, then every 30 s, 5 times
    put_ms = int(time.time() * 1000)
    produce_rows(
        kafka_bootstrap,
        [
            (dlq, b"first", dead_letter("QMON_INVALID_FIELD", gone, put_ms, b"waits")),
            (dlq, b"later", dead_letter("QMON_UNDECODABLE", f"{prefix}.activity", put_ms, b"forwarded")),
            (dlq, b"dropped", dead_letter("QMON_MISSING_FIELD", f"{prefix}.activity", put_ms, b"discarded")),
        ],
    )
    table = parse_rules(
        f"INPUTQ({dlq}) RETRYINT({retryint}) WAIT(YES)\n"
        f"REASON(QMON_INVALID_FIELD) ACTION(RETRY) RETRY(5)\n"
        f"REASON(QMON_UNDECODABLE) ACTION(FWD) FWDQ({fwd}) HEADER(NO)\n"
        f"REASON(QMON_MISSING_FIELD) ACTION(DISCARD)\n"
    )
    lines: list[str] = []
    handler = Handler(kafka_bootstrap, table, prefix=prefix, group=group, printer=lines.append)
    stop = threading.Event()
    result: dict[str, Any] = {}

    def work() -> None:
        try:
            result["totals"] = handler.run(stop=stop.is_set)
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            result["error"] = exc

    thread = threading.Thread(target=work, name="dlq-handler", daemon=True)
    thread.start()
    try:
        forwarded = wait_for_records(kafka_bootstrap, fwd, 1, timeout=retryint - 5)
        seen_after = time.time() - put_ms / 1000
        assert forwarded == [b"forwarded"], (forwarded, lines, result)  # HEADER(NO): the original value
        assert seen_after < retryint, seen_after  # before the first record's first attempt was even due
        assert handler.waiting() == 1, lines  # ... which waits in the schedule meanwhile
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive(), "the handler did not stop within 30 s of being asked"
    assert "error" not in result, result.get("error")
    totals = result["totals"]
    assert (totals.processed, totals.forwarded, totals.retried, totals.discarded) == (2, 1, 0, 1), lines
    assert "1 waiting for a retry" in lines[-1], lines
    assert "0/2" not in ledger_entries(kafka_bootstrap, dlq)  # DISCARD: done with, no ledger entry
    # the waiting record is in the ledger, so the committed offset could move past it: nothing is lost on a crash
    entry = ledger_entries(kafka_bootstrap, dlq)["0/0"]
    assert entry["state"] == "waiting" and entry["due"] >= put_ms + retryint * 1000 - 1, entry
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(client_config(kafka_bootstrap, **{"group.id": group, "enable.auto.commit": False}))
    try:
        assert c.committed([TopicPartition(dlq, 0)], timeout=10)[0].offset == 3
    finally:
        c.close()


def test_a_record_whose_rules_all_failed_is_attempted_retry_times_in_total_across_rescans(kafka_bootstrap, caplog):
    prefix = f"r{uuid.uuid4().hex[:8]}"
    dlq, missing, group = f"{prefix}.dlq", f"{prefix}.missing", f"{prefix}-handler"
    create(kafka_bootstrap, dlq)
    produce_rows(
        kafka_bootstrap,
        [(dlq, b"k", dead_letter("QMON_UNDECODABLE", f"{prefix}.activity", int(time.time() * 1000), b"never"))],
    )
    table = parse_rules(
        f"INPUTQ({dlq}) RETRYINT(1) WAIT(YES)\nREASON(QMON_UNDECODABLE) ACTION(FWD) FWDQ({missing}) RETRY(3)\n"
    )
    caplog.set_level(logging.INFO, logger="qmon.connectors.dlqhandler")
    lines: list[str] = []
    handler = Handler(kafka_bootstrap, table, prefix=prefix, group=group, printer=lines.append)

    def scans_after_ignored() -> int:
        """How many rescans (one a second) have followed the one that reported the record ignored."""
        scans = [line for line in lines if line.startswith("dlq-handler scan ")]
        done = [i for i, line in enumerate(scans) if ", ignored 1; " in line]
        return len(scans) - done[0] - 1 if done else -1

    deadline = time.monotonic() + 90
    totals = handler.run(stop=lambda: scans_after_ignored() >= 6 or time.monotonic() > deadline)
    assert scans_after_ignored() >= 6, lines
    assert (totals.attempts, totals.failed, totals.ignored, totals.processed) == (3, 3, 1, 1), lines
    scans = [line for line in lines if line.startswith("dlq-handler scan ")]
    per_scan = [int(line.split("; ")[1].split(" attempt(s)")[0]) for line in scans]
    assert sum(per_scan) == 3 and per_scan[-6:] == [0] * 6, lines  # the six rescans after it attempt nothing
    failures = [r.getMessage() for r in caplog.records if "failed (attempt" in r.getMessage()]
    assert [f.split("(attempt ")[1].split(")")[0] for f in failures] == ["1 of 3", "2 of 3", "3 of 3"], failures
    entry = ledger_entries(kafka_bootstrap, dlq)["0/0"]
    assert entry["state"] == "ignored" and list(entry["attempts"].values()) == [3], entry

    # restarted with the same table: the record is still ignored for good (the counts are kept, not reset)
    lines.clear()
    handler = Handler(kafka_bootstrap, table, prefix=prefix, group=group, printer=lines.append)
    deadline = time.monotonic() + 60
    totals = handler.run(stop=lambda: handler.scans >= 3 or time.monotonic() > deadline)
    assert handler.scans >= 3 and (totals.attempts, totals.processed) == (0, 0), lines
    assert "1 record(s) left on the DLQ (ignored), 0 waiting for a retry" in lines[-1], lines
