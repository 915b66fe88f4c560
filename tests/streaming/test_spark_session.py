"""The Spark session qmon starts: the JVM compiles the huge methods Spark generates for the input stage."""

from __future__ import annotations

import pytest

from qmon.streaming.spark import JIT_HUGE_METHODS, with_jit_options


def test_the_jit_flag_is_added_for_driver_and_executors_after_the_options_given():
    out = with_jit_options({"spark.driver.extraJavaOptions": "-Dx=1", "spark.master": "local[2]"})
    assert out["spark.driver.extraJavaOptions"] == f"-Dx=1 {JIT_HUGE_METHODS}"
    assert out["spark.executor.extraJavaOptions"] == JIT_HUGE_METHODS
    assert out["spark.master"] == "local[2]"
    assert with_jit_options(out) == out  # once
    keep = {"spark.driver.extraJavaOptions": "-XX:+DontCompileHugeMethods"}  # an explicit choice stays
    assert with_jit_options(keep)["spark.driver.extraJavaOptions"] == "-XX:+DontCompileHugeMethods"


@pytest.mark.spark
def test_the_running_jvm_compiles_huge_methods(spark):
    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert JIT_HUGE_METHODS in arguments
    assert JIT_HUGE_METHODS in spark.sparkContext.getConf().get("spark.executor.extraJavaOptions")
