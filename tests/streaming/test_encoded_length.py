"""The length of a record's Avro encoding, computed in SQL from the columns ``from_avro`` decodes
(``streaming.encoded_length``), equals the length fastavro writes, for every Avro type qmon's and a writer's
schemas can hold, at the values where a varint or a block changes size; a type whose length cannot be told
from its column (a decimal, a recursive record) has none."""

from __future__ import annotations

import datetime as dt
import io
import json
import random
from typing import Any

import fastavro
import pytest

from qmon.connectors.schema import schema_text
from qmon.streaming.encoded_length import encoded_length

pytestmark = pytest.mark.spark

UTC = dt.UTC
#: longs at the edges of varint sizes (zig-zag doubles them), and the extremes
EDGES = [0, -1, 1, 63, -64, 64, -65, 8191, 8192, -8193, 2**31 - 1, -(2**31), 2**62, -(2**63), 2**63 - 1]
INT_EDGES = [v for v in EDGES if -(2**31) <= v < 2**31]

EVERY_TYPE = {
    "type": "record",
    "name": "Every",
    "namespace": "t",
    "fields": [
        {"name": "s", "type": "string"},
        {"name": "b", "type": "bytes"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "flag", "type": "boolean"},
        {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
        {"name": "e", "type": {"type": "enum", "name": "Op", "symbols": [f"S{i}" for i in range(70)]}},
        {"name": "e2", "type": "Op"},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "opt", "type": ["null", "long"]},
        {"name": "opt_last", "type": ["string", "null"]},
        {"name": "three", "type": ["null", "int", "string"]},
        {"name": "arr", "type": {"type": "array", "items": "string"}},
        {"name": "m", "type": {"type": "map", "values": "long"}},
        {
            "name": "inner",
            "type": {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": ["null", "t.Four"]}]},
        },
        {"name": "inners", "type": {"type": "array", "items": "Inner"}},
    ],
}


def value(rng: random.Random) -> dict[str, Any]:
    text = rng.choice(["", "a", "é", "日本", "x" * 63, "y" * 64, "z" * 200, "Ω" * 70])
    return {
        "s": text,
        "b": bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 63, 64, 300]))),
        "i": rng.choice(INT_EDGES),
        "l": rng.choice(EDGES),
        "f": rng.random(),
        "d": rng.random(),
        "flag": rng.random() < 0.5,
        "fx": b"abcd",
        "e": f"S{rng.randrange(70)}",
        "e2": "S0",
        "ts": dt.datetime.fromtimestamp(rng.choice([0, 1, 1_767_225_604.007, 253_402_300_799.999]), UTC),
        "us": dt.datetime.fromtimestamp(rng.choice([0, 1_767_225_604.000123]), UTC),
        "day": dt.date(1970, 1, 1) + dt.timedelta(days=rng.choice([0, 63, 64, 20_000])),
        "opt": rng.choice([None, *EDGES]),
        "opt_last": rng.choice([None, text]),
        "three": rng.choice([None, 5, -9000, "", "three"]),
        "arr": [text] * rng.choice([0, 1, 64]),
        "m": {f"k{i}": rng.choice(EDGES) for i in range(rng.choice([0, 2, 70]))},
        "inner": {"x": rng.choice([None, b"wxyz"])},
        "inners": [{"x": None}] * rng.choice([0, 3]),
    }


def written(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def lengths(spark: Any, schema: dict[str, Any], values: list[bytes]) -> list[tuple[int, int]]:
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    text = json.dumps(schema)
    df = spark.createDataFrame([(v,) for v in values], "value binary")
    df = df.select(F.length("value").alias("n"), from_avro("value", text, {"mode": "FAILFAST"}).alias("r"))
    length = encoded_length(F.col("r"), text)
    assert length is not None
    return [(row.n, row.got) for row in df.select("n", length.alias("got")).collect()]


def test_the_length_of_every_type_equals_the_written_length(spark):
    rng = random.Random(7)
    values = [written(EVERY_TYPE, value(rng)) for _ in range(300)]
    got = lengths(spark, EVERY_TYPE, values)
    assert [written_length for written_length, _ in got] == [n for _, n in got]


def test_the_length_of_qmons_input_records_equals_the_written_length(spark):
    rec = {"event_id": "e", "qmgr": "QM1", "queue": "Q", "op": "START", "ts": dt.datetime(2026, 1, 1, tzinfo=UTC)}
    activity = json.loads(schema_text("QueueActivity"))
    values = [
        written(activity, {**rec, "depth_after": d, "msg_bytes": m, "structure": s, "reason": r})
        for d, m, s, r in [(None, None, None, None), (2**40, 64, "APPLSTR1", 2033), (0, -1, "", -(2**31))]
    ]
    journal = json.loads(schema_text("JournalStatus"))
    status = {"event_id": "j", "qmgr": "QM1", "ts": rec["ts"], "library": "QMQM1", "attached": "AMQA000001"}
    journals = [written(journal, {**status, "size_kb": 10**9, "threshold_kb": 1, "receivers": r}) for r in ([], ["A"])]
    for schema, batch in ((activity, values), (journal, journals)):
        got = lengths(spark, schema, batch)
        assert [n for n, _ in got] == [m for _, m in got]


def test_a_type_whose_length_the_columns_do_not_tell_has_none():
    from pyspark.sql import functions as F

    decimal = {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}
    hop = {"type": "record", "name": "Hop", "fields": [{"name": "next", "type": ["null", "Hop"]}]}
    for field in (decimal, hop):
        schema = {"type": "record", "name": "R", "fields": [{"name": "x", "type": field}]}
        assert encoded_length(F.col("r"), schema) is None
