"""What ``qmon metrics`` serves, as Prometheus scrapes it: the exporter's collector over the model (no Kafka, no
HTTP server), its lines in the text exposition format."""

from __future__ import annotations

import threading

from prometheus_client import CollectorRegistry, generate_latest

from qmon.app.exporter import MetricsCollector
from qmon.connectors import avro
from qmon.core import topics
from qmon.core.metrics import Metrics

T = 1_700_000_000_000


def scrape(metrics: Metrics, now: float) -> list[str]:
    registry = CollectorRegistry()
    registry.register(MetricsCollector(metrics, threading.Lock(), {}, clock=lambda: now))
    return generate_latest(registry).decode().splitlines()


def test_a_queue_s_oldest_message_age_and_last_put_and_get_lines():
    """From a snapshot as the exporter reads it (Avro-decoded: timestamps are datetimes); the age at the scrape's
    time; no line where the snapshot has no value."""
    snapshot = {
        "event_id": "s1",
        "ts": T + 40_000,
        "qmgr": "QM1",
        "queues": [
            {"queue": "PAYROLL.IN", "depth": 2, "service_timer_start": T + 40_000, "oldest_message_put": T + 5_000,
             "last_put": T + 30_000, "last_get": T + 40_000},
            {"queue": "NEW.Q", "depth": 4, "service_timer_start": T + 20_000, "oldest_message_put": None,
             "last_put": None, "last_get": T + 20_000},
        ],
        "forgotten": [],
    }  # fmt: skip
    m = Metrics()
    m.on_record(topics.SNAPSHOT, avro.decode("Snapshot", avro.encode("Snapshot", snapshot)))
    lines = scrape(m, now=(T + 65_500) / 1000)
    assert [line for line in lines if "oldest_message_age" in line or "last_put" in line or "last_get" in line] == [
        "# HELP qmon_queue_oldest_message_age_seconds Age of the oldest message on the queue at the scrape (MQ's "
        "MSGAGE), from its put time in the latest snapshot; none while the queue is empty or qmon did not see its "
        "oldest messages' puts.",
        "# TYPE qmon_queue_oldest_message_age_seconds gauge",
        'qmon_queue_oldest_message_age_seconds{qmgr="QM1",queue="PAYROLL.IN"} 60.5',
        "# HELP qmon_queue_last_put_timestamp_seconds When the last put qmon saw on the queue happened (MQ's "
        "LPUTDATE and LPUTTIME), Unix time.",
        "# TYPE qmon_queue_last_put_timestamp_seconds gauge",
        'qmon_queue_last_put_timestamp_seconds{qmgr="QM1",queue="PAYROLL.IN"} 1.70000003e+09',
        "# HELP qmon_queue_last_get_timestamp_seconds When the last get qmon saw on the queue happened (MQ's "
        "LGETDATE and LGETTIME), Unix time.",
        "# TYPE qmon_queue_last_get_timestamp_seconds gauge",
        'qmon_queue_last_get_timestamp_seconds{qmgr="QM1",queue="NEW.Q"} 1.70000002e+09',
        'qmon_queue_last_get_timestamp_seconds{qmgr="QM1",queue="PAYROLL.IN"} 1.70000004e+09',
    ]
