"""The schema registry client's errors without a registry: none listening, and a server on loopback that
answers as a registry would not (a stand-in of a few lines; the real registry's tests are in
test_registry.py)."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from qmon.connectors.registry import (
    NotAvro,
    RegistryError,
    RegistryUnreachable,
    SchemaRegistry,
    UnknownSchemaId,
    value_subject,
)
from qmon.devservers.local import free_port

#: path -> (status, body) the stand-in answers GETs and POSTs with
ANSWERS: dict[str, tuple[int, str]] = {
    "/schemas/ids/1": (200, json.dumps({"schema": '"string"'})),
    "/schemas/ids/2": (200, json.dumps({"schema": "syntax = 'proto3';", "schemaType": "PROTOBUF"})),
    "/schemas/ids/3": (500, json.dumps({"error_code": 50001, "message": "Error in the backend data store"})),
    "/schemas/ids/4": (200, "<html>a proxy's login page</html>"),
    "/schemas/ids/5": (404, json.dumps({"error_code": 40403, "message": "Schema 5 not found"})),
    "/subjects/t.activity-value/versions": (
        409,
        json.dumps({"error_code": 409, "message": "Schema being registered is incompatible with an earlier schema"}),
    ),
    "/subjects/t.control-value/versions": (200, json.dumps([2, 1, 3])),
    "/subjects/t.control-value/versions/1": (200, json.dumps({"id": 11, "version": 1, "schema": '"int"'})),
    "/subjects/t.control-value/versions/2": (200, json.dumps({"id": 12, "version": 2, "schema": '"long"'})),
    "/subjects/t.control-value/versions/3": (404, json.dumps({"error_code": 40402, "message": "Version 3 gone"})),
    "/subjects/t.journal-value/versions": (404, json.dumps({"error_code": 40401, "message": "Subject not found"})),
    "/subjects/t.journal-value": (404, json.dumps({"error_code": 40401, "message": "Subject not found"})),
    "/subjects/t.control-value": (200, json.dumps({"id": 12, "version": 2, "schema": '"long"'})),
    "/subjects/t.locked-value": (401, json.dumps({"error_code": 401, "message": "Unauthorized"})),
}
#: the Authorization header of each request the stand-in was sent (None: none)
SEEN: list[str | None] = []
#: path -> how many more requests for it the stand-in drops (closes the connection without an answer)
DROP: dict[str, int] = {}


class StandIn(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        SEEN.append(self.headers.get("Authorization"))
        if DROP.get(self.path, 0) > 0:
            DROP[self.path] -= 1
            self.close_connection = True
            return
        status, body = ANSWERS.get(self.path, (404, "{}"))
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    do_GET = _answer

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._answer()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stand_in() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_a_registry_that_does_not_answer_is_named():
    url = f"http://127.0.0.1:{free_port()}/apis/ccompat/v7"
    client = SchemaRegistry(url, timeout=2)
    for call in (lambda: client.schema(1), lambda: client.register("t-value", '"string"')):
        with pytest.raises(RegistryUnreachable) as caught:
            call()
        assert caught.value.url == url and str(caught.value).startswith(f"the schema registry at {url} cannot be")
    with pytest.raises(RegistryUnreachable):
        client.schema(1)
    assert client.requests == 3  # an unreachable registry is asked again


def test_answers_and_errors(stand_in: str):
    client = SchemaRegistry(stand_in)
    assert client.url == stand_in.rstrip("/")
    assert client.schema(1) == '"string"'
    with pytest.raises(NotAvro, match="schema id 2 is a PROTOBUF schema, not Avro"):
        client.schema(2)
    with pytest.raises(RegistryError, match="HTTP 500: Error in the backend data store") as caught:
        client.schema(3)
    assert caught.value.error_code == 50001 and not isinstance(caught.value, UnknownSchemaId)
    with pytest.raises(RegistryError, match="not a JSON answer"):
        client.schema(4)
    with pytest.raises(UnknownSchemaId) as unknown:
        client.schema(5)
    assert unknown.value.schema_id == 5
    with pytest.raises(RegistryError, match="the base URL of a Confluent-compatible") as elsewhere:
        client.schema(6)  # a 404 of the web server's, not the registry's
    assert not isinstance(elsewhere.value, UnknownSchemaId)
    with pytest.raises(RegistryError, match="HTTP 409: Schema being registered is incompatible") as refused:
        client.register(value_subject("t.activity"), '"string"')
    assert refused.value.status == 409


def test_the_subject_of_a_topics_values():
    assert value_subject("qmon.activity") == "qmon.activity-value"


def test_every_version_of_a_subject_by_id_each_asked_for_once(stand_in: str):
    client = SchemaRegistry(stand_in)
    assert client.subject_ids("t.control-value") == [11, 12]  # oldest first; version 3 deleted meanwhile
    asked = client.requests
    assert client.subject_ids("t.control-value") == [11, 12]
    assert client.requests == asked + 2  # the list of versions, and version 3 again (1 and 2 are known)
    assert client.schema(12) == '"long"' and client.requests == asked + 2  # learnt from its version
    assert client.subject_ids("t.journal-value") == []  # no such subject


def test_looking_a_schema_up_under_a_subject(stand_in: str):
    client = SchemaRegistry(stand_in)
    assert client.lookup("t.control-value", '"long"') == 12
    assert client.lookup("t.journal-value", '"long"') is None
    with pytest.raises(RegistryError, match="HTTP 401: Unauthorized"):
        client.lookup("t.locked-value", '"long"')


def test_basic_authentication_goes_with_every_request_and_only_when_given(stand_in: str):
    SEEN.clear()
    SchemaRegistry(stand_in, username="qmon", password="s3cret:x").schema(1)
    SchemaRegistry(stand_in).schema(1)
    assert SEEN == ["Basic " + base64.b64encode(b"qmon:s3cret:x").decode(), None]
    assert "s3cret" not in repr(SchemaRegistry(stand_in, username="qmon", password="s3cret:x"))


def test_a_request_whose_connection_is_closed_without_an_answer_is_sent_again(stand_in: str):
    """A server or a proxy in front of it may drop a connection before answering: the request is repeated,
    up to three sends in all, then the registry is named as unreachable."""
    DROP["/schemas/ids/1"] = 2
    registry = SchemaRegistry(stand_in)
    assert registry.schema(1) == '"string"' and registry.requests == 3
    DROP["/subjects/t.control-value/versions"] = 3
    with pytest.raises(RegistryUnreachable, match="without response"):
        SchemaRegistry(stand_in).subject_ids("t.control-value")
