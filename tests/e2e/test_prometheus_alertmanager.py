"""qmon in the Prometheus stack, against the real servers (Debian packages; skipped with the reason when they
are not installed): the job (Kafka -> Spark -> Kafka) fills a structure and ``qmon alertmanager`` delivers the
alerts to Alertmanager, through its restart, losing nothing.  What Prometheus scrapes of ``qmon metrics``, and the
shipped rules it loads: ``test_grafana_dashboard_prometheus.py``."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from qmon.app.alertmanager import Forwarder
from qmon.connectors import avro
from qmon.connectors.clients import produce_rows
from qmon.connectors.kafka import client_config, ensure_topics
from qmon.core import topics
from qmon.core.config import Config
from qmon.streaming.job import run
from tests.conftest import assert_eventually
from tests.servers import alertmanager, http_json

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

T0 = 1_700_000_000_000


def config_for(prefix: str, *names: str) -> Config:
    return Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 2},
            "job": {"queue_shards": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds"},
            "monitor": {"snapshot_interval": "1 second"},
            # 10 KB: 20 data elements; a 512-byte message is one; NEAR_FULL at 80 %, cleared below 75 % at once
            "structures": [
                {"strname": n, "size": 10, "ovflwmax": 100, "fullthreshold": 80, "clear_hold": "0 seconds"}
                for n in names
            ],
        }
    )


def fill(bootstrap: str, prefix: str, structure: str, n: int, op: str = "PUT", start: int = 0) -> None:
    rows = []
    for i in range(start, start + n):
        rec = {
            "event_id": f"{structure}-{op}-{i}",
            "qmgr": "IMSA",
            "queue": f"{structure}.Q",
            "op": op,
            "ts": T0 + i * 10,
            "depth_after": None,
            "msg_bytes": 512,
            "structure": structure,
            "reason": None,
        }
        rows.append((topics.physical(topics.ACTIVITY, prefix), b"IMSA", avro.encode("QueueActivity", rec)))
    produce_rows(bootstrap, rows)


def run_job(spark: Any, bootstrap: str, config: Config, checkpoint: Path) -> None:
    assert run(config, bootstrap, str(checkpoint), available_now=True, spark=spark) == 0


def am_alerts(server: Any, **labels: str) -> list[dict[str, Any]]:
    found = http_json(server.url + "/api/v2/alerts")
    return [a for a in found if all(a["labels"].get(k) == v for k, v in labels.items())]


def forward_in_background(forwarder: Forwarder) -> threading.Thread:
    t = threading.Thread(target=forwarder.run, daemon=True)
    t.start()
    return t


def test_alerts_reach_alertmanager_with_their_labels_and_end_when_resolved(kafka_bootstrap, spark, prefix, tmp_path):
    config = config_for(prefix, "MSGQ1")
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    am = alertmanager(tmp_path / "am").start()
    try:
        fill(kafka_bootstrap, prefix, "MSGQ1", 17)
        run_job(spark, kafka_bootstrap, config, tmp_path / "ckpt")
        forwarder = Forwarder(kafka_bootstrap, am.url, prefix=prefix, group=f"{prefix}-am", resend_ms=2_000)
        forward_in_background(forwarder)
        (alert,) = assert_eventually(lambda: am_alerts(am, alertname="STRUCTURE_NEAR_FULL"), timeout=60)
        assert {k: alert["labels"][k] for k in ("severity", "structure", "qmgr", "queue")} == {
            "severity": "warning",
            "structure": "MSGQ1",
            "qmgr": "IMSA",
            "queue": "MSGQ1.Q",
        }
        assert alert["annotations"]["description"].startswith("IXC585E STRUCTURE MSGQ1")
        assert alert["annotations"]["runbook"] and alert["status"]["state"] == "active"
        fill(kafka_bootstrap, prefix, "MSGQ1", 17, op="GET", start=100)  # drained: resolved
        run_job(spark, kafka_bootstrap, config, tmp_path / "ckpt")
        assert_eventually(lambda: not am_alerts(am, alertname="STRUCTURE_NEAR_FULL"), timeout=60)
        forwarder.stopping = True
    finally:
        am.stop()


def committed(bootstrap: str, prefix: str, group: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    topic = topics.physical(topics.ALERTS, prefix)
    c = Consumer(client_config(bootstrap, **{"group.id": group}))
    try:
        parts = [TopicPartition(topic, p) for p in range(2)]
        return sum(max(0, tp.offset) for tp in c.committed(parts, timeout=10))
    finally:
        c.close()


def end_offsets(bootstrap: str, prefix: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    topic = topics.physical(topics.ALERTS, prefix)
    c = Consumer(client_config(bootstrap, **{"group.id": "qmon-test-ends"}))
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(2))
    finally:
        c.close()


def test_an_alertmanager_restart_loses_nothing(kafka_bootstrap, spark, prefix, tmp_path):
    config = config_for(prefix, "MSGQ1", "MSGQ2")
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    am = alertmanager(tmp_path / "am").start()
    group = f"{prefix}-am"
    forwarder = Forwarder(kafka_bootstrap, am.url, prefix=prefix, group=group, resend_ms=2_000)
    try:
        fill(kafka_bootstrap, prefix, "MSGQ1", 17)
        run_job(spark, kafka_bootstrap, config, tmp_path / "ckpt")
        thread = forward_in_background(forwarder)
        assert_eventually(lambda: am_alerts(am, structure="MSGQ1"), timeout=60)
        am.stop()  # Alertmanager goes away; it keeps no alerts over a restart
        fill(kafka_bootstrap, prefix, "MSGQ2", 17)
        run_job(spark, kafka_bootstrap, config, tmp_path / "ckpt")
        sent = forwarder.sent
        time.sleep(4)  # the forwarder has read MSGQ2's alerts and is retrying them
        before = committed(kafka_bootstrap, prefix, group)
        assert forwarder.sent == sent and before < end_offsets(kafka_bootstrap, prefix)  # not delivered: not committed
        am.start()
        # the retried alerts arrive, and the one that fired before the restart is re-sent while it fires
        assert_eventually(lambda: am_alerts(am, structure="MSGQ2") and am_alerts(am, structure="MSGQ1"), timeout=90)
        ends = end_offsets(kafka_bootstrap, prefix)
        assert_eventually(lambda: committed(kafka_bootstrap, prefix, group) == ends, timeout=30)
        forwarder.stopping = True
        thread.join(40)
    finally:
        forwarder.stopping = True
        am.stop()


def test_a_wrong_url_or_a_4xx_is_a_clear_error_and_commits_nothing(kafka_bootstrap, prefix, tmp_path, caplog):
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    fill(kafka_bootstrap, prefix, "MSGQ1", 1)
    nowhere = Forwarder(kafka_bootstrap, "http://127.0.0.1:9", prefix=prefix, group=f"{prefix}-x")
    assert nowhere.run(idle=5) == 2
    assert "is --url an Alertmanager" in caplog.text
    am = alertmanager(tmp_path / "am").start()
    try:
        wrong = Forwarder(kafka_bootstrap, am.url + "/not-the-api", prefix=prefix, group=f"{prefix}-x")
        assert wrong.run(idle=5) == 2
        assert "HTTP 404" in caplog.text
    finally:
        am.stop()
    assert committed(kafka_bootstrap, prefix, f"{prefix}-x") == 0
