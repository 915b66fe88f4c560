"""qmon deployed the way Spark users deploy: ``spark-submit … qmon/app/submit.py run …`` through the real broker,
with the user's ``--conf`` winning over qmon's own defaults."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from qmon.app import submit
from qmon.connectors import avro
from qmon.connectors.clients import consume, produce_rows
from qmon.connectors.kafka import ensure_topics
from qmon.core import topics
from qmon.core.config import Config
from qmon.core.queues import MonitorSettings
from qmon.core.reference import run_reference
from qmon.streaming.cluster import spark_home
from qmon.streaming.spark import packages
from tests.conftest import ROOT
from tests.e2e.test_reliability import _workload

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def test_the_path_to_give_spark_submit_is_printed(capsys):
    assert submit.main([]) == 0
    out, err = capsys.readouterr()
    assert Path(out.strip()) == Path(submit.__file__) and "--packages org.apache.spark:spark-sql-kafka" in err


def test_spark_submit_runs_the_job_and_its_conf_wins_over_qmons_defaults(kafka_bootstrap, tmp_path):
    prefix = f"s{uuid.uuid4().hex[:8]}"
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    queues = [{"pattern": "Q*", "qsvciev": "HIGH", "qsvcint": 1500}]
    cfg = tmp_path / "qmon.yaml"
    cfg.write_text(
        json.dumps(
            {
                "kafka": {"topic_prefix": prefix, "partitions": 2},
                "monitor": {"perfmev": "ENABLED"},
                "queues": queues,
                "job": {"queue_buckets": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds"},
            }
        )
    )
    work = _workload(200)
    src = topics.physical(topics.ACTIVITY, prefix)
    produce_rows(kafka_bootstrap, [(src, f"QM1/{r['queue']}".encode(), avro.encode("QueueActivity", r)) for r in work])
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    command = [
        str(spark_home() / "bin" / "spark-submit"),
        "--master",
        "local[2]",
        "--packages",
        packages(),
        "--conf",
        "spark.ui.enabled=false",  # (qmon run's own default serves the web UI)
        "--conf",
        "spark.driver.memory=1g",
        submit.__file__,
        "run",
        "--config",
        str(cfg),
        "--bootstrap",
        kafka_bootstrap,
        "--checkpoint",
        str(tmp_path / "ckpt"),
        "--available-now",
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "web UI on" not in done.stderr  # the user's spark.ui.enabled=false won
    got = {r["event_id"] for _t, r, _ in consume(kafka_bootstrap, [topics.PERFORMANCE], prefix=prefix, to_end=True)}
    settings = MonitorSettings(
        perfmev="ENABLED", queue_defaults=Config.model_validate({"queues": queues}).monitor_settings().queue_defaults
    )
    want = {e.record["event_id"] for e in run_reference(work, settings) if e.topic == topics.PERFORMANCE}
    assert want and got == want
