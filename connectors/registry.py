"""A thin client of Confluent's Schema Registry REST API: a writer's schema by id, and registering a schema.

Confluent's wire format puts a schema id before each Avro body; the registry (Confluent's, or one that
serves its API, such as Apicurio Registry's ``/apis/ccompat/v7``) says which schema that id is.  Ids name
schemas for good, so each id is asked for once per process: the answer, or that the registry does not know
it, is kept.  Subjects follow Confluent's default TopicNameStrategy: a topic's values are ``<topic>-value``.

Only the standard library (``urllib``): confluent-kafka's own client needs extras qmon does not install.
``Framing`` writes qmon's own records in Confluent's wire format, each topic's schema registered once.
"""

from __future__ import annotations

import base64
import http.client
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from functools import cache
from typing import TYPE_CHECKING, Any

from qmon.connectors.avro import header
from qmon.connectors.schema import schema_text

if TYPE_CHECKING:
    from qmon.core.config import KafkaConfig

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

#: Confluent's error codes (the ``error_code`` of an error's JSON body)
SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403


#: how many times a request is sent when the connection is closed without an answer
DROPPED_ATTEMPTS = 3


class RegistryError(RuntimeError):
    """The registry answered with an error (or with something that is not its API)."""

    def __init__(self, message: str, *, status: int | None = None, error_code: int | None = None):
        super().__init__(message)
        self.status = status
        self.error_code = error_code


class RegistryUnreachable(RegistryError):
    """No answer from the registry at ``url`` (refused, timed out, not resolvable)."""

    def __init__(self, url: str, reason: str):
        super().__init__(f"the schema registry at {url} cannot be reached: {reason}")
        self.url = url


class UnknownSchemaId(RegistryError):
    """The registry has no schema with id ``schema_id``."""

    def __init__(self, schema_id: int, url: str):
        super().__init__(f"the schema registry at {url} has no schema with id {schema_id}", status=404)
        self.schema_id = schema_id
        self.url = url


class NotAvro(RegistryError):
    """The schema with id ``schema_id`` is not an Avro schema (PROTOBUF or JSON)."""

    def __init__(self, schema_id: int, schema_type: str):
        super().__init__(f"schema id {schema_id} is a {schema_type} schema, not Avro")
        self.schema_id = schema_id
        self.schema_type = schema_type


def value_subject(topic: str) -> str:
    """The subject of ``topic``'s values under Confluent's TopicNameStrategy."""
    return f"{topic}-value"


class SchemaRegistry:
    """One registry, by the base URL of its Confluent-compatible API (``http://host:8081``, or Apicurio's
    ``http://host:8080/apis/ccompat/v7``)."""

    def __init__(self, url: str, timeout: float = 10.0, *, username: str | None = None, password: str | None = None):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._schemas: dict[int, str | None] = {}  # None: the registry does not know that id
        self._versions: dict[tuple[str, int], int] = {}  # (subject, version) -> its schema's id
        self._lock = threading.Lock()
        self._auth = (
            "Basic " + base64.b64encode(f"{username}:{password or ''}".encode()).decode()
            if username is not None
            else None
        )
        #: the HTTP requests this client made (a cached id makes none)
        self.requests = 0

    def __repr__(self) -> str:
        return f"SchemaRegistry({self.url!r})"

    # ------------------------------------------------------------ HTTP

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Accept": CONTENT_TYPE + ", application/json", "Content-Type": CONTENT_TYPE}
        if self._auth is not None:
            headers["Authorization"] = self._auth
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        for attempt in range(1, DROPPED_ATTEMPTS + 1):
            self.requests += 1
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as resp:
                    text = resp.read().decode()
                break
            except urllib.error.HTTPError as exc:
                raise self._error(method, path, exc) from exc
            except (http.client.RemoteDisconnected, ConnectionResetError) as exc:
                # a connection the server (or a proxy in front of it) closed before answering: every request
                # qmon makes is safe to repeat (a schema registered twice keeps its id)
                if attempt == DROPPED_ATTEMPTS:
                    raise RegistryUnreachable(self.url, str(exc)) from exc
                time.sleep(0.2 * attempt)
            except (urllib.error.URLError, OSError) as exc:  # refused, timed out, no such host
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, (http.client.RemoteDisconnected, ConnectionResetError)):
                    if attempt == DROPPED_ATTEMPTS:
                        raise RegistryUnreachable(self.url, str(reason)) from exc
                    time.sleep(0.2 * attempt)
                    continue
                raise RegistryUnreachable(self.url, str(reason)) from exc
        try:
            return json.loads(text)
        except ValueError as exc:
            raise RegistryError(f"{method} {self.url}{path}: not a JSON answer: {text[:200]!r}") from exc

    def _error(self, method: str, path: str, exc: urllib.error.HTTPError) -> RegistryError:
        text = exc.read().decode(errors="replace")
        try:
            body = json.loads(text)
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        message = body.get("message") or text[:200] or exc.reason
        return RegistryError(
            f"{method} {self.url}{path}: HTTP {exc.code}: {message}", status=exc.code, error_code=body.get("error_code")
        )

    # ------------------------------------------------------------ reading

    def schema(self, schema_id: int) -> str:
        """The text of the schema with id ``schema_id`` (asked once per id; later calls use the answer).

        Raises ``UnknownSchemaId`` when the registry says it does not know the id (its error 40403),
        ``NotAvro`` when it is not an Avro schema, ``RegistryUnreachable`` when the registry does not answer,
        and ``RegistryError`` for any other error (a 404 that is not the registry's own, from a URL that is not
        its API, among them): those are not kept, the id is asked for again."""
        with self._lock:
            if schema_id in self._schemas:
                known = self._schemas[schema_id]
                if known is None:
                    raise UnknownSchemaId(schema_id, self.url)
                return known
            try:
                answer = self._call("GET", f"/schemas/ids/{int(schema_id)}")
            except RegistryError as exc:
                if exc.status == 404 and exc.error_code == SCHEMA_NOT_FOUND:
                    self._schemas[schema_id] = None
                    raise UnknownSchemaId(schema_id, self.url) from exc
                if exc.status == 404:  # not the registry's "no such schema": a URL that is not its API
                    raise RegistryError(
                        f"{exc} (is {self.url} the base URL of a Confluent-compatible schema registry API?)",
                        status=404,
                    ) from exc
                raise
            if not isinstance(answer, dict) or not isinstance(answer.get("schema"), str):
                raise RegistryError(f"GET {self.url}/schemas/ids/{schema_id}: no schema in {str(answer)[:200]!r}")
            schema_type = answer.get("schemaType") or "AVRO"  # Confluent leaves it out for Avro
            if schema_type != "AVRO":
                raise NotAvro(schema_id, schema_type)
            self._schemas[schema_id] = answer["schema"]
            return str(answer["schema"])

    def latest(self, subject: str) -> tuple[int, int, str]:
        """The latest version of ``subject``: (schema id, version, schema text)."""
        answer = self._call("GET", f"/subjects/{urllib.parse.quote(subject, safe='')}/versions/latest")
        schema_id, text = int(answer["id"]), answer["schema"]
        self._learn(schema_id, text)
        return schema_id, int(answer["version"]), text

    def subjects(self) -> list[str]:
        return list(self._call("GET", "/subjects"))

    def subject_ids(self, subject: str) -> list[int]:
        """The schema ids of every version of ``subject``, oldest version first (none when the registry has no
        such subject).  A version's id is asked for once per process: a version never changes its schema."""
        quoted = urllib.parse.quote(subject, safe="")
        try:
            versions = self._call("GET", f"/subjects/{quoted}/versions")
        except RegistryError as exc:
            if exc.status == 404 and exc.error_code == SUBJECT_NOT_FOUND:
                return []
            raise
        if not isinstance(versions, list):
            raise RegistryError(f"GET {self.url}/subjects/{subject}/versions: no list in {str(versions)[:200]!r}")
        ids = []
        for version in sorted(int(v) for v in versions):
            if (subject, version) not in self._versions:
                try:
                    answer = self._call("GET", f"/subjects/{quoted}/versions/{version}")
                except RegistryError as exc:
                    if exc.status == 404 and exc.error_code in (SUBJECT_NOT_FOUND, VERSION_NOT_FOUND):
                        continue  # deleted since the list was read
                    raise
                if not isinstance(answer, dict) or "id" not in answer:
                    raise RegistryError(f"GET {self.url}/subjects/{subject}/versions/{version}: no id")
                self._versions[(subject, version)] = int(answer["id"])
                if isinstance(answer.get("schema"), str) and (answer.get("schemaType") or "AVRO") == "AVRO":
                    self._learn(int(answer["id"]), answer["schema"])
            ids.append(self._versions[(subject, version)])
        return ids

    # ------------------------------------------------------------ writing

    def register(self, subject: str, schema: str | dict[str, Any]) -> int:
        """Register ``schema`` (Avro, as JSON text or its parsed JSON) under ``subject``; its id.  The same
        schema registered again gets the same id.  Raises ``RegistryError`` when the registry refuses it (an
        invalid schema, or one incompatible with the subject's earlier versions under its compatibility
        rule)."""
        text = schema if isinstance(schema, str) else json.dumps(schema)
        answer = self._call("POST", f"/subjects/{urllib.parse.quote(subject, safe='')}/versions", {"schema": text})
        if not isinstance(answer, dict) or "id" not in answer:
            raise RegistryError(f"POST {self.url}/subjects/{subject}/versions: no id in {str(answer)[:200]!r}")
        schema_id = int(answer["id"])
        self._learn(schema_id, text)
        return schema_id

    def lookup(self, subject: str, schema: str | dict[str, Any]) -> int | None:
        """The id of ``schema`` when it is a version of ``subject``, else None (asking only: a client allowed to
        read the registry and not to write to it may ask)."""
        text = schema if isinstance(schema, str) else json.dumps(schema)
        try:
            answer = self._call("POST", f"/subjects/{urllib.parse.quote(subject, safe='')}", {"schema": text})
        except RegistryError as exc:
            if exc.status == 404 and exc.error_code in (SUBJECT_NOT_FOUND, SCHEMA_NOT_FOUND):
                return None
            raise
        if not isinstance(answer, dict) or "id" not in answer:
            raise RegistryError(f"POST {self.url}/subjects/{subject}: no id in {str(answer)[:200]!r}")
        schema_id = int(answer["id"])
        self._learn(schema_id, text)
        return schema_id

    def _learn(self, schema_id: int, text: str) -> None:
        """Keep a schema the registry named by id in an answer (an id it said it did not know included)."""
        with self._lock:
            if self._schemas.get(schema_id) is None:
                self._schemas[schema_id] = text


@cache
def registry(url: str, username: str | None = None, password: str | None = None) -> SchemaRegistry:
    """The one client of the registry at ``url`` in this process (so its ids are asked for once)."""
    return SchemaRegistry(url, username=username, password=password)


def from_config(kafka: KafkaConfig) -> SchemaRegistry | None:
    """The client of the registry ``kafka.schema_registry_url`` names, with its credentials; None when unset."""
    if kafka.schema_registry_url is None:
        return None
    password = kafka.schema_registry_password
    return registry(
        kafka.schema_registry_url,
        kafka.schema_registry_username,
        password.get_secret_value() if password is not None else None,
    )


class Framing:
    """qmon's own records in Confluent's wire format: each topic's record registered once under the topic's
    value subject, its id in the 5-byte header before the Avro body.  Without a registry, bodies pass unchanged."""

    def __init__(self, client: SchemaRegistry | None):
        self.client = client
        self._headers: dict[str, bytes] = {}

    def schema_id(self, topic: str, record: str) -> int:
        """The id of qmon's schema of ``record`` under ``topic``'s value subject, registered if it is not a
        version of the subject yet."""
        if self.client is None:
            raise ValueError("no schema registry: qmon's records are written without an id")
        subject, schema = value_subject(topic), schema_text(record)
        found = self.client.lookup(subject, schema)
        return found if found is not None else self.client.register(subject, schema)

    def frame(self, topic: str, record: str, body: bytes) -> bytes:
        """``body`` (plain Avro of qmon's ``record``) as written to ``topic``."""
        if self.client is None:
            return body
        if topic not in self._headers:
            self._headers[topic] = header(self.schema_id(topic, record))
        return self._headers[topic] + body
