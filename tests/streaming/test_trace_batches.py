"""The trace decoder's Arrow side (``streaming.trace.decode_batches``), as ``mapInArrow`` calls it, without a
query: one flat row per call with no copy of the message bytes, one dead-letter row per bad message with them."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from qmon.core import pcf
from qmon.streaming.trace import FLAT, decode_batches

T = 1_700_000_000_000


def batch(values: list[bytes]) -> pa.RecordBatch:
    n = len(values)
    when = dt.datetime(2023, 11, 14, tzinfo=dt.UTC)
    return pa.RecordBatch.from_pydict(
        {
            "topic": ["qmon.mq.trace"] * n,
            "partition": pa.array([1] * n, pa.int32()),
            "offset": pa.array(list(range(10, 10 + n)), pa.int64()),
            "key": pa.array([None] * n, pa.binary()),
            "value": pa.array(values, pa.binary()),
            "timestamp": pa.array([when] * n, pa.timestamp("us", tz="UTC")),
        }
    )


def test_calls_are_flat_rows_and_a_bad_message_is_one_dead_letter_row_with_its_bytes():
    e = pcf.Encoder()
    good = e.trace(
        "QM1", [e.call(pcf.XF_PUT, "PAY.IN", ts_ms=T, msg_length=7), e.call(pcf.XF_GET, "PAY.IN", ts_ms=T + 1)]
    )
    cut = good[:-8]
    out = list(decode_batches(iter([batch([good, cut, b"junk"])]), "utf-8", "UTC"))
    assert all(b.schema.names == FLAT.fieldNames() for b in out)
    rows = [r for b in out for r in b.to_pylist()]
    calls = [r for r in rows if r["error"] is None]
    dead = [r for r in rows if r["error"] is not None]
    assert [(r["offset"], r["op"], r["queue"], r["ts"], r["msg_bytes"]) for r in calls] == [
        (10, "PUT", "PAY.IN", T, 7),
        (10, "GET", "PAY.IN", T + 1, None),
        (11, "PUT", "PAY.IN", T, 7),  # the cut message's readable call counts
    ]
    assert all(r["value"] is None and r["partition"] == 1 for r in calls)
    assert calls[0]["event_id"] == pcf.decode(good, partition=1, offset=10).activity[0]["event_id"]
    assert [(r["offset"], r["value"]) for r in dead] == [(11, cut), (12, b"junk")]
    assert "at byte" in dead[0]["error"] and "1 calls before it were kept" in dead[0]["error"]
    assert "not an activity trace message" in dead[1]["error"]


def test_an_empty_batch_yields_nothing():
    assert list(decode_batches(iter([batch([])]), "utf-8", "UTC")) == []
