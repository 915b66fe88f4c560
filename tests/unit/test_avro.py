"""Avro codecs for Python clients: plain and Confluent wire format, every schema parses."""

from __future__ import annotations

import pytest

from connectors import avro
from qmon import topics


def activity(**kw):
    rec = {"event_id": "e1", "qmgr": "QM1", "queue": "Q", "op": "PUT", "ts": 1_000, "depth_after": None,
           "msg_bytes": 100, "structure": None, "reason": None}
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
