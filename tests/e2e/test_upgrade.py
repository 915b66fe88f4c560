"""Upgrading keeps state: a job started on a checkpoint that an earlier build of this state version wrote
(``tests/fixtures/checkpoint-v6``, kept as test data) carries on with its depths, service timers and attributes,
and gives the outputs of a job that never stopped; ``qmon state export`` reads what it holds.

The checkpoint was written by ``write_fixture`` below (``QMON_WRITE_UPGRADE_FIXTURE=1 pytest
tests/e2e/test_upgrade.py -k write``) over ``BEFORE``, on topics of the prefix ``PREFIX``, with ``CONFIG``: this
test makes the same topics and records, so that the checkpoint's offsets are where they were, then sends
``AFTER``.

``tests/fixtures/checkpoint-0.4.0`` is a checkpoint qmon 0.4 wrote (the last release, whose state version is 4),
over ``RELEASE_0_4_COMMANDS`` and ``RELEASE_0_4_ACTIVITY``: it is exported and imported into a job on a new
checkpoint."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from qmon.connectors.clients import send_commands
from qmon.connectors.kafka import ensure_topics
from qmon.core import topics
from qmon.core.config import Config
from qmon.core.state_version import STATE_VERSION
from qmon.streaming.job import run
from tests.e2e.test_job_kafka import T0, activity, outputs, produce_activity

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / f"checkpoint-v{STATE_VERSION}"
#: the topics' prefix the checkpoint read (made by this test on the session's own broker)
PREFIX = "qmonupgrade6"


def config(prefix: str) -> Config:
    return Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 1},
            "job": {"queue_buckets": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds"},
        }
    )


#: the commands (ts offset, text) and activity the checkpoint has applied: PAYROLL.IN altered and 3 deep
#: (its service timer started at 1 s), ORDERS defined with depth events, PERFMEV enabled
BEFORE_COMMANDS = [
    (0, "ALTER QMGR PERFMEV(ENABLED)"),
    (0, "ALTER QLOCAL(PAYROLL.IN) QSVCINT(2000) QSVCIEV(HIGH)"),
    (0, "DEFINE QLOCAL(ORDERS) MAXDEPTH(4) QDEPTHHI(75) QDPHIEV(ENABLED)"),
]
BEFORE = [
    activity(1, "PUT", 1_000),
    activity(2, "PUT", 1_500),
    activity(3, "PUT", 1_800),
    activity(4, "PUT", 2_000, queue="ORDERS"),
    activity(5, "PUT", 2_100, queue="ORDERS"),
]
#: after the upgrade: a get 4 s after the timer started (High), another within 2 s (OK), ORDERS to 3 of 4
#: (75 %: Queue Depth High), and DISPLAYs of what the job holds
AFTER_COMMANDS = [(6_000, "DISPLAY QLOCAL(PAYROLL.IN) QSVCINT QSVCIEV CURDEPTH"), (6_000, "DISPLAY QMGR PERFMEV")]
AFTER = [activity(6, "GET", 5_000), activity(7, "GET", 5_500), activity(8, "PUT", 5_600, queue="ORDERS")]


def _send(bootstrap: str, prefix: str, commands: list[tuple[int, str]], records: list[Any]) -> None:
    for at, text in commands:
        send_commands(bootstrap, "QM1", [text], ts=T0 + at, prefix=prefix)
    produce_activity(bootstrap, prefix, list(records))


@pytest.mark.skipif(not os.environ.get("QMON_WRITE_UPGRADE_FIXTURE"), reason="writes the test data (on demand)")
def test_write_fixture(spark, kafka_bootstrap, tmp_path):
    """(Not a test: writes ``FIXTURE`` with this build.)"""
    ensure_topics(kafka_bootstrap, 1, prefix=PREFIX)
    _send(kafka_bootstrap, PREFIX, BEFORE_COMMANDS, BEFORE)
    ckpt = tmp_path / "ckpt"
    assert run(config(PREFIX), kafka_bootstrap, str(ckpt), available_now=True, spark=spark) == 0
    shutil.rmtree(FIXTURE, ignore_errors=True)
    shutil.copytree(ckpt, FIXTURE)


def copy_checkpoint(source: Path, target: Path) -> None:
    """A checkpoint copied to another directory: Spark's metadata of the duplicate check's operator names its state
    schema files by absolute path (``state/<op>/_metadata/v2``), so those paths are rewritten (and their Hadoop
    checksums dropped, which Hadoop then does not check)."""
    shutil.copytree(source, target)
    for meta in target.glob("state/*/_metadata/v2/*"):
        if meta.name.startswith("."):
            continue
        text = meta.read_text()
        fixed = re.sub(r'"file:[^"]*?/(state/\d+/_stateSchema/)', f'"file:{target}/\\1', text)
        if fixed != text:
            meta.write_text(fixed)
            (meta.parent / f".{meta.name}.crc").unlink(missing_ok=True)


def _ids(out: list[tuple[str, dict[str, Any]]]) -> set[tuple[str, str]]:
    """Performance events and replies, by event id (the replies' ids are their command's, which differ)."""
    perf = {(t, r["event_id"]) for t, r in out if t == topics.PERFORMANCE}
    return perf | {(t, r["message"]) for t, r in out if t == topics.REPLIES and r["message"].startswith("AMQ84")}


@pytest.mark.skipif(not FIXTURE.exists(), reason=f"no checkpoint of state version {STATE_VERSION} kept as test data")
def test_a_checkpoint_of_an_earlier_build_carries_on_as_a_job_that_never_stopped(
    spark, kafka_bootstrap, prefix, tmp_path
):
    from qmon.streaming.state_export import QUEUE, read_checkpoint

    ensure_topics(kafka_bootstrap, 1, prefix=PREFIX)
    _send(kafka_bootstrap, PREFIX, BEFORE_COMMANDS, BEFORE)  # (the offsets the checkpoint read up to)
    ckpt = tmp_path / "ckpt"
    copy_checkpoint(FIXTURE, ckpt)
    held = {x["queue"]: x for x in read_checkpoint(spark, str(ckpt)) if x["kind"] == QUEUE}
    assert (held["PAYROLL.IN"]["depth"], held["PAYROLL.IN"]["attrs"]["QSVCINT"]) == (3, 2000)
    assert held["PAYROLL.IN"]["svc_timer_start"] == T0 + 1_000 and held["ORDERS"]["defined"]

    _send(kafka_bootstrap, PREFIX, AFTER_COMMANDS, AFTER)
    assert run(config(PREFIX), kafka_bootstrap, str(ckpt), available_now=True, spark=spark) == 0
    resumed = outputs(kafka_bootstrap, PREFIX)

    ensure_topics(kafka_bootstrap, 1, prefix=prefix)  # the job that never stopped
    _send(kafka_bootstrap, prefix, BEFORE_COMMANDS, BEFORE)
    _send(kafka_bootstrap, prefix, AFTER_COMMANDS, AFTER)
    assert run(config(prefix), kafka_bootstrap, str(tmp_path / "whole"), available_now=True, spark=spark) == 0
    whole = outputs(kafka_bootstrap, prefix)

    after = {
        (t, r["event_id"]) for t, r in whole if t == topics.PERFORMANCE and r["ts"].timestamp() * 1000 >= T0 + 5_000
    }
    assert {(t, i) for t, i in _ids(resumed) if t == topics.PERFORMANCE} == after
    types = sorted(r["type"] for t, r in resumed if t == topics.PERFORMANCE)
    assert types == ["QDEPTH_HIGH", "QSVCINT_HIGH", "QSVCINT_OK"]  # timer, attributes and depths carried over
    shown = [r["message"] for t, r in resumed if t == topics.REPLIES and r["message"].startswith("AMQ84")]
    assert sorted(shown) == sorted(
        m for t, r in whole if t == topics.REPLIES and (m := r["message"]).startswith("AMQ84")
    )
    assert any("CURDEPTH(1)" in m and "QSVCINT(2000)" in m for m in shown), shown
    assert any("PERFMEV(ENABLED)" in m for m in shown), shown

    # the same queues moved to a job on a new checkpoint: exported, then `qmon state import`, then displayed
    exported = tmp_path / "queues.jsonl"
    exported.write_text("".join(json.dumps(line) + "\n" for line in read_checkpoint(spark, str(ckpt))))
    moved = f"{prefix}m"
    ensure_topics(kafka_bootstrap, 1, prefix=moved)
    cfg = tmp_path / "qmon.yaml"
    cfg.write_text(f"kafka:\n  topic_prefix: {moved}\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cli = [sys.executable, "-m", "qmon", "state", "import", str(exported), "--config", str(cfg)]
    done = subprocess.run([*cli, "--bootstrap", kafka_bootstrap], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and "START records sent" in done.stderr, done.stdout + done.stderr
    send_commands(kafka_bootstrap, "QM1", [AFTER_COMMANDS[0][1]], prefix=moved)  # (dated now, after the import)
    assert run(config(moved), kafka_bootstrap, str(tmp_path / "moved"), available_now=True, spark=spark) == 0
    [again] = [
        r["message"] for t, r in outputs(kafka_bootstrap, moved) if t == topics.REPLIES and "AMQ8409I" in r["message"]
    ]
    assert again == next(m for m in shown if "AMQ8409I" in m)  # CURDEPTH(1), QSVCIEV, QSVCINT as the old job held


RELEASE_0_4 = FIXTURE.parent / "checkpoint-0.4.0"
# What qmon 0.4's job had read when it wrote RELEASE_0_4 (on the prefix qmonupgrade040, one partition, with the
# structure MSGQ1 of size 20, initsize 10, configured), through its own test helpers: QM1's ALTER QMGR
# PERFMEV(ENABLED), ALTER QLOCAL(PAYROLL.IN) QSVCINT(2000) QSVCIEV(HIGH), DEFINE QLOCAL(ORDERS) MAXDEPTH(4)
# QDEPTHHI(75) QDPHIEV(ENABLED) and REGISTER INTEREST QUEUE(PAY*) CLIENT(OPS) at T0; puts on PAYROLL.IN at T0 + 1,
# 1.5 and 1.8 s and on ORDERS at T0 + 2 and 2.1 s; IMSA's two 512-byte puts on 1KEEPME (structure MSGQ1).


def test_the_queues_of_a_checkpoint_qmon_0_4_wrote_are_exported_and_imported_into_a_new_job(
    spark, kafka_bootstrap, prefix, tmp_path
):
    import time

    from qmon.streaming.state_export import QUEUE, QUEUE_MANAGER, STRUCTURE, read_checkpoint

    ckpt = tmp_path / "old"
    copy_checkpoint(RELEASE_0_4, ckpt)
    lines = list(read_checkpoint(spark, str(ckpt)))  # (what `qmon state export` writes)
    held = {x["queue"]: x for x in lines if x["kind"] == QUEUE}
    assert {q: (x["depth"], x["owner"]) for q, x in held.items()} == {
        "PAYROLL.IN": (3, "QM1"),
        "ORDERS": (2, "QM1"),
        "1KEEPME": (2, "IMSA"),
    }
    assert held["PAYROLL.IN"]["svc_timer_start"] == T0 + 1_000 and held["ORDERS"]["defined"]
    assert {x["perfmev"] for x in lines if x["kind"] == QUEUE_MANAGER and x["name"] == "QM1"} == {"ENABLED"}
    assert [x["used"] for x in lines if x["kind"] == STRUCTURE] == [2]

    exported = tmp_path / "queues.jsonl"
    exported.write_text("".join(json.dumps(line) + "\n" for line in lines))
    ensure_topics(kafka_bootstrap, 1, prefix=prefix)
    cfg = tmp_path / "qmon.yaml"
    cfg.write_text(f"kafka:\n  topic_prefix: {prefix}\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cli = [sys.executable, "-m", "qmon", "state", "import", str(exported), "--config", str(cfg)]
    done = subprocess.run([*cli, "--bootstrap", kafka_bootstrap], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and "3 START records sent" in done.stderr, done.stdout + done.stderr
    now = int(time.time() * 1000) + 1_000  # (after the import's records, which are stamped at its moment)
    send_commands(kafka_bootstrap, "QM1", ["DISPLAY QLOCAL(ORDERS) ALL", "DISPLAY QMGR PERFMEV"], ts=now, prefix=prefix)
    produce_activity(kafka_bootstrap, prefix, [{**activity(9, "PUT", 0, queue="ORDERS"), "ts": now + 1_000}])
    assert run(config(prefix), kafka_bootstrap, str(tmp_path / "new"), available_now=True, spark=spark) == 0
    out = outputs(kafka_bootstrap, prefix)
    shown = " ".join(r["message"] for t, r in out if t == topics.REPLIES)
    for attr in ("CURDEPTH(2)", "MAXDEPTH(4)", "QDEPTHHI(75)", "QDPHIEV(ENABLED)", "QDPMAXEV(ENABLED)"):
        assert attr in shown, shown  # (QDPMAXEV: 0.4's default DISABLED gives way to this qmon's)
    assert "PERFMEV(ENABLED)" in shown, shown
    # ORDERS' third message reaches 3 of MAXDEPTH(4): 75 %, Queue Depth High, from the depth 0.4 held
    assert [r["type"] for t, r in out if t == topics.PERFORMANCE and r["queue"] == "ORDERS"] == ["QDEPTH_HIGH"]
