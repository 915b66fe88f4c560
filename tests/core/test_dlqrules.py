"""The rules table parser and matcher (pure; IBM MQ, *The DLQ handler rules table*)."""

from __future__ import annotations

import pytest

from qmon.core.dlqrules import RulesError, parse_rules

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
    base = {
        "reason": 65537,
        "reason_name": "QMON_UNDECODABLE",
        "dest_topic": "qmon.activity",
        "format": "QueueActivity",
        "put_appl_name": "qmon",
        "put_time": 0,
    }
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
    assert parse_rules("WAIT(NO)\nACTION(IGNORE)").control.wait is False


@pytest.mark.parametrize(
    "text,line,fragment",
    [
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
    ],
)
def test_each_syntax_error_is_reported_with_its_line(text, line, fragment):
    with pytest.raises(RulesError) as err:
        parse_rules(text, source="t.rules")
    assert any(e.startswith(f"line {line}:") and fragment in e for e in err.value.errors), err.value.errors


def test_every_error_is_reported_not_only_the_first():
    with pytest.raises(RulesError) as err:
        parse_rules("ACTION(EXPLODE)\nACTION(IGNORE)\nBOGUS(1) ACTION(IGNORE)\nACTION(FWD)\n")
    assert [e.split(":")[0] for e in err.value.errors] == ["line 1", "line 3", "line 4"]


def test_matching_wildcards_numbers_and_symbols():
    t = parse_rules(
        "DESTQ(*.activity) FORMAT('Queue?ctivity') REASON(QMON_UNDECODABLE) ACTION(DISCARD)\n"
        "APPLNAME('qmon') REASON(65539) ACTION(IGNORE)\n"
        "USERID(' ') ACTION(IGNORE)\nUSERID(bob) ACTION(IGNORE)\n"
    )
    a, b, blank, bob = t.rules
    assert a.matches(dl()) and not a.matches(dl(dest_topic="qmon.control"))
    assert not a.matches(dl(reason=65539))
    assert b.matches(dl(reason=65539)) and not b.matches(dl(put_appl_name="other", reason=65539))
    assert blank.matches(dl()) and not bob.matches(dl())  # keywords without a qmon field match blank only


def test_forward_queue_substitutes_destq():
    rule = parse_rules("ACTION(FWD) FWDQ(&DESTQ.undecodable)").rules[0]
    assert rule.forward_topic(dl()) == "qmon.activity.undecodable"


# ---------------------------------------------------------------- MQ's value conventions


def test_unquoted_values_are_folded_to_upper_case_except_topic_names():
    t = parse_rules(
        "inputq(My.Dlq) inputqm(qm1) waIT(no)\n"
        "destq(Orders.Activity) userid(bob) replyqm(abc) +\n"
        "  action(fwd) fwdq(Manual.Dead) fwdqm(qm2) header(no)\n"
        "destq(Orders.*) action(discard)\n"
    )
    assert (t.control.inputq, t.control.inputqm, t.control.wait) == ("My.Dlq", "QM1", False)
    r = t.rules[0]
    assert r.patterns == {"DESTQ": "Orders.Activity", "REPLYQM": "ABC", "USERID": "BOB"}
    assert (r.action, r.fwdq, r.fwdqm, r.header) == ("FWD", "Manual.Dead", "QM2", False)
    by_topic = t.rules[1]
    assert by_topic.matches(dl(dest_topic="Orders.Activity")) and not by_topic.matches(dl(dest_topic="orders.activity"))


def test_quoted_values_keep_their_case():
    t = parse_rules("FORMAT('QueueActivity') APPLNAME('qmon') ACTION(DISCARD)\nUSERID('bob') ACTION(DISCARD)")
    assert t.rules[0].patterns == {"APPLNAME": "qmon", "FORMAT": "QueueActivity"}
    assert t.rules[1].patterns == {"USERID": "bob"}
    assert t.rules[0].matches(dl()) and not t.rules[0].matches(dl(format="ControlCommand"))


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("FORMAT(QueueActivity) ACTION(DISCARD)", "FORMAT('QueueActivity')"),
        ("FORMAT(queue*) ACTION(DISCARD)", "FORMAT('QueueActivity')"),
        ("APPLNAME(qmon) ACTION(DISCARD)", "APPLNAME('qmon')"),
    ],
)
def test_a_folded_format_or_applname_that_could_only_match_with_its_case_is_an_error_saying_quote_it(text, fragment):
    with pytest.raises(RulesError) as err:
        parse_rules(text)
    assert err.value.errors[0].startswith("line 1:") and "folded to upper case" in err.value.errors[0]
    assert fragment in err.value.errors[0], err.value.errors


@pytest.mark.parametrize("value", ["()", "( )", "('')"])
def test_an_empty_value_is_an_error(value):
    with pytest.raises(RulesError) as err:
        parse_rules(f"* rules\nACTION(DISCARD) FORMAT{value}")
    assert len(err.value.errors) == 1 and err.value.errors[0].startswith("line 2: FORMAT(")
    assert "at least one significant character" in err.value.errors[0]


def test_a_quoted_blank_is_a_value():
    t = parse_rules("FORMAT(' ') ACTION(DISCARD)")
    assert t.rules[0].patterns == {"FORMAT": " "}


@pytest.mark.parametrize("value", ["655*", "6553?", "'655*'", "MQRC_Q_*"])
def test_a_wildcard_inside_a_numeric_value_is_an_error(value):
    with pytest.raises(RulesError) as err:
        parse_rules(f"ACTION(IGNORE)\nREASON({value}) ACTION(DISCARD)")
    assert len(err.value.errors) == 1 and err.value.errors[0].startswith("line 2: REASON(")
    assert "numeric value cannot hold a wildcard" in err.value.errors[0]


def test_a_numeric_keyword_may_be_a_lone_asterisk():
    t = parse_rules("REASON(*) MSGTYPE('*') ACTION(DISCARD)")
    assert t.rules[0].matches(dl()) and t.rules[0].matches(dl(reason=2053))


def test_fwdq_replyq_cannot_be_resolved_dead_letters_have_no_reply_to_field():
    with pytest.raises(RulesError) as err:
        parse_rules("* forward to the reply queue\nACTION(FWD) FWDQ(&REPLYQ)")
    assert len(err.value.errors) == 1 and err.value.errors[0].startswith("line 2: FWDQ(&REPLYQ)")
    assert "no reply-to field" in err.value.errors[0]


def test_destq_in_fwdq_is_recognised_in_any_case():
    rule = parse_rules("ACTION(FWD) FWDQ(&destq.Manual)").rules[0]
    assert rule.fwdq == "&DESTQ.Manual" and rule.forward_topic(dl()) == "qmon.activity.Manual"


@pytest.mark.parametrize(
    "text,line,fragment",
    [
        ("", 1, "only comments and blank lines"),
        ("* nothing but comments\n\n* here\n", 3, "only comments and blank lines"),
        ("* control data only\nINPUTQ(x) RETRYINT(5)\n", 2, "only control data"),
    ],
)
def test_a_table_without_rules_is_rejected_at_its_last_line(text, line, fragment):
    with pytest.raises(RulesError) as err:
        parse_rules(text)
    assert len(err.value.errors) == 1, err.value.errors
    e = err.value.errors[0]
    assert e.startswith(f"line {line}:") and "needs at least one rule" in e and fragment in e


def test_an_invalid_rule_is_reported_once_not_also_as_no_rules():
    with pytest.raises(RulesError) as err:
        parse_rules("ACTION(EXPLODE)")
    assert len(err.value.errors) == 1 and "EXPLODE" in err.value.errors[0]


def test_a_comment_or_blank_line_inside_a_continuation_is_skipped_not_joined():
    t = parse_rules(
        "REASON(65537) +\n* why: undecodable records are useless\n\n     ACTION(DISCARD)\n"
        "DESTQ(qmon.act-\n*  (a comment in a - continuation)\nivity) ACTION(IGNORE)\n"
        "ACTION(FWD) +\n   * indented comment\n   FWDQ(x)\n"
    )
    assert [(r.line, r.action) for r in t.rules] == [(1, "DISCARD"), (5, "IGNORE"), (8, "FWD")]
    assert t.rules[0].patterns == {"REASON": 65537}
    assert t.rules[1].patterns == {"DESTQ": "qmon.activity"}
    assert t.rules[2].fwdq == "x"


def test_continuation_inside_a_quoted_value():
    t = parse_rules("APPLNAME('q+\n   mon') ACTION(DISCARD)\nUSERID('AB-\n C') ACTION(DISCARD)")
    assert t.rules[0].patterns == {"APPLNAME": "qmon"} and t.rules[1].patterns == {"USERID": "AB C"}


def test_a_retry_interval_of_zero_is_refused_with_its_line():
    import pytest

    from qmon.core.dlqrules import parse_rules

    with pytest.raises(Exception, match=r"line 1.*RETRYINT\(0\)"):
        parse_rules("INPUTQ(qmon.dlq) RETRYINT(0)\nACTION(IGNORE)\n")
