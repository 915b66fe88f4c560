"""Avro codecs for Python clients: plain and Confluent wire format, every schema parses."""

from __future__ import annotations

import pytest

from qmon.connectors import avro
from qmon.core import topics


def activity(**kw):
    rec = {
        "event_id": "e1",
        "qmgr": "QM1",
        "queue": "Q",
        "op": "PUT",
        "ts": 1_000,
        "depth_after": None,
        "msg_bytes": 100,
        "structure": None,
        "reason": None,
    }
    rec.update(kw)
    return rec


def test_every_topic_has_a_schema():
    for name in set(topics.RECORD_OF.values()) | {"JournalStatus"}:
        avro.parsed_schema(name)


def test_plain_and_confluent_round_trip():
    plain = avro.encode("QueueActivity", activity())
    framed = avro.encode("QueueActivity", activity(), schema_id=42)
    assert framed[:5] == b"\x00\x00\x00\x00\x2a" and framed[5:] == plain
    for data in (plain, framed):
        rec = avro.decode("QueueActivity", data)
        assert rec["queue"] == "Q" and avro.to_jsonable(rec)["ts"] == 1_000


@pytest.mark.parametrize("data", [b"", b"\x07not an avro record", b"\x02e\x06QM1"])
def test_bad_bytes_raise(data):
    with pytest.raises(avro.AvroDecodeError):
        avro.decode("QueueActivity", data)


def test_physical_topic_names():
    assert topics.physical(topics.DLQ) == "qmon.dlq"
    assert topics.physical(topics.DLQ, "test1") == "test1.dlq"
    assert topics.physical(topics.PERFORMANCE, "t") == "t.events.performance"


# 4,004 / 4,007 / 65,514 ms come back one millisecond early through float seconds (test_timeconv.py).
@pytest.mark.parametrize("ms", [0, 1_001, 4_004, 4_007, 65_514, 1_767_225_604_007, 253_402_300_799_999])
def test_timestamps_survive_decode_and_json_exactly(ms):
    rec = avro.decode("QueueActivity", avro.encode("QueueActivity", activity(ts=ms)))
    assert avro.to_jsonable(rec)["ts"] == ms
    dead = {
        "event_id": "d1",
        "reason": 65537,
        "reason_name": "QMON_UNDECODABLE",
        "dest_topic": "qmon.activity",
        "format": "QueueActivity",
        "put_appl_name": "qmon",
        "put_time": ms,
        "partition": 0,
        "offset": 1,
        "error": "e",
        "key": None,
        "value": b"\x00",
    }
    out = avro.to_jsonable(avro.decode("DeadLetter", avro.encode("DeadLetter", dead)))
    assert out["put_time"] == ms and out["value"] == "\x00"


def test_nested_timestamps_are_converted_exactly():
    import datetime as dt

    at = dt.datetime(1970, 1, 1, 0, 0, 4, 7_000, tzinfo=dt.UTC)
    assert avro.to_jsonable({"a": [at, {"b": at}], "c": 4_007}) == {"a": [4_007, {"b": 4_007}], "c": 4_007}
