"""``benchmarks/state_store.py`` (a shard's load and store, each way qmon has stored it) runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_state_store_benchmark_prints_every_encoding_and_the_positional_one_is_smallest():
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "state_store.py"), "--queues", "20", "--ids", "2", "--batch", "10"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = [line for line in run.stdout.splitlines() if "shard state" in line]
    assert len(lines) == 5, run.stdout + run.stderr
    size = {line.split("  ")[0]: int(line.split("shard state ")[1].split(" KiB")[0].replace(",", "")) for line in lines}
    as_map = next(v for k, v in size.items() if "a map" in k)
    by_position = next(v for k, v in size.items() if "by position" in k)
    assert by_position < as_map, run.stdout
