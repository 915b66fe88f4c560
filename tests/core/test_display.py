"""DISPLAY QLOCAL, DISPLAY QSTATUS and DISPLAY QMGR, answered from what the rules hold, in runmqsc's format."""

from __future__ import annotations

from typing import Any

import pytest

from qmon.core import topics
from qmon.core.config import Config
from qmon.core.mqsc import MqscError, join_parts, parse_command, part_command_id
from qmon.core.queues import MonitorSettings, QueueMonitor
from qmon.core.queues.display import lines
from qmon.core.records import Activity
from qmon.core.reference import run_reference

T0 = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC


def _monitor() -> QueueMonitor:
    m = QueueMonitor("QM1", MonitorSettings(perfmev="ENABLED"))
    m.on_command(parse_command("ALTER QLOCAL(PAYROLL.IN) QSVCINT(2000) QSVCIEV(HIGH)"), T0, "a", reply=False)
    for i, (op, at) in enumerate([("PUT", 1_000), ("PUT", 2_000), ("PUT", 3_000), ("GET", 65_000)]):
        m.on_activity(Activity(f"e{i}", "QM1", "PAYROLL.IN", op, T0 + at))
    m.on_activity(Activity("o1", "QM1", "PAYROLL.OUT", "PUT", T0 + 5_000))
    return m


def _reply(m: QueueMonitor, text: str, ts: int = T0 + 70_000) -> dict[str, Any]:
    [reply] = m.on_command(parse_command(text), ts, "d1", reply=True)
    assert reply.topic == topics.REPLIES
    return reply.record


def test_display_qlocal_all_shows_every_attribute_qmon_holds_as_runmqsc_lays_them_out():
    r = _reply(_monitor(), "DISPLAY QLOCAL(PAYROLL.IN) ALL")
    assert r["ok"] and r["qmgr"] == "QM1"
    assert r["message"].splitlines() == [
        "AMQ8409I: Display Queue details.",
        "   QUEUE(PAYROLL.IN)                       TYPE(QLOCAL)",
        "   CURDEPTH(2)                             MAXDEPTH(5000)",
        "   QDEPTHHI(80)                            QDEPTHLO(20)",
        "   QDPHIEV(DISABLED)                       QDPLOEV(DISABLED)",
        "   QDPMAXEV(ENABLED)                       QSGDISP(QMGR)",
        "   QSVCIEV(OK)                             QSVCINT(2000)",  # (the get at 65 s raised High: OK now)
    ]


def test_display_qlocal_with_attributes_shows_those_and_the_queue_as_runmqsc_does():
    r = _reply(_monitor(), "DIS QL(PAYROLL.IN) QSVCINT CURDEPTH")
    assert r["message"].splitlines()[1:] == [
        "   QUEUE(PAYROLL.IN)                       TYPE(QLOCAL)",
        "   CURDEPTH(2)                             QSVCINT(2000)",
    ]
    only = _reply(_monitor(), "DISPLAY QLOCAL(PAYROLL.IN)")  # (runmqsc: the queue and its type)
    assert only["message"].splitlines()[1:] == ["   QUEUE(PAYROLL.IN)                       TYPE(QLOCAL)"]


def test_display_qstatus_shows_depth_last_put_and_get_and_the_oldest_messages_age():
    r = _reply(_monitor(), "DISPLAY QSTATUS(PAYROLL.IN) TYPE(QUEUE) ALL")
    assert r["message"].splitlines() == [
        "AMQ8450I: Display queue status details.",
        "   QUEUE(PAYROLL.IN)                       TYPE(QUEUE)",
        "   CURDEPTH(2)                             LGETDATE(2023-11-14)",
        "   LGETTIME(22.14.25)                      LPUTDATE(2023-11-14)",
        "   LPUTTIME(22.13.23)                      MSGAGE(68)",  # the put at 2 s, 70 s in
    ]
    out = _reply(_monitor(), "DISPLAY QSTATUS(PAYROLL.OUT) MSGAGE LGETDATE")
    assert out["message"].splitlines()[2] == "   LGETDATE( )                             MSGAGE(65)"


def test_display_qmgr_perfmev():
    m = _monitor()
    r = _reply(m, "DISPLAY QMGR PERFMEV")
    assert r["message"].splitlines() == [
        "AMQ8408I: Display Queue Manager details.",
        "   QMNAME(QM1)                             PERFMEV(ENABLED)",
    ]


def test_a_queue_qmon_does_not_hold_is_not_found():
    r = _reply(_monitor(), "DISPLAY QLOCAL(NOPE) ALL")
    assert not r["ok"] and r["message"] == "AMQ8147E: IBM MQ object NOPE not found."
    g = _reply(_monitor(), "DISPLAY QSTATUS(NOPE*)")
    assert not g["ok"] and g["message"] == "AMQ8147E: IBM MQ object NOPE* not found."


def test_a_generic_name_lists_every_matching_queue_and_its_parts_join_into_the_same():
    m = _monitor()
    whole = _reply(m, "DISPLAY QLOCAL(PAYROLL.*) CURDEPTH")
    assert whole["ok"] and whole["message"].splitlines() == [
        "AMQ8409I: Display Queue details.",
        "   QUEUE(PAYROLL.IN)                       TYPE(QLOCAL)",
        "   CURDEPTH(2)",
        "AMQ8409I: Display Queue details.",
        "   QUEUE(PAYROLL.OUT)                      TYPE(QLOCAL)",
        "   CURDEPTH(1)",
    ]
    # in the job each shard holds some of the queues and replies with its part
    shards = [QueueMonitor("QM1", MonitorSettings()) for _ in range(3)]
    shards[0].on_activity(Activity("o1", "QM1", "PAYROLL.OUT", "PUT", T0 + 5_000))
    for i, op in enumerate(["PUT", "PUT", "PUT", "GET"]):
        shards[2].on_activity(Activity(f"e{i}", "QM1", "PAYROLL.IN", op, T0 + 1_000 * (i + 1)))
    cmd = parse_command("DISPLAY QLOCAL(PAYROLL.*) CURDEPTH")
    parts = [
        s.on_command(cmd, T0 + 70_000, part_command_id("d1", k + 1, 3), reply=True)[0] for k, s in enumerate(shards)
    ]
    assert len({p.record["event_id"] for p in parts}) == 3
    records = [p.record for p in parts]
    assert join_parts(records[:2]) is None  # (waits for every part)
    joined = join_parts(records)
    assert joined is not None and joined["ok"] and joined["message"] == whole["message"]
    nothing = [s.on_command(parse_command("DISPLAY QLOCAL(NOPE*)"), T0, part_command_id("d2", k + 1, 3), reply=True)[0]
               for k, s in enumerate(shards)]  # fmt: skip
    none = join_parts([p.record for p in nothing])
    assert none is not None and not none["ok"] and none["message"] == "AMQ8147E: IBM MQ object NOPE* not found."


@pytest.mark.parametrize(
    "text,keyword",
    [
        ("DISPLAY QLOCAL(Q) DESCR", "DESCR"),
        ("DISPLAY QSTATUS(Q) TYPE(HANDLE)", "TYPE"),
        ("DISPLAY QMGR QSVCINT", "QSVCINT"),
        ("DISPLAY CHANNEL(X)", "CHANNEL"),
    ],
)
def test_what_qmon_cannot_display_is_an_error_naming_it(text, keyword):
    with pytest.raises(MqscError) as err:
        parse_command(text)
    assert err.value.keyword == keyword


def test_scopes_of_display():
    assert parse_command("DISPLAY QLOCAL(Q1) ALL").scope == "queue"
    assert parse_command("DISPLAY QSTATUS(Q*)").scope == "parts"
    assert parse_command("DISPLAY QMGR PERFMEV").scope == "qmgr"


def test_a_member_displays_its_own_queues_and_the_groups_shared_ones():
    settings = Config.model_validate(
        {"qsgs": [{"name": "QSG1", "members": ["QM1", "QM2"], "shared_queues": ["PAY.IN"]}]}
    ).monitor_settings()
    records: list[dict[str, Any]] = [
        {"ts": T0 + 1_000, "qmgr": "QM1", "queue": "PAY.IN", "op": "PUT", "event_id": "a"},
        {"ts": T0 + 2_000, "qmgr": "QM2", "queue": "PAY.IN", "op": "PUT", "event_id": "b"},
        {"ts": T0 + 3_000, "qmgr": "QM2", "queue": "PAY.OWN", "op": "PUT", "event_id": "c"},
        {"ts": T0 + 4_000, "qmgr": "QM1", "command": "DISPLAY QLOCAL(PAY.*) QSGDISP CURDEPTH", "command_id": "d1"},
        {"ts": T0 + 4_000, "qmgr": "QM2", "command": "DISPLAY QLOCAL(PAY.*) QSGDISP CURDEPTH", "command_id": "d2"},
    ]
    replies = {e.record["command_id"]: e.record["message"] for e in run_reference(records, settings)}
    assert replies["d1"].splitlines()[1:] == [
        "   QUEUE(PAY.IN)                           TYPE(QLOCAL)",
        "   CURDEPTH(2)                             QSGDISP(SHARED)",
    ]
    assert [line for line in replies["d2"].splitlines() if "QUEUE(" in line or "QSGDISP" in line] == [
        "   QUEUE(PAY.IN)                           TYPE(QLOCAL)",
        "   CURDEPTH(2)                             QSGDISP(SHARED)",
        "   QUEUE(PAY.OWN)                          TYPE(QLOCAL)",
        "   CURDEPTH(1)                             QSGDISP(QMGR)",
    ]


def test_a_value_wider_than_a_column_has_a_line_of_its_own():
    wide = "QUEUE(" + "A" * 40 + ")"
    assert lines([wide, "TYPE(QLOCAL)", "CURDEPTH(1)"]) == [f"   {wide}", "   TYPE(QLOCAL)" + " " * 28 + "CURDEPTH(1)"]
