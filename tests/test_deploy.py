"""What users deploy on their own Spark cluster, checked without one: the packed Python environment of
``make dist``."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from qmon.streaming.spark import DEFAULT_PACKAGES
from tests.conftest import ROOT


@pytest.mark.timeout(180)
def test_make_dist_packs_an_environment_whose_python_runs_qmon_from_its_own_files(tmp_path):
    """``make dist``'s script, on the wheel alone (``--no-deps``: installing and packing the dependencies takes a
    minute or more, too long for the suite), writes an archive with ``bin/python`` and qmon's package, installed from
    the wheel; unpacked elsewhere, as Spark unpacks ``--archives …#environment``, its python finds qmon in its own
    files and prints the application a driver runs."""
    dist = tmp_path / "dist"
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*build, str(ROOT), "-w", str(dist)], check=True)
    (wheel,) = dist.glob("qmon-*.whl")
    archive = dist / "qmon-env.tar.gz"
    subprocess.run(
        [sys.executable, str(ROOT / "deploy" / "pack_env.py"), str(wheel), str(archive), "--no-deps"], check=True
    )

    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
        python = tar.getmember("bin/python")
    assert python.issym() or python.isfile()
    site = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
    assert {f"{site}/qmon/app/submit.py", f"{site}/qmon/avro/QueueActivity.avsc", "pyvenv.cfg"} <= names
    assert not [n for n in names if n.endswith(".pth") or "__editable__" in n]  # not an editable install

    unpacked = tmp_path / "executor" / "environment"
    unpacked.mkdir(parents=True)
    subprocess.run(["tar", "-xzf", str(archive), "-C", str(unpacked)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    ran = subprocess.run(
        ["./environment/bin/python", "-m", "qmon.app.submit"],
        cwd=unpacked.parent,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(ran.stdout.strip()) == unpacked / site / "qmon" / "app" / "submit.py"
    assert f"--packages {','.join(DEFAULT_PACKAGES)}" in ran.stderr
