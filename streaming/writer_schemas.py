"""The writers' schemas of the input topics, looked up in a schema registry when a query starts.

A record in Confluent's wire format names the schema it was written with by id.  For each input topic that
carries Avro, the plan holds every id of the topic's value subject (``<topic>-value``) and the ids this process
has met already (``new_ids``), each with what the query does with a record framed with it:

* ``own``: the id's schema is qmon's own record (the same Avro binary form): read as an unframed record is;
* ``writers``: another schema that resolves into qmon's record (a field added with a default, an optional
  field removed, ...): read with the writer's schema into qmon's (Avro schema resolution);
* ``dead``: an id the registry does not know (QMON_UNKNOWN_SCHEMA), or a schema that does not resolve or is
  not Avro (QMON_SCHEMA_MISMATCH): a dead letter, with the reason in words.

An id in no plan (registered after the query started) stops the query with ``NEW_ID``'s message; the job
(``streaming.job``) then looks it up too and starts the query again on the same checkpoint, which reads the
batch again.  Choosing is pure (``choose``); ``plan`` asks the registry.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from fastavro.schema import to_parsing_canonical_form

from qmon.connectors.registry import Framing, NotAvro, SchemaRegistry, UnknownSchemaId, value_subject
from qmon.connectors.resolution import resolve
from qmon.connectors.schema import schema_text
from qmon.core import topics

logger = logging.getLogger(__name__)

UNKNOWN = "QMON_UNKNOWN_SCHEMA"
MISMATCH = "QMON_SCHEMA_MISMATCH"

#: the start of the error a query raises for a record framed with an id in no plan (``F.raise_error``)
NEW_ID = "qmon: new schema id "
_NEW_ID = re.compile(re.escape(NEW_ID) + r"(\d+)")


class Registry(Protocol):
    """What a plan asks of a schema registry (``qmon.connectors.registry.SchemaRegistry``)."""

    url: str

    def subject_ids(self, subject: str) -> list[int]: ...

    def schema(self, schema_id: int) -> str: ...


@dataclass(frozen=True)
class Writer:
    """A writer's schema that resolves into qmon's record."""

    text: str
    #: whether a record's length can be checked by writing it again with this schema (not when the schema is
    #: recursive: Spark cannot turn a recursive schema into columns)
    checked: bool = True


@dataclass(frozen=True)
class Dead:
    """An id whose records are dead letters: the reason's name and the error in words."""

    reason: str
    error: str


Choice = Literal["own"] | Writer | Dead


@dataclass(frozen=True)
class TopicPlan:
    """What the query does with each schema id of one input topic's framed records."""

    topic: str  # physical name
    record: str  # qmon's record the topic carries
    own: frozenset[int] = frozenset()
    writers: dict[int, Writer] = field(default_factory=dict)
    dead: dict[int, Dead] = field(default_factory=dict)

    @property
    def ids(self) -> frozenset[int]:
        return self.own | self.writers.keys() | self.dead.keys()

    def describe(self) -> str:
        """The plan in one line, for the log."""
        parts = []
        if self.own:
            parts.append(f"qmon's own schema: ids {_ids(self.own)}")
        if self.writers:
            parts.append(f"read by resolution: ids {_ids(self.writers)}")
        for reason in (UNKNOWN, MISMATCH):
            dead = [i for i, d in self.dead.items() if d.reason == reason]
            if dead:
                parts.append(f"dead letters ({reason}): ids {_ids(dead)}")
        return f"{self.topic}: " + ("; ".join(parts) if parts else "no schema id registered")


def _ids(ids: Iterable[int]) -> str:
    return ", ".join(str(i) for i in sorted(ids))


def _recursive(schema: Any) -> bool:
    """Whether a named type of ``schema`` (parsed JSON) contains itself."""
    found = False

    def walk(node: Any, namespace: str, path: tuple[str, ...]) -> None:
        nonlocal found
        if found:
            return
        if isinstance(node, str):
            full = node if "." in node or not namespace else f"{namespace}.{node}"
            found = full in path or node in path
            return
        if isinstance(node, list):
            for branch in node:
                walk(branch, namespace, path)
            return
        if not isinstance(node, dict):
            return
        kind = node.get("type")
        if kind in ("record", "error", "enum", "fixed"):
            name = str(node["name"])
            space = node.get("namespace", namespace) if "." not in name else name.rsplit(".", 1)[0]
            full = name if "." in name else (f"{space}.{name}" if space else name)
            for f in node.get("fields", ()) if kind != "enum" else ():
                walk(f["type"], space, (*path, full))
        elif kind == "array":
            walk(node["items"], namespace, path)
        elif kind == "map":
            walk(node["values"], namespace, path)
        else:  # {"type": ...} around a type, a reference or a primitive
            walk(kind, namespace, path)

    walk(schema, "", ())
    return found


def choose(schema_id: int, writer: str, record: str) -> Choice:
    """What a record framed with ``schema_id``, written with ``writer`` (its schema's JSON text), is for a
    topic that carries qmon's ``record``."""
    reader = schema_text(record)
    try:
        parsed = json.loads(writer)
        if to_parsing_canonical_form(parsed) == to_parsing_canonical_form(json.loads(reader)):
            return "own"
    except Exception as exc:  # noqa: BLE001 - json's and fastavro's several exception types
        return Dead(MISMATCH, f"schema id {schema_id} is not valid Avro: {type(exc).__name__}: {exc}")
    resolution = resolve(writer, reader)
    if not resolution.ok:
        return Dead(MISMATCH, f"schema id {schema_id} does not resolve into qmon's {record}: {resolution.reason}")
    return Writer(writer, checked=not _recursive(parsed))


def plan_topic(registry: Registry, topic: str, record: str, ids: Iterable[int] = ()) -> TopicPlan:
    """The plan of ``topic`` (physical), which carries qmon's ``record``: every id of its value subject and
    ``ids``.  Raises the registry's ``RegistryError`` when it cannot answer (unreachable, an error of its own)."""
    own: set[int] = set()
    writers: dict[int, Writer] = {}
    dead: dict[int, Dead] = {}
    for schema_id in sorted({*registry.subject_ids(value_subject(topic)), *ids}):
        try:
            text = registry.schema(schema_id)
        except UnknownSchemaId as exc:
            dead[schema_id] = Dead(UNKNOWN, str(exc))
            continue
        except NotAvro as exc:
            dead[schema_id] = Dead(MISMATCH, str(exc))
            continue
        choice = choose(schema_id, text, record)
        if isinstance(choice, Writer):
            writers[schema_id] = choice
        elif isinstance(choice, Dead):
            dead[schema_id] = choice
        else:
            own.add(schema_id)
    return TopicPlan(topic, record, frozenset(own), writers, dead)


def plan(registry: Registry, prefix: str = "qmon", ids: Iterable[int] = ()) -> dict[str, TopicPlan]:
    """The plan of each input topic that carries Avro (by logical name), under ``prefix``."""
    ids = frozenset(ids)
    plans = {
        logical: plan_topic(registry, topics.physical(logical, prefix), topics.RECORD_OF[logical], ids)
        for logical in topics.INPUTS
    }
    for p in plans.values():
        logger.info("qmon job: schema registry %s: %s", registry.url, p.describe())
    return plans


def output_ids(registry: SchemaRegistry, prefix: str = "qmon") -> dict[str, int]:
    """The id of qmon's record on each topic the job writes (physical name -> id), registered under the topic's
    value subject.  Raises the registry's ``RegistryError`` when it cannot answer or refuses a schema (one
    incompatible with the subject's earlier versions under its compatibility rule)."""
    framing = Framing(registry)
    ids = {}
    for logical in (*topics.OUTPUTS, *topics.STATUS):
        topic = topics.physical(logical, prefix)
        ids[topic] = framing.schema_id(topic, topics.RECORD_OF[logical])
    return ids


def new_ids(text: str) -> set[int]:
    """The ids a failed query's error names as in no plan (``NEW_ID``), read from its message."""
    return {int(found) for found in _NEW_ID.findall(text)}
