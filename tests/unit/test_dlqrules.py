"""SPEC §7 / seed 002: the rules table parser, matcher and the handler's decision (pure)."""

from __future__ import annotations

import pytest

from qmon.dlqrules import RulesError, decide, parse_rules

IBM_SAMPLE = """\
* An example rules table for the runmqdlq command
* Control data entry
inputqm(' ') inputq(' ')

* Rules
REASON(MQRC_Q_FULL) ACTION(RETRY) RETRY(5)

REASON(MQRC_PUT_INHIBITED) ACTION(RETRY) RETRY(5)

MSGTYPE(MQMT_REQUEST) REPLYQM(AAAA.*) +
  ACTION(FWD) FWDQ(DEADQ) FWDQM(&REPLYQM)

DESTQM(bbbb.1) +
  action(fwd) fwdq(&DESTQ) fwdqm(bbbb.2) header(no)

REPLYQM(CCCC.*) +
  ACTION(FWD) FWDQ(ALARM) FWDQM(CCCC.SYSTEM)

PERSIST(MQPER_NOT_PERSISTENT) ACTION(DISCARD)

REPLYQM('?*') +
  ACTION(FWD) FWDQ(DEADQ.MANUAL.INTERVENTION) FWDQM(&REPLYQM)

ACTION(FWD) FWDQ(DEADQ.MANUAL.INTERVENTION)
"""


def dl(**kw):
    base = {"reason": 65537, "reason_name": "QMON_UNDECODABLE", "dest_topic": "qmon.activity",
            "format": "QueueActivity", "put_appl_name": "qmon", "put_time": 0}
    base.update(kw)
    return base


def test_the_ibm_sample_table_parses():
    t = parse_rules(IBM_SAMPLE)
    assert t.control.inputq is None and t.control.retryint == 60 and t.control.wait is True
    assert [r.action for r in t.rules] == ["RETRY", "RETRY", "FWD", "FWD", "FWD", "DISCARD", "FWD", "FWD"]
    assert t.rules[0].patterns == {"REASON": 2053} and t.rules[0].retry == 5
    assert t.rules[3].fwdq == "&DESTQ" and t.rules[3].header is False and t.rules[3].line == 13
    assert t.rules[-1].patterns == {}


def test_keywords_any_order_any_case_blanks_or_commas_and_blank_before_parenthesis():
    t = parse_rules("action (fwd), Header(NO),FWDQ( out.topic ) reason(QMON_UNDECODABLE)")
    r = t.rules[0]
    assert (r.action, r.header, r.fwdq, r.patterns) == ("FWD", False, "out.topic", {"REASON": 65537})


def test_continuations_plus_and_minus():
    t = parse_rules("REASON(65537) +\n     ACTION(DISCARD)\nDESTQ(qmon.act-\nivity) ACTION(IGNORE)\n")
    assert t.rules[0].action == "DISCARD"
    assert t.rules[1].patterns == {"DESTQ": "qmon.activity"}


def test_control_data_keywords():
    t = parse_rules("INPUTQ(my.dlq) INPUTQM(QM1) RETRYINT(5) WAIT(30)\nACTION(IGNORE)")
    assert (t.control.inputq, t.control.inputqm, t.control.retryint, t.control.wait) == ("my.dlq", "QM1", 5, 30)
    assert parse_rules("WAIT(NO)").control.wait is False


@pytest.mark.parametrize("text,line,fragment", [
    ("ACTION(EXPLODE)", 1, "expected DISCARD, IGNORE, RETRY or FWD"),
    ("REASON(65537)", 1, "needs ACTION"),
    ("ACTION(FWD)", 1, "needs FWDQ"),
    ("ACTION(DISCARD) HEADER(YES)", 1, "HEADER applies only to ACTION(FWD)"),
    ("ACTION(FWD) FWDQ(X) HEADER(MAYBE)", 1, "expected YES or NO"),
    ("ACTION(RETRY) RETRY(0)", 1, "RETRY(0)"),
    ("ACTION(RETRY) RETRY(many)", 1, "whole number"),
    ("ACTION(IGNORE) PUTAUT(ALL)", 1, "PUTAUT"),
    ("REASON(MQRC_NO_SUCH_THING) ACTION(IGNORE)", 1, "not a number or a known symbol"),
    ("BOGUS(1) ACTION(IGNORE)", 1, "BOGUS: unknown keyword"),
    ("ACTION(IGNORE) ACTION(DISCARD)", 1, "appears twice"),
    ("ACTION", 1, "needs a value"),
    ("ACTION(IGNORE)\nRETRYINT(5)", 2, "control data must be the first entry"),
    ("RETRYINT(5) ACTION(IGNORE)", 1, "cannot be mixed"),
    ("WAIT(SOMETIMES)", 1, "WAIT(SOMETIMES)"),
    ("RETRYINT(soon)", 1, "whole number of seconds"),
    ("ACTION(FWD) FWDQ(bad topic!)", 1, "not a valid topic name"),
    ("* comment\n\nACTION(IGNORE)junk", 3, "unexpected"),
])
def test_each_syntax_error_is_reported_with_its_line(text, line, fragment):
    with pytest.raises(RulesError) as err:
        parse_rules(text, source="t.rules")
    assert any(e.startswith(f"line {line}:") and fragment in e for e in err.value.errors), err.value.errors


def test_every_error_is_reported_not_only_the_first():
    with pytest.raises(RulesError) as err:
        parse_rules("ACTION(EXPLODE)\nACTION(IGNORE)\nBOGUS(1) ACTION(IGNORE)\nACTION(FWD)\n")
    assert [e.split(":")[0] for e in err.value.errors] == ["line 1", "line 3", "line 4"]


def test_matching_wildcards_numbers_and_symbols():
    t = parse_rules("DESTQ(*.activity) FORMAT(Queue?ctivity) REASON(QMON_UNDECODABLE) ACTION(DISCARD)\n"
                    "APPLNAME(qmon) REASON(65539) ACTION(IGNORE)\n"
                    "USERID(' ') ACTION(IGNORE)\nUSERID(bob) ACTION(IGNORE)\n")
    a, b, blank, bob = t.rules
    assert a.matches(dl()) and not a.matches(dl(dest_topic="qmon.control"))
    assert not a.matches(dl(reason=65539))
    assert b.matches(dl(reason=65539)) and not b.matches(dl(put_appl_name="other", reason=65539))
    assert blank.matches(dl()) and not bob.matches(dl())  # keywords without a qmon field match blank only


def test_forward_queue_substitutes_destq():
    rule = parse_rules("ACTION(FWD) FWDQ(&DESTQ.undecodable)").rules[0]
    assert rule.forward_topic(dl()) == "qmon.activity.undecodable"


def test_first_matching_rule_its_retries_then_the_next_rule_then_ignore():
    t = parse_rules("REASON(65537) ACTION(FWD) FWDQ(missing) RETRY(3)\n"
                    "DESTQ(nomatch) ACTION(DISCARD)\n"
                    "ACTION(FWD) FWDQ(exists) RETRY(2)\n")
    calls = []

    def attempt(rule, topic, n):
        calls.append((topic, n))
        return topic == "exists"

    out = decide(t, dl(), attempt)
    assert calls == [("missing", 0), ("missing", 1), ("missing", 2), ("exists", 0)]
    assert (out.action, out.rule.line, out.attempts, out.topic) == ("FWD", 3, 4, "exists")

    calls.clear()
    out = decide(t, dl(), lambda rule, topic, n: calls.append(topic) or False)
    assert out.action == "IGNORE" and out.rule is None and len(calls) == 5  # all attempts used up


def test_no_matching_rule_means_ignore_and_retry_goes_to_the_original_topic():
    t = parse_rules("REASON(65542) ACTION(DISCARD)\nREASON(65539) ACTION(RETRY)")
    assert decide(t, dl(), lambda *a: True).action == "IGNORE"
    out = decide(t, dl(reason=65539), lambda *a: True)
    assert (out.action, out.topic) == ("RETRY", "qmon.activity")
