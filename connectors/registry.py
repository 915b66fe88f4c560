"""A thin client of Confluent's Schema Registry REST API: a writer's schema by id, and registering a schema.

Confluent's wire format puts a schema id before each Avro body; the registry (Confluent's, or one that
serves its API, such as Apicurio Registry's ``/apis/ccompat/v7``) says which schema that id is.  Ids name
schemas for good, so each id is asked for once per process: the answer, or that the registry does not know
it, is kept.  Subjects follow Confluent's default TopicNameStrategy: a topic's values are ``<topic>-value``.

Only the standard library (``urllib``): confluent-kafka's own client needs extras qmon does not install.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from functools import cache
from typing import Any

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

#: Confluent's error codes (the ``error_code`` of an error's JSON body)
SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403


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

    def __init__(self, url: str, timeout: float = 10.0):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._schemas: dict[int, str | None] = {}  # None: the registry does not know that id
        self._lock = threading.Lock()
        #: the HTTP requests this client made (a cached id makes none)
        self.requests = 0

    def __repr__(self) -> str:
        return f"SchemaRegistry({self.url!r})"

    # ------------------------------------------------------------ HTTP

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Accept": CONTENT_TYPE + ", application/json", "Content-Type": CONTENT_TYPE},
        )
        self.requests += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as resp:
                text = resp.read().decode()
        except urllib.error.HTTPError as exc:
            raise self._error(method, path, exc) from exc
        except (urllib.error.URLError, OSError) as exc:  # refused, timed out, no such host
            reason = getattr(exc, "reason", exc)
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

    def _learn(self, schema_id: int, text: str) -> None:
        """Keep a schema the registry named by id in an answer (an id it said it did not know included)."""
        with self._lock:
            if self._schemas.get(schema_id) is None:
                self._schemas[schema_id] = text


@cache
def registry(url: str) -> SchemaRegistry:
    """The one client of the registry at ``url`` in this process (so its ids are asked for once)."""
    return SchemaRegistry(url)
