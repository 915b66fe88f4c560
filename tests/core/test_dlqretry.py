"""The DLQ handler's retry schedule (pure, ``qmon.core.dlqretry``): when a record's next attempt is due,
which rule and attempt come next, when a record is ignored for good -- time is an argument, nothing
sleeps, and attempt counts are never reset."""

from __future__ import annotations

from qmon.core.dlqretry import Progress, Schedule, advance, decide, next_step
from qmon.core.dlqrules import parse_rules

PUT = 1_000.0  # the dead letter's put time, epoch seconds


def dl(**kw):
    base = {
        "reason": 65537,
        "reason_name": "QMON_UNDECODABLE",
        "dest_topic": "qmon.activity",
        "format": "QueueActivity",
        "put_appl_name": "qmon",
        "put_time": int(PUT * 1000),
    }
    base.update(kw)
    return base


def never(rule, topic, n):
    return False


class Recorder:
    """An attempt callback that records (topic, n) and succeeds for the topics in ``ok``."""

    def __init__(self, *ok):
        self.ok = set(ok)
        self.calls = []

    def __call__(self, rule, topic, n):
        self.calls.append((topic, n))
        return topic in self.ok


def test_first_matching_rule_its_retries_then_the_next_rule_then_ignore():
    t = parse_rules(
        "REASON(65537) ACTION(FWD) FWDQ(missing) RETRY(3)\n"
        "DESTQ(nomatch) ACTION(DISCARD)\n"
        "ACTION(FWD) FWDQ(exists) RETRY(2)\n"
    )
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


def test_a_retry_rule_is_due_retryint_after_the_put_time_then_retryint_after_each_failure():
    t = parse_rules("RETRYINT(10)\nACTION(RETRY) RETRY(3)")
    step = next_step(t, dl(), Progress())
    assert (step.action, step.n, step.topic, step.due) == ("RETRY", 0, "qmon.activity", PUT + 10)
    a = advance(t, dl(), Progress(), PUT + 9.9, never)  # not due: no attempt, nothing blocks
    assert a.outcome is None and a.made == 0 and a.step.due == PUT + 10
    a = advance(t, dl(), Progress(), PUT + 13, never)  # due: one attempt, fails at 13 -> next at 23
    assert a.outcome is None and (a.made, a.failed) == (1, 1) and (a.step.n, a.step.due) == (1, PUT + 23)
    assert a.progress.attempts == {t.rules[0].key: 1} and a.progress.last_failure == PUT + 13


def test_a_fwd_rule_is_attempted_at_once_and_the_next_rule_right_after_its_last_failure():
    t = parse_rules("RETRYINT(60)\nACTION(FWD) FWDQ(missing) RETRY(2)\nACTION(FWD) FWDQ(there)")
    rec = Recorder("there")
    a = advance(t, dl(), Progress(), PUT, rec)
    assert rec.calls == [("missing", 0)] and a.outcome is None and a.step.due == PUT + 60
    a = advance(t, dl(), a.progress, PUT + 60, rec)  # the second attempt fails, the next rule goes at once
    assert rec.calls == [("missing", 0), ("missing", 1), ("there", 0)]
    assert (a.outcome.action, a.outcome.topic, a.outcome.attempts, a.made, a.failed) == ("FWD", "there", 3, 2, 1)


def test_a_record_whose_rules_all_fail_is_attempted_exactly_retry_times_however_often_it_is_rescanned():
    t = parse_rules("RETRYINT(5)\nACTION(RETRY) RETRY(3)")
    rec = Recorder()
    progress, outcome, now = Progress(), None, PUT
    for _ in range(40):  # a rescan every 2.5 s for 100 s
        a = advance(t, dl(), progress, now, rec)
        progress, now = a.progress, now + 2.5
        if a.outcome is not None:
            outcome = outcome or a.outcome
    assert len(rec.calls) == 3 and [n for _, n in rec.calls] == [0, 1, 2]
    assert outcome.action == "IGNORE" and outcome.rule is None and progress.attempts == {t.rules[0].key: 3}
    assert next_step(t, dl(), progress).final  # ignored for good: no step left, whenever asked


def test_counts_are_never_reset_a_larger_retry_after_a_restart_gives_only_the_extra_attempts():
    before = parse_rules("RETRYINT(5)\nREASON(65537) ACTION(FWD) FWDQ(x) RETRY(2)")
    progress = advance(before, dl(), Progress(), PUT + 100, never).progress
    progress = advance(before, dl(), progress, PUT + 200, never).progress
    assert next_step(before, dl(), progress).action == "IGNORE"
    # the table edited between two runs: a comment moves the rule down, its RETRY goes to 3
    after = parse_rules(
        "RETRYINT(5)\n* forward undecodable records\nreason(QMON_UNDECODABLE) ACTION(FWD) +\n  FWDQ(x) RETRY(3)"
    )
    assert after.rules[0].key == before.rules[0].key and after.rules[0].line != before.rules[0].line
    step = next_step(after, dl(), progress)
    assert (step.action, step.n, step.due) == ("FWD", 2, PUT + 205)
    rec = Recorder()
    a = advance(after, dl(), progress, PUT + 300, rec)
    assert len(rec.calls) == 1 and a.outcome.action == "IGNORE"


def test_a_new_matching_rule_gets_its_attempts_the_used_up_ones_get_none():
    old = parse_rules("ACTION(FWD) FWDQ(a) RETRY(2)")
    progress = advance(old, dl(), Progress(), float("inf"), never).progress
    new = parse_rules("ACTION(FWD) FWDQ(a) RETRY(2)\nACTION(FWD) FWDQ(b) RETRY(2)")
    rec = Recorder("b")
    a = advance(new, dl(), progress, PUT, rec)
    assert rec.calls == [("b", 0)] and a.outcome.action == "FWD"


def test_identical_rules_keep_separate_counts():
    t = parse_rules("ACTION(FWD) FWDQ(a)\nACTION(FWD) FWDQ(a)")
    assert t.rules[0].key != t.rules[1].key
    rec = Recorder()
    assert decide(t, dl(), rec).action == "IGNORE" and rec.calls == [("a", 0), ("a", 0)]


def test_discard_and_ignore_rules_are_final_at_once_and_a_record_no_rule_matches_is_ignored():
    t = parse_rules("REASON(65542) ACTION(DISCARD)\nREASON(65539) ACTION(IGNORE)")
    assert next_step(t, dl(reason=65542), Progress()).action == "DISCARD"
    assert next_step(t, dl(reason=65539), Progress()).final
    a = advance(t, dl(), Progress(), PUT, never)
    assert a.outcome.action == "IGNORE" and a.outcome.rule is None and a.made == 0


def test_the_put_time_may_be_a_datetime_as_fastavro_decodes_it():
    from datetime import UTC, datetime

    t = parse_rules("RETRYINT(7)\nACTION(RETRY)")
    when = datetime.fromtimestamp(PUT, tz=UTC)
    assert next_step(t, dl(put_time=when), Progress()).due == PUT + 7


def test_the_schedule_is_ordered_by_due_time_and_a_key_put_again_moves():
    s = Schedule()
    s.put("a", 30.0)
    s.put("b", 10.0)
    s.put("c", 20.0)
    s.put("a", 5.0)  # rescheduled: supersedes a@30
    assert len(s) == 3 and s.next_due() == 5.0 and s.due_of("a") == 5.0
    assert s.pop_due(15.0) == ["a", "b"]
    assert s.next_due() == 20.0 and "c" in s and "a" not in s
    s.remove("c")
    assert s.next_due() is None and s.pop_due(1e9) == [] and len(s) == 0


def test_the_schedule_pops_at_most_limit_records_the_earliest_first():
    s = Schedule()
    for i in range(10):
        s.put(f"k{i}", float(10 - i))
    assert s.pop_due(100.0, limit=3) == ["k9", "k8", "k7"]
    assert len(s) == 7 and s.next_due() == 4.0
