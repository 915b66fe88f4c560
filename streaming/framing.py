"""Confluent's wire format in the query: a value framed as magic byte 0, a 4-byte schema id, then the Avro body.
On the way in, the body without its header and the schema id it names; on the way out, a value framed with its
topic's schema id."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from qmon.connectors import avro


def _framed(value: Column) -> Column:
    return (F.length(value) > 5) & (F.substring(value, 1, 1) == F.lit(b"\x00"))


def body(value: Column) -> Column:
    """The Avro body: the value without its Confluent header (magic byte 0 + 4-byte schema id)."""
    return F.when(_framed(value), F.substring(value, 6, 2_147_483_647)).otherwise(value)


def schema_id(value: Column) -> Column:
    """The schema id in the Confluent header of ``value`` (as ``body`` finds one), else null."""
    return F.when(_framed(value), F.conv(F.hex(F.substring(value, 2, 4)), 16, 10).cast("long"))


def framed(value: Column, topic: Column, ids: dict[str, int]) -> Column:
    """An output ``value`` in Confluent's wire format: the header of ``ids[topic]`` (ids by physical topic name)
    before it; a topic without an id keeps its value as it is."""
    if not ids:
        return value
    headers = F.create_map(*[x for t, i in sorted(ids.items()) for x in (F.lit(t), F.lit(avro.header(i)))])
    return F.concat(F.coalesce(headers[topic], F.lit(b"")), value)
