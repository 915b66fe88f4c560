"""MQ activity trace through the real query (qmon replay): PCF messages raise exactly the events the same
calls as QueueActivity records raise; a message that is not all readable is a dead letter (QMON_BAD_PCF,
with the byte offset) and its readable calls are kept."""

from __future__ import annotations

import base64

import pytest

from qmon.core import pcf
from qmon.core.config import Config

pytestmark = pytest.mark.spark

T = 1_700_000_000_000
SETUP = [
    {"ts": T - 10, "qmgr": "QM1", "command": "ALTER QMGR PERFMEV(ENABLED)"},
    {"ts": T - 10, "qmgr": "QM1", "command": "ALTER QLOCAL(PAY.IN) QSVCIEV(HIGH) QSVCINT(1000)"},
]
# put, put, a get 3 s later (QSVCINT_HIGH), a get within the interval (QSVCINT_OK)
CALLS = [("PUT", 0), ("PUT", 100), ("GET", 3_100), ("GET", 3_200)]


def trace_line(calls, offset, order="<"):
    e = pcf.Encoder(order=order)
    groups = [
        e.call(pcf.XF_PUT if op == "PUT" else pcf.XF_GET, "PAY.IN", ts_ms=T + dt, msg_length=100) for op, dt in calls
    ]
    return {"mq_trace": base64.b64encode(e.trace("QM1", groups)).decode(), "partition": 0, "offset": offset}


def events(out):
    return [
        (r["type"], r["queue"], r["ts"], r.get("service_time_ms"))
        for r in out
        if r["topic"] == "qmon.events.performance"
    ]


def test_trace_messages_raise_the_events_the_same_activity_raises(replay_factory):
    as_activity = [
        {"event_id": f"a{i}", "qmgr": "QM1", "queue": "PAY.IN", "op": op, "ts": T + dt, "msg_bytes": 100}
        for i, (op, dt) in enumerate(CALLS)
    ]
    expected = events(replay_factory(SETUP + as_activity))
    assert [e[0] for e in expected] == ["QSVCINT_HIGH", "QSVCINT_OK"]
    # two messages (two intervals of one connection), one of them big-endian
    traced = replay_factory(SETUP + [trace_line(CALLS[:2], 5), trace_line(CALLS[2:], 6, order=">")])
    assert events(traced) == expected
    assert not [r for r in traced if r["topic"] == "qmon.dlq"]
    again = replay_factory(SETUP + [trace_line(CALLS[:2], 5), trace_line(CALLS[2:], 6, order=">")])
    assert [r["event_id"] for r in again] == [r["event_id"] for r in traced]  # ids from the coordinates


def test_a_truncated_message_is_a_dead_letter_and_its_readable_calls_count(replay_factory):
    line = trace_line(CALLS, 9)
    body = base64.b64decode(line["mq_trace"])
    line["mq_trace"] = base64.b64encode(body[:-30]).decode()  # the last get cut short
    out = replay_factory(SETUP + [line, {"mq_trace": base64.b64encode(b"not pcf").decode()}])
    dead = sorted((r for r in out if r["topic"] == "qmon.dlq"), key=lambda d: d["error"].startswith("at byte 0"))
    assert [d["reason_name"] for d in dead] == ["QMON_BAD_PCF", "QMON_BAD_PCF"]
    assert dead[0]["error"].startswith("at byte ") and "3 calls before it were kept" in dead[0]["error"]
    assert base64.b64decode(dead[0]["value"]) == body[:-30]  # the whole message, untouched
    assert "not an activity trace message" in dead[1]["error"]
    assert [e[0] for e in events(out)] == ["QSVCINT_HIGH"]  # the first get, from the readable calls


def test_the_configured_character_set_and_time_zone(replay_factory):
    e = pcf.Encoder(order=">", encoding="cp037")
    body = e.trace("QM1", [e.call(pcf.XF_PUT, "PAY.IN", ts_ms=T), e.call(pcf.XF_GET, "PAY.IN", ts_ms=T + 3_000)])
    config = Config.model_validate({"mq_trace": {"encoding": "cp037"}})
    out = replay_factory(SETUP + [{"mq_trace": base64.b64encode(body).decode()}], config)
    assert [e[0] for e in events(out)] == ["QSVCINT_HIGH"]
