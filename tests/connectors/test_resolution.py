"""Avro schema resolution: which writers' schemas resolve into a reader's, the reasons when they do not, and
that fastavro decodes what ``resolve`` accepts."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest

from qmon.connectors import avro
from qmon.connectors.resolution import resolve
from qmon.connectors.schema import schema_text

QUEUE_ACTIVITY = schema_text("QueueActivity")


def record(name: str, *fields: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields), **extra}


def field(name: str, avro_type: Any, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": avro_type, **extra}


def activity(change: Any) -> dict[str, Any]:
    """QueueActivity's schema with ``change`` applied to its parsed JSON."""
    schema = json.loads(QUEUE_ACTIVITY)
    change(schema)
    return schema


def fields_of(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in schema["fields"]}


def round_trip(writer: Any, reader: Any, value: Any) -> Any:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(writer), value)
    buf.seek(0)
    return fastavro.schemaless_reader(buf, fastavro.parse_schema(writer), fastavro.parse_schema(reader))


def test_a_schema_resolves_into_itself():
    assert resolve(QUEUE_ACTIVITY, QUEUE_ACTIVITY).ok
    for name in ("Alert", "DeadLetter", "Snapshot", "PerformanceEvent", "ControlCommand"):
        assert resolve(schema_text(name), json.loads(schema_text(name))).ok, name


def test_a_field_added_with_a_default_and_an_optional_field_removed_resolve_both_ways():
    def evolve(s: dict[str, Any]) -> None:
        s["fields"] = [f for f in s["fields"] if f["name"] != "reason"]
        s["fields"].append(field("channel", "string", default="SYSTEM.DEF.SVRCONN"))

    newer = activity(evolve)
    assert resolve(newer, QUEUE_ACTIVITY).ok  # reason: the reader's default; channel: skipped
    assert resolve(QUEUE_ACTIVITY, newer).ok  # channel: the reader's default; reason: skipped
    value = {"event_id": "e", "qmgr": "QM1", "queue": "Q", "op": "PUT", "ts": 5, "depth_after": None}
    value |= {"msg_bytes": 3, "structure": None, "channel": "APP"}
    read = round_trip(newer, json.loads(QUEUE_ACTIVITY), value)
    assert avro.to_jsonable(read) == {k: v for k, v in value.items() if k != "channel"} | {"reason": None}


def test_a_required_field_the_writer_lacks_is_named():
    older = activity(lambda s: s.update(fields=[f for f in s["fields"] if f["name"] != "queue"]))
    result = resolve(older, QUEUE_ACTIVITY)
    assert not result.ok
    assert result.reason == "QueueActivity.queue: not in the writer's schema, and the reader's has no default for it"


def test_every_problem_is_reported_with_its_field():
    def break_it(s: dict[str, Any]) -> None:
        by_name = fields_of(s)
        by_name["op"]["type"]["symbols"] = ["PUT", "GET", "START", "BROWSE"]
        by_name["ts"]["type"] = "string"
        by_name["depth_after"]["type"] = ["null", "long", "string"]
        by_name["msg_bytes"] = field("msg_bytes", "int")  # the reader's ["null", "int"] takes it

    problems = resolve(activity(break_it), QUEUE_ACTIVITY).problems
    assert problems == (
        "QueueActivity.op: the writer's symbols BROWSE are not in the reader's enum Op, which has no default",
        "QueueActivity.ts: the writer's string cannot be read as long",
        "QueueActivity.depth_after: the writer's string is in none of the reader's union's branches",
    )


def test_an_enum_default_takes_the_writers_unknown_symbols():
    writer = {"type": "enum", "name": "Op", "symbols": ["PUT", "GET", "BROWSE"]}
    reader = {"type": "enum", "name": "Op", "symbols": ["PUT", "GET", "OTHER"], "default": "OTHER"}
    assert resolve(writer, reader).ok
    assert round_trip(writer, reader, "BROWSE") == "OTHER"
    assert not resolve(writer, {k: v for k, v in reader.items() if k != "default"}).ok


@pytest.mark.parametrize(
    ("writer", "reader", "value"),
    [
        ("int", "long", 7),
        ("int", "double", 7),
        ("long", "float", 7),
        ("float", "double", 1.5),
        ("string", "bytes", "ab"),
        ("bytes", "string", b"ab"),
        ({"type": "long", "logicalType": "timestamp-millis"}, "long", 5),
        ("int", ["null", "string", "long"], 7),  # the first branch it is promoted to
        (["null", "int"], ["null", "long"], 7),
        ({"type": "array", "items": "int"}, {"type": "array", "items": "long"}, [1, 2]),
        ({"type": "map", "values": "float"}, {"type": "map", "values": "double"}, {"a": 1.5}),
    ],
)
def test_promotions_resolve_and_fastavro_reads_them(writer: Any, reader: Any, value: Any):
    assert resolve(json.dumps(writer), json.dumps(reader)).ok
    round_trip(writer, reader, value)


@pytest.mark.parametrize(
    ("writer", "reader", "reason"),
    [
        ("long", "int", "int: the writer's long cannot be read as int"),
        ("string", "int", "int: the writer's string cannot be read as int"),
        (["null", "string"], "string", "string: the writer's union allows null, the reader's string does not"),
        (
            {"type": "fixed", "name": "F", "size": 4},
            {"type": "fixed", "name": "F", "size": 8},
            "F: the writer's fixed F has 4 bytes, the reader's 8",
        ),
        (
            {"type": "array", "items": "string"},
            {"type": "array", "items": "int"},
            "array[]: the writer's string cannot be read as int",
        ),
        (
            {"type": "map", "values": "long"},
            {"type": "map", "values": "int"},
            "map{}: the writer's long cannot be read as int",
        ),
        (
            record("Other", field("a", "int")),
            record("QueueActivity", field("a", "int")),
            "QueueActivity: the writer's record Other is not the reader's record QueueActivity",
        ),
    ],
)
def test_what_does_not_resolve_and_why(writer: Any, reader: Any, reason: str):
    assert resolve(json.dumps(writer), json.dumps(reader)).reason == reason


def test_names_match_unqualified_or_by_the_readers_aliases():
    reader = record("Activity", field("queue_name", "string", aliases=["queue"]), namespace="qmon.v2", aliases=["Old"])
    assert resolve(record("Activity", field("queue_name", "string"), namespace="elsewhere"), reader).ok
    assert resolve(record("Old", field("queue", "string")), reader).ok
    assert round_trip(record("Old", field("queue", "string")), reader, {"queue": "Q"}) == {"queue_name": "Q"}


def test_recursive_and_referenced_named_types():
    node = record(
        "Node",
        field("value", "int"),
        field("next", ["null", "Node"], default=None),
        field("kind", {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}),
        field("other_kind", "Kind"),
    )
    wider = json.loads(json.dumps(node))
    wider["fields"][0]["type"] = "long"
    assert resolve(node, wider).ok
    assert resolve(wider, node).reason == "Node.value: the writer's long cannot be read as int"
    value = {"value": 1, "next": {"value": 2, "next": None, "kind": "B", "other_kind": "A"}}
    value |= {"kind": "A", "other_kind": "B"}
    assert round_trip(node, wider, value)["next"]["kind"] == "B"


@pytest.mark.parametrize(
    "writer",
    ["not json", '{"type": "recrd", "name": "X"}', record("X", {"name": "a"}), record("X", field("a", "Missing"))],
)
def test_a_writers_schema_that_is_not_avro_is_the_reason(writer: Any):
    result = resolve(writer, QUEUE_ACTIVITY)
    assert not result.ok and result.reason.startswith("the writer's schema is not valid Avro: ")


def test_what_resolve_refuses_fastavro_cannot_read():
    older = activity(lambda s: s.update(fields=[f for f in s["fields"] if f["name"] != "queue"]))
    value = {"event_id": "e", "qmgr": "QM1", "op": "PUT", "ts": 5}
    with pytest.raises(Exception, match="queue"):
        round_trip(older, json.loads(QUEUE_ACTIVITY), value)
