"""The activity's routed columns are read from its Avro schema (``rows.ACTIVITY``); the routed row they are
part of is spelled out here, column by column.  A field added to ``avro/QueueActivity.avsc`` adds a routed
column: this test fails until the change is looked at (the operator reads an activity's columns one by one,
``streaming.operators``)."""

from __future__ import annotations

from pyspark.sql.types import LongType, StringType

from qmon.connectors.schema import field_names
from qmon.streaming import trace
from qmon.streaming.rows import ACTIVITY, ROUTED

ROUTED_SPELLED_OUT = [
    "unit:string",
    "unit_name:string",
    "bucket:int",
    "shard:int",
    "qsg:string",
    "kind:string",
    "qmgr:string",
    "event_id:string",
    "queue:string",
    "op:string",
    "ts:bigint",
    "depth_after:bigint",
    "msg_bytes:bigint",
    "structure:string",
    "reason:bigint",
    "payload:string",
    "reply:boolean",
    "rank:int",
    "src_topic:int",
    "src_partition:bigint",
    "src_offset:bigint",
    "clock:bigint",
    "out_topic:string",
    "out_key:string",
    "out_value:binary",
]


def test_the_routed_row_s_columns_in_order_and_typed():
    assert [f"{f.name}:{f.dataType.simpleString()}" for f in ROUTED.fields] == ROUTED_SPELLED_OUT
    assert all(f.nullable for f in ROUTED.fields)


def test_every_activity_field_is_a_routed_column_numbers_as_longs():
    assert [name for name, _ in ACTIVITY] == list(field_names("QueueActivity"))
    assert all(ROUTED[name].dataType == typ for name, typ in ACTIVITY)
    assert dict(ACTIVITY)["ts"] == LongType() and dict(ACTIVITY)["op"] == StringType()
    assert dict(ACTIVITY)["msg_bytes"] == LongType()  # an Avro int


def test_a_trace_call_s_fields_are_activity_fields_typed_as_routed():
    assert all(trace.FLAT[name].dataType == dict(ACTIVITY)[name] for name in trace.CALL_FIELDS)
