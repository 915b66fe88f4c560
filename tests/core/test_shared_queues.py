"""Shared queues of a queue-sharing group, through the pure reference: every member's puts, gets and commands
drive one service timer, one depth, one set of statistics and one stall alert, and the events name the group and
the member whose operation raised them."""

from __future__ import annotations

from typing import Any

import pytest

from qmon.core import topics
from qmon.core.config import Config
from qmon.core.mqsc import parse_command
from qmon.core.queues import QueueMonitor
from qmon.core.records import Activity
from qmon.core.reference import run_reference

T0 = 1_700_000_000_000
QSGS = [{"name": "QSG1", "members": ["QM1", "QM2"], "shared_queues": ["PAY.*"]}]


def settings(qsgs: list[dict[str, Any]] = QSGS, **monitor: Any) -> Any:
    return Config.model_validate(
        {
            "qsgs": qsgs,
            "monitor": {"stall_clear_hold": "5 seconds", "snapshot_interval": "1 second", **monitor},
            "queues": [
                {
                    "pattern": "PAY.*",
                    "qsvciev": "HIGH",
                    "qsvcint": 10_000,
                    "maxdepth": 10,
                    "qdepthhi": 30,
                    "qdepthlo": 10,
                    "qdphiev": "ENABLED",
                }
            ],
        }
    ).monitor_settings()


def cmd(ts: int, text: str, qmgr: str, command_id: str | None = None) -> dict[str, Any]:
    return {"ts": T0 + ts, "qmgr": qmgr, "command": text, "command_id": command_id or f"{qmgr}@{ts}"}


def act(ts: int, op: str, qmgr: str, queue: str = "PAY.IN", **kw: Any) -> dict[str, Any]:
    return {"ts": T0 + ts, "qmgr": qmgr, "queue": queue, "op": op, "event_id": f"{qmgr}-{ts}", **kw}


def workload(put_on: str, get_on: str) -> list[dict[str, Any]]:
    """A producer on ``put_on`` and a consumer on ``get_on``: service interval High and OK, depth high and low, a
    stall raised by the clock and resolved once served in time (hold 5 s), twice, and the statistics of a RESET
    QSTATS."""
    return [
        cmd(0, "ALTER QMGR PERFMEV(ENABLED)", put_on, "perfmev-1"),
        cmd(0, "ALTER QMGR PERFMEV(ENABLED)", get_on, "perfmev-2"),
        act(1_000, "PUT", put_on),  # the service timer starts
        act(2_000, "PUT", put_on),
        act(3_000, "PUT", put_on),  # depth 3: QDEPTHHI (30 % of 10); at 11 s the queue stalls
        act(14_000, "GET", get_on),  # 13 s > 10 s: High; OK enabled
        act(15_000, "GET", get_on),  # 1 s: OK; depth 1: QDEPTHLO (10 %); served in time: the hold starts
        act(16_000, "PUT", put_on),  # the stall resolves at 20 s, and the queue stalls again at 25 s
        act(40_000, "PUT", put_on, queue="PAY.OTHER"),
        act(41_000, "GET", get_on),  # 26 s: High
        act(42_000, "GET", get_on),  # 1 s: OK; emptied: the stall resolves at 47 s
        act(45_000, "PUT", put_on),  # counted in the statistics since the OK
        act(46_000, "GET", get_on),
        act(50_000, "PUT", put_on, queue="PAY.OTHER"),  # PAY.OTHER stalls (at 50 s)
        cmd(51_000, "RESET QSTATS(PAY.IN)", get_on, "reset"),
    ]


def outputs(records: list[dict[str, Any]], sharing: Any) -> list[dict[str, Any]]:
    return [
        {**e.record, "topic": e.topic, "key": e.key}
        for e in run_reference(records, sharing, final_clock=T0 + 60_000)
        if e.topic in (topics.PERFORMANCE, topics.ALERTS, topics.REPLIES)
    ]


#: what names a queue manager or its records: the rest of an output must be the same for a shared queue
NAMING = {"event_id", "alert_id", "qmgr", "qsg", "key", "summary", "action", "message", "command_id"}


def _same(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in NAMING}


def test_puts_on_one_member_and_gets_on_another_give_the_events_of_one_queue_manager():
    one = outputs(workload("QM1", "QM1"), settings(qsgs=[]))  # no group: QM1's own queue
    shared = outputs(workload("QM1", "QM2"), settings())
    assert [(r.get("type"), r.get("state"), r["ts"] - T0) for r in one if r["topic"] != topics.REPLIES] == [
        ("QDEPTH_HIGH", None, 3_000),
        ("QUEUE_STALLED", "FIRING", 11_000),
        ("QSVCINT_HIGH", None, 14_000),
        ("QSVCINT_OK", None, 15_000),
        ("QDEPTH_LOW", None, 15_000),
        ("QUEUE_STALLED", "RESOLVED", 20_000),
        ("QUEUE_STALLED", "FIRING", 25_000),
        ("QSVCINT_HIGH", None, 41_000),
        ("QSVCINT_OK", None, 42_000),
        ("QUEUE_STALLED", "RESOLVED", 47_000),
        ("QUEUE_STALLED", "FIRING", 50_000),
    ]
    # the same, but for the names (perfmev-2's reply is the one QM1 gives twice)
    assert [_same(r) for r in shared] == [_same(r) for r in one]
    events = [r for r in shared if r["topic"] != topics.REPLIES]
    # each names the group, and the member whose put or get raised it; an alert raised by the clock (or by a
    # record of another queue moving event time on), the member of the queue's latest put or get
    assert {r["qsg"] for r in events} == {"QSG1"}
    assert [r["qmgr"] for r in events] == ["QM1", "QM1", "QM2", "QM2", "QM2", "QM1", "QM1", "QM2", "QM2", "QM2", "QM1"]
    # one Kafka key a shared queue: its events stay in order
    assert {r["key"] for r in events} == {"QSG1/PAY.IN", "QSG1/PAY.OTHER"}
    assert all(r["qsg"] is None and r["qmgr"] == "QM1" for r in one if r["topic"] != topics.REPLIES)
    stalled = events[1]
    assert stalled["summary"].startswith("Shared queue PAY.IN of queue-sharing group QSG1 holds 3 messages")
    assert "CMDSCOPE(*)" in stalled["action"]
    [reset] = [r for r in shared if r.get("command_id") == "reset"]
    assert reset["qmgr"] == "QM2" and "HIQDEPTH(1) MSGSIN(1) MSGSOUT(1)" in reset["message"]  # since the OK


def test_one_depth_and_one_service_timer_and_the_snapshot_names_the_group():
    mon = QueueMonitor("QSG1", settings())
    for member, op, ts in [("QM1", "PUT", 1_000), ("QM2", "PUT", 2_000), ("QM2", "GET", 3_000), ("QM1", "PUT", 4_000)]:
        mon.on_activity(Activity(f"{member}-{ts}", member, "PAY.IN", op, T0 + ts))
    q = mon.queues["PAY.IN"]
    assert (q["depth"], q["svc_timer_start"], q["enq"], q["deq"], q["member"]) == (2, T0 + 3_000, 3, 1, "QM1")
    [snap] = [e for e in mon.snapshot(T0 + 5_000)]
    assert snap.key == "QSG1" and snap.record["qmgr"] == "QSG1" and snap.record["qsg"] == "QSG1"
    assert [(s["queue"], s["depth"], s["last_put"]) for s in snap.record["queues"]] == [("PAY.IN", 2, T0 + 4_000)]


def test_a_members_perfmev_decides_for_its_own_operations():
    """PERFMEV is each member's: its puts and gets raise events only where it has them enabled (the queue manager
    that performs an operation would be the one to raise its event)."""
    out = outputs(
        [
            cmd(0, "ALTER QMGR PERFMEV(ENABLED)", "QM1"),  # QM2 keeps the configured DISABLED
            act(1_000, "PUT", "QM1"),
            act(12_000, "GET", "QM2"),  # 11 s: High, but QM2's PERFMEV is DISABLED
            act(13_000, "PUT", "QM1"),  # the timer starts again
            act(14_000, "PUT", "QM1"),
            act(15_000, "PUT", "QM1"),  # depth 3: QDEPTHHI
            act(25_000, "PUT", "QM1"),  # 12 s: High, raised by QM1
        ],
        settings(),
    )
    perf = [(r["type"], r["qmgr"], r["ts"] - T0) for r in out if r["topic"] == topics.PERFORMANCE]
    assert perf == [("QDEPTH_HIGH", "QM1", 15_000), ("QSVCINT_HIGH", "QM1", 25_000)]


def test_queues_of_the_same_name_stay_separate_unless_shared():
    """ORDERS is no shared queue: QM1's and QM2's are two queues; PAY.IN of QM3 (no member) is QM3's own."""
    records = [
        cmd(0, "ALTER QMGR PERFMEV(ENABLED)", q) for q in ("QM1", "QM2", "QM3")
    ] + [
        cmd(0, "ALTER QLOCAL(ORDERS) QSVCIEV(HIGH) QSVCINT(10000)", q) for q in ("QM1", "QM2")
    ] + [
        act(1_000, "PUT", "QM1", queue="ORDERS"),
        act(12_000, "GET", "QM2", queue="ORDERS"),  # QM2's ORDERS is empty: no service time to measure
        act(13_000, "PUT", "QM1", queue="ORDERS"),  # QM1's: 12 s since 1 s, High
        act(1_000, "PUT", "QM3"),
        act(12_000, "GET", "QM1"),  # the shared PAY.IN is empty
        act(13_000, "PUT", "QM3"),  # QM3's PAY.IN: High
    ]  # fmt: skip
    out = [r for r in outputs(records, settings()) if r["topic"] == topics.PERFORMANCE]
    assert [(r["type"], r["qmgr"], r["queue"], r["qsg"]) for r in out] == [
        ("QSVCINT_HIGH", "QM1", "ORDERS", None),
        ("QSVCINT_HIGH", "QM3", "PAY.IN", None),
    ]


def test_every_member_commands_the_one_queue():
    """DEFINE on one member and ALTER on another reach the one queue; a second DEFINE needs REPLACE, as for any
    queue; the replies name the member they were sent to."""
    records = [
        cmd(0, "ALTER QMGR PERFMEV(ENABLED)", "QM1"),
        cmd(0, "ALTER QMGR PERFMEV(ENABLED)", "QM2"),
        cmd(0, "DEFINE QLOCAL(PAY.IN) QSGDISP(SHARED) QSVCIEV(NONE)", "QM1", "define"),
        cmd(0, "DEFINE QLOCAL(PAY.IN) QSGDISP(SHARED)", "QM2", "again"),
        cmd(0, "ALTER QLOCAL(PAY.IN) QSVCIEV(HIGH) QSVCINT(2000)", "QM2", "alter"),
        act(1_000, "PUT", "QM1"),
        act(4_000, "GET", "QM2"),
    ]
    out = outputs(records, settings())
    replies = {r["command_id"]: r for r in out if r["topic"] == topics.REPLIES}
    assert replies["define"]["ok"] and replies["define"]["qmgr"] == "QM1"
    assert "shared queue of queue-sharing group QSG1" in replies["define"]["message"]
    assert not replies["again"]["ok"] and "AMQ8150E" in replies["again"]["message"]
    assert replies["alter"]["ok"] and replies["alter"]["qmgr"] == "QM2"
    [high] = [r for r in out if r["topic"] == topics.PERFORMANCE]
    assert (high["type"], high["service_interval_ms"], high["qmgr"]) == ("QSVCINT_HIGH", 2_000, "QM2")


@pytest.mark.parametrize(
    "qmgr,text,fragment",
    [
        ("QM3", "DEFINE QLOCAL(PAY.IN) QSGDISP(SHARED)", "QM3 is a member of no queue-sharing group"),
        ("QM1", "ALTER QLOCAL(ORDERS) QSGDISP(SHARED) QSVCINT(5)", "DEFINE QLOCAL(ORDERS) QSGDISP(SHARED) on any"),
        ("QM2", "DEFINE QLOCAL(PAY.IN) QSGDISP(QMGR)", "qmon keeps no queue of QM2 alone beside it"),
        ("QM2", "ALTER QLOCAL(PAY.IN) QSGDISP(PRIVATE) QSVCINT(5)", "give QSGDISP(SHARED) or no QSGDISP"),
    ],
)
def test_a_qsgdisp_that_cannot_apply_is_refused_saying_why(qmgr, text, fragment):
    out = outputs([cmd(0, text, qmgr, "c"), act(1_000, "PUT", qmgr, queue=parse_command(text).name)], settings())
    [reply] = [r for r in out if r["topic"] == topics.REPLIES]
    assert not reply["ok"] and reply["qmgr"] == qmgr and fragment in reply["message"], reply["message"]


def test_a_queue_defined_shared_by_mqsc_alone_gives_the_events_of_one_queue_manager():
    """No pattern shares PAY.IN or PAY.OTHER: a DEFINE ... QSGDISP(SHARED) on a member, before any activity,
    makes each one queue for every member, with the events of the configuration's shared queues."""
    by_config = outputs(workload("QM1", "QM2"), settings())
    defines = [
        cmd(0, "DEFINE QLOCAL(PAY.IN) QSGDISP(SHARED)", "QM2", "d1"),
        cmd(0, "DEFINE QLOCAL(PAY.OTHER) QSGDISP(SHARED)", "QM1", "d2"),
    ]
    by_mqsc = outputs(defines + workload("QM1", "QM2"), settings(qsgs=[{**QSGS[0], "shared_queues": []}]))
    replies = {r["command_id"]: r for r in by_mqsc if r["topic"] == topics.REPLIES}
    assert replies["d1"]["ok"] and replies["d1"]["qmgr"] == "QM2"
    assert replies["d1"]["message"].endswith("It is a shared queue of queue-sharing group QSG1.")
    events = [r for r in by_mqsc if r["topic"] != topics.REPLIES]
    assert events == [r for r in by_config if r["topic"] != topics.REPLIES]
    assert {r["qsg"] for r in events} == {"QSG1"} and len(events) == 11


def test_a_name_already_a_members_own_queue_is_not_made_shared_and_stays_each_members():
    """QM1 has put to ORDERS as its own queue: QM2's DEFINE QLOCAL(ORDERS) QSGDISP(SHARED) is refused, naming QM1,
    and each member's ORDERS keeps its own depth and events; a name nobody used yet is shared from its DEFINE."""
    records = [
        cmd(0, "ALTER QMGR PERFMEV(ENABLED)", "QM1", "p1"),
        cmd(0, "ALTER QMGR PERFMEV(ENABLED)", "QM2", "p2"),
        cmd(0, "ALTER QLOCAL(ORDERS) QSVCIEV(HIGH) QSVCINT(1000)", "QM1", "a1"),
        act(500, "PUT", "QM1", queue="ORDERS"),
        cmd(600, "DEFINE QLOCAL(ORDERS) QSGDISP(SHARED)", "QM2", "refused"),
        cmd(600, "DEFINE QLOCAL(NEW.Q) QSGDISP(SHARED) QSVCIEV(HIGH) QSVCINT(1000)", "QM2", "shared"),
        act(700, "PUT", "QM2", queue="ORDERS"),  # QM2's own ORDERS: QSVCIEV NONE
        act(800, "PUT", "QM1", queue="NEW.Q"),
        act(3_000, "GET", "QM1", queue="ORDERS"),  # 2.5 s on QM1's own ORDERS: High, QM1's alone
        act(3_000, "GET", "QM2", queue="NEW.Q"),  # 2.2 s on the shared NEW.Q: High, raised by QM2
    ]
    out = outputs(records, settings(qsgs=[{**QSGS[0], "shared_queues": []}]))
    replies = {r["command_id"]: r for r in out if r["topic"] == topics.REPLIES}
    assert not replies["refused"]["ok"] and replies["refused"]["qmgr"] == "QM2"
    assert "ORDERS is already a queue of QM1 alone" in replies["refused"]["message"]
    assert replies["shared"]["ok"]
    perf = [(r["type"], r["qmgr"], r["qsg"], r["queue"], r["key"]) for r in out if r["topic"] == topics.PERFORMANCE]
    assert perf == [
        ("QSVCINT_HIGH", "QM1", None, "ORDERS", "QM1/ORDERS"),
        ("QSVCINT_HIGH", "QM2", "QSG1", "NEW.Q", "QSG1/NEW.Q"),
    ]


def test_qsgdisp_that_agrees_with_the_configuration_is_accepted():
    out = outputs(
        [
            cmd(0, "DEFINE QLOCAL(ORDERS) QSGDISP(QMGR) QSVCINT(5)", "QM1", "private"),
            cmd(0, "DEFINE QLOCAL(PAY.IN) QSGDISP(SHARED) QSVCINT(5)", "QM1", "shared"),
            cmd(0, "DEFINE QLOCAL(PAY.IN) QSVCINT(5)", "QM2", "plain"),  # already defined, by QM1
            cmd(0, "ALTER QLOCAL(PAY.IN) QSVCINT(6)", "QM2", "alter"),
        ],
        settings(),
    )
    replies = {r["command_id"]: (r["ok"], r["message"].split(": ", 1)[1][:8]) for r in out}
    assert replies == {
        "private": (True, "AMQ8006I"),
        "shared": (True, "AMQ8006I"),
        "plain": (False, "AMQ8150E"),
        "alter": (True, "AMQ8008I"),
    }
