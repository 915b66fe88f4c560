"""The Spark session qmon runs on.

Spark's Kafka connector and Avro functions are resolved from Maven Central by
Spark itself (Ivy, cached under ``~/.ivy2*``; never committed).  Maven Central
as reached here does not carry ``spark-sql-kafka-0-10_2.13`` or
``spark-avro_2.13`` at 4.3.0, the PySpark version qmon pins, so qmon uses the
newest of each that it does carry (see ``DEFAULT_PACKAGES``); the end-to-end
tests prove they work with PySpark 4.3.0.  ``QMON_SPARK_PACKAGES`` overrides
the list (comma-separated Maven coordinates), e.g. to the matching 4.3.x
artifacts once they are published.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import threading
from typing import IO, Any

logger = logging.getLogger(__name__)

KAFKA_CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
AVRO_FUNCTIONS = "org.apache.spark:spark-avro_2.13:4.1.1"
DEFAULT_PACKAGES = (KAFKA_CONNECTOR, AVRO_FUNCTIONS)

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def packages() -> str:
    return os.environ.get("QMON_SPARK_PACKAGES") or ",".join(DEFAULT_PACKAGES)


#: HotSpot never compiles a method of more than 8,000 bytes of bytecode (``DontCompileHugeMethods``), and
#: the code Spark generates for the input stage (decode, validate and route, a struct of 23 fields per
#: routed row) is one such method: it ran interpreted.  Measured on 300,000 records, decode + route +
#: shuffle write: 10.6 µs a record without this flag, 4.6 with it (README, Benchmarks).
JIT_HUGE_METHODS = "-XX:-DontCompileHugeMethods"

_JAVA_OPTIONS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")


def spark_defaults() -> dict[str, str]:
    """The Java options of Spark's ``spark-defaults.conf`` (``$SPARK_CONF_DIR``, else ``$SPARK_HOME/conf``),
    which a ``--conf`` of the same key would replace: qmon adds its flag to them instead."""
    conf_dir = os.environ.get("SPARK_CONF_DIR") or (
        os.path.join(os.environ["SPARK_HOME"], "conf") if os.environ.get("SPARK_HOME") else None
    )
    if conf_dir is None:
        import pyspark

        conf_dir = os.path.join(os.path.dirname(pyspark.__file__), "conf")
    found: dict[str, str] = {}
    try:
        with open(os.path.join(conf_dir, "spark-defaults.conf"), encoding="utf-8") as f:
            for line in f:  # (a Java properties file: "key value", "key=value" or "key: value")
                m = re.match(r"\s*([^\s=:#!]+)\s*[=:\s]\s*(.*)$", line)
                if m and m.group(1) in _JAVA_OPTIONS:
                    found[m.group(1)] = m.group(2).strip()
    except OSError:
        pass
    return found


def with_jit_options(options: dict[str, Any], defaults: dict[str, str] | None = None) -> dict[str, Any]:
    """``options`` with ``JIT_HUGE_METHODS`` added to the driver's and the executors' Java options, after
    those given (in ``options``, else in ``defaults``: spark-defaults.conf's), unless those already say
    either way (``-XX:+DontCompileHugeMethods`` keeps HotSpot's default: how to opt out, and what the
    benchmarks use to measure the difference)."""
    out = dict(options)
    for key in _JAVA_OPTIONS:
        given = str(out[key] if key in out else (defaults or {}).get(key, ""))
        out[key] = given if "DontCompileHugeMethods" in given else f"{given} {JIT_HUGE_METHODS}".strip()
    return out


def session(
    master: str = "local[*]", app_name: str = "qmon", shuffle_partitions: int = 4, extra: dict[str, Any] | None = None
):
    """A SparkSession with the connectors, RocksDB state and the project's interpreter for workers."""
    # Python workers must run this interpreter (pandas, fastavro and qmon live in its venv).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    # py4j logs every command it sends to the JVM at DEBUG, Kafka options (SASL passwords) included
    logging.getLogger("py4j").setLevel(logging.WARNING)

    options = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.jars.packages": packages(),
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
        # a batch writes RocksDB's changes, not a snapshot (Spark's advice for low latency; compatible
        # with existing checkpoints)
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": os.environ.get("QMON_DRIVER_MEMORY", "2g"),
        # qmon is installed in the interpreter the workers run (editable or from the wheel): no PYTHONPATH
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.python.worker.reuse": "true",
        "spark.sql.streaming.noDataMicroBatches.enabled": "true",
        **(extra or {}),
    }
    options = with_jit_options(options, spark_defaults())
    _launch_jvm(options)
    builder = SparkSession.builder
    for k, v in options.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("QMON_SPARK_LOG_LEVEL", "ERROR"))
    return spark


#: What PySpark's driver-side Python workers print on every start (``print`` to their stdout, which Spark
#: copies to the JVM's stderr): e.g. "Starting Streaming TransformWithStateInPandas Python worker." and
#: "... Received UDF from JVM: <bound method ...>".  Not errors, not warnings: dropped.
WORKER_CHATTER = re.compile(rb"^(Starting )?Streaming \w+ Python worker\b")

#: What every start of Spark's JVM prints that tells a qmon user nothing: Ivy's report of the Kafka and Avro
#: jars it found in its cache, log4j's default-profile notice, and the well-known native-hadoop warning.
#: Ivy's errors (unresolved dependencies), its downloads on a first start, and every other warning or error
#: still pass.
STARTUP_NOISE = re.compile(
    rb"^(WARNING: Using incubator modules: jdk\.incubator\.vector"
    rb"|:: loading settings :: url = "
    rb"|Ivy Default Cache set to: "
    rb"|The jars for the packages stored in: "
    rb"|\S+#\S+ added as a dependency\s*$"
    rb"|:: resolving dependencies :: "
    rb"|\tconfs: \[default\]\s*$"
    rb"|\tfound \S+ in \S+\s*$"
    rb"|:: resolution report :: "
    rb"|\t:: modules in use:\s*$"
    rb"|\t\S+ from \S+ in \[default\]\s*$"
    rb"|\t-+\s*$"
    rb"|\t\|.*\|\s*$"
    rb"|:: retrieving :: "
    rb"|\t\d+ artifacts copied, \d+ already retrieved"
    rb"|\S+ \S+ WARN NativeCodeLoader: Unable to load native-hadoop library"
    rb"|Using Spark's default log4j profile: "
    rb"|Setting default log level to "
    rb"|To adjust logging level use sc\.setLogLevel)"
)


def _launch_jvm(options: dict[str, str]) -> None:
    """Start Spark's JVM (unless one runs) with its stderr through ``_forward``, which drops the Python
    workers' chatter and the start-up noise and passes everything else (Spark's own errors and warnings)
    to our stderr."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    conf = SparkConf(loadDefaults=False).setAll(list(options.items()))
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    threading.Thread(target=_forward, args=(gateway.proc.stderr,), name="qmon-jvm-stderr", daemon=True).start()
    SparkContext._ensure_initialized(gateway=gateway, conf=conf)


def _forward(stream: IO[bytes]) -> None:
    """Copy the JVM's stderr to ours, line by line, without the workers' chatter (and the blank line each
    of those prints leaves after it)."""
    out = sys.stderr.buffer if hasattr(sys.stderr, "buffer") else None
    dropped = False
    for line in iter(stream.readline, b""):
        if WORKER_CHATTER.match(line) or (dropped and not line.strip()):
            dropped = True
            continue
        if STARTUP_NOISE.match(line):
            continue
        dropped = False
        if out is not None:
            out.write(line)
            out.flush()
        else:
            sys.stderr.write(line.decode(errors="replace"))


def shutdown(spark: Any, timeout: float = 30.0) -> None:
    """Stop the session and wait for Spark's JVM to exit, so nothing is left running."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    spark.stop()
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()
    except Exception:  # noqa: BLE001 - already gone
        pass
    if proc is not None:
        try:
            proc.stdin.close() if proc.stdin else None  # the JVM exits when its stdin closes
            proc.wait(timeout=timeout)
        except Exception:  # noqa: BLE001
            proc.kill()
    SparkContext._gateway = None
    SparkContext._jvm = None
