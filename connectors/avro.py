"""Avro codecs for Python clients (fastavro), plain or in the Confluent wire format.

The schemas are read by ``connectors.schema``; the Spark job reads the same files for ``from_avro`` /
``to_avro``.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import logging
import struct
from functools import cache
from typing import Any

import fastavro

from qmon.connectors.schema import schema_text
from qmon.core.timeconv import to_ms

logger = logging.getLogger(__name__)

CONFLUENT_MAGIC = 0


class AvroDecodeError(ValueError):
    """Bytes that are not a record of the expected schema."""


@cache
def parsed_schema(name: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_text(name)))


def header(schema_id: int) -> bytes:
    """Confluent's 5-byte header: the magic byte 0 and the schema id (4 bytes, big-endian)."""
    return struct.pack(">bI", CONFLUENT_MAGIC, schema_id)


def encode(name: str, record: dict[str, Any], *, schema_id: int | None = None) -> bytes:
    """Plain Avro binary; with ``schema_id``, the Confluent wire format (magic byte + id)."""
    buf = io.BytesIO()
    if schema_id is not None:
        buf.write(header(schema_id))
    fastavro.schemaless_writer(buf, parsed_schema(name), record)
    return buf.getvalue()


@cache
def parsed_writer(text: str) -> Any:
    """A writer's schema (JSON text, as a schema registry gives it), parsed for fastavro."""
    return fastavro.parse_schema(json.loads(text))


def confluent_id(data: bytes) -> int | None:
    """The schema id in the Confluent header of ``data``, or None when it has none (as ``strip_confluent``)."""
    if len(data) > 5 and data[0] == CONFLUENT_MAGIC:
        return int(struct.unpack(">I", data[1:5])[0])
    return None


def strip_confluent(data: bytes) -> bytes:
    """Drop the 5-byte Confluent header when present (magic byte 0 followed by a schema id)."""
    if len(data) > 5 and data[0] == CONFLUENT_MAGIC:
        return data[5:]
    return data


def decode(name: str, data: bytes, *, writer: str | None = None) -> dict[str, Any]:
    """Decode plain or Confluent-framed Avro; raises AvroDecodeError when it is neither.

    ``writer``: the schema the bytes were written with (JSON text, say the registry's for the header's id),
    when not ``name``'s own: the record is read with Avro schema resolution into ``name``'s schema (fields
    the writer lacks take their defaults, fields ``name`` lacks are skipped; ``resolution.resolve`` says
    beforehand whether the two resolve)."""
    body = strip_confluent(data)
    buf = io.BytesIO(body)
    try:
        written = parsed_writer(writer) if writer is not None else parsed_schema(name)
        record = fastavro.schemaless_reader(buf, written, parsed_schema(name) if writer is not None else None)
    except Exception as exc:  # fastavro raises several types for bad input
        raise AvroDecodeError(f"not a {name} record: {exc}") from exc
    if buf.tell() != len(body):
        raise AvroDecodeError(f"not a {name} record: {len(body) - buf.tell()} bytes left over after decoding")
    return record  # type: ignore[return-value]


def to_jsonable(record: Any) -> Any:
    """Avro-decoded values as JSON-ready values (timestamps as epoch ms, bytes as latin-1 text)."""
    if isinstance(record, dict):
        return {k: to_jsonable(v) for k, v in record.items()}
    if isinstance(record, list):
        return [to_jsonable(v) for v in record]
    if isinstance(record, _dt.datetime):
        return to_ms(record)  # exact: through a float, 4007 ms could come out as 4006
    if isinstance(record, bytes):
        return record.decode("latin-1")
    return record
