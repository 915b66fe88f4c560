"""The DLQ handler's dry run (qmon.core.dlqdryrun): the handler's decision for each record with every attempt
foreseen by whether its target topic exists, the attempts a ledger entry already made, and the counts per rule
and action."""

from __future__ import annotations

from qmon.core.dlqdryrun import DryRun, Plan, plan, rule_name, why
from qmon.core.dlqretry import Progress
from qmon.core.dlqrules import parse_rules
from qmon.core.reasons import CODE

NOW = 1_736_500_000.0  # 2025-01-10T09:06:40Z, epoch seconds

TABLE = parse_rules(
    """RETRYINT(60) WAIT(NO)
REASON(QMON_INVALID_COMMAND) ACTION(FWD) FWDQ(&DESTQ.invalid) HEADER(YES)
DESTQ(*.activity) REASON(QMON_UNDECODABLE) ACTION(FWD) FWDQ(&DESTQ.undecodable) HEADER(NO) RETRY(2)
REASON(QMON_INVALID_FIELD) ACTION(RETRY) RETRY(3)
REASON(QMON_MISSING_FIELD) ACTION(DISCARD)
ACTION(FWD) FWDQ(&DESTQ.manual)
"""
)
EXISTING = {"qmon.control.invalid", "qmon.activity.manual", "qmon.activity"}


def dl(reason: str, dest: str = "qmon.activity", put_s: float = NOW - 3600) -> dict:
    return {
        "reason": CODE[reason],
        "reason_name": reason,
        "dest_topic": dest,
        "format": "QueueActivity",
        "put_appl_name": "qmon",
        "put_time": int(put_s * 1000),
    }


def planned(dead_letter, progress: Progress | None = None) -> Plan:
    return plan(TABLE, dead_letter, progress or Progress(), NOW, EXISTING.__contains__)


def test_the_first_matching_rule_whose_topic_exists_takes_the_record():
    p = planned(dl("QMON_INVALID_COMMAND", "qmon.control"))
    assert (p.action, rule_name(TABLE, p.rule), p.topic) == ("FWD", "rule 1 (line 2)", "qmon.control.invalid")
    assert [(t.n, t.ok) for t in p.tried] == [(0, True)] and p.due is None
    assert why(TABLE, p) == ""


def test_a_missing_topic_uses_up_the_rules_attempts_then_the_next_matching_rule_is_tried():
    p = planned(dl("QMON_UNDECODABLE"))
    assert (p.action, rule_name(TABLE, p.rule), p.topic) == ("FWD", "rule 5 (line 6)", "qmon.activity.manual")
    assert [(rule_name(TABLE, t.rule), t.n, t.ok) for t in p.tried] == [
        ("rule 2 (line 3)", 0, False),
        ("rule 2 (line 3)", 1, False),
        ("rule 5 (line 6)", 0, True),
    ]
    assert why(TABLE, p) == "rule 2 (line 3): qmon.activity.undecodable does not exist (2 attempt(s) fail)"


def test_every_matching_rule_failing_ignores_the_record():
    p = planned(dl("QMON_UNDECODABLE", "qmon.journal"))  # rule 2 is for *.activity; rule 5's topic is missing
    assert (p.action, p.rule, p.topic) == ("IGNORE", None, None)
    assert why(TABLE, p) == (
        "rule 5 (line 6): qmon.journal.manual does not exist (1 attempt(s) fail); every matching rule failed"
    )


def test_a_retry_shows_when_its_first_attempt_is_due_and_discard_takes_effect_at_once():
    p = planned(dl("QMON_INVALID_FIELD", put_s=NOW - 10))  # RETRY: due RETRYINT after the put time
    assert (p.action, p.topic, p.due) == ("RETRY", "qmon.activity", NOW + 50)
    assert why(TABLE, p) == "first attempt due 2025-01-10 09:07:30Z"
    d = planned(dl("QMON_MISSING_FIELD"))
    assert (d.action, rule_name(TABLE, d.rule), d.tried) == ("DISCARD", "rule 4 (line 5)", ())


def test_a_record_that_is_not_a_dead_letter_is_left_on_the_dlq():
    p = planned(None)
    assert (p.action, p.rule, p.not_a_dead_letter) == ("IGNORE", None, True)
    assert why(TABLE, p) == "not a qmon DeadLetter: left on the DLQ"


def test_a_ledger_entry_starts_from_the_attempts_it_already_made():
    rule2 = TABLE.rules[1]
    used_up = Progress({rule2.key: 2}, NOW - 120)
    p = planned(dl("QMON_UNDECODABLE"), used_up)
    assert (p.action, rule_name(TABLE, p.rule)) == ("FWD", "rule 5 (line 6)")
    assert [t.rule for t in p.tried] == [TABLE.rules[4]]  # no attempt of rule 2 is left
    nothing_left = Progress({rule2.key: 2, TABLE.rules[4].key: 1}, NOW - 120)
    assert planned(dl("QMON_UNDECODABLE"), nothing_left).action == "IGNORE"


def test_the_dry_run_lists_each_record_and_counts_per_rule_and_action():
    run = DryRun(TABLE)
    run.add(
        "qmon.dlq/0/0",
        dl("QMON_INVALID_COMMAND", "qmon.control"),
        "new",
        planned(dl("QMON_INVALID_COMMAND", "qmon.control")),
    )
    run.add("qmon.dlq/0/1", dl("QMON_UNDECODABLE"), "new", planned(dl("QMON_UNDECODABLE")))
    run.add("qmon.dlq/1/0", dl("QMON_UNDECODABLE"), "ignored", planned(dl("QMON_UNDECODABLE")))
    run.add("qmon.dlq/1/1", None, "new", planned(None))
    assert run.counts() == [("rule 1 (line 2)", "FWD", 1), ("rule 5 (line 6)", "FWD", 2), ("no rule", "IGNORE", 1)]
    text = run.render("dry run of t.rules on qmon.dlq")
    lines = text.splitlines()
    assert lines[0] == "dry run of t.rules on qmon.dlq"
    assert lines[2].split() == ["RECORD", "STATE", "REASON", "ORIGINAL", "TOPIC", "RULE", "ACTION", "TO", "WHY"]
    assert lines[3].split()[:8] == [
        "qmon.dlq/0/0",
        "new",
        "QMON_INVALID_COMMAND",
        "qmon.control",
        "rule",
        "1",
        "(line",
        "2)",
    ]
    assert lines[6].split()[:5] == ["qmon.dlq/1/1", "new", "-", "-", "no"]
    assert lines[6].endswith("not a qmon DeadLetter: left on the DLQ")
    assert lines[-5:] == [
        "rule 1 (line 2)  FWD           1",
        "rule 5 (line 6)  FWD           2",
        "no rule          IGNORE        1",
        "",
        "would forward 3, retry 0, discard 0, leave on the DLQ (IGNORE) 1",
    ]
    assert (
        DryRun(TABLE).render("h").splitlines()[-1] == "would forward 0, retry 0, discard 0, leave on the DLQ (IGNORE) 0"
    )
