"""``qmon dlq-handler --dry-run``: what the DLQ handler would do with each dead letter, decided without doing
it.  Pure: the reading is ``connectors/dlqreader.py``'s, and whether a target topic exists is a function given.

The decision is the handler's own (``qmon.core.dlqretry.advance``, over the table ``qmon.core.dlqrules``
parses), with each attempt's result foreseen: a FWD or RETRY attempt succeeds when its target topic exists,
as it does in the handler, and fails when it does not, so a rule whose topic is missing uses up its RETRY
attempts and the next matching rule is tried, and a record every matching rule fails for is ignored (IBM MQ,
*Processing the rules table on z/OS*).  The waits between attempts (RETRYINT) are not waited: each record
shows when its first attempt would be due if that is later than now.

A record the handler has in its ledger starts from the attempts it has already made.  One that is not a
DeadLetter is left on the DLQ, as the handler leaves it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from qmon.core.deadletters import Labels, labels, table, utc
from qmon.core.dlqretry import Progress, advance, next_step
from qmon.core.dlqrules import Rule, RulesTable


@dataclass(frozen=True)
class Tried:
    """One attempt the handler would make: ``n`` (0-based) of ``rule``, to ``topic``, and whether it succeeds."""

    rule: Rule
    topic: str | None
    n: int
    ok: bool


@dataclass(frozen=True)
class Plan:
    """What the handler would do with one record: ``action`` (FWD, RETRY, DISCARD or IGNORE) by ``rule``
    (None: no rule, IGNORE assumed) to ``topic``, after the attempts ``tried``; ``due`` (epoch seconds) is
    when the first attempt would be made, when that is later than now."""

    action: str
    rule: Rule | None
    topic: str | None
    tried: tuple[Tried, ...] = ()
    due: float | None = None
    not_a_dead_letter: bool = False


def plan(
    table_: RulesTable,
    dead_letter: Mapping[str, Any] | None,
    progress: Progress,
    now: float,
    exists: Callable[[str], bool],
) -> Plan:
    """The handler's decision for one record, every attempt foreseen by ``exists(topic)``."""
    if dead_letter is None:
        return Plan("IGNORE", None, None, not_a_dead_letter=True)
    tried: list[Tried] = []

    def attempt(rule: Rule, topic: str | None, n: int) -> bool:
        ok = bool(topic) and exists(str(topic))
        tried.append(Tried(rule, topic, n, ok))
        return ok

    first = next_step(table_, dead_letter, progress)
    due = first.due if not first.final and first.due > now else None
    result = advance(table_, dead_letter, progress, math.inf, attempt)
    assert result.outcome is not None  # every attempt is made at once: there is always an outcome
    outcome = result.outcome
    return Plan(outcome.action, outcome.rule, outcome.topic, tuple(tried), due)


def rule_name(table_: RulesTable, rule: Rule | None) -> str:
    if rule is None:
        return "no rule"
    return f"rule {table_.rules.index(rule) + 1} (line {rule.line})"


def why(table_: RulesTable, p: Plan) -> str:
    """The plan in words: the attempts that fail on the way, and why a record is ignored."""
    if p.not_a_dead_letter:
        return "not a qmon DeadLetter: left on the DLQ"
    failed: Counter[tuple[str, str]] = Counter()
    for t in p.tried:
        if not t.ok:
            failed[(rule_name(table_, t.rule), t.topic or "")] += 1
    parts = [f"{r}: {topic} does not exist ({n} attempt(s) fail)" for (r, topic), n in failed.items()]
    if p.action == "IGNORE" and p.rule is None:
        parts.append("every matching rule failed" if failed else "no rule matches, or none has an attempt left")
    if p.due is not None:
        parts.append(f"first attempt due {utc(int(p.due * 1000))}")
    return "; ".join(parts)


@dataclass
class DryRun:
    """The plans of a dry run, in the order the records were read, and their counts per rule and action."""

    table: RulesTable
    rows: list[tuple[str, Labels, str, Plan]]  # (record, labels, where it is: new / waiting / ignored, plan)

    def __init__(self, table_: RulesTable) -> None:
        self.table = table_
        self.rows = []

    def add(self, record: str, header: Mapping[str, Any] | None, where: str, p: Plan) -> None:
        self.rows.append((record, labels(header), where, p))

    def counts(self) -> list[tuple[str, str, int]]:
        """(rule, action, records), in the table's order, then the records no rule took."""
        c: Counter[tuple[int, str]] = Counter()
        for _r, _l, _w, p in self.rows:
            c[(len(self.table.rules) if p.rule is None else self.table.rules.index(p.rule), p.action)] += 1
        return [
            (rule_name(self.table, self.table.rules[i] if i < len(self.table.rules) else None), action, n)
            for (i, action), n in sorted(c.items())
        ]

    def render(self, heading: str) -> str:
        rows = [
            [
                record,
                where,
                lab.reason or "-",
                lab.origin or "-",
                rule_name(self.table, p.rule),
                p.action,
                p.topic or "-",
                why(self.table, p),
            ]
            for record, lab, where, p in self.rows
        ]
        out = [heading, ""]
        if rows:
            head = ("RECORD", "STATE", "REASON", "ORIGINAL TOPIC", "RULE", "ACTION", "TO", "WHY")
            out += [table(rows, head), ""]
        counts = [[rule, action, str(n)] for rule, action, n in self.counts()]
        out.append(table(counts, ("RULE", "ACTION", "RECORDS"), {"RECORDS"}))
        by_action = Counter(p.action for *_x, p in self.rows)
        out += [
            "",
            "would " + ", ".join(f"{verb(a)} {by_action.get(a, 0)}" for a in ("FWD", "RETRY", "DISCARD", "IGNORE")),
        ]
        return "\n".join(out) + "\n"


def verb(action: str) -> str:
    return {"FWD": "forward", "RETRY": "retry", "DISCARD": "discard", "IGNORE": "leave on the DLQ (IGNORE)"}[action]
