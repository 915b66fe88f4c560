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
import sys
from typing import Any

logger = logging.getLogger(__name__)

KAFKA_CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
AVRO_FUNCTIONS = "org.apache.spark:spark-avro_2.13:4.1.1"
DEFAULT_PACKAGES = (KAFKA_CONNECTOR, AVRO_FUNCTIONS)

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def packages() -> str:
    return os.environ.get("QMON_SPARK_PACKAGES") or ",".join(DEFAULT_PACKAGES)


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

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.jars.packages", packages())
        .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
        # a batch writes RocksDB's changes, not a snapshot (Spark's advice for low latency; compatible
        # with existing checkpoints)
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", os.environ.get("QMON_DRIVER_MEMORY", "2g"))
        # qmon is installed in the interpreter the workers run (editable or from the wheel): no PYTHONPATH
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.streaming.noDataMicroBatches.enabled", "true")
    )
    for k, v in (extra or {}).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("QMON_SPARK_LOG_LEVEL", "ERROR"))
    return spark


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
