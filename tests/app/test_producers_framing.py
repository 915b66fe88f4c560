"""qmon's producers with a schema registry (``kafka.schema_registry_url``): ``qmon produce``, ``qmon simulate``,
``qmon seed-depth`` and the MQSC commands write Confluent's wire format with the id qmon's schema has under the
topic's value subject (registered in the real registry the session fixture starts); without one, plain Avro.
The Kafka producer is a stand-in that keeps what it is given."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from qmon.app.cli import main
from qmon.app.simulator import SETUP_MQSC
from qmon.connectors import avro, clients
from qmon.connectors.registry import Framing, SchemaRegistry, value_subject
from qmon.connectors.schema import schema_text
from qmon.core import topics
from tests.conftest import ROOT


class Producer:
    """confluent-kafka's Producer as far as qmon's producers use it; every record kept."""

    def __init__(self, sent: list[tuple[str, bytes]]):
        self.sent = sent

    def produce(self, topic: str, key: Any = None, value: bytes = b"", on_delivery: Any = None) -> None:
        self.sent.append((topic, value))

    def poll(self, _timeout: float = 0) -> int:
        return 0

    def flush(self, _timeout: float = 0) -> int:
        return 0


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bytes]]:
    records: list[tuple[str, bytes]] = []
    monkeypatch.setattr(clients, "producer", lambda *_a, **_k: Producer(records))
    monkeypatch.setattr("qmon.connectors.kafka.ensure_topics", lambda *_a, **_k: None)
    return records


def config_file(tmp_path: Path, prefix: str, registry: str | None) -> str:
    path = tmp_path / "qmon.yaml"
    text = f"kafka:\n  topic_prefix: {prefix}\n"
    path.write_text(text + (f"  schema_registry_url: {registry}\n" if registry else ""))
    return str(path)


def assert_framed_with_qmons_ids(url: str, prefix: str, sent: list[tuple[str, bytes]]) -> None:
    reader = SchemaRegistry(url)  # another process: what a consumer finds
    by_topic = {topics.physical(t, prefix): t for t in topics.INPUTS}
    for topic, value in sent:
        record = topics.RECORD_OF[by_topic[topic]]
        schema_id = avro.confluent_id(value)
        assert schema_id is not None and reader.subject_ids(value_subject(topic)) == [schema_id], topic
        assert reader.lookup(value_subject(topic), schema_text(record)) == schema_id
        avro.decode(record, value, writer=reader.schema(schema_id))


@pytest.mark.registry
def test_qmon_produce_and_seed_depth_write_registered_ids(schema_registry_url, sent, tmp_path):
    prefix = f"f{uuid.uuid4().hex[:8]}"
    config = config_file(tmp_path, prefix, schema_registry_url)
    assert main(["produce", "--config", config, "--bootstrap", "x:9092", str(ROOT / "examples" / "payroll.jsonl")]) == 0
    (tmp_path / "depths.txt").write_text("QUEUE(PAYROLL.IN) TYPE(QLOCAL) CURDEPTH(4)\n")
    assert main(["seed-depth", "--config", config, "--bootstrap", "x:9092", str(tmp_path / "depths.txt")]) == 0
    assert {t for t, _ in sent} == {topics.physical(topics.ACTIVITY, prefix), topics.physical(topics.CONTROL, prefix)}
    assert_framed_with_qmons_ids(schema_registry_url, prefix, sent)


@pytest.mark.registry
def test_qmon_simulate_and_mqsc_commands_write_registered_ids(schema_registry_url, sent, tmp_path):
    prefix = f"f{uuid.uuid4().hex[:8]}"
    config = config_file(tmp_path, prefix, schema_registry_url)
    assert main(["simulate", "--config", config, "--bootstrap", "x:9092", "--duration", "0.5", "--rate", "100"]) == 0
    framing = Framing(SchemaRegistry(schema_registry_url))
    clients.send_commands("x:9092", "QM2", ["PING QMGR"], prefix=prefix, framing=framing)
    control = topics.physical(topics.CONTROL, prefix)
    assert sum(t == control for t, _ in sent) == sum(len(commands) for commands in SETUP_MQSC.values()) + 1
    assert sum(t == topics.physical(topics.ACTIVITY, prefix) for t, _ in sent) > 10
    assert_framed_with_qmons_ids(schema_registry_url, prefix, sent)


def test_without_a_registry_records_are_plain_avro(sent, tmp_path):
    config = config_file(tmp_path, "plain", None)
    assert main(["produce", "--config", config, "--bootstrap", "x:9092", str(ROOT / "examples" / "payroll.jsonl")]) == 0
    assert main(["simulate", "--config", config, "--bootstrap", "x:9092", "--duration", "0.3", "--rate", "100"]) == 0
    assert sent and all(avro.confluent_id(v) is None for _, v in sent)
    for topic, value in sent:
        avro.decode(topics.RECORD_OF[topic.replace("plain", "qmon", 1)], value)
