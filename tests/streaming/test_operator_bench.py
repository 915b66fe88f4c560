"""``benchmarks/operator_alone.py`` (the operator's Python side alone) runs, and its outputs are the pure modules'."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_operator_benchmark_gives_the_pure_modules_outputs():
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "operator_alone.py"),
            "--records",
            "40000",
            "--batch",
            "9000",
            "--repeat",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    outputs = next(line for line in run.stdout.splitlines() if "outputs:" in line)
    assert "; match the pure modules'" in outputs and "outputs: 0;" not in outputs, run.stdout + run.stderr
