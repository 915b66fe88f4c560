"""MQSC parsing: quoting, case folding, continuation, comments and errors that name the keyword."""

from __future__ import annotations

import pytest

from qmon.mqsc import MqscError, canonical, parse_command, split_script


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


@pytest.mark.parametrize("text,keyword,fragment", [
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
])
def test_errors_name_the_keyword(text, keyword, fragment):
    with pytest.raises(MqscError) as info:
        parse_command(text)
    assert info.value.keyword == keyword
    assert fragment in info.value.message


def test_interest_and_generic_names():
    cmd = parse_command("REGISTER INTEREST QUEUE(1TRAN*) CLIENT(imsa)")
    assert cmd.name == "1TRAN*" and cmd.generic and cmd.scope == "qmgr" and cmd.attrs == {"CLIENT": "IMSA"}
    assert parse_command("ALTER QLOCAL(A)").scope == "queue"


def test_canonical_echo():
    assert canonical(parse_command("alter qlocal(a) qsvcint(5) qdphiev(enabled)")) == \
        "ALTER QLOCAL('A') QSVCINT(5) QDPHIEV(ENABLED)"


def test_a_huge_number_is_an_error_not_a_crash():
    import pytest as _pytest

    from qmon.mqsc import MqscError, parse_command

    with _pytest.raises(MqscError) as err:
        parse_command("ALTER QLOCAL(Q1) QSVCINT(" + "9" * 10_000 + ")")
    assert err.value.keyword == "QSVCINT" and "out of range" in str(err.value)
    assert parse_command("ALTER QLOCAL(Q1) QSVCINT(000000000000000000000002000)").attrs["QSVCINT"] == 2000
