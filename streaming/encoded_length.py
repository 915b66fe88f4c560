"""The length of a record's Avro binary encoding, computed in SQL from its decoded columns.

Spark's ``from_avro`` reads a record from the front of a value and ignores any bytes after it, so random bytes
can decode into a record of garbage.  A record read whole is exactly as long as its encoding; this module
computes that length from the decoded columns (``encoded_length``), so a record is decoded once and never
encoded again to be measured.  The sizes are those of the Avro specification's binary encoding: a long or
int as a zig-zag varint, a string or bytes as its length then its bytes, a union as its branch's index then
the value, an array or map as one block (its count, its items, the closing 0), as every Avro writer writes
them.  A schema with a type whose length cannot be told from its decoded column (a decimal, a recursive
record) has no length here (``None``): its records are not checked.
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

#: the largest value of a varint of k bytes, for k = 1..8: 2^(7k) - 1 (a value needing 9 bytes or more is
#: below 2^63; a negative one, read as unsigned, needs 10)
_VARINT_LIMITS = [1 << (7 * k) for k in range(1, 9)]


class _NoLength(Exception):
    """A type whose encoded length cannot be computed from its decoded column."""


def varint_length(n: Column) -> Column:
    """The bytes of the zig-zag varint of the long ``n`` (an int is widened: its zig-zag value is the same)."""
    z = F.shiftleft(n.cast("long"), 1).bitwiseXOR(F.shiftright(n.cast("long"), 63))
    out = F.when(z < 0, F.lit(10))
    for k, limit in enumerate(_VARINT_LIMITS, start=1):
        out = out.when(z < F.lit(limit), F.lit(k))
    return out.otherwise(F.lit(9))


def _sized(length: Column) -> Column:
    """A string's or bytes' encoding: its length as a varint, then its bytes."""
    return varint_length(length) + length


class _Measure:
    """The length of a decoded value of a schema; ``names``: the named types declared so far, ``active``: the
    records being measured (a reference to one of them is a recursive type)."""

    def __init__(self) -> None:
        self.names: dict[str, Any] = {}
        self.active: set[int] = set()

    def _sum(self, values: Column, item: Any) -> Column:
        return F.aggregate(
            F.transform(values, lambda x: self.length(x, item)), F.lit(0).cast("long"), lambda a, b: a + b
        )

    @staticmethod
    def _block(count: Column, items: Column) -> Column:
        """An array's or map's encoding as one block: the count, the items and the closing 0 (only the 0 when empty)."""
        return F.when(count == 0, F.lit(1)).otherwise(varint_length(count) + items + F.lit(1))

    def length(self, col: Column, schema: Any) -> Column:
        if isinstance(schema, str):
            # a named type declared earlier in the schema, by its full name or its own (a namespace is inherited)
            named = self.names.get(schema) or self.names.get(schema.rsplit(".", 1)[-1])
            if named is not None:
                if id(named) in self.active:
                    raise _NoLength("a recursive type")
                return self.length(col, named)
            schema = {"type": schema}
        if isinstance(schema, list):
            return self._union(col, schema)
        kind, logical = schema["type"], schema.get("logicalType")
        if isinstance(kind, (dict, list)):  # {"type": {...}}: the type itself
            return self.length(col, kind)
        if schema.get("name") and kind in ("record", "enum", "fixed"):
            name, space = schema["name"], schema.get("namespace")
            self.names[name] = self.names[name.rsplit(".", 1)[-1]] = schema
            if space:
                self.names[f"{space}.{name}"] = schema
        if logical == "decimal" or logical == "duration":
            raise _NoLength(f"a {logical}")
        if kind == "null":
            return F.lit(0)
        if kind == "boolean":
            return F.lit(1)
        if kind in ("int", "long"):
            if logical in ("timestamp-millis", "local-timestamp-millis"):
                return varint_length(F.unix_millis(col))
            if logical in ("timestamp-micros", "local-timestamp-micros"):
                return varint_length(F.unix_micros(col))
            if logical == "date":
                return varint_length(F.unix_date(col))
            if logical is not None and logical not in ("time-millis", "time-micros"):
                raise _NoLength(f"a {logical}")
            return varint_length(col)
        if kind == "float":
            return F.lit(4)
        if kind == "double":
            return F.lit(8)
        if kind == "string":
            return _sized(F.octet_length(col).cast("long"))
        if kind == "bytes":
            return _sized(F.length(col).cast("long"))
        if kind == "fixed":
            return F.lit(int(schema["size"]))
        if kind == "enum":
            symbols = schema["symbols"]
            index = F.create_map(*[x for i, s in enumerate(symbols) for x in (F.lit(s), F.lit(i))])[col]
            return varint_length(index)
        if kind == "array":
            return self._block(F.size(col), self._sum(col, schema["items"]))
        if kind == "map":
            keys, values = F.map_keys(col), F.map_values(col)
            return self._block(F.size(col), self._sum(keys, "string") + self._sum(values, schema["values"]))
        if kind == "record":
            self.active.add(id(schema))
            total = F.lit(0).cast("long")
            for field in schema["fields"]:
                total = total + self.length(col.getField(field["name"]), field["type"])
            self.active.discard(id(schema))
            return total
        raise _NoLength(f"a type {kind!r}")

    def _union(self, col: Column, branches: list[Any]) -> Column:
        """A union: its branch's index, then the value.  Spark reads ``["null", X]`` (in either order) as a nullable X,
        and a union of more types as a struct of ``member0``, ``member1``, ... (the one set is the branch)."""
        others = [i for i, b in enumerate(branches) if b != "null"]
        nulls = [i for i, b in enumerate(branches) if b == "null"]
        if len(others) == 1:
            (i,) = others
            present = varint_length(F.lit(i)) + self.length(col, branches[i])
            if not nulls:
                return present
            return F.when(col.isNull(), varint_length(F.lit(nulls[0]))).otherwise(present)
        out = F.when(col.isNull(), varint_length(F.lit(nulls[0])) if nulls else F.lit(None))
        for member, i in enumerate(others):
            value = col.getField(f"member{member}")
            out = out.when(value.isNotNull(), varint_length(F.lit(i)) + self.length(value, branches[i]))
        return out


def encoded_length(col: Column, schema: str | dict[str, Any]) -> Column | None:
    """The length of the Avro encoding of the decoded record ``col`` (as ``from_avro`` decodes it with
    ``schema``, JSON text or parsed), or None when the schema has a type whose length cannot be told from its
    column."""
    parsed = json.loads(schema) if isinstance(schema, str) else schema
    try:
        return _Measure().length(col, parsed)
    except _NoLength:
        return None
