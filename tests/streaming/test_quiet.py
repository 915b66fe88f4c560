"""Users of qmon see qmon's own messages: PySpark's Python workers' start-up chatter never reaches them.

The patterns here; what a real ``qmon demo`` prints on a terminal is checked in ``tests/e2e/test_demo.py``.
"""

from __future__ import annotations

from qmon.streaming.spark import STARTUP_NOISE, WORKER_CHATTER


def test_the_chatter_pattern_matches_what_the_workers_print_and_nothing_of_spark_s_own():
    assert WORKER_CHATTER.match(b"Starting Streaming TransformWithStateInPandas Python worker.\n")
    assert WORKER_CHATTER.match(
        b"Streaming TransformWithStateInPandas Python worker finish init stage of Python runner. "
        b"Received UDF from JVM: <bound method ...>, received return type of UDF: StructType([]).\n"
    )
    assert not WORKER_CHATTER.match(b"26/11/23 08:00:00 ERROR MicroBatchExecution: Query qmon terminated with error\n")
    assert not WORKER_CHATTER.match(b"WARN Python worker exited unexpectedly (crashed)\n")


def test_spark_s_start_up_noise_is_recognised_and_ivy_s_errors_are_not():
    assert STARTUP_NOISE.match(b"\tfound org.apache.kafka#kafka-clients;3.9.2 in central\n")
    assert STARTUP_NOISE.match(b'Setting default log level to "WARN".\n')
    assert STARTUP_NOISE.match(b"WARNING: package sun.security.action not in java.base\n")  # (Java 24 and later)
    assert not STARTUP_NOISE.match(b"WARNING: package sun.nio.ch not in java.base\n")
    assert not STARTUP_NOISE.match(b"\t\t:: org.apache.spark#spark-avro_2.13;9.9.9: not found\n")
    assert not STARTUP_NOISE.match(b":: problems summary ::\n")
    assert not STARTUP_NOISE.match(b'Exception in thread "main" java.lang.RuntimeException: [unresolved dependency]\n')
