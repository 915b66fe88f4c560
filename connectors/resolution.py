"""Avro schema resolution: can data written with one schema (the writer's) be read with another (the reader's)?

The rules are the Avro specification's ("Schema Resolution"): records match by name (or a reader's alias)
and their fields by name (or a reader field's alias); a reader field the writer lacks needs a default; a
writer field the reader lacks is skipped; int, long and float are promoted to the wider numbers, string and
bytes to each other; enums match by name, and a writer's symbol the reader lacks needs the reader's enum
default; arrays, maps and fixed resolve through their items, values and size; a union resolves branch by
branch.  Logical types are read through their underlying types.

The check is static, as Confluent's and Avro's compatibility checks are: a writer's union branch or enum
symbol that the reader cannot take makes the pair unresolvable, even though only the records that use it
would fail to decode.  ``resolve`` answers with every problem found, in words fit for a dead letter's reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import fastavro

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
NAMED = frozenset({"record", "error", "enum", "fixed"})
#: what a writer's type may be read as, besides itself
PROMOTIONS = {
    "int": frozenset({"long", "float", "double"}),
    "long": frozenset({"float", "double"}),
    "float": frozenset({"double"}),
    "string": frozenset({"bytes"}),
    "bytes": frozenset({"string"}),
}


@dataclass(frozen=True)
class Resolution:
    """Whether a writer's schema resolves into a reader's, and if not, why."""

    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def reason(self) -> str:
        """The problems in one line (empty when the schemas resolve)."""
        return "; ".join(self.problems)


class _Side:
    """One schema, parsed by fastavro: its named types by full name."""

    def __init__(self, schema: Any):
        self.named: dict[str, Any] = {}
        self.root = fastavro.parse_schema(schema, named_schemas=self.named)

    def deref(self, node: Any) -> Any:
        """A schema node as its type: a reference to a named type as that type's definition, a primitive
        (with or without a logical type) as its name, ``{"type": X}`` as X."""
        if isinstance(node, str):
            return node if node in PRIMITIVES else self.deref(self.named[node])
        if isinstance(node, dict) and node.get("type") not in NAMED | {"array", "map"}:
            return self.deref(node["type"])
        return node


def _kind(node: Any) -> str:
    if isinstance(node, list):
        return "union"
    if isinstance(node, str):
        return node
    return "record" if node["type"] == "error" else str(node["type"])


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _describe(node: Any) -> str:
    kind = _kind(node)
    if kind in NAMED:
        return f"{kind} {_short(node['name'])}"
    if kind == "union":
        return "union"
    return kind


def _names_match(writer: dict[str, Any], reader: dict[str, Any]) -> bool:
    names = {_short(reader["name"])} | {_short(a) for a in reader.get("aliases", ())}
    return _short(writer["name"]) in names


def _matches(writer: Any, reader: Any) -> bool:
    """The specification's 'match' of two non-union schemas: the same kind (and name), or a promotion."""
    w, r = _kind(writer), _kind(reader)
    if w != r:
        return r in PROMOTIONS.get(w, frozenset())
    return w not in NAMED or _names_match(writer, reader)


class _Resolver:
    def __init__(self, writer: _Side, reader: _Side):
        self.writer, self.reader = writer, reader
        self.seen: set[tuple[str, str]] = set()  # record pairs being checked (recursive types)

    def problems(self, w: Any, r: Any, path: str) -> list[str]:
        w, r = self.writer.deref(w), self.reader.deref(r)
        wk, rk = _kind(w), _kind(r)
        if wk == "union":
            found: list[str] = []
            for branch in (self.writer.deref(b) for b in w):
                if rk == "union":
                    target = self._branch(branch, r)
                    if target is None:
                        found.append(
                            f"{path}: the writer's {_describe(branch)} is in none of the reader's union's branches"
                        )
                    else:
                        found.extend(self.problems(branch, target, path))
                elif not _matches(branch, r):
                    found.append(
                        f"{path}: the writer's union allows {_describe(branch)}, the reader's {_describe(r)} does not"
                    )
                else:
                    found.extend(self.problems(branch, r, path))
            return found
        if rk == "union":
            branch = self._branch(w, r)
            if branch is None:
                return [f"{path}: the writer's {_describe(w)} is in none of the reader's union's branches"]
            return self.problems(w, branch, path)
        if not _matches(w, r):
            if wk == rk:  # a named type of another name
                return [f"{path}: the writer's {_describe(w)} is not the reader's {_describe(r)}"]
            return [f"{path}: the writer's {_describe(w)} cannot be read as {_describe(r)}"]
        if wk != rk or wk in PRIMITIVES:
            return []
        if wk == "record":
            return self._record(w, r, path)
        if wk == "enum":
            missing = [s for s in w["symbols"] if s not in r["symbols"]]
            if missing and "default" not in r:
                symbols = ", ".join(missing)
                return [
                    f"{path}: the writer's symbols {symbols} are not in the reader's enum {_short(r['name'])}, "
                    "which has no default"
                ]
            return []
        if wk == "fixed":
            if w["size"] != r["size"]:
                return [
                    f"{path}: the writer's fixed {_short(w['name'])} has {w['size']} bytes, the reader's {r['size']}"
                ]
            return []
        if wk == "array":
            return self.problems(w["items"], r["items"], f"{path}[]")
        if wk == "map":
            return self.problems(w["values"], r["values"], f"{path}{{}}")
        return [f"{path}: {wk} is not an Avro type"]

    def _branch(self, w: Any, union: list[Any]) -> Any:
        """The reader's branch a writer's (non-union) value is read as: the first of the same kind, else the
        first it is promoted to."""
        branches = [self.reader.deref(b) for b in union]
        for branch in branches:
            if _kind(branch) == _kind(w) and _matches(w, branch):
                return branch
        for branch in branches:
            if _matches(w, branch):
                return branch
        return None

    def _record(self, w: dict[str, Any], r: dict[str, Any], path: str) -> list[str]:
        key = (w["name"], r["name"])
        if key in self.seen:
            return []
        self.seen.add(key)
        by_name = {f["name"]: f for f in w["fields"]}
        found: list[str] = []
        for field in r["fields"]:
            names = [field["name"], *field.get("aliases", ())]
            source = next((by_name[n] for n in names if n in by_name), None)
            where = f"{path}.{field['name']}"
            if source is not None:
                found.extend(self.problems(source["type"], field["type"], where))
            elif "default" not in field:
                found.append(f"{where}: not in the writer's schema, and the reader's has no default for it")
        self.seen.discard(key)
        return found


def _load(schema: Any, side: str) -> tuple[_Side | None, str]:
    try:
        loaded = json.loads(schema) if isinstance(schema, str) else schema
        return _Side(loaded), ""
    except Exception as exc:  # noqa: BLE001 - json's and fastavro's several exception types
        return None, f"the {side}'s schema is not valid Avro: {type(exc).__name__}: {exc}"


def resolve(writer: Any, reader: Any) -> Resolution:
    """Whether records written with ``writer`` can be read with ``reader`` (each an Avro schema as JSON text,
    or as its parsed JSON when that is a dict or a list: a ``str`` is always JSON text), with every reason
    when they cannot."""
    w, w_error = _load(writer, "writer")
    r, r_error = _load(reader, "reader")
    if w is None or r is None:
        return Resolution(tuple(e for e in (w_error, r_error) if e))
    root = r.deref(r.root)
    path = _short(root["name"]) if isinstance(root, dict) and "name" in root else _describe(root)
    return Resolution(tuple(_Resolver(w, r).problems(w.root, r.root, path)))
