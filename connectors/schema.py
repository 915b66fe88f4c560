"""qmon's Avro records as their schemas declare them: each schema's text, and its fields' names and types.

Schemas live in ``avro/*.avsc`` at the top of the checkout and are installed as package data (``qmon/avro``),
read with ``importlib.resources``.  A schema is the one declaration of its record's fields: the Spark job's
routed activity columns (``streaming.rows``), its checks that a decoded record has every required field
(``streaming.decode``) and the JSONL loader's activity fields (``connectors.jsonl``) are read from here.
Only ``json``, no Avro codec: light to import wherever a field list is needed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

SCHEMAS = resources.files("qmon") / "avro"


@dataclass(frozen=True)
class Field:
    """One field of a record, as its schema declares it."""

    name: str
    #: the Avro type of a value: a primitive's name ("string", "int", "long"), "enum", "array", "record",
    #: or the logical type when there is one ("timestamp-millis"); an optional field's type without its null
    type: str
    #: never null: the field's type is not a union with "null"
    required: bool


def schema_text(name: str) -> str:
    """The schema of record ``name`` as JSON text (what Spark's ``from_avro`` and ``to_avro`` take)."""
    path = SCHEMAS / f"{name}.avsc"
    if not path.is_file():
        raise FileNotFoundError(f"no Avro schema {name!r}: expected {path}")
    return path.read_text()


def _field(spec: dict[str, Any]) -> Field:
    avro_type = spec["type"]
    optional = isinstance(avro_type, list) and "null" in avro_type
    if isinstance(avro_type, list):  # a union: qmon's are null and one type
        (avro_type,) = [branch for branch in avro_type if branch != "null"]
    if isinstance(avro_type, dict):
        avro_type = avro_type.get("logicalType", avro_type["type"])
    return Field(spec["name"], avro_type, required=not optional)


@cache
def fields(record: str) -> tuple[Field, ...]:
    """The fields of record ``record``, in the schema's order (the order of the values in its Avro bytes)."""
    return tuple(_field(spec) for spec in json.loads(schema_text(record))["fields"])


def field_names(record: str) -> tuple[str, ...]:
    return tuple(f.name for f in fields(record))


def required_fields(record: str) -> tuple[str, ...]:
    """The fields of ``record`` that are never null, in the schema's order."""
    return tuple(f.name for f in fields(record) if f.required)
