"""Upgrading keeps state: a job started on a checkpoint that an earlier build of this state version wrote
(``tests/fixtures/checkpoint-v7``, kept as test data) carries on with its depths, service timers and attributes,
and gives the outputs of a job that never stopped; ``qmon state export`` reads what it holds.

The checkpoint was written by ``write_fixture`` below (``QMON_WRITE_UPGRADE_FIXTURE=1 pytest
tests/e2e/test_upgrade.py -k write``) over ``BEFORE``, on topics of the prefix ``PREFIX``, with ``CONFIG``: this
test makes the same topics and records, so that the checkpoint's offsets are where they were, then sends
``AFTER``.

``tests/fixtures/checkpoint-0.4.0`` is a checkpoint qmon 0.4 (the last release) wrote over ``COMMANDS_0_4`` and
``BEFORE_0_4`` with ``CONFIG_0_4``, with qmon 0.4's own job and test helpers: a job of this qmon carries it on,
its state migrated, and gives the outputs of a job of this qmon that never stopped."""

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
            "job": {"queue_shards": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds"},
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
#: the topics' prefix qmon 0.4's job read (made again by the test, so that the checkpoint's offsets are where they were)
PREFIX_0_4 = "qmonupgrade040"
#: qmon 0.4's configuration, with the structure MSGQ1
CONFIG_0_4 = {
    "kafka": {"topic_prefix": PREFIX_0_4, "partitions": 1},
    "job": {"queue_shards": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds"},
    "structures": [{"strname": "MSGQ1", "size": 20, "initsize": 10, "ovflwstr": "OVFQ1", "ovflwsize": 20}],
}
#: what qmon 0.4's job had read when it wrote ``RELEASE_0_4``: PAYROLL.IN altered and 3 deep (its service timer
#: started at 1 s), ORDERS defined with depth events and 2 deep, IMSA's 1KEEPME on the structure MSGQ1
COMMANDS_0_4 = [
    (0, "ALTER QMGR PERFMEV(ENABLED)"),
    (0, "ALTER QLOCAL(PAYROLL.IN) QSVCINT(2000) QSVCIEV(HIGH)"),
    (0, "DEFINE QLOCAL(ORDERS) MAXDEPTH(4) QDEPTHHI(75) QDPHIEV(ENABLED)"),
    (0, "REGISTER INTEREST QUEUE(PAY*) CLIENT(OPS)"),
]
BEFORE_0_4 = [
    *BEFORE,
    activity(6, "PUT", 2_200, queue="1KEEPME", qmgr="IMSA", structure="MSGQ1", msg_bytes=512),
    activity(7, "PUT", 2_300, queue="1KEEPME", qmgr="IMSA", structure="MSGQ1", msg_bytes=512),
]
#: after the upgrade: PAYROLL.IN's get 4 s after its timer started (High), ORDERS to 3 of 4 (Queue Depth High),
#: 1KEEPME's get, and DISPLAYs
AFTER_0_4 = [
    activity(8, "GET", 5_000),
    activity(9, "PUT", 5_600, queue="ORDERS"),
    activity(10, "GET", 5_700, queue="1KEEPME", qmgr="IMSA", structure="MSGQ1", msg_bytes=512),
]
AFTER_COMMANDS_0_4 = [(6_000, "DISPLAY QLOCAL(ORDERS) ALL"), (6_000, "DISPLAY QLOCAL(PAYROLL.IN) ALL")]


def _events(out: list[tuple[str, dict[str, Any]]], since: int) -> list[tuple[str, Any, Any]]:
    """Performance events and alerts at or after ``since``, by topic, type and id."""
    return sorted(
        (t, r["type"], r.get("event_id") or r.get("alert_id"))
        for t, r in out
        if t in (topics.PERFORMANCE, topics.ALERTS) and r["ts"].timestamp() * 1000 >= since
    )


def test_a_checkpoint_qmon_0_4_wrote_carries_on_migrated_as_a_job_that_never_stopped(
    spark, kafka_bootstrap, prefix, tmp_path
):
    from qmon.streaming.state_export import QUEUE, QUEUE_MANAGER, STRUCTURE, read_checkpoint

    ckpt = tmp_path / "ckpt"
    copy_checkpoint(RELEASE_0_4, ckpt)
    # `qmon state export` reads it as 0.4 laid it out
    lines = list(read_checkpoint(spark, str(ckpt)))
    held = {x["queue"]: x for x in lines if x["kind"] == QUEUE}
    assert {q: (x["depth"], x["owner"]) for q, x in held.items()} == {
        "PAYROLL.IN": (3, "QM1"),
        "ORDERS": (2, "QM1"),
        "1KEEPME": (2, "IMSA"),
    }
    assert held["PAYROLL.IN"]["svc_timer_start"] == T0 + 1_000 and held["ORDERS"]["defined"]
    assert {x["perfmev"] for x in lines if x["kind"] == QUEUE_MANAGER and x["name"] == "QM1"} == {"ENABLED"}
    assert [x["used"] for x in lines if x["kind"] == STRUCTURE] == [2]

    # the job carries on on it, its state migrated as it is loaded
    ensure_topics(kafka_bootstrap, 1, prefix=PREFIX_0_4)
    _send(kafka_bootstrap, PREFIX_0_4, COMMANDS_0_4, BEFORE_0_4)  # (the offsets the checkpoint read up to)
    _send(kafka_bootstrap, PREFIX_0_4, AFTER_COMMANDS_0_4, AFTER_0_4)
    config_0_4 = Config.model_validate(CONFIG_0_4)
    assert run(config_0_4, kafka_bootstrap, str(ckpt), available_now=True, spark=spark) == 0
    resumed = outputs(kafka_bootstrap, PREFIX_0_4)
    assert json.loads((ckpt / "qmon-placement.json").read_text())["state_version"] == STATE_VERSION

    ensure_topics(kafka_bootstrap, 1, prefix=prefix)  # the job that never stopped
    _send(kafka_bootstrap, prefix, COMMANDS_0_4, BEFORE_0_4)
    _send(kafka_bootstrap, prefix, AFTER_COMMANDS_0_4, AFTER_0_4)
    whole_config = Config.model_validate({**CONFIG_0_4, "kafka": {"topic_prefix": prefix, "partitions": 1}})
    assert run(whole_config, kafka_bootstrap, str(tmp_path / "whole"), available_now=True, spark=spark) == 0
    whole = outputs(kafka_bootstrap, prefix)

    since = T0 + 2_300  # (qmon 0.4 had applied everything up to here)
    assert _events(resumed, since) == _events(whole, since)
    types = {(r["queue"], r["type"]) for t, r in resumed if t == topics.PERFORMANCE}
    assert types == {("PAYROLL.IN", "QSVCINT_HIGH"), ("ORDERS", "QDEPTH_HIGH")}  # timer, depths, attributes
    shown = sorted(r["message"] for t, r in resumed if t == topics.REPLIES and "AMQ8409I" in r["message"])
    assert shown == sorted(r["message"] for t, r in whole if t == topics.REPLIES and "AMQ8409I" in r["message"])
    assert all("QDPMAXEV(ENABLED)" in m for m in shown), shown  # (0.4's default DISABLED gives way to MQ's)
