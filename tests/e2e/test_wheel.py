"""The wheel, installed non-editable into a fresh virtualenv, runs ``qmon replay`` on the example,
and prints qmon's own messages and nothing of PySpark's workers' chatter or Spark's start-up noise.

The virtualenv gets qmon from the wheel only; its dependencies (PySpark and the rest, hundreds of MB) are
borrowed from the test's own environment through a ``.pth`` line instead of being downloaded again.  A
directory added by a ``.pth`` line is not a site directory, so the editable install's import hook there
never runs: what imports is the wheel.  The run's working directory is outside the checkout, so nothing
can be read from the source tree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.spark


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, **kw)  # type: ignore[call-overload]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    build = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", str(ROOT), "-w", str(out)])
    assert build.returncode == 0, build.stderr
    (whl,) = out.glob("qmon-*.whl")
    return whl


def test_the_wheel_holds_one_package_with_its_schemas_and_samples(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.startswith("qmon-")}
    assert tops == {"qmon"}  # no top-level `streaming` or `connectors`
    assert "qmon/avro/ControlCommand.avsc" in names and "qmon/avro/QueueActivity.avsc" in names
    assert "qmon/samples/demo.yaml" in names and "qmon/samples/ims/CQSSG000" in names
    assert "qmon/streaming/pipeline.py" in names and "qmon/connectors/avro.py" in names


def test_qmon_replay_from_the_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", "--without-pip", str(venv)]).returncode == 0
    py = venv / "bin" / "python"
    # (without PYTHONPATH: a checkout on it, with the egg-info the wheel's build left, is qmon "already installed")
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    install = _run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--quiet", str(wheel)], env=clean
    )
    assert install.returncode == 0, install.stderr
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    (site / "qmon-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    work = tmp_path / "elsewhere"
    work.mkdir()
    env = clean
    where = _run([str(py), "-c", "import qmon.streaming.pipeline as p; print(p.__file__)"], cwd=work, env=env)
    assert where.stdout.strip().startswith(str(site)), where.stdout + where.stderr
    assert _run([str(py), "-c", "import streaming"], cwd=work, env=env).returncode != 0

    out = work / "events.jsonl"
    run = _run(
        [str(venv / "bin" / "qmon"), "replay", str(ROOT / "examples" / "payroll.jsonl"), "--output", str(out)],
        cwd=work,
        env=env,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    # what the user sees: qmon's own messages, none of PySpark's workers' chatter or Spark's start-up noise
    assert f"records written to {out}" in run.stderr, run.stderr[-3000:]
    assert "Python worker" not in run.stderr + run.stdout and "Received UDF" not in run.stderr, run.stderr[-3000:]
    for noise in (
        ":: resolving dependencies",
        ":: problems summary",
        "Ivy Default Cache",
        "Setting default log level",
        "NativeCodeLoader",
    ):
        assert noise not in run.stderr, run.stderr[-3000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert any(r["topic"] == "qmon.events.performance" and r["type"] == "QSVCINT_HIGH" for r in records), records
