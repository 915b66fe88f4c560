"""``qmon replay`` through the real Spark query: service interval events, dead letters, replies,
and the operator's output equal to the pure module's over random streams."""

from __future__ import annotations

import base64
import json
import random

import pytest

from qmon.connectors import avro
from qmon.core import topics
from qmon.core.config import Config
from qmon.core.queues import MonitorSettings
from qmon.core.reference import run_reference
from tests.streams import random_stream

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000


def cmd(ts, text, qmgr="QM1", **kw):
    return {"ts": T0 + ts, "qmgr": qmgr, "command": text, **kw}


def act(ts, op, queue="MYQUEUE", qmgr="QM1", **kw):
    return {"ts": T0 + ts, "qmgr": qmgr, "queue": queue, "op": op, **kw}


SETUP = [
    cmd(0, "ALTER QMGR +\n  PERFMEV(ENABLED)"),
    cmd(0, "ALTER QLOCAL('MYQUEUE') +\n      QSVCINT(10000) +\n      QSVCIEV (HIGH)"),
]


def of(out, topic):
    return [r for r in out if r["topic"] == topic]


def test_service_interval_high_and_ok_events_and_perfmev_disabled(replay_factory):
    out = replay_factory(
        [
            *SETUP,
            act(1_000, "PUT"),  # timer starts at 1 s
            act(12_000, "GET"),  # 11 s > 10 s: High at G1; High -> OK enabled
            act(13_000, "PUT"),  # empty before: timer restarts
            act(23_000, "GET"),  # exactly 10 s: OK (equality is OK, never High); OK -> High enabled
            act(24_000, "PUT"),
            act(40_000, "PUT"),  # 16 s: High on a put
            cmd(41_000, "ALTER QMGR PERFMEV(DISABLED)"),
            act(42_000, "GET"),  # no events while PERFMEV is disabled
        ]
    )
    perf = of(out, topics.PERFORMANCE)
    assert [(p["type"], p["ts"] - T0, p["service_time_ms"]) for p in perf] == [
        ("QSVCINT_HIGH", 12_000, 11_000),
        ("QSVCINT_OK", 23_000, 10_000),
        ("QSVCINT_HIGH", 40_000, 16_000),
    ]
    assert [(p["msg_enq_count"], p["msg_deq_count"], p["high_q_depth"]) for p in perf] == [
        (1, 1, 1),
        (1, 1, 1),
        (2, 0, 2),
    ]
    assert all(p["reason"] == "MQRC_Q_SERVICE_INTERVAL_" + p["type"][8:] for p in perf)
    replies = of(out, topics.REPLIES)
    assert len(replies) == 3 and all(r["ok"] for r in replies)
    stalls = [(s["state"], s["ts"] - T0) for s in of(out, topics.ALERTS)]
    # one episode: the stall from 11 s; the get at 12 s empties the queue and starts the 30 s hold, but from
    # 24 s the queue goes unserved for more than QSVCINT again (34 s) before the hold ends: the same episode
    assert stalls == [("FIRING", 11_000)]


def test_stall_fires_from_the_timer_when_the_queue_goes_quiet(replay_factory):
    out = replay_factory(
        [
            *SETUP,
            act(1_000, "PUT"),
            act(2_000, "PUT", queue="OTHER"),
            act(30_000, "PUT", queue="OTHER"),  # only other queues move event time on
        ]
    )
    [fire] = of(out, topics.ALERTS)
    assert (fire["type"], fire["state"], fire["queue"], fire["ts"]) == (
        "QUEUE_STALLED",
        "FIRING",
        "MYQUEUE",
        T0 + 11_000,
    )
    assert "MYQUEUE" in fire["summary"] and fire["action"]


def test_bad_lines_become_dead_letters_and_commands_get_replies(replay_factory):
    out = replay_factory(
        [
            "this is not JSON",
            {"ts": T0, "qmgr": "QM1", "queue": "Q"},  # no op
            act(1, "PEEK"),  # unknown op
            act(2, "PUT", queue="Q" * 49),  # name too long
            act(3, "PUT", depth_after=-1),  # negative depth
            {"ts": T0, "hello": "world"},  # not a qmon record
            cmd(4, "ALTER QLOCAL(A) QSVCINTT(5)", command_id="bad-1"),  # invalid keyword
            cmd(5, "ALTER QLOCAL(A) QSVCINT(5)", command_id="good-1"),
            act(6, "PUT"),
        ]
    )
    dead = sorted(of(out, topics.DLQ), key=lambda d: d["offset"])
    assert [d["reason_name"] for d in dead] == [
        "QMON_INVALID_JSON",
        "QMON_MISSING_FIELD",
        "QMON_UNKNOWN_OP",
        "QMON_INVALID_FIELD",
        "QMON_INVALID_FIELD",
        "QMON_UNKNOWN_RECORD",
        "QMON_INVALID_COMMAND",
    ]
    assert [d["offset"] for d in dead] == [1, 2, 3, 4, 5, 6, 7]
    assert base64.b64decode(dead[0]["value"]) == b"this is not JSON"
    # the original Avro bytes of a record that reached the query are kept untouched
    assert avro.decode("QueueActivity", base64.b64decode(dead[3]["value"]))["queue"] == "Q" * 49
    assert all(d["put_appl_name"] == "qmon" and d["error"] for d in dead)
    replies = {r["command_id"]: r for r in of(out, topics.REPLIES)}
    assert replies["bad-1"]["ok"] is False and "QSVCINTT" in replies["bad-1"]["message"]
    assert replies["good-1"]["ok"] is True


def _normalise(topic, record):
    data = avro.encode(topics.RECORD_OF[topic], record)
    return json.dumps({"topic": topic, **avro.to_jsonable(avro.decode(topics.RECORD_OF[topic], data))}, sort_keys=True)


def test_operator_equals_pure_module_over_random_streams(replay_factory):
    """Property: for random activity and command streams (40 queue managers, seeded), the Spark
    operator's outputs are exactly the pure module's, event_ids included."""
    rng = random.Random(20261122)
    records = []
    for i in range(40):
        records.extend(random_stream(rng, f"QM{i:02d}", n=rng.randint(10, 80)))
    rng.shuffle(records)  # arrival order across queue managers is arbitrary ...
    records.sort(key=lambda r: r["qmgr"])  # ... but each queue manager's own order is kept
    config = Config.model_validate({"job": {"queue_shards": 3}})
    out = replay_factory(records, config)
    got = sorted(
        json.dumps({k: v for k, v in r.items()}, sort_keys=True)
        for r in out
        if r["topic"] in (topics.PERFORMANCE, topics.ALERTS, topics.REPLIES, topics.NOTIFY)
    )
    final_clock = max(r["ts"] for r in records)
    want = sorted(
        _normalise(e.topic, e.record) for e in run_reference(records, MonitorSettings(), final_clock=final_clock)
    )
    # command ids in replay default to the line; the generator gives every command one
    assert len(got) == len(want) and got == want
    assert sum(1 for r in out if r["topic"] == topics.PERFORMANCE) > 20  # the streams do exercise the rules
    assert sum(1 for r in out if r["topic"] == topics.NOTIFY) > 10


def test_interest_registration_and_work_available(replay_factory):
    """Interest through replay: generic and exact registration, refusal, work at registration, deregister."""
    out = replay_factory(
        [
            act(1_000, "PUT", queue="1PAYTRAN", qmgr="PLEX1"),
            cmd(2_000, "REGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSA)", qmgr="PLEX1", command_id="r1"),
            cmd(2_000, "REGISTER INTEREST QUEUE(1PAY*) CLIENT(IMSB)", qmgr="PLEX1", command_id="r2"),
            cmd(2_000, "REGISTER INTEREST QUEUE(2PAYTRAN) CLIENT(IMSA)", qmgr="PLEX1", command_id="r3"),
            act(3_000, "GET", queue="1PAYTRAN", qmgr="PLEX1"),
            act(4_000, "PUT", queue="1PAYTRAN", qmgr="PLEX1"),
            act(4_500, "PUT", queue="1PAYNEW", qmgr="PLEX1"),
            cmd(5_000, "DEREGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSA)", qmgr="PLEX1", command_id="d1"),
            act(6_000, "GET", queue="1PAYTRAN", qmgr="PLEX1"),
            act(7_000, "PUT", queue="1PAYTRAN", qmgr="PLEX1"),
        ],
        Config.model_validate({"job": {"queue_shards": 3}}),
    )
    notes = [(n["client"], n["queue"], n["ts"] - T0) for n in of(out, topics.NOTIFY)]
    assert sorted(notes) == sorted(
        [
            ("IMSA", "1PAYTRAN", 2_000),
            ("IMSB", "1PAYTRAN", 2_000),  # work already there at registration
            ("IMSA", "1PAYTRAN", 4_000),
            ("IMSB", "1PAYTRAN", 4_000),  # empty -> non-empty
            ("IMSB", "1PAYNEW", 4_500),  # generic: a queue first seen later
            ("IMSB", "1PAYTRAN", 7_000),
        ]
    )  # IMSA deregistered
    replies = {r["command_id"]: r for r in of(out, topics.REPLIES)}
    assert replies["r1"]["ok"] and replies["r2"]["ok"] and replies["d1"]["ok"]
    assert replies["r3"]["ok"] is False and "staging" in replies["r3"]["message"]


def test_a_queue_first_seen_non_empty_raises_high_and_stalls(replay_factory):
    """qmon starts against a running queue manager; the queue already holds messages."""
    out = replay_factory(
        [
            *SETUP,
            act(1_000, "PUT", depth_after=4),  # 3 were there before: the service timer runs from 1 s
            act(15_000, "PUT", depth_after=5),  # 14 s > 10 s: High on a put
            act(40_000, "PUT", queue="OTHER"),  # event time moves on: the dead consumer stalls
        ]
    )
    assert [(p["type"], p["ts"] - T0) for p in of(out, topics.PERFORMANCE)] == [("QSVCINT_HIGH", 15_000)]
    assert [(a["type"], a["state"], a["ts"] - T0) for a in of(out, topics.ALERTS)] == [
        ("QUEUE_STALLED", "FIRING", 11_000)
    ]


def test_a_slow_consumer_is_one_stall_episode(replay_factory):
    """Gets every 15 s on a 10 s service interval, then a fast consumer."""
    records = [*SETUP] + [act(1_000, "PUT", event_id=f"p{i}") for i in range(10)]
    records += [act(1_000 + 15_000 * k, "GET", event_id=f"g{k}") for k in range(1, 6)]
    records += [act(76_500 + 100 * k, "GET", event_id=f"fast{k}") for k in range(5)]  # served in time, emptied
    records += [act(120_000, "PUT", queue="OTHER")]  # event time moves past the 30 s hold
    out = replay_factory(records)
    assert [(a["type"], a["state"], a["ts"] - T0) for a in of(out, topics.ALERTS)] == [
        ("QUEUE_STALLED", "FIRING", 11_000),
        ("QUEUE_STALLED", "RESOLVED", 106_500),
    ]


def test_a_put_that_finds_the_queue_empty_restarts_the_timer_through_replay(replay_factory):
    out = replay_factory(
        [
            *SETUP,
            act(1_000, "PUT", depth_after=1),
            act(1_100, "PUT", depth_after=2),
            act(1_200, "PUT", depth_after=3),
            act(20_000, "PUT", depth_after=1),  # the gets that emptied it were not seen: the timer was OFF
            act(20_500, "GET", depth_after=0),
            act(21_000, "PUT", depth_after=1),
            act(32_000, "PUT", depth_after=2),  # 11 s on the timer restarted at 21 s
        ]
    )
    perf = of(out, topics.PERFORMANCE)
    assert [(p["type"], p["ts"] - T0, p["service_time_ms"]) for p in perf] == [("QSVCINT_HIGH", 32_000, 11_000)]


def _shared_workload(put_on, get_on, queue="PAY.IN"):
    """A producer on ``put_on``, a consumer on ``get_on`` (``tests/core/test_shared_queues.py``'s): service
    interval High and OK, depth high and low, two stalls raised by the clock and resolved, a RESET QSTATS."""
    ids = f"{put_on}-{get_on}"
    return [
        cmd(0, "ALTER QMGR PERFMEV(ENABLED)", put_on, command_id=f"{ids}-perfmev-1"),
        cmd(0, "ALTER QMGR PERFMEV(ENABLED)", get_on, command_id=f"{ids}-perfmev-2"),
        *[
            act(ts, op, queue, qmgr, event_id=f"{qmgr}-{ts}")
            for ts, op, qmgr in [
                (1_000, "PUT", put_on),
                (2_000, "PUT", put_on),
                (3_000, "PUT", put_on),
                (14_000, "GET", get_on),
                (15_000, "GET", get_on),
                (16_000, "PUT", put_on),
                (41_000, "GET", get_on),
                (42_000, "GET", get_on),
                (45_000, "PUT", put_on),
                (46_000, "GET", get_on),
            ]
        ],
        cmd(51_000, f"RESET QSTATS({queue})", get_on, command_id=f"{ids}-reset"),
    ]


def test_a_shared_queue_takes_puts_on_one_member_and_gets_on_another_as_one_queue_manager_would(replay_factory):
    """A queue-sharing group QSG1 of QM1 and QM2 shares PAY.*: puts on QM1 and gets on QM2 give, through Spark, the
    events QM9 (in no group) gives with its own PAY.IN, each naming the group and the member that raised it; the
    outputs are the pure reference's, event_ids included (the routing of a member's records, commands and ALTER
    QMGR to the group's shards over 3 of them); ORDERS, not shared, is two queues; QSGDISP(SHARED) for a queue the
    configuration does not share is refused."""
    config = Config.model_validate(
        {
            "job": {"queue_shards": 3},
            "monitor": {"stall_clear_hold": "5 seconds"},
            "qsgs": [{"name": "QSG1", "members": ["QM1", "QM2"], "shared_queues": ["PAY.*"]}],
            "queues": [
                {
                    "pattern": "PAY.*",
                    "qsvciev": "HIGH",
                    "qsvcint": 10_000,
                    "maxdepth": 10,
                    "qdepthhi": 30,
                    "qdepthlo": 10,
                    "qdphiev": "ENABLED",
                },
                {"pattern": "ORDERS", "qsvciev": "HIGH", "qsvcint": 10_000},
            ],
        }
    )
    records = [
        *_shared_workload("QM1", "QM2"),
        *_shared_workload("QM9", "QM9"),
        act(1_000, "PUT", "ORDERS", "QM1", event_id="o1"),
        act(12_000, "GET", "ORDERS", "QM2", event_id="o2"),  # QM2's ORDERS: no service time to measure
        act(13_000, "PUT", "ORDERS", "QM1", event_id="o3"),  # QM1's: 12 s, High
        cmd(14_000, "DEFINE QLOCAL(ORDERS) QSGDISP(SHARED)", "QM2", command_id="define-orders"),
        act(55_000, "PUT", "OTHER", "QM9", event_id="end"),  # event time moves on: every hold has ended
    ]
    out = replay_factory(records, config)
    kept = (topics.PERFORMANCE, topics.ALERTS, topics.REPLIES)
    got = sorted(json.dumps(r, sort_keys=True) for r in out if r["topic"] in kept)
    final_clock = max(r["ts"] for r in records)
    want = sorted(
        _normalise(e.topic, e.record)
        for e in run_reference(records, config.monitor_settings(), final_clock=final_clock)
        if e.topic in kept
    )
    assert got == want

    naming = {"event_id", "alert_id", "qmgr", "qsg", "summary", "action", "message", "command_id"}

    def events(qmgrs):
        return [r for r in out if r["topic"] in (topics.PERFORMANCE, topics.ALERTS) and r.get("queue") == "PAY.IN"
                and r["qmgr"] in qmgrs]  # fmt: skip

    shared, alone = events({"QM1", "QM2"}), events({"QM9"})
    assert [{k: v for k, v in r.items() if k not in naming} for r in shared] == [
        {k: v for k, v in r.items() if k not in naming} for r in alone
    ]
    assert len(shared) == 10 and {r["qsg"] for r in shared} == {"QSG1"} and {r["qsg"] for r in alone} == {None}
    assert [r["qmgr"] for r in shared] == ["QM1", "QM1", "QM2", "QM2", "QM2", "QM1", "QM1", "QM2", "QM2", "QM2"]
    orders = [(r["type"], r["qmgr"], r["qsg"]) for r in of(out, topics.PERFORMANCE) if r["queue"] == "ORDERS"]
    assert orders == [("QSVCINT_HIGH", "QM1", None)]
    replies = {r["command_id"]: r for r in of(out, topics.REPLIES)}
    assert replies["QM1-QM2-reset"]["qmgr"] == "QM2" and "MSGSIN(1) MSGSOUT(1)" in replies["QM1-QM2-reset"]["message"]
    assert replies["define-orders"]["ok"] is False and "shared_queues" in replies["define-orders"]["message"]
