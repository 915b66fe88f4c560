"""The records' fields as their Avro schemas declare them (``connectors.schema``), and the code that spells a
QueueActivity's fields itself, held to the schema: a field added to ``avro/QueueActivity.avsc`` and not to
the rules' ``Activity`` or to a record a producer makes fails here."""

from __future__ import annotations

import pytest

from qmon.app.simulator import Simulator
from qmon.connectors.jsonl import _ACTIVITY_REQUIRED
from qmon.connectors.schema import Field, field_names, fields, required_fields, schema_text
from qmon.core import pcf, topics
from qmon.core.records import Activity
from qmon.core.seed import start_records

T = 1_700_000_000_000


def test_a_field_s_type_is_its_value_s_type_without_the_null_of_an_optional_field():
    by_name = {f.name: f for f in fields("QueueActivity")}
    assert by_name["event_id"] == Field("event_id", "string", required=True)
    assert by_name["op"] == Field("op", "enum", required=True)
    assert by_name["ts"] == Field("ts", "timestamp-millis", required=True)
    assert by_name["depth_after"] == Field("depth_after", "long", required=False)
    assert by_name["msg_bytes"] == Field("msg_bytes", "int", required=False)
    receivers = next(f for f in fields("JournalStatus") if f.name == "receivers")
    assert receivers == Field("receivers", "array", required=True)


def test_the_required_fields_are_those_never_null_in_the_schema_s_order():
    assert required_fields("QueueActivity") == ("event_id", "qmgr", "queue", "op", "ts")
    assert required_fields("ControlCommand") == ("command_id", "ts", "qmgr", "text")
    assert "user" in field_names("ControlCommand")


def test_a_record_without_a_schema_is_named_with_the_file_expected():
    with pytest.raises(FileNotFoundError, match=r"no Avro schema 'Nothing': expected .*Nothing\.avsc"):
        schema_text("Nothing")


def test_the_rules_activity_has_the_schema_s_fields_in_its_order_then_where_it_came_from():
    # in order: the Spark operator makes ``Activity`` objects from its columns by position (``Activity._make``)
    names = field_names("QueueActivity")
    assert Activity._fields == (*names, "clock", "seq")


def test_the_jsonl_loader_needs_every_required_field_but_the_event_id_it_can_make_up():
    assert _ACTIVITY_REQUIRED == ("qmgr", "queue", "op", "ts")


def test_the_records_producers_make_carry_exactly_the_schema_s_fields():
    names = set(field_names("QueueActivity"))
    items = Simulator(seed=1, rate=100).take(500)
    simulated = [i.value for i in items if i.topic == topics.ACTIVITY and isinstance(i.value, dict)]
    seeded = start_records("QM1", [("PAY.IN", 3)], T)
    e = pcf.Encoder()
    traced = pcf.decode(e.trace("QM1", [e.call(pcf.XF_PUT, "PAY.IN", ts_ms=T, msg_length=10)])).activity
    for made in (simulated, seeded, traced):
        assert made and all(set(rec) == names for rec in made)
