"""The real path: records produced to a real Kafka broker, the qmon job (Spark), records consumed back."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from qmon.connectors import avro
from qmon.connectors.clients import consume, produce_rows, send_commands
from qmon.connectors.kafka import ensure_topics
from qmon.core import topics
from qmon.core.config import Config
from qmon.core.mqsc import reply_part
from qmon.streaming.job import run, start_query
from tests.conftest import ROOT, assert_eventually

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

T0 = 1_700_000_000_000


def config_for(prefix: str, **job: Any) -> Config:
    return Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 2},
            "job": {
                "queue_shards": 2,
                "shuffle_partitions": 2,
                "trigger": "500 ms",
                "watermark_delay": "0 seconds",
                **job,
            },
        }
    )


def activity(i: int, op: str, ts: int, queue: str = "PAYROLL.IN", qmgr: str = "QM1", **kw: Any) -> dict[str, Any]:
    rec = {
        "event_id": f"{qmgr}-{queue}-{i}",
        "qmgr": qmgr,
        "queue": queue,
        "op": op,
        "ts": T0 + ts,
        "depth_after": None,
        "msg_bytes": 100,
        "structure": None,
        "reason": None,
    }
    rec.update(kw)
    return rec


def ms(ts: Any) -> int:
    """Milliseconds since the epoch of a decoded Avro timestamp-millis."""
    return ts if isinstance(ts, int) else round(ts.timestamp() * 1000)


def produce_activity(bootstrap: str, prefix: str, records: list[dict[str, Any] | bytes]) -> list[bytes]:
    values = [r if isinstance(r, bytes) else avro.encode("QueueActivity", r) for r in records]
    produce_rows(bootstrap, [(topics.physical(topics.ACTIVITY, prefix), b"QM1/PAYROLL.IN", v) for v in values])
    return values


def outputs(bootstrap: str, prefix: str) -> list[tuple[str, dict[str, Any]]]:
    """Every output record the topics hold now (the job that wrote them has finished or been read)."""
    return [(t, r) for t, r, _ in consume(bootstrap, topics.OUTPUTS, prefix=prefix, to_end=True, timeout=90)]


def test_dead_letters_replies_and_counts(spark, kafka_bootstrap, prefix, tmp_path):
    """Valid and malformed activity, valid and invalid commands: every malformed record is on the DLQ
    with its reason and its original bytes, every command has a reply, processed + dead-lettered = produced.
    One task reads every input partition (``job.input_tasks``): nothing is lost to the coalescing."""
    config = config_for(prefix, input_tasks=1)
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    send_commands(kafka_bootstrap, "QM1", ["ALTER QMGR PERFMEV(ENABLED)"], ts=T0, prefix=prefix)
    send_commands(
        kafka_bootstrap,
        "QM1",
        [
            "ALTER QLOCAL(PAYROLL.IN) QSVCINT(1000) QSVCIEV(HIGH)",
            "ALTER QLOCAL(PAYROLL.IN) QSVCIEV(SOMETIMES)",
            "DROP EVERYTHING",
        ],
        ts=T0,
        prefix=prefix,
    )
    good = [activity(1, "PUT", 1_000), activity(2, "PUT", 5_000), activity(3, "GET", 6_000)]
    valid_framed = avro.encode("QueueActivity", activity(4, "GET", 7_000), schema_id=7)  # Confluent wire format
    truncated = avro.encode("QueueActivity", activity(5, "PUT", 8_000))[:-3]
    wrong_schema = avro.encode(
        "ControlCommand", {"command_id": "x", "ts": T0, "qmgr": "QM1", "text": "PING QMGR", "user": None}
    )
    too_long = activity(6, "PUT", 9_000, queue="Q" * 60)
    negative = activity(7, "PUT", 9_500, depth_after=-5)
    left_over = avro.encode("QueueActivity", activity(8, "PUT", 9_800)) + b"\x00"  # a byte after the record
    bad = [b"\xff" * 40, b"", truncated, wrong_schema, too_long, negative, left_over]
    produced = produce_activity(kafka_bootstrap, prefix, [*good, valid_framed, *bad])
    assert run(config, kafka_bootstrap, str(tmp_path / "ckpt"), available_now=True, spark=spark) == 0

    out = outputs(kafka_bootstrap, prefix)
    dead = [r for t, r in out if t == topics.DLQ]
    bad_values = produced[len(good) + 1 :]
    activity_dead = [d for d in dead if d["dest_topic"] == topics.physical(topics.ACTIVITY, prefix)]
    assert sorted(d["value"] for d in activity_dead) == sorted(bad_values)  # original bytes, untouched
    reasons = {bytes(d["value"]): d["reason_name"] for d in activity_dead}
    assert reasons[truncated] == "QMON_UNDECODABLE" and reasons[b""] == "QMON_UNDECODABLE"
    assert reasons[left_over] == "QMON_UNDECODABLE"
    assert reasons[avro.encode("QueueActivity", too_long)] == "QMON_INVALID_FIELD"
    assert reasons[avro.encode("QueueActivity", negative)] == "QMON_INVALID_FIELD"
    assert all(d["reason"] > 65536 and d["format"] == "QueueActivity" and d["error"] for d in activity_dead)
    # processed + dead-lettered = produced: the four valid records were processed (they made events)
    perf = [r for t, r in out if t == topics.PERFORMANCE]
    assert [(p["type"], ms(p["ts"]) - T0) for p in perf] == [("QSVCINT_HIGH", 5_000), ("QSVCINT_OK", 7_000)]
    assert len(activity_dead) + 4 == len(produced)

    replies = [r for t, r in out if t == topics.REPLIES]
    assert len(replies) == 4
    assert sorted(r["ok"] for r in replies) == [False, False, True, True]
    failed = [r["message"] for r in replies if not r["ok"]]
    assert any("QSVCIEV" in m for m in failed) and any("DROP" in m for m in failed)
    command_dead = [d for d in dead if d["dest_topic"] == topics.physical(topics.CONTROL, prefix)]
    assert sorted(d["reason_name"] for d in command_dead) == ["QMON_INVALID_COMMAND"] * 2


def _workload() -> list[dict[str, Any]]:
    recs = []
    for i in range(40):
        q = f"Q{i % 4}"
        recs.append(activity(2 * i, "PUT", i * 3_000, queue=q))
        if i % 3:
            recs.append(activity(2 * i + 1, "GET", i * 3_000 + (i % 7) * 1_000, queue=q))
    return recs


def _run_setup(bootstrap: str, prefix: str) -> None:
    ensure_topics(bootstrap, 2, prefix=prefix)
    send_commands(bootstrap, "QM1", ["ALTER QMGR PERFMEV(ENABLED)"], ts=T0, prefix=prefix)
    for q in range(4):
        send_commands(bootstrap, "QM1", [f"ALTER QLOCAL(Q{q}) QSVCINT(4000) QSVCIEV(HIGH)"], ts=T0, prefix=prefix)


def test_restart_on_the_same_checkpoint_equals_an_uninterrupted_run(spark, kafka_bootstrap, tmp_path):
    """The first half's checkpoint is written through Hadoop's local file system (as before
    ``job.checkpoint_fs``), the second half carries on through Java's (the default): the same files."""
    work = _workload()
    half = len(work) // 2
    whole_prefix, split_prefix = f"w{os.getpid()}{id(work) % 10000}", f"s{os.getpid()}{id(work) % 10000}"
    for p in (whole_prefix, split_prefix):
        _run_setup(kafka_bootstrap, p)

    produce_activity(kafka_bootstrap, whole_prefix, work)
    run(config_for(whole_prefix), kafka_bootstrap, str(tmp_path / "whole"), available_now=True, spark=spark)

    produce_activity(kafka_bootstrap, split_prefix, work[:half])
    before = config_for(split_prefix, checkpoint_fs="hadoop")
    run(before, kafka_bootstrap, str(tmp_path / "split"), available_now=True, spark=spark)
    assert (tmp_path / "split" / "commits" / ".0.crc").exists()  # Hadoop's checksums, read back below
    assert spark.conf.get("fs.file.impl", None) is None  # the query ran on Hadoop's local file system
    produce_activity(kafka_bootstrap, split_prefix, work[half:])
    run(config_for(split_prefix), kafka_bootstrap, str(tmp_path / "split"), available_now=True, spark=spark)
    assert spark.conf.get("fs.file.impl") == "com.globalmentor.apache.hadoop.fs.BareLocalFileSystem"

    def ids(prefix: str) -> list[str]:
        return sorted(r["event_id"] for t, r in outputs(kafka_bootstrap, prefix) if t != topics.REPLIES)

    whole, split = ids(whole_prefix), ids(split_prefix)
    assert len(whole) >= 8  # High and OK events and stall alerts (a stall now ends only when served in time)
    assert sorted(set(split)) == sorted(set(whole))  # duplicates only as identical event_ids


def test_alter_qlocal_with_qmon_mqsc_while_the_job_runs(spark, kafka_bootstrap, prefix, tmp_path):
    config = config_for(prefix)
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    query = start_query(spark, config, kafka_bootstrap, str(tmp_path / "ckpt"))
    try:
        cfg_file = tmp_path / "qmon.yaml"
        cfg_file.write_text(f"kafka:\n  topic_prefix: {prefix}\n")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        cli = [
            sys.executable,
            "-m",
            "qmon",
            "--log-level",
            "WARNING",
            "mqsc",
            "--config",
            str(cfg_file),
            "--bootstrap",
            kafka_bootstrap,
            "--timeout",
            "120",
        ]
        ok = subprocess.run([*cli, "ALTER QMGR PERFMEV(ENABLED)"], capture_output=True, text=True, env=env)
        assert ok.returncode == 0, ok.stdout + ok.stderr
        script = tmp_path / "alter.mqsc"
        script.write_text(
            "* slow down alarms on the payroll queue\nALTER QLOCAL(PAYROLL.IN) +\n  QSVCINT(2000) +\n  QSVCIEV(HIGH)\n"
        )
        ok = subprocess.run([*cli, "-f", str(script)], capture_output=True, text=True, env=env)
        assert ok.returncode == 0, ok.stdout + ok.stderr
        assert "AMQ8008I" in ok.stdout and "All valid MQSC commands were processed" in ok.stdout
        bad = subprocess.run([*cli, "ALTER QLOCAL(PAYROLL.IN) QSVCINT(soon)"], capture_output=True, text=True, env=env)
        assert bad.returncode == 1 and "QSVCINT" in bad.stdout

        import time as _time

        now = int(_time.time() * 1000) - T0
        produce_activity(kafka_bootstrap, prefix, [activity(1, "PUT", now), activity(2, "PUT", now + 2_500)])
        events: list[dict[str, Any]] = []

        def collect() -> None:
            for _t, r, _ in consume(
                kafka_bootstrap, [topics.PERFORMANCE], prefix=prefix, timeout=120, stop=lambda t, r: True
            ):
                events.append(r)

        th = threading.Thread(target=collect)
        th.start()
        assert_eventually(lambda: events, timeout=120, query=query)
        th.join()
        assert events[0]["type"] == "QSVCINT_HIGH" and events[0]["service_interval_ms"] == 2000
    finally:
        query.stop()


def test_docker_files_are_consistent():
    """No Docker engine here: check the Compose file and Dockerfile statically."""
    compose = (ROOT / "docker" / "compose.yaml").read_text()
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    assert "KAFKA_PROCESS_ROLES" in compose and "qmon" in compose
    assert "qmon" in dockerfile and "ENTRYPOINT" in dockerfile
    assert Path(ROOT / "docker" / "Dockerfile").exists()


def test_structure_alerts_and_overflow_candidates_through_kafka(spark, kafka_bootstrap, prefix, tmp_path):
    """Structure overflow through the real path: alter, overflow mode and candidates, from Avro on Kafka to Avro on
    Kafka."""
    config = Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 2},
            "job": {"queue_shards": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds"},
            "structures": [{"strname": "MSGQ1", "size": 20, "initsize": 10, "ovflwstr": "OVFQ1", "ovflwsize": 20}],
            "overflow_exit": [{"queue": "1KEEP*", "decision": "reject"}],
        }
    )
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    recs = [activity(i, "PUT", i, queue="1KEEPME", qmgr="IMSA", structure="MSGQ1", msg_bytes=512) for i in range(14)]
    recs += [
        activity(100 + i, "PUT", 100 + i, queue="1PAYROLL", qmgr="IMSA", structure="MSGQ1", msg_bytes=1024)
        for i in range(7)
    ]  # 14 + 14 = 28 / 40 = 70% at SIZE after the first alter
    produce_activity(kafka_bootstrap, prefix, recs)
    assert run(config, kafka_bootstrap, str(tmp_path / "ckpt"), available_now=True, spark=spark) == 0
    out = outputs(kafka_bootstrap, prefix)
    alerts = [(r["type"], r["state"]) for t, r in out if t == topics.ALERTS]
    assert ("STRUCTURE_ALTERED", "INFO") in alerts and ("OVERFLOW_MODE_ENTERED", "FIRING") in alerts
    cands = [r for t, r in out if t == topics.OVERFLOW]
    assert len(cands) == 1
    assert [(c["queue"], c["decision"]) for c in cands[0]["candidates"]] == [
        ("1KEEPME", "reject"),
        ("1PAYROLL", "approve"),
    ]


def _payroll_of_two(
    bootstrap: str, prefix: str, monitor: dict[str, Any], structures: list[dict[str, Any]] | None = None
) -> Config:
    """A job's configuration (``monitor`` and ``structures`` as given), its topics, and queue manager IMSA's
    1PAYROLL set to raise QDEPTH_HIGH at a depth of 2 (MAXDEPTH(2), QDEPTHHI(100))."""
    config = Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 2},
            "job": {"queue_shards": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds"},
            "monitor": monitor,
            "structures": structures or [],
        }
    )
    ensure_topics(bootstrap, 2, prefix=prefix)
    send_commands(
        bootstrap,
        "IMSA",
        ["ALTER QMGR PERFMEV(ENABLED)", "ALTER QLOCAL(1PAYROLL) MAXDEPTH(2) QDEPTHHI(100) QDPHIEV(ENABLED)"],
        ts=T0,
        prefix=prefix,
    )
    return config


def test_a_record_redelivered_in_a_later_batch_changes_nothing(spark, kafka_bootstrap, prefix, tmp_path):
    """Duplicate suppression through the real path, across micro-batches (the remembered event ids are
    stored in the state of the step ahead of the monitor, ``streaming.dedup``: one verdict for the record's
    queue and its structure): a redelivered PUT counts neither on its queue's depth nor on its structure's
    usage; the next new PUT is the one that reaches both thresholds."""
    # (200 data elements; a 51,200-byte put is half)
    config = _payroll_of_two(kafka_bootstrap, prefix, {}, [{"strname": "MSGQ1", "size": 100}])
    first = activity(1, "PUT", 1_000, queue="1PAYROLL", qmgr="IMSA", structure="MSGQ1", msg_bytes=51_200)
    second = activity(2, "PUT", 3_000, queue="1PAYROLL", qmgr="IMSA", structure="MSGQ1", msg_bytes=51_200)
    failed = activity(9, "PUT", 500, queue="1PAYROLL", qmgr="IMSA", structure="MSGQ1", msg_bytes=51_200, reason=2053)
    ckpt = str(tmp_path / "ckpt")
    for batch in ([failed, first], [first, first], [second]):  # one run (micro-batch) each, same checkpoint
        produce_activity(kafka_bootstrap, prefix, batch)
        assert run(config, kafka_bootstrap, ckpt, available_now=True, spark=spark) == 0
    out = outputs(kafka_bootstrap, prefix)
    depth = [ms(r["ts"]) - T0 for t, r in out if t == topics.PERFORMANCE and r["type"] == "QDEPTH_HIGH"]
    assert depth == [3_000]
    structure = {(r["type"], ms(r["ts"]) - T0) for t, r in out if t == topics.ALERTS}
    assert ("STRUCTURE_NEAR_FULL", 3_000) in structure
    assert all(ts == 3_000 for _, ts in structure)


def test_a_slice_s_ids_are_forgotten_a_window_after_they_arrived(spark, kafka_bootstrap, prefix, tmp_path):
    """The duplicate check's event-time timer forgets a slice's ids ``dedup_window``
    after they arrived (the records' ts are years old: a backlog), so its state does not grow for ever.  A
    copy of a PUT sent after that counts again: the queue reaches MAXDEPTH(2) with it."""
    import time

    config = _payroll_of_two(kafka_bootstrap, prefix, {"dedup_window": "2 seconds"})
    first = activity(1, "PUT", 1_000, queue="1PAYROLL", qmgr="IMSA")
    other = activity(2, "GET", 2_000, queue="1OTHER", qmgr="IMSA")
    ckpt = str(tmp_path / "ckpt")
    produce_activity(kafka_bootstrap, prefix, [first, first])  # the copy within the window: dropped
    assert run(config, kafka_bootstrap, ckpt, available_now=True, spark=spark) == 0
    time.sleep(3)
    produce_activity(kafka_bootstrap, prefix, [other])  # moves the watermark past the slice's timer
    assert run(config, kafka_bootstrap, ckpt, available_now=True, spark=spark) == 0
    produce_activity(kafka_bootstrap, prefix, [first])  # forgotten: counts again
    assert run(config, kafka_bootstrap, ckpt, available_now=True, spark=spark) == 0
    out = outputs(kafka_bootstrap, prefix)
    depth = [ms(r["ts"]) - T0 for t, r in out if t == topics.PERFORMANCE and r["type"] == "QDEPTH_HIGH"]
    assert depth == [1_000]


def test_a_partition_read_behind_another_loses_no_record(spark, kafka_bootstrap, prefix, tmp_path):
    """The watermark runs on the broker's append time, which only moves forward within a partition.  A
    micro-batch that reads one partition further than another puts the watermark ahead of the other's next
    records, and Spark drops input rows behind the watermark from an event-time stateful operator: qmon's
    watermarked column is set a century ahead so that none is ever behind it (``rows.HORIZON``)."""
    import time

    from confluent_kafka import Producer

    from qmon.connectors.kafka import client_config

    config = Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 2},
            "job": {
                "queue_shards": 2,
                "shuffle_partitions": 2,
                "watermark_delay": "0 seconds",
                "max_offsets_per_trigger": 8,
            },
            "monitor": {"perfmev": "ENABLED"},
            "queues": [{"pattern": "*", "maxdepth": 1, "qdepthhi": 100, "qdphiev": "ENABLED"}],
        }
    )
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    src = topics.physical(topics.ACTIVITY, prefix)
    producer = Producer(client_config(kafka_bootstrap))
    for partition in (0, 1):  # partition 1's records are all appended later than partition 0's
        for i in range(16):
            rec = activity(i, "PUT", 1_000 * i, queue=f"P{partition}.Q{i:02d}")
            producer.produce(src, value=avro.encode("QueueActivity", rec), partition=partition)
        producer.flush(30)
        time.sleep(0.5)
    # 8 records a batch, 4 from each partition: from the first batch on, the watermark is partition 1's
    assert run(config, kafka_bootstrap, str(tmp_path / "ckpt"), available_now=True, spark=spark) == 0
    high = {r["queue"] for t, r in outputs(kafka_bootstrap, prefix) if t == topics.PERFORMANCE}
    assert high == {f"P{p}.Q{i:02d}" for p in (0, 1) for i in range(16)}  # every first put: Queue Depth High


def test_two_clients_registered_to_one_transaction_queue_through_kafka(spark, kafka_bootstrap, prefix, tmp_path):
    """Registration of interest through the real path: both clients get WorkAvailable when the queue gets work."""
    config = config_for(prefix)
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    send_commands(
        kafka_bootstrap,
        "PLEX1",
        ["REGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSA)", "REGISTER INTEREST QUEUE(1PAY*) CLIENT(IMSB)"],
        ts=T0,
        prefix=prefix,
    )
    produce_activity(
        kafka_bootstrap,
        prefix,
        [
            activity(1, "PUT", 1_000, queue="1PAYTRAN", qmgr="PLEX1"),
            activity(2, "PUT", 2_000, queue="1PAYTRAN", qmgr="PLEX1"),  # not empty before: no notification
            activity(3, "GET", 3_000, queue="1PAYTRAN", qmgr="PLEX1"),
            activity(4, "GET", 4_000, queue="1PAYTRAN", qmgr="PLEX1"),  # empty: never a notification
            activity(5, "PUT", 5_000, queue="1PAYTRAN", qmgr="PLEX1"),
        ],
    )
    assert run(config, kafka_bootstrap, str(tmp_path / "ckpt"), available_now=True, spark=spark) == 0
    out = outputs(kafka_bootstrap, prefix)
    notes = sorted((r["client"], ms(r["ts"]) - T0, r["depth"]) for t, r in out if t == topics.NOTIFY)
    assert notes == [("IMSA", 1_000, 1), ("IMSA", 5_000, 1), ("IMSB", 1_000, 1), ("IMSB", 5_000, 1)]
    assert sorted(r["ok"] for t, r in out if t == topics.REPLIES) == [True, True]


def test_journal_switch_blocked_through_kafka(spark, kafka_bootstrap, prefix, tmp_path):
    """IBM i journal receivers through the real path: JournalStatus on qmon.journal -> SWITCH_BLOCKED on
    qmon.events.alerts."""
    config = config_for(prefix)
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    status = {
        "event_id": "j1",
        "qmgr": "PAYQM",
        "ts": T0,
        "library": "QMPAYLIB",
        "attached": "AMQA099999",
        "size_kb": 10,
        "threshold_kb": 100_000,
        "receivers": ["AMQA099999", "AMQA000000"],
    }
    bad = {**status, "event_id": "j2", "attached": "AMQZ12"}
    produce_rows(
        kafka_bootstrap,
        [
            (topics.physical(topics.JOURNAL, prefix), b"PAYQM/QMPAYLIB", avro.encode("JournalStatus", r))
            for r in (status, bad)
        ],
    )
    assert run(config, kafka_bootstrap, str(tmp_path / "ckpt"), available_now=True, spark=spark) == 0
    out = outputs(kafka_bootstrap, prefix)
    alerts = [r for t, r in out if t == topics.ALERTS]
    assert [(a["type"], a["state"]) for a in alerts] == [("SWITCH_BLOCKED", "FIRING")]  # 099999 wraps to 000000
    assert "CPI70E3" in alerts[0]["message"]
    dead = [r for t, r in out if t == topics.DLQ]
    assert len(dead) == 1 and dead[0]["reason_name"] == "QMON_INVALID_FIELD" and dead[0]["format"] == "JournalStatus"


def test_long_messages_and_a_wobble_are_exact_and_calm_through_kafka(spark, kafka_bootstrap, prefix, tmp_path):
    """Through the real path: 30 long messages put and got without msg_bytes free their staging
    parts (LONGQ raises nothing), and usage wobbling across FULLTHRESHOLD is one NEAR_FULL episode, resolved
    at the end of the clear hold by the next record that event time brings past it.  Arrow batches of 7 rows:
    each unit's rows reach the operator in many pieces, joined column by column (``unit_step._joined``)."""
    config = Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 2},
            "job": {"queue_shards": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds"},
            "structures": [
                {"strname": "LONGQ", "size": 20, "lgmsgsz": 1024},  # 40 elements
                {"strname": "WOBBLE", "size": 50, "ovflwmax": 100, "fullthreshold": 80},  # 100 elements
            ],
        }
    )
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)

    def on(structure: str, i: int, op: str, ts: int, queue: str, nbytes: int | None) -> dict[str, Any]:
        return activity(i, op, ts, queue=queue, qmgr="IMSA", structure=structure, msg_bytes=nbytes)

    recs = []
    for i in range(30):  # 2 ready + 4 staging elements each; freeing only the ready part would reach 70%
        recs += [
            on("LONGQ", 2 * i, "PUT", 10 * i, "5LTERM", 3000),
            on("LONGQ", 2 * i + 1, "GET", 10 * i + 5, "5LTERM", None),
        ]
    recs += [on("WOBBLE", 1000 + i, "PUT", 1_000 + i, "1TRAN", 512) for i in range(80)]  # 80%: FIRING
    for k in range(10):  # 79% <-> 80%
        recs += [on("WOBBLE", 2000 + 2 * k, "GET", 2_000 + 2 * k, "1TRAN", 512)]
        recs += [on("WOBBLE", 2001 + 2 * k, "PUT", 2_001 + 2 * k, "1TRAN", 512)]
    recs += [on("WOBBLE", 3000 + k, "GET", 3_000 + k, "1TRAN", 512) for k in range(6)]  # 74% from 3,005
    recs += [on("WOBBLE", 4000, "GET", 60_000, "1TRAN", 512)]  # event time passes the 30 s hold
    produce_activity(kafka_bootstrap, prefix, recs)
    before = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "7")
    try:
        assert run(config, kafka_bootstrap, str(tmp_path / "ckpt"), available_now=True, spark=spark) == 0
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", before)
    out = outputs(kafka_bootstrap, prefix)
    alerts = [(r["structure"], r["type"], r["state"], ms(r["ts"]) - T0) for t, r in out if t == topics.ALERTS]
    assert sorted(alerts) == [
        ("WOBBLE", "STRUCTURE_NEAR_FULL", "FIRING", 1_079),
        ("WOBBLE", "STRUCTURE_NEAR_FULL", "RESOLVED", 33_005),
    ]
    assert [r for t, r in out if t == topics.OVERFLOW] == []


def test_generic_reset_qstats_and_display_are_answered_in_parts_and_joined_by_qmon_mqsc(
    spark, kafka_bootstrap, prefix, tmp_path
):
    """Through the real path: the job answers a generic RESET QSTATS once per shard
    (same command_id, part k of N), and `qmon mqsc` prints one reply listing every matching queue; DISPLAY
    QSTATUS of a generic name, DISPLAY QLOCAL of one queue and DISPLAY QMGR are answered from the job's state,
    as runmqsc prints them."""
    config = config_for(prefix)  # 2 shards a queue manager
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    query = start_query(spark, config, kafka_bootstrap, str(tmp_path / "ckpt"))
    try:
        import time as _time

        now = int(_time.time() * 1000) - T0 - 10_000
        queues = ["PAY.A", "PAY.B", "PAY.C", "PAY.D", "OTHER.Q"]
        produce_activity(kafka_bootstrap, prefix, [activity(i, "PUT", now, queue=q) for i, q in enumerate(queues)])
        cfg_file = tmp_path / "qmon.yaml"
        cfg_file.write_text(f"kafka:\n  topic_prefix: {prefix}\n")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        cli = [sys.executable, "-m", "qmon", "--log-level", "WARNING", "mqsc", "--config", str(cfg_file)]
        cli += ["--bootstrap", kafka_bootstrap, "--timeout", "60", "RESET QSTATS(PAY.*)"]

        def every_queue_listed() -> str | None:
            done = subprocess.run(cli, capture_output=True, text=True, env=env)
            assert done.returncode == 0, done.stdout + done.stderr
            listed = all(f"QUEUE({q})" in done.stdout for q in queues[:4])
            return done.stdout if listed else None

        stdout = assert_eventually(every_queue_listed, timeout=120, interval=1.0, query=query)
        assert "4 queues reset (the replies of 2 shards joined)" in stdout, stdout
        assert "OTHER.Q" not in stdout and stdout.count("RESET QSTATS('PAY.*'):") == 1, stdout
        parts: dict[str, list[Any]] = {}
        for t, r in outputs(kafka_bootstrap, prefix):
            if t == topics.REPLIES:
                parts.setdefault(r["command_id"], []).append(reply_part(r["message"]))
        assert parts and all(sorted(p) == [(1, 2), (2, 2)] for p in parts.values()), parts

        display = ["DISPLAY QSTATUS(PAY.*) CURDEPTH", "DISPLAY QLOCAL(PAY.A) ALL", "DISPLAY QMGR PERFMEV"]
        shown = subprocess.run(cli[:-1], input="\n".join(display), capture_output=True, text=True, env=env)
        assert shown.returncode == 0, shown.stdout + shown.stderr
        out = shown.stdout
        assert out.count("AMQ8450I: Display queue status details.") == 4, out
        assert [line.split()[0] for line in out.splitlines() if "TYPE(QUEUE)" in line] == [
            f"QUEUE({q})" for q in queues[:4]
        ], out  # by name, whichever shard holds each
        assert out.count("CURDEPTH(1)") == 5, out  # (four statuses and PAY.A's details)
        assert "   QUEUE(PAY.A)                            TYPE(QLOCAL)" in out, out
        assert "QDPMAXEV(ENABLED)" in out and "QSGDISP(QMGR)" in out, out
        assert "   QMNAME(QM1)                             PERFMEV(DISABLED)" in out, out
        assert out.rstrip().endswith("3 MQSC commands read.\nAll valid MQSC commands were processed."), out

        # LIKE copies a queue's definition whichever shard holds it (four new queues: both shards, surely)
        models = ["ALTER QLOCAL(PAY.A) QSVCINT(777) QSVCIEV(HIGH)"]
        models += [f"DEFINE QLOCAL(NEW.Q{i}) LIKE(PAY.A) MAXDEPTH(9)" for i in range(4)]
        models += ["DISPLAY QLOCAL(NEW.*) QSVCINT QSVCIEV MAXDEPTH", "DEFINE QLOCAL(NEW.X) LIKE(NO.SUCH.Q)"]
        liked = subprocess.run(cli[:-1], input="\n".join(models), capture_output=True, text=True, env=env)
        assert liked.returncode == 1, liked.stdout + liked.stderr  # (the last one is refused)
        lines = [line for line in liked.stdout.splitlines() if line.startswith("   ") and " : " not in line]
        assert sum("QSVCINT(777)" in line for line in lines) == 4 and sum("MAXDEPTH(9)" in line for line in lines) == 4
        assert "AMQ8147E: IBM MQ object NO.SUCH.Q not found" in liked.stdout, liked.stdout
    finally:
        query.stop()


def test_each_micro_batch_publishes_its_progress_once(spark, kafka_bootstrap, prefix, tmp_path):
    """qmon.events.progress gets one QueryProgress per micro-batch, handed over by a listener (0.4 polled the
    query's recentProgress every second, which renders every retained report in the JVM each time)."""
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    config = config_for(prefix, trigger="200 ms")
    query = start_query(spark, config, kafka_bootstrap, str(tmp_path / "ckpt"))
    try:
        for wave in range(3):  # three waves of input, in separate batches
            produce_activity(kafka_bootstrap, prefix, [activity(wave * 10 + i, "PUT", wave * 10 + i) for i in range(5)])
            time.sleep(1.0)
        assert_eventually(lambda: sum(p["numInputRows"] for p in query.recentProgress) == 15, timeout=60)
        time.sleep(1.0)  # the no-data batch after them
    finally:
        query.stop()
    reports = [r for t, r, _ in consume(kafka_bootstrap, [topics.PROGRESS], prefix=prefix, idle=4, timeout=60)]
    batches = [r["batch_id"] for r in reports]
    assert batches == sorted(set(batches)), "every batch once, in order"
    assert batches == list(range(batches[0], batches[0] + len(batches))), "no batch missed"
    assert sum(r["input_rows"] for r in reports) == 15


def test_the_progress_of_a_run_that_ended_before_its_listener_is_still_handed_over(
    spark, kafka_bootstrap, prefix, tmp_path
):
    """A short Trigger.AvailableNow run can end before the listener is registered: its retained reports are
    handed over once, and the end too (the publisher flushes there)."""
    from qmon.streaming.job import ProgressListener

    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    produce_activity(kafka_bootstrap, prefix, [activity(i, "PUT", i) for i in range(3)])
    query = start_query(
        spark, config_for(prefix), kafka_bootstrap, str(tmp_path / "ckpt"), available_now=True, publish_progress=False
    )
    query.awaitTermination()
    reports: list[dict[str, Any]] = []
    ended: list[bool] = []
    ProgressListener(spark, reports.append, lambda: ended.append(True)).attach(query)
    batches = [r["batchId"] for r in reports]
    assert batches and batches == sorted(set(batches))
    assert sum(r["numInputRows"] for r in reports) == 3
    assert ended == [True]


def test_two_queue_managers_shards_share_groups_each_under_its_own_rules_through_kafka(
    spark, kafka_bootstrap, prefix, tmp_path
):
    """queue_shards 2 and 2 groups: a queue manager's two shards go to different groups, so each group holds a
    shard of QM1 and one of QM2, both with the same queue names.  QM1's QSVCINT (1 s) is exceeded, QM2's (5 s)
    is not: QSVCINT_HIGH for QM1's queues only, whichever group their shard shares with QM2's."""
    config = config_for(prefix)
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    queues = [f"PAY.Q{i}" for i in range(6)]
    shards = {
        r.s for r in spark.sql(" UNION ALL ".join(f"SELECT pmod(xxhash64('{q}'), 2) AS s" for q in queues)).collect()
    }
    assert shards == {0, 1}  # (both shards of each queue manager are used)
    for qmgr, interval in (("QM1", 1000), ("QM2", 5000)):
        texts = ["ALTER QMGR PERFMEV(ENABLED)"] + [
            f"ALTER QLOCAL({q}) QSVCINT({interval}) QSVCIEV(HIGH)" for q in queues
        ]
        send_commands(kafka_bootstrap, qmgr, texts, ts=T0, prefix=prefix)
    recs = [
        activity(n, "PUT", ts, queue=q, qmgr=qmgr)
        for n, (ts, qmgr, q) in enumerate((ts, m, q) for ts in (1_000, 3_000) for m in ("QM1", "QM2") for q in queues)
    ]
    produce_activity(kafka_bootstrap, prefix, recs)
    assert run(config, kafka_bootstrap, str(tmp_path / "ckpt"), available_now=True, spark=spark) == 0
    out = outputs(kafka_bootstrap, prefix)
    high = sorted((r["qmgr"], r["queue"]) for t, r in out if t == topics.PERFORMANCE and r["type"] == "QSVCINT_HIGH")
    assert high == [("QM1", q) for q in queues]
    assert sum(r["ok"] for t, r in out if t == topics.REPLIES) == 2 * (1 + len(queues))


def test_a_checkpoint_of_another_state_version_is_refused_and_nothing_is_read(spark, kafka_bootstrap, prefix, tmp_path):
    """A checkpoint whose query ran under another state version (its placement file records none: version 4
    or earlier) holds state this qmon does not read: run refuses it before reading anything, and writes
    nothing."""
    import json

    from qmon.streaming.units import FILE, CheckpointError

    config = config_for(prefix)
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    produce_activity(kafka_bootstrap, prefix, [activity(1, "PUT", 1_000)])
    ckpt = tmp_path / "ckpt"
    (ckpt / "offsets").mkdir(parents=True)
    (ckpt / "offsets" / "0").write_text("v1\n{}\n")
    (ckpt / FILE).write_text(json.dumps({"partitions": 2, "structures": {}}))
    with pytest.raises(CheckpointError, match=r"state of qmon 0.4 \(none recorded\)"):
        run(config, kafka_bootstrap, str(ckpt), available_now=True, spark=spark)
    assert outputs(kafka_bootstrap, prefix) == []
    assert sorted(p.name for p in ckpt.iterdir()) == sorted([FILE, "offsets"])  # untouched
    assert json.loads((ckpt / FILE).read_text()) == {"partitions": 2, "structures": {}}
