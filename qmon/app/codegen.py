"""The Python declaration of a QueueActivity, generated from its Avro schema: ``qmon/core/queue_activity.py``.

``avro/QueueActivity.avsc`` is the one declaration of the record's fields; the rules' ``Activity`` (a typed
``NamedTuple``, re-exported by ``qmon.core.records``) is written from it, as protobuf's and Avro's code
generators write theirs: the schema's fields in its order, each typed from its Avro type and commented with
its ``doc``, then where the record came from (``clock``, ``seq``), with ``Activity.of`` (a record dict to an
``Activity``) and ``Activity.record`` (the reverse).  ``python -m qmon.app.docgen`` writes it with the
reference pages and ``--check`` reports it when it is out of date, as it does them.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from qmon.connectors.schema import schema_text

RECORD = "QueueActivity"
#: the generated module, in the package's source (``qmon/core/``, pure: it imports nothing of qmon's)
MODULE = Path(__file__).resolve().parents[1] / "core" / "queue_activity.py"

#: the Python type of a value of each Avro type (a logical type's by the logical type)
PYTHON_TYPE = {
    "string": "str",
    "enum": "str",
    "int": "int",
    "long": "int",
    "timestamp-millis": "int",
    "boolean": "bool",
    "float": "float",
    "double": "float",
    "bytes": "bytes",
}
#: what a comment adds to a field's doc for its type: an enum's symbols, a timestamp's unit
_TYPE_NOTE = {"timestamp-millis": "epoch ms"}

#: the fields after the schema's: where a record came from (name, Python type, default, comment)
ORIGIN = (
    ("clock", "int | None", "None", "arrival clock (broker append time); defaults to ts"),
    ("seq", "int", "0", "arrival order, for output ordering"),
)

LINE = 120


def _field(spec: dict[str, Any]) -> tuple[str, str, bool, str]:
    """(name, Python type, optional, comment) of one field of the schema."""
    name: str = spec["name"]
    avro_type: Any = spec["type"]
    optional = isinstance(avro_type, list)
    if optional:
        branches = [b for b in avro_type if b != "null"]
        if "null" not in avro_type or len(branches) != 1:
            raise ValueError(f"{RECORD}.{name}: a union other than null and one type: {avro_type}")
        (avro_type,) = branches
    kind: str = (avro_type.get("logicalType") or avro_type["type"]) if isinstance(avro_type, dict) else avro_type
    if kind not in PYTHON_TYPE:
        raise ValueError(f"{RECORD}.{name}: no Python type for Avro type {kind!r}")
    note = ", ".join(avro_type["symbols"]) if kind == "enum" else _TYPE_NOTE.get(kind, "")
    comment = "; ".join(part for part in (spec.get("doc", ""), note) if part)
    return name, PYTHON_TYPE[kind] + (" | None" if optional else ""), optional, comment


def _declare(name: str, type_: str, default: str | None, comment: str) -> list[str]:
    """A field's lines in the class: its comment after it, or above it when the line would be too long."""
    line = f"    {name}: {type_}" + (f" = {default}" if default is not None else "")
    if not comment:
        return [line]
    if len(line) + 3 + len(comment) <= LINE:
        return [f"{line}  # {comment}"]
    return [
        *textwrap.wrap(comment, LINE, initial_indent="    #: ", subsequent_indent="    #: ", break_on_hyphens=False),
        line,
    ]


def module() -> str:
    """The text of ``qmon/core/queue_activity.py`` as the schema gives it."""
    schema = json.loads(schema_text(RECORD))
    fields = [_field(spec) for spec in schema["fields"]]
    names = [name for name, _t, _o, _c in fields]
    for (a, _, a_optional, _), (b, _, b_optional, _) in zip(fields, fields[1:], strict=False):
        if a_optional and not b_optional:  # (a NamedTuple's field without a default cannot follow one with)
            raise ValueError(f"{RECORD}.{b}: a required field after an optional one ({a})")
    body = []
    for name, type_, optional, comment in fields:
        body.extend(_declare(name, type_, "None" if optional else None, comment))
    for name, type_, default, comment in ORIGIN:
        body.extend(_declare(name, type_, default, comment))
    of_args = [f'record["{n}"]' if not o else f'record.get("{n}")' for n, _t, o, _c in fields]
    of_args += [name for name, *_ in ORIGIN]
    items = [f'"{n}": self.{n}' for n in names]
    what = schema.get("doc", "").rstrip(".")
    doc = textwrap.fill(
        f"One validated {RECORD} record{f' ({what[:1].lower() + what[1:]})' if what else ''}, plus where it came "
        "from: what every rule takes (the queue monitor, the structure monitor, the pure reference).  The "
        "schema's fields come first, in its order (the Spark operator makes ``Activity`` objects from its "
        'columns by position)."""',
        LINE,
        initial_indent='    """',
        subsequent_indent="    ",
        break_on_hyphens=False,
    )
    listed = ", ".join(f'"{n}"' for n in names)
    record_fields = (
        f"RECORD_FIELDS = ({listed})"
        if len(f"RECORD_FIELDS = ({listed})") <= LINE
        else "RECORD_FIELDS = (\n" + "".join(f'    "{n}",\n' for n in names) + ")"
    )
    return f'''\
# Generated from avro/{RECORD}.avsc by `python -m qmon.app.docgen` (qmon/app/codegen.py): edit the schema,
# not this file.
"""{RECORD} (``avro/{RECORD}.avsc``) as the rules take it: ``Activity``.  Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

#: {RECORD}'s fields, in the schema's order (the order of the values in its Avro bytes)
{record_fields}


class Activity(NamedTuple):
{doc}

{chr(10).join(body)}

    @classmethod
    def of(cls, record: Mapping[str, Any], clock: int | None = None, seq: int = 0) -> Activity:
        """The ``Activity`` of a {RECORD} record (a dict of its fields by name; an optional field it lacks:
        None), arriving at ``clock`` (None: at its ``ts``) as the ``seq``-th record."""
        return cls(
{"".join(f"            {a},{chr(10)}" for a in of_args)}        )

    def record(self) -> dict[str, Any]:
        """The {RECORD} record, its fields by name (what ``qmon.connectors.avro.encode`` or a JSONL line
        takes): the schema's fields, without where the record came from."""
        return {{
{"".join(f"            {i},{chr(10)}" for i in items)}        }}
'''


def stale() -> list[Path]:
    """The generated modules that differ from what the schema gives now."""
    return [] if MODULE.exists() and MODULE.read_text() == module() else [MODULE]


def write() -> None:
    MODULE.write_text(module())
