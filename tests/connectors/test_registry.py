"""The schema registry client against a real registry (Apicurio Registry's Confluent-compatible API, started
by the session fixture): qmon's QueueActivity and an evolved version of it under one subject, each fetched by
id, and a record written with the evolved schema read into qmon's own."""

from __future__ import annotations

import io
import json
import urllib.request
import uuid
from typing import Any

import fastavro
import pytest

from qmon.connectors import avro
from qmon.connectors.registry import (
    CONTENT_TYPE,
    Framing,
    NotAvro,
    RegistryError,
    SchemaRegistry,
    UnknownSchemaId,
    registry,
    value_subject,
)
from qmon.connectors.resolution import resolve
from qmon.connectors.schema import schema_text

pytestmark = pytest.mark.registry

QUEUE_ACTIVITY = schema_text("QueueActivity")


def evolved() -> dict[str, Any]:
    """QueueActivity as a newer producer writes it: a field added with a default (``channel``), an optional
    field removed (``reason``)."""
    schema = json.loads(QUEUE_ACTIVITY)
    schema["fields"] = [f for f in schema["fields"] if f["name"] != "reason"]
    schema["fields"].append({"name": "channel", "type": "string", "default": "SYSTEM.DEF.SVRCONN"})
    return schema


def older() -> dict[str, Any]:
    """QueueActivity as an older producer writes it: no ``structure`` yet."""
    schema = json.loads(QUEUE_ACTIVITY)
    schema["fields"] = [f for f in schema["fields"] if f["name"] != "structure"]
    return schema


def write(schema: dict[str, Any] | str, record: dict[str, Any], schema_id: int) -> bytes:
    """``record`` in Confluent's wire format, written with ``schema`` (as a producer on that schema would)."""
    parsed = fastavro.parse_schema(json.loads(schema) if isinstance(schema, str) else schema)
    buf = io.BytesIO()
    buf.write(b"\x00" + schema_id.to_bytes(4, "big"))
    fastavro.schemaless_writer(buf, parsed, record)
    return buf.getvalue()


@pytest.fixture
def topic() -> str:
    return f"t{uuid.uuid4().hex[:10]}.activity"


def test_a_record_written_with_an_evolved_schema_reads_into_qmons(schema_registry_url: str, topic: str):
    producer = SchemaRegistry(schema_registry_url)
    subject = value_subject(topic)
    own_id = producer.register(subject, QUEUE_ACTIVITY)
    evolved_id = producer.register(subject, evolved())
    assert own_id != evolved_id
    assert producer.register(subject, QUEUE_ACTIVITY) == own_id  # the same schema, the same id

    consumer = SchemaRegistry(schema_registry_url)  # a process of its own: knows no id yet
    assert consumer.latest(subject)[0] == evolved_id
    writer = consumer.schema(evolved_id)
    assert json.loads(writer)["fields"][-1]["name"] == "channel"
    assert [f["name"] for f in json.loads(consumer.schema(own_id))["fields"]] == [
        f["name"] for f in json.loads(QUEUE_ACTIVITY)["fields"]
    ]
    assert resolve(writer, QUEUE_ACTIVITY).ok

    record = {
        "event_id": "e-7",
        "qmgr": "QM1",
        "queue": "PAYROLL.IN",
        "op": "GET",
        "ts": 1_767_225_604_007,
        "depth_after": 41,
        "msg_bytes": 512,
        "structure": None,
        "channel": "APP.SVRCONN",
    }
    data = write(evolved(), record, evolved_id)
    assert avro.confluent_id(data) == evolved_id
    decoded = avro.to_jsonable(avro.decode("QueueActivity", data, writer=writer))
    expected = {k: v for k, v in record.items() if k != "channel"} | {"reason": None}
    assert decoded == expected
    # read as if it were qmon's own schema, the same bytes come out wrong or not at all
    try:
        assert avro.to_jsonable(avro.decode("QueueActivity", data)) != expected
    except avro.AvroDecodeError:
        pass


def test_a_record_written_with_an_older_schema_takes_the_readers_default(schema_registry_url: str, topic: str):
    client = SchemaRegistry(schema_registry_url)
    older_id = client.register(value_subject(topic), older())
    record = {
        "event_id": "e-1",
        "qmgr": "QM2",
        "queue": "Q",
        "op": "PUT",
        "ts": 1_000,
        "depth_after": 1,
        "msg_bytes": 7,
        "reason": 2053,
    }
    writer = SchemaRegistry(schema_registry_url).schema(older_id)
    decoded = avro.to_jsonable(avro.decode("QueueActivity", write(older(), record, older_id), writer=writer))
    assert decoded == record | {"structure": None}


def test_each_id_is_asked_for_once(schema_registry_url: str, topic: str):
    schema_id = SchemaRegistry(schema_registry_url).register(value_subject(topic), evolved())
    client = SchemaRegistry(schema_registry_url)
    first = client.schema(schema_id)
    assert client.schema(schema_id) == first and client.requests == 1
    with pytest.raises(UnknownSchemaId):
        client.schema(987_654_321)
    with pytest.raises(UnknownSchemaId):
        client.schema(987_654_321)
    assert client.requests == 2
    assert registry(schema_registry_url) is registry(schema_registry_url)


def test_an_unknown_id_names_the_id(schema_registry_url: str):
    with pytest.raises(UnknownSchemaId) as caught:
        SchemaRegistry(schema_registry_url).schema(2_000_000_001)
    assert caught.value.schema_id == 2_000_000_001
    assert "2000000001" in str(caught.value) and schema_registry_url in str(caught.value)


def test_a_url_that_is_not_the_registrys_api_is_no_unknown_id(schema_registry_url: str):
    """A path of the registry's server that is not Confluent's API answers 404 to every id: that is an error of
    the URL, not an unknown id, so that records are not dead-lettered as written with an unknown schema."""
    base = schema_registry_url.split("/apis/")[0] + "/no/such/api"
    with pytest.raises(RegistryError, match="Confluent-compatible") as caught:
        SchemaRegistry(base).schema(1)
    assert not isinstance(caught.value, UnknownSchemaId)


def test_a_schema_that_is_not_avro_is_refused_as_a_writer(schema_registry_url: str, topic: str):
    json_schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}
    body = json.dumps({"schemaType": "JSON", "schema": json.dumps(json_schema)}).encode()
    request = urllib.request.Request(
        f"{schema_registry_url}/subjects/{value_subject(topic)}/versions",
        data=body,
        headers={"Content-Type": CONTENT_TYPE},
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        schema_id = json.loads(resp.read())["id"]
    with pytest.raises(NotAvro) as caught:
        SchemaRegistry(schema_registry_url).schema(schema_id)
    assert caught.value.schema_type == "JSON"


def test_an_invalid_schema_is_refused_with_the_registrys_words(schema_registry_url: str, topic: str):
    with pytest.raises(RegistryError) as caught:
        SchemaRegistry(schema_registry_url).register(value_subject(topic), '{"type": "recrd", "name": "X"}')
    assert caught.value.status is not None and 400 <= caught.value.status < 500
    assert value_subject(topic) in str(caught.value)


def test_every_version_of_a_subject_by_id(schema_registry_url: str, topic: str):
    client = SchemaRegistry(schema_registry_url)
    subject = value_subject(topic)
    assert client.subject_ids(subject) == []
    own_id = client.register(subject, QUEUE_ACTIVITY)
    older_id = client.register(subject, older())
    assert SchemaRegistry(schema_registry_url).subject_ids(subject) == [own_id, older_id]
    assert client.lookup(subject, QUEUE_ACTIVITY) == own_id
    assert client.lookup(subject, evolved()) is None
    assert client.lookup(value_subject(f"{topic}.none"), QUEUE_ACTIVITY) is None


def test_qmons_records_framed_with_the_id_of_their_topics_schema(schema_registry_url: str, topic: str):
    record = {
        "event_id": "e-1",
        "qmgr": "QM1",
        "queue": "Q",
        "op": "PUT",
        "ts": 1_000,
        "depth_after": None,
        "msg_bytes": 7,
        "structure": None,
        "reason": None,
    }
    body = avro.encode("QueueActivity", record)
    framing = Framing(SchemaRegistry(schema_registry_url))
    data = framing.frame(topic, "QueueActivity", body)
    schema_id = avro.confluent_id(data)
    assert schema_id is not None and data == avro.encode("QueueActivity", record, schema_id=schema_id)
    assert SchemaRegistry(schema_registry_url).subject_ids(value_subject(topic)) == [schema_id]
    again = SchemaRegistry(schema_registry_url)  # another process: finds the version, registers nothing new
    assert Framing(again).frame(topic, "QueueActivity", body) == data
    assert again.subject_ids(value_subject(topic)) == [schema_id]
    assert Framing(None).frame(topic, "QueueActivity", body) == body
