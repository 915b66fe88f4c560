"""``benchmarks/dedup_step.py``: the query shape it measures runs on Spark 4.3 (a ``transformWithStateInPandas``
duplicate check ahead of an ``applyInPandasWithState`` with an event-time timeout), and its report prints."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.spark
def test_the_duplicate_check_runs_as_a_stateful_step_ahead_of_the_monitor(spark: Any, tmp_path: Path) -> None:
    # (not registered in sys.modules: PySpark pickles the benchmark's processor and function by value)
    spec = importlib.util.spec_from_file_location("dedup_step_bench", ROOT / "benchmarks" / "dedup_step.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    # (slices of 1 s kept 1 s after their end: their timers fire within the run)
    reports = bench.run(spark, True, rate=20, seconds=8, slice_ms=1_000, workdir=str(tmp_path), window_ms=1_000)
    data = [p for p in reports if p["numInputRows"] > 0]
    assert len(data) >= 3, reports
    operators = {o["operatorName"]: o for o in data[-1]["stateOperators"]}
    assert len(operators) == 2, operators  # the duplicate check and the monitor, each with state
    check = next(o for name, o in operators.items() if "transformWithState" in name)
    assert check["numRowsTotal"] > 0, check  # the slices' ids
    assert "batches with rows" in bench.describe("with the duplicate check", reports, 0)
