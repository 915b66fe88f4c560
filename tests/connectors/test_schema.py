"""The records' fields as their Avro schemas declare them (``connectors.schema``), and what QueueActivity's
fields become, held to the schema: the rules' ``Activity`` (generated from it: ``tests/app/test_codegen.py``),
which carries them in its order and gives back a record Avro takes, and the records producers make."""

from __future__ import annotations

import fastavro
import pytest

from qmon.app.simulator import Simulator
from qmon.connectors import avro
from qmon.connectors.avro import parsed_schema
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


def test_an_activity_s_record_round_trips_through_avro_with_the_schema():
    act = Activity("e1", "QM1", "PAY.IN", "GET", T, depth_after=3, msg_bytes=512, structure="MSGQ1", reason=2033)
    record = act.record()
    assert list(record) == list(field_names("QueueActivity"))  # the schema's fields, without clock and seq
    assert fastavro.validation.validate(record, parsed_schema("QueueActivity"), strict=True)
    decoded = avro.to_jsonable(avro.decode("QueueActivity", avro.encode("QueueActivity", record)))
    assert decoded == record
    assert Activity.of(decoded, clock=T + 5, seq=7) == act._replace(clock=T + 5, seq=7)
    # a record without its optional fields (a JSONL line, say): None
    assert Activity.of({"event_id": "s", "qmgr": "QM1", "queue": "Q", "op": "START", "ts": T}) == Activity(
        "s", "QM1", "Q", "START", T
    )
