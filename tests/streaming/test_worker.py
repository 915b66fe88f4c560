"""What each PySpark Python worker does once (``qmon.streaming.worker``)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest


def test_freeze_imports_freezes_once_so_the_daemons_collections_skip_the_modules():
    # in a process of its own: freezing is for good, and this test process should not be changed by it
    code = (
        "import gc\n"
        "import pandas, pyarrow\n"
        "from qmon.streaming import operators\n"
        "from qmon.streaming.worker import freeze_imports\n"
        "assert gc.get_freeze_count() == 0\n"
        "freeze_imports()\n"
        "frozen = gc.get_freeze_count()\n"
        "assert frozen > 10_000, frozen\n"
        "junk = [[i] for i in range(1000)]\n"
        "freeze_imports()\n"
        "assert gc.get_freeze_count() == frozen, 'a second call freezes nothing more'\n"
        "assert gc.collect() == 0\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.spark
def test_the_workers_started_ahead_are_the_ones_the_next_pandas_tasks_run_in(spark: Any) -> None:
    import os

    import pandas as pd
    from pyspark.sql import functions as F

    from qmon.streaming.worker import start_workers

    pids: list[int] = []
    thread = start_workers(spark, pids)
    assert thread is not None
    thread.join(120)
    assert len(pids) == spark.sparkContext.defaultParallelism, pids

    def worker(key: Any, pdf: pd.DataFrame) -> pd.DataFrame:  # (a grouped pandas task, as the operator's are)
        import sys

        from qmon.streaming import worker as w

        return pd.DataFrame({"pid": [os.getpid()], "warm": ["qmon.streaming.operators" in sys.modules and w._frozen]})

    grouped = spark.range(0, 8, 1, 2).groupBy((F.col("id") % 2).alias("k"))
    used = grouped.applyInPandas(worker, "pid long, warm boolean").collect()
    assert all(r.warm for r in used)
    # PySpark hands an idle worker to the next Python task of any kind (the pool may hold others too)
    assert {r.pid for r in used} & set(pids), (used, pids)


def test_no_warm_up_when_workers_are_not_reused() -> None:
    import types

    from qmon.streaming.worker import start_workers

    conf = types.SimpleNamespace(
        get=lambda key, default=None: "false" if key == "spark.python.worker.reuse" else default
    )
    fake = types.SimpleNamespace(sparkContext=types.SimpleNamespace(getConf=lambda: conf))
    assert start_workers(fake) is None
