"""The wheel, installed non-editable into a fresh virtualenv, deployed the way Spark users deploy:
``spark-submit … "$(python -m qmon.app.submit)" run …`` through the real broker, the user's ``--conf``
winning over qmon's own defaults.

The virtualenv gets qmon from the wheel only; its dependencies (PySpark and the rest, hundreds of MB) are
borrowed from the test's own environment through a ``.pth`` line instead of being downloaded again.  A
directory added by a ``.pth`` line is not a site directory, so the editable install's import hook there
never runs: what imports is the wheel.  The run's working directory is outside the checkout, so nothing
can be read from the source tree.  (What qmon's own launcher prints on a terminal, and does not:
``tests/e2e/test_demo.py``.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import uuid
import zipfile
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
from qmon.devservers.spark_cluster import spark_home
from qmon.streaming.spark import packages
from tests.e2e.test_reliability import _workload

ROOT = Path(__file__).resolve().parents[2]


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, **kw)  # type: ignore[call-overload]


def test_the_wheel_holds_one_package_with_its_schemas_and_samples(qmon_wheel: Path) -> None:
    names = zipfile.ZipFile(qmon_wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.startswith("qmon-")}
    assert tops == {"qmon"}  # no top-level `streaming` or `connectors`
    assert "qmon/avro/ControlCommand.avsc" in names and "qmon/avro/QueueActivity.avsc" in names
    assert "qmon/samples/demo.yaml" in names and "qmon/samples/ims/CQSSG000" in names
    assert "qmon/streaming/pipeline.py" in names and "qmon/connectors/avro.py" in names
    # the packages pyproject.toml lists
    assert "qmon/app/commands/options.py" in names and "qmon/core/config/model.py" in names


def test_the_path_to_give_spark_submit_is_printed(capsys):
    assert submit.main([]) == 0
    out, err = capsys.readouterr()
    assert Path(out.strip()) == Path(submit.__file__) and "--packages org.apache.spark:spark-sql-kafka" in err


@pytest.mark.kafka
@pytest.mark.spark
def test_spark_submit_runs_the_job_from_the_installed_wheel_and_its_conf_wins_over_qmons_defaults(
    qmon_wheel: Path, kafka_bootstrap: str, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", "--without-pip", str(venv)]).returncode == 0
    py = venv / "bin" / "python"
    # (without PYTHONPATH: a checkout on it, with the egg-info the wheel's build left, is qmon "already installed")
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    install = _run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--quiet", str(qmon_wheel)],
        env=clean,
    )
    assert install.returncode == 0, install.stderr
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    (site / "qmon-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    work = tmp_path / "elsewhere"
    work.mkdir()
    assert _run([str(py), "-c", "import streaming"], cwd=work, env=clean).returncode != 0
    printed = _run([str(py), "-m", "qmon.app.submit"], cwd=work, env=clean)
    app = Path(printed.stdout.strip())
    assert printed.returncode == 0 and app.is_relative_to(site), printed.stdout + printed.stderr

    prefix = f"s{uuid.uuid4().hex[:8]}"
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    queues = [{"pattern": "Q*", "qsvciev": "HIGH", "qsvcint": 1500}]
    cfg = work / "qmon.yaml"
    cfg.write_text(
        json.dumps(
            {
                "kafka": {"topic_prefix": prefix, "partitions": 2},
                "monitor": {"perfmev": "ENABLED"},
                "queues": queues,
                "job": {"queue_shards": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds"},
            }
        )
    )
    work_records = _workload(200)
    src = topics.physical(topics.ACTIVITY, prefix)
    produce_rows(
        kafka_bootstrap,
        [(src, f"QM1/{r['queue']}".encode(), avro.encode("QueueActivity", r)) for r in work_records],
    )
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
        str(app),
        "run",
        "--config",
        str(cfg),
        "--bootstrap",
        kafka_bootstrap,
        "--checkpoint",
        str(work / "ckpt"),
        "--available-now",
    ]
    env = {**clean, "PYSPARK_PYTHON": str(py), "PYSPARK_DRIVER_PYTHON": str(py)}
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "web UI on" not in done.stderr  # the user's spark.ui.enabled=false won
    got = {r["event_id"] for _t, r, _ in consume(kafka_bootstrap, [topics.PERFORMANCE], prefix=prefix, to_end=True)}
    settings = MonitorSettings(
        perfmev="ENABLED", queue_defaults=Config.model_validate({"queues": queues}).monitor_settings().queue_defaults
    )
    want = {e.record["event_id"] for e in run_reference(work_records, settings) if e.topic == topics.PERFORMANCE}
    assert want and got == want
