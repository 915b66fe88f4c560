"""The Spark session qmon starts: the JVM compiles the huge methods Spark generates for the input stage."""

from __future__ import annotations

import pytest

from qmon.streaming.spark import JIT_HUGE_METHODS, spark_defaults, with_jit_options

DRIVER, EXECUTOR = "spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"


def test_the_jit_flag_is_added_for_driver_and_executors_after_the_options_given():
    out = with_jit_options({DRIVER: "-Dx=1", "spark.master": "local[2]"})
    assert out[DRIVER] == f"-Dx=1 {JIT_HUGE_METHODS}"
    assert out[EXECUTOR] == JIT_HUGE_METHODS
    assert out["spark.master"] == "local[2]"
    assert with_jit_options(out) == out  # once


def test_an_explicit_choice_either_way_stays_side_by_side():
    out = with_jit_options({EXECUTOR: "-XX:+DontCompileHugeMethods"})  # the executors opt out
    assert out[EXECUTOR] == "-XX:+DontCompileHugeMethods"
    assert out[DRIVER] == JIT_HUGE_METHODS
    out = with_jit_options({DRIVER: "-XX:+DontCompileHugeMethods -Dy=2"})
    assert out[DRIVER] == "-XX:+DontCompileHugeMethods -Dy=2" and out[EXECUTOR] == JIT_HUGE_METHODS


def test_spark_defaults_java_options_are_kept_not_replaced(tmp_path, monkeypatch):
    """A ``--conf`` replaces spark-defaults.conf's value of the same key: qmon adds its flag to that value."""
    (tmp_path / "spark-defaults.conf").write_text(
        "# site settings\n"
        "spark.driver.extraJavaOptions   -Djava.io.tmpdir=/big -Dlog4j.configurationFile=site.xml\n"
        "spark.executor.extraJavaOptions=-XX:+DontCompileHugeMethods\n"
        "spark.master local[4]\n"
    )
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    defaults = spark_defaults()
    assert defaults == {
        DRIVER: "-Djava.io.tmpdir=/big -Dlog4j.configurationFile=site.xml",
        EXECUTOR: "-XX:+DontCompileHugeMethods",
    }
    out = with_jit_options({"spark.master": "local[2]"}, defaults)
    assert out[DRIVER] == f"-Djava.io.tmpdir=/big -Dlog4j.configurationFile=site.xml {JIT_HUGE_METHODS}"
    assert out[EXECUTOR] == "-XX:+DontCompileHugeMethods"
    # options given to the session win over the file's, as a --conf does
    assert with_jit_options({DRIVER: "-Da=1"}, defaults)[DRIVER] == f"-Da=1 {JIT_HUGE_METHODS}"
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "none"))
    assert spark_defaults() == {}


@pytest.mark.spark
def test_the_running_jvm_compiles_huge_methods(spark):
    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert JIT_HUGE_METHODS in arguments
    assert JIT_HUGE_METHODS in spark.sparkContext.getConf().get(EXECUTOR)
