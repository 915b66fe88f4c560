"""``benchmarks/throughput.py``'s peak memory: Spark's JVM alone (its high-water mark), the local broker's JVM
apart, and the Python workers (a fake process table: no processes started)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench() -> Any:
    spec = importlib.util.spec_from_file_location("throughput_bench_mem", ROOT / "benchmarks" / "throughput.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MiB = 2**20


def test_the_brokers_jvm_is_not_counted_as_sparks(bench: Any) -> None:
    P = bench.Proc
    table = {
        100: P(ppid=1, name="python3.11", cmdline="python benchmarks/throughput.py", rss=200 * MiB, hwm=210 * MiB),
        200: P(100, "java", "java -cp … kafka.Kafka /tmp/broker.properties", rss=600 * MiB, hwm=650 * MiB),
        300: P(100, "java", "java -cp … org.apache.spark.deploy.SparkSubmit pyspark-shell", 1500 * MiB, 1700 * MiB),
        400: P(300, "python3.11", "python -m pyspark.daemon", 60 * MiB, 60 * MiB),
        401: P(400, "python3.11", "python -m pyspark.daemon", 500 * MiB, 520 * MiB),
        402: P(400, "python3.11", "python -m pyspark.daemon", 450 * MiB, 460 * MiB),
        500: P(1, "java", "java org.apache.spark.deploy.SparkSubmit", 9000 * MiB, 9000 * MiB),  # not ours
    }
    use = bench.memory_in_use(table, root=100)
    # Spark's JVM: its own high-water mark (the kernel's, between two samples too); the broker apart
    assert use.spark_jvm == 1700 * MiB and use.broker_jvm == 600 * MiB
    assert use.python_workers == (60 + 500 + 450) * MiB  # the benchmark's own interpreter is not a worker
    # the peak reset when a run starts touches the benchmark's own Spark JVM, never another one on the machine
    assert bench.spark_jvms(table, root=100) == [300]


def test_peak_memory_keeps_each_maximum(bench: Any) -> None:
    mem = bench.PeakMemory()
    for sample in (bench.MemoryInUse(1000, 500, 700), bench.MemoryInUse(900, 600, 650)):
        mem.add(sample)
    assert (mem.jvm, mem.broker, mem.py) == (1000, 600, 700)
