"""MQSC parsing: quoting, case folding, continuation, comments and errors that name the keyword."""

from __future__ import annotations

import pytest

from qmon.core.mqsc import (
    MqscError,
    canonical,
    join_parts,
    parse_command,
    part_command_id,
    reply_part,
    split_part,
    split_script,
)
from qmon.core.queues import MonitorSettings, QueueMonitor
from qmon.core.records import Activity


def test_seed_example_with_continuations_and_blank_before_parenthesis():
    script = """ALTER QMGR +
  PERFMEV(ENABLED)

ALTER QLOCAL('MYQUEUE') +
      QSVCINT(10000) +
      QSVCIEV (HIGH)
"""
    cmds = [parse_command(c) for c in split_script(script)]
    assert cmds[0].obj == "QMGR" and cmds[0].attrs == {"PERFMEV": "ENABLED"}
    assert cmds[1].name == "MYQUEUE" and cmds[1].attrs == {"QSVCINT": 10000, "QSVCIEV": "HIGH"}


def test_unquoted_names_fold_quoted_keep_case_and_keywords_are_case_insensitive():
    assert parse_command("alter qlocal(payroll.in) qsvciev(high)").name == "PAYROLL.IN"
    cmd = parse_command("alter qlocal('payroll.in') qsvciev(high)")
    assert cmd.name == "payroll.in" and cmd.attrs["QSVCIEV"] == "HIGH"


def test_quote_inside_quotes_and_abbreviations():
    assert parse_command("DEF QL('a.b') DESCR('it''s the (main) queue')").name == "a.b"
    assert parse_command("DEF QL(X) DESCR('x, y')").ignored == ("DESCR",)


def test_minus_continuation_keeps_leading_blanks_and_comments_are_dropped():
    script = "* a comment\nALTER QLOCAL(A) -\n QSVCINT(5)\n*another\nRESET QSTATS(A)\n"
    assert split_script(script) == ["ALTER QLOCAL(A)  QSVCINT(5)", "RESET QSTATS(A)"]


def test_commas_separate_keywords():
    assert parse_command("ALTER QLOCAL(A),QSVCINT(5),QSVCIEV(OK)").attrs == {"QSVCINT": 5, "QSVCIEV": "OK"}


@pytest.mark.parametrize(
    "text,keyword,fragment",
    [
        ("ALTER QLOCAL(A) QSVCINTT(5)", "QSVCINTT", "not a queue attribute"),
        ("ALTER QLOCAL(A) QSVCINT(abc)", "QSVCINT", "whole number"),
        ("ALTER QLOCAL(A) QSVCINT(1000000000)", "QSVCINT", "out of range"),
        ("ALTER QLOCAL(A) QDEPTHHI(101)", "QDEPTHHI", "out of range"),
        ("ALTER QLOCAL(A) QSVCIEV(SOMETIMES)", "QSVCIEV", "HIGH, OK, NONE"),
        ("ALTER QMGR PERFMEV(MAYBE)", "PERFMEV", "ENABLED, DISABLED"),
        ("ALTER QMGR", "QMGR", "needs an attribute"),
        ("DELETE QLOCAL(A)", "DELETE", "unknown or unsupported command verb"),
        ("ALTER QREMOTE(A)", "QREMOTE", "does not apply"),
        ("ALTER QLOCAL()", "QLOCAL", "needs a name"),
        ("ALTER QLOCAL('" + "A" * 49 + "')", "QLOCAL", "at most 48"),
        ("ALTER QLOCAL('A B')", "QLOCAL", "may hold only"),
        ("ALTER QLOCAL('ABC) QSVCINT(5)", "QLOCAL", "closing quote"),
        ("ALTER QLOCAL(A QSVCINT(5)", "QLOCAL", ""),
        ("REGISTER INTEREST QUEUE(2TRAN) CLIENT(IMSA)", "QUEUE", "staging"),
        ("REGISTER INTEREST QUEUE(9OTMA) CLIENT(IMSA)", "QUEUE", "OTMA"),
        ("REGISTER INTEREST CLIENT(IMSA)", "QUEUE", "needs QUEUE"),
        ("", "", "empty"),
        ("DEFINE QLOCAL(A) QSGDISP(PRIVATE)", "QSGDISP", "QMGR, COPY, GROUP, SHARED"),
        ("ALTER QLOCAL(A) QSGDISP(EVERYWHERE)", "QSGDISP", "QMGR, COPY, GROUP, SHARED, PRIVATE"),
    ],
)
def test_errors_name_the_keyword(text, keyword, fragment):
    with pytest.raises(MqscError) as info:
        parse_command(text)
    assert info.value.keyword == keyword
    assert fragment in info.value.message


def test_interest_and_generic_names():
    cmd = parse_command("REGISTER INTEREST QUEUE(1TRAN*) CLIENT(imsa)")
    assert cmd.name == "1TRAN*" and cmd.generic and cmd.scope == "qmgr" and cmd.attrs == {"CLIENT": "IMSA"}
    assert parse_command("ALTER QLOCAL(A)").scope == "definition"


def test_qsgdisp_is_parsed_on_define_and_alter_qlocal_and_echoed():
    cmd = parse_command("def ql(pay.in) qsgdisp(shared) qsvcint(5) cmdscope(*)")
    assert cmd.attrs == {"QSGDISP": "SHARED", "QSVCINT": 5} and cmd.ignored == ("CMDSCOPE",)
    assert cmd.scope == "definition"  # every shard keeps it; the queue's shard (its group's, if shared) applies it
    assert canonical(cmd) == "DEFINE QLOCAL('PAY.IN') QSGDISP(SHARED) QSVCINT(5)"
    assert parse_command("ALTER QLOCAL(A) QSGDISP(PRIVATE)").attrs == {"QSGDISP": "PRIVATE"}
    for disp in ("QMGR", "COPY", "GROUP"):
        assert parse_command(f"DEFINE QLOCAL(A) QSGDISP({disp})").attrs == {"QSGDISP": disp}


def test_qsgdisp_is_not_a_queue_attribute_the_queue_keeps():
    mon = QueueMonitor("QM1", MonitorSettings())
    mon.on_command(parse_command("DEFINE QLOCAL(A) QSGDISP(QMGR) QSVCINT(5)"), 0, "c1", reply=False)
    mon.on_command(parse_command("ALTER QLOCAL(A) QSGDISP(QMGR) QSVCIEV(HIGH)"), 0, "c2", reply=False)
    attrs = mon.queues["A"]["attrs"]
    assert "QSGDISP" not in attrs and attrs["QSVCINT"] == 5 and attrs["QSVCIEV"] == "HIGH"


def test_canonical_echo():
    assert (
        canonical(parse_command("alter qlocal(a) qsvcint(5) qdphiev(enabled)"))
        == "ALTER QLOCAL('A') QSVCINT(5) QDPHIEV(ENABLED)"
    )


def test_a_huge_number_is_an_error_not_a_crash():
    import pytest as _pytest

    from qmon.core.mqsc import MqscError, parse_command

    with _pytest.raises(MqscError) as err:
        parse_command("ALTER QLOCAL(Q1) QSVCINT(" + "9" * 10_000 + ")")
    assert err.value.keyword == "QSVCINT" and "out of range" in str(err.value)
    assert parse_command("ALTER QLOCAL(Q1) QSVCINT(000000000000000000000002000)").attrs["QSVCINT"] == 2000


# ---------------------------------------------------------------- MQSC details


@pytest.mark.parametrize(
    "text,keyword",
    [
        ("ALTER QLOCAL(Q) QSVCINT(5) QSVCINT(6)", "QSVCINT"),
        ("ALTER QLOCAL(Q) QSVCINT(5) QSVCIEV(HIGH) qsvcint(5)", "QSVCINT"),
        ("DEFINE QLOCAL(Q) DESCR('a') DESCR('b')", "DESCR"),
        ("REGISTER INTEREST QUEUE(1A) CLIENT(X) CLIENT(Y)", "CLIENT"),
        ("ALTER QMGR PERFMEV(ENABLED) PERFMEV(DISABLED)", "PERFMEV"),
    ],
)
def test_a_keyword_given_twice_is_an_error_naming_it(text, keyword):
    with pytest.raises(MqscError) as info:
        parse_command(text)
    assert info.value.keyword == keyword
    assert f"{keyword}: the keyword appears more than once" in info.value.message


def test_comment_and_blank_lines_inside_a_continuation_are_skipped_not_joined():
    script = (
        "ALTER QLOCAL(A) +\n* the interval, in ms\n      QSVCINT(5) -\n\n*another\n QSVCIEV(HIGH)\nRESET QSTATS(A)\n"
    )
    assert split_script(script) == ["ALTER QLOCAL(A) QSVCINT(5)  QSVCIEV(HIGH)", "RESET QSTATS(A)"]
    assert parse_command(split_script(script)[0]).attrs == {"QSVCINT": 5, "QSVCIEV": "HIGH"}
    # only an asterisk in the first position makes a comment
    assert split_script("ALTER QLOCAL(A) +\n  *X\n") == ["ALTER QLOCAL(A) *X"]


def _monitor_with_payroll_queues() -> QueueMonitor:
    m = QueueMonitor("QM1", MonitorSettings())
    for i, (queue, op) in enumerate(
        [("PAYROLL.A", "PUT"), ("PAYROLL.A", "PUT"), ("PAYROLL.A", "GET"), ("PAYROLL.B", "PUT"), ("OTHER", "PUT")]
    ):
        m.on_activity(Activity(f"e{i}", "QM1", queue, op, 1_000 + i))
    return m


def test_reset_qstats_with_a_generic_name_resets_every_matching_queue_in_one_reply():
    cmd = parse_command("RESET QSTATS(PAYROLL.*)")
    assert cmd.name == "PAYROLL.*" and cmd.scope == "parts"
    m = _monitor_with_payroll_queues()
    [reply] = m.on_command(cmd, 11_000, "c1", reply=True)
    r = reply.record
    assert r["ok"] is True and r["command_id"] == "c1"
    assert r["message"].splitlines() == [
        "RESET QSTATS('PAYROLL.*'): 2 queues reset:",
        "AMQ8450I: Display queue status details. QUEUE(PAYROLL.A) RESETINT(10) HIQDEPTH(2) MSGSIN(2) MSGSOUT(1)",
        "AMQ8450I: Display queue status details. QUEUE(PAYROLL.B) RESETINT(9) HIQDEPTH(1) MSGSIN(1) MSGSOUT(0)",
    ]
    assert sorted(m.queues) == ["OTHER", "PAYROLL.A", "PAYROLL.B"]  # no queue named PAYROLL.*
    assert m.queues["OTHER"]["enq"] == 1 and m.queues["PAYROLL.A"]["enq"] == 0
    [again] = m.on_command(cmd, 12_000, "c2", reply=True)
    assert "QUEUE(PAYROLL.A) RESETINT(1) HIQDEPTH(1) MSGSIN(0) MSGSOUT(0)" in again.record["message"]
    [none] = m.on_command(parse_command("RESET QSTATS(NOPE.*)"), 12_000, "c3", reply=True)
    assert (
        none.record["ok"]
        and none.record["message"] == "RESET QSTATS('NOPE.*'): no queue matches NOPE.*; nothing reset."
    )


def test_reset_qstats_generic_in_shards_replies_in_parts_that_join_into_one():
    shards = [QueueMonitor("QM1", MonitorSettings()) for _ in range(3)]
    place = {"PAYROLL.A": 0, "PAYROLL.B": 2, "OTHER": 2}
    for i, (queue, op) in enumerate(
        [("PAYROLL.A", "PUT"), ("PAYROLL.B", "PUT"), ("PAYROLL.B", "GET"), ("OTHER", "PUT")]
    ):
        shards[place[queue]].on_activity(Activity(f"e{i}", "QM1", queue, op, 1_000))
    cmd = parse_command("RESET QSTATS(PAYROLL.*)")
    out = [e for b, m in enumerate(shards) for e in m.on_command(cmd, 5_000, part_command_id("c9", b + 1, 3), True)]
    records = [e.record for e in out]
    assert [r["command_id"] for r in records] == ["c9"] * 3 and len({r["event_id"] for r in records}) == 3
    assert [reply_part(r["message"]) for r in records] == [(1, 3), (2, 3), (3, 3)]
    assert records[1]["message"] == "RESET QSTATS('PAYROLL.*'): part 2 of 3: no matching queue in this part."
    assert records[2]["message"].startswith("RESET QSTATS('PAYROLL.*'): part 3 of 3: 1 queue reset in this part:\n")
    assert join_parts(records[:2]) is None  # a consumer waits for every part
    joined = join_parts([records[2], records[0], records[1]])
    assert joined["ok"] and joined["command_id"] == "c9"
    assert joined["message"].splitlines() == [
        "RESET QSTATS('PAYROLL.*'): 2 queues reset (the replies of 3 shards joined)",
        "AMQ8450I: Display queue status details. QUEUE(PAYROLL.A) RESETINT(4) HIQDEPTH(1) MSGSIN(1) MSGSOUT(0)",
        "AMQ8450I: Display queue status details. QUEUE(PAYROLL.B) RESETINT(4) HIQDEPTH(1) MSGSIN(1) MSGSOUT(1)",
    ]
    partial = join_parts(records[1:], partial=True)
    assert partial["ok"] is False and "No reply from part 1 of 3" in partial["message"]
    # a reply that came whole is its own join; an id without a part is part 1 of 1
    whole = {"command_id": "x", "ok": True, "message": "RESET QSTATS('A'): AMQ8450I: ..."}
    assert join_parts([whole]) is whole and split_part("x") == ("x", 1, 1)
    assert split_part(part_command_id("a\x1fb", 2, 8)) == ("a\x1fb", 2, 8)


def test_reset_qstats_of_one_queue_still_goes_to_its_shard_alone():
    assert parse_command("RESET QSTATS(PAYROLL.A)").scope == "queue"


def test_ping_qmgr_is_answered_as_runmqsc_answers_it():
    m = QueueMonitor("QM1", MonitorSettings())
    [reply] = m.on_command(parse_command("PING QMGR"), 1_000, "p1", reply=True)
    assert reply.record["ok"]
    assert reply.record["message"] == "PING QMGR: AMQ8415I: Ping IBM MQ Queue Manager command complete."


def test_alter_qlocal_force_is_accepted_and_alters():
    cmd = parse_command("ALTER QLOCAL(PAYROLL.IN) QSVCINT(500) FORCE")
    assert cmd.attrs == {"QSVCINT": 500} and cmd.ignored == ()
    m = QueueMonitor("QM1", MonitorSettings())
    m.on_activity(Activity("e1", "QM1", "PAYROLL.IN", "PUT", 1_000))
    [reply] = m.on_command(cmd, 2_000, "a1", reply=True)
    assert reply.record["ok"] and "AMQ8008I" in reply.record["message"] and "ignored" not in reply.record["message"]
    assert m.queues["PAYROLL.IN"]["attrs"]["QSVCINT"] == 500
    with pytest.raises(MqscError, match="FORCE"):
        parse_command("DEFINE QLOCAL(PAYROLL.IN) FORCE")  # (ALTER's keyword only, as in MQ)
