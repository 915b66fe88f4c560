"""The decoding of framed records by their schema id, in Spark (a batch DataFrame shaped like the Kafka
source's, no Kafka, no registry: the plan is given): qmon's own schema, a writer's resolved into qmon's, the
dead letters of an id that does not resolve and of one the registry does not know, an id no plan holds (the
query's error names it), and the outputs' header."""

from __future__ import annotations

import datetime as dt
import io
import json
from typing import Any

import fastavro
import pytest

from qmon.connectors import avro
from qmon.connectors.schema import schema_text
from qmon.core import topics
from qmon.streaming.decode import decode_topic
from qmon.streaming.framing import framed
from qmon.streaming.writer_schemas import MISMATCH, NEW_ID, UNKNOWN, Dead, TopicPlan, Writer, new_ids

pytestmark = pytest.mark.spark

T = 1_767_225_604_007
RAW = "topic string, partition int, offset long, key binary, value binary, timestamp timestamp"
NAMES = topics.physical_map("p")


def schema(drop: str | None = None, **added: Any) -> str:
    s = json.loads(schema_text("QueueActivity"))
    s["fields"] = [f for f in s["fields"] if f["name"] != drop]
    s["fields"] += [{"name": n, "type": t, "default": d} for n, (t, d) in added.items()]
    return json.dumps(s)


EVOLVED = schema("reason", channel=("string", "SYSTEM.DEF.SVRCONN"))
HOP = {"type": "record", "name": "Hop", "fields": [{"name": "next", "type": ["null", "Hop"]}]}
RECURSIVE = schema(hops=(["null", HOP], None))
NO_QMGR = schema("qmgr")

PLAN = TopicPlan(
    "p.activity",
    "QueueActivity",
    own=frozenset({1}),
    writers={2: Writer(EVOLVED), 4: Writer(RECURSIVE, checked=False)},
    dead={
        3: Dead(MISMATCH, "schema id 3 does not resolve into qmon's QueueActivity: QueueActivity.qmgr: not ..."),
        9: Dead(UNKNOWN, "the schema registry at http://registry.test has no schema with id 9"),
    },
)


def record(**changed: Any) -> dict[str, Any]:
    rec = {
        "event_id": "e-1",
        "qmgr": "QM1",
        "queue": "PAYROLL.IN",
        "op": "PUT",
        "ts": T,
        "depth_after": 3,
        "msg_bytes": 512,
        "structure": None,
        "reason": 2053,
    }
    return rec | changed


def written(writer: str, rec: dict[str, Any], schema_id: int) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(json.loads(writer)), rec)
    return avro.header(schema_id) + buf.getvalue()


def decoded(spark: Any, values: list[bytes], plan: TopicPlan | None = PLAN) -> list[tuple[dict | None, Any, Any]]:
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    rows = [("p.activity", 0, n, b"k", v, now) for n, v in enumerate(values)]
    df = decode_topic(spark.createDataFrame(rows, RAW), topics.ACTIVITY, NAMES, plan)
    out = df.orderBy("offset").select("ra", "dlq_reason", "dlq_error").collect()
    return [(r.ra.asDict() if r.ra is not None else None, r.dlq_reason, r.dlq_error) for r in out]


def as_sent(rec: dict[str, Any] | None) -> dict[str, Any] | None:
    if rec is None:
        return None
    return rec | {"ts": round(rec["ts"].timestamp() * 1000)}


def test_framed_records_are_read_by_their_schema_id(spark):
    evolved = record(channel="APP.SVRCONN")
    values = [
        avro.encode("QueueActivity", record()),  # unframed: qmon's schema
        avro.encode("QueueActivity", record(event_id="e-2"), schema_id=1),  # qmon's own schema's id
        written(EVOLVED, evolved, 2),  # resolved: reason (removed) is null, channel (added) skipped
        written(EVOLVED, evolved, 2) + b"\x00",  # a byte left over after the writer's record
        written(EVOLVED, evolved, 2)[:-3],  # cut short
        written(NO_QMGR, record(), 3),
        avro.encode("QueueActivity", record(), schema_id=9),
        written(RECURSIVE, record(hops={"next": {"next": None}}), 4),
    ]
    got = decoded(spark, values)
    assert [as_sent(ra) for ra, _, _ in got[:3]] == [record(), record(event_id="e-2"), record(reason=None)]
    assert [reason for _, reason, _ in got[:3]] == [None, None, None]
    assert [(ra, reason) for ra, reason, _ in got[3:5]] == [(None, "QMON_UNDECODABLE"), (None, "QMON_UNDECODABLE")]
    assert got[5] == (None, MISMATCH, PLAN.dead[3].error)
    assert got[6] == (None, UNKNOWN, PLAN.dead[9].error)
    assert as_sent(got[7][0]) == record() and got[7][1] is None


def test_without_a_plan_the_header_is_skipped_and_qmons_schema_assumed(spark):
    values = [written(EVOLVED, record(channel="X"), 2), avro.encode("QueueActivity", record(), schema_id=9)]
    got = decoded(spark, values, None)
    assert as_sent(got[0][0]) != record(reason=None)  # read as qmon's own, the evolved record comes out wrong
    assert as_sent(got[1][0]) == record() and got[1][1] is None


def test_an_id_in_no_plan_fails_the_query_naming_it(spark):
    with pytest.raises(Exception) as caught:
        decoded(spark, [avro.encode("QueueActivity", record()), avro.encode("QueueActivity", record(), schema_id=77)])
    assert f"{NEW_ID}77 in a record of p.activity" in str(caught.value)
    assert new_ids(str(caught.value)) == {77}


def test_outputs_are_framed_with_their_topics_id(spark):
    df = spark.createDataFrame(
        [("p.dlq", b"\x02ab"), ("p.events.alerts", b"\x04"), ("p.elsewhere", b"\x06")], "topic string, value binary"
    )
    ids = {"p.dlq": 5, "p.events.alerts": 70_000}
    out = df.select(framed(df.value, df.topic, ids).alias("v")).collect()
    assert [bytes(r.v) for r in out] == [avro.header(5) + b"\x02ab", avro.header(70_000) + b"\x04", b"\x06"]
    assert [bytes(r.v) for r in df.select(framed(df.value, df.topic, {}).alias("v")).collect()] == [
        b"\x02ab",
        b"\x04",
        b"\x06",
    ]
