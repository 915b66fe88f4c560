"""The rules' ``Activity`` is generated from ``avro/QueueActivity.avsc`` (``qmon.app.codegen``): the module in
the repository is what the schema gives, its fields are typed from their Avro types, and a schema the
generator cannot declare faithfully is refused, naming the field."""

from __future__ import annotations

import json
from typing import Any, get_type_hints

import pytest

from qmon.app import codegen
from qmon.connectors.schema import schema_text
from qmon.core.queue_activity import RECORD_FIELDS, Activity


def test_the_generated_module_is_what_the_schema_gives():
    assert not codegen.stale(), "out of date: regenerate with `python -m qmon.app.docgen` (or `make docs`)"
    assert codegen.module().startswith("# Generated from avro/QueueActivity.avsc by `python -m qmon.app.docgen`")


def test_each_field_is_typed_from_its_avro_type_and_only_the_optional_ones_have_a_default():
    assert get_type_hints(Activity) == {
        "event_id": str,
        "qmgr": str,
        "queue": str,
        "op": str,  # an enum: its symbol
        "ts": int,  # timestamp-millis: epoch ms
        "depth_after": int | None,
        "msg_bytes": int | None,
        "structure": str | None,
        "reason": int | None,
        "clock": int | None,
        "seq": int,
    }
    assert Activity._field_defaults == {
        "depth_after": None,
        "msg_bytes": None,
        "structure": None,
        "reason": None,
        "clock": None,
        "seq": 0,
    }
    assert RECORD_FIELDS == Activity._fields[: len(RECORD_FIELDS)]


def test_the_field_docs_are_the_comments():
    text = codegen.module()
    for spec in json.loads(schema_text("QueueActivity"))["fields"]:
        if "doc" in spec:
            assert f"  # {spec['doc']}" in text or f"#: {spec['doc']}" in text, spec["name"]
    assert "    op: str  # PUT, GET, START\n" in text


def test_a_comment_too_long_for_the_line_goes_above_its_field():
    lines = codegen._declare("structure", "str | None", "None", "word " * 40)
    assert lines[-1] == "    structure: str | None = None"
    assert all(line.startswith("    #: ") and len(line) <= codegen.LINE for line in lines[:-1])


def _with(monkeypatch: pytest.MonkeyPatch, change: Any) -> None:
    schema = json.loads(schema_text("QueueActivity"))
    change(schema["fields"])
    monkeypatch.setattr(codegen, "schema_text", lambda _name: json.dumps(schema))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda fs: fs.append({"name": "channel", "type": "string"}), r"channel: a required field after an optional"),
        (lambda fs: fs.append({"name": "tags", "type": ["null", "string", "int"]}), r"tags: a union other than"),
        (lambda fs: fs.insert(0, {"name": "tags", "type": {"type": "map", "values": "string"}}), r"tags: no Python"),
    ],
)
def test_a_schema_the_generator_cannot_declare_is_refused(monkeypatch: pytest.MonkeyPatch, change: Any, message: str):
    _with(monkeypatch, change)
    with pytest.raises(ValueError, match=message):
        codegen.module()


def test_a_new_optional_field_is_declared_and_carried_by_record(monkeypatch: pytest.MonkeyPatch):
    _with(monkeypatch, lambda fs: fs.append({"name": "channel", "type": ["null", "string"], "default": None}))
    text = codegen.module()
    assert "    channel: str | None = None\n    clock: int | None = None" in text
    assert '            record.get("channel"),\n            clock,' in text
    assert '            "channel": self.channel,\n' in text
    namespace: dict[str, Any] = {}
    exec(compile(text, "queue_activity.py", "exec"), namespace)  # the generated text is a module that runs
    made = namespace["Activity"](event_id="e", qmgr="QM1", queue="Q", op="PUT", ts=5, channel="APP")
    assert made.record()["channel"] == "APP" and list(made.record()) == [*RECORD_FIELDS, "channel"]
