"""The embedded broker the tests and the demo start (Apache Kafka in KRaft mode, from its Maven artifacts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from qmon.devservers import kafka as embedded

pytestmark = pytest.mark.kafka


def test_a_cluster_id_starting_with_a_dash_formats_and_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """One random cluster id in 64 starts with "-"; given as "-t <id>" the storage tool took it for an option
    and the broker never started (a flaky benchmark and test run)."""
    from confluent_kafka.admin import AdminClient

    monkeypatch.setattr(embedded, "_random_cluster_id", lambda: "-qMonDashLeadingIdAAAA")
    kafka = embedded.LocalKafka(workdir=tmp_path / "kafka").start()
    try:
        metadata = AdminClient({"bootstrap.servers": kafka.bootstrap}).list_topics(timeout=30)
        assert metadata.brokers
    finally:
        kafka.stop()
