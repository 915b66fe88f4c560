"""The DLQ handler's retry schedule: the rules table's RETRY and RETRYINT keywords put to work (IBM MQ,
*The DLQ handler rules table*).  Pure: time is an argument and nothing sleeps.

For a dead letter and a parsed table (``qmon.core.dlqrules``) it says which rule and attempt come next,
when that attempt is due, and when the record is ignored for good.  Kept apart from the moving of
records so the decisions can be tested without Kafka: ``connectors/dlqhandler.py`` only moves records.

IBM MQ, *Processing the rules table on z/OS*: the first matching rule is attempted up to its RETRY
count; when its attempts are used up, the next matching rule; when every matching rule has failed, or
none matches, IGNORE.  MQ makes the repeated attempts at the RETRYINT rescans of the DLQ; qmon gives
each dead letter a due time instead, so a record waiting for its next attempt never holds up the others:

* a FWD rule's first attempt is due at once; a RETRY rule's first attempt is due RETRYINT after the
  record's put time (the original put failed then; retrying it at once would most likely fail again);
* every later attempt of a rule is due RETRYINT after the record's last failed attempt;
* when a rule's attempts are used up the next matching rule is tried at once (its own first-attempt
  rule above applies);
* a record is ignored for good when no matching rule has an attempt left (or it matches none, or an
  ACTION(IGNORE) rule comes first).  Attempt counts are kept with the record and never reset: rules
  are read only when the handler starts (IBM MQ's DLQ handler: changes to the table "do not come into
  effect until the DLQ handler is restarted"), so only a restart with a changed table --
  a new rule that matches it, or a larger RETRY on a rule it used up -- can give it another attempt.

``Schedule`` holds the records waiting for an attempt, ordered by due time.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from qmon.core.dlqrules import Rule, RulesTable


def put_seconds(dead_letter: Mapping[str, Any]) -> float:
    """The record's put time in epoch seconds (a datetime as fastavro decodes it, or epoch milliseconds)."""
    put = dead_letter.get("put_time")
    if put is None:
        return 0.0
    if hasattr(put, "timestamp"):
        return float(put.timestamp())
    return int(put) / 1000


@dataclass(frozen=True)
class Progress:
    """What the handler has done for one dead letter: attempts made per rule (by ``Rule.key``) and
    the time (epoch seconds) of its latest failed attempt.  Kept in the handler's ledger."""

    attempts: Mapping[str, int] = field(default_factory=dict)
    last_failure: float | None = None

    @property
    def made(self) -> int:
        return sum(self.attempts.values())


@dataclass(frozen=True)
class Step:
    """The next thing to do for a dead letter.

    ``action`` FWD or RETRY: attempt number ``n`` (0-based) of ``rule``, to ``topic``, not before
    ``due`` (epoch seconds).  ``action`` DISCARD or IGNORE: final, due at once; ``rule`` None means
    no rule is left (IGNORE assumed).
    """

    action: str
    rule: Rule | None
    n: int = 0
    topic: str | None = None
    due: float = 0.0

    @property
    def final(self) -> bool:
        return self.action in ("DISCARD", "IGNORE")


@dataclass(frozen=True)
class Outcome:
    action: str  # DISCARD, IGNORE, RETRY or FWD: what was done
    rule: Rule | None  # the rule whose action succeeded (None: no rule succeeded, IGNORE assumed)
    attempts: int  # attempts made over all matching rules
    topic: str | None = None  # where the record goes (RETRY: its original topic; FWD: FWDQ)


@dataclass(frozen=True)
class Advance:
    """The result of ``advance``: a final ``outcome``, or None and the ``step`` the record waits for."""

    outcome: Outcome | None
    progress: Progress
    step: Step
    made: int = 0  # attempts made by this call
    failed: int = 0  # of which failed

    @property
    def due(self) -> float | None:
        return None if self.outcome is not None else self.step.due


def next_step(table: RulesTable, dead_letter: Mapping[str, Any], progress: Progress) -> Step:
    """Which rule and attempt come next for ``dead_letter``, and when (see the rules above)."""
    retryint = table.control.retryint
    for rule in table.matching(dead_letter):
        if rule.action in ("DISCARD", "IGNORE"):
            return Step(rule.action, rule)
        made = progress.attempts.get(rule.key, 0)
        if made >= rule.retry:
            continue
        if rule.action == "RETRY":
            topic = dead_letter.get("dest_topic")
        else:
            topic = rule.forward_topic(dead_letter)
        if made > 0:
            due = (progress.last_failure or 0.0) + retryint
        elif rule.action == "RETRY":
            due = put_seconds(dead_letter) + retryint
        else:
            due = 0.0
        return Step(rule.action, rule, made, topic, due)
    return Step("IGNORE", None)


def failed(progress: Progress, step: Step, now: float) -> Progress:
    """``progress`` after ``step``'s attempt failed at ``now``."""
    assert step.rule is not None
    attempts = dict(progress.attempts)
    attempts[step.rule.key] = step.n + 1
    return Progress(attempts, now)


def advance(
    table: RulesTable,
    dead_letter: Mapping[str, Any],
    progress: Progress,
    now: float,
    attempt: Callable[[Rule, str | None, int], bool],
) -> Advance:
    """Make every attempt for ``dead_letter`` that is due at ``now``, in the rules' order.

    ``attempt(rule, topic, n)`` makes attempt ``n`` (0-based) of a FWD or RETRY rule, at once,
    and says whether it succeeded.  Returns the final outcome (an attempt succeeded, DISCARD, or
    IGNORE), or ``outcome=None`` with the step the record now waits for (``step.due > now``).
    """
    made = fails = 0
    while True:
        step = next_step(table, dead_letter, progress)
        if step.final:
            outcome = Outcome(step.action, step.rule, progress.made + (1 if step.rule else 0))
            return Advance(outcome, progress, step, made, fails)
        if step.due > now:
            return Advance(None, progress, step, made, fails)
        made += 1
        assert step.rule is not None
        if attempt(step.rule, step.topic, step.n):
            attempts = {**progress.attempts, step.rule.key: step.n + 1}
            done = Progress(attempts, progress.last_failure)
            return Advance(Outcome(step.action, step.rule, done.made, step.topic), done, step, made, fails)
        fails += 1
        progress = failed(progress, step, now)


def decide(
    table: RulesTable, dead_letter: Mapping[str, Any], attempt: Callable[[Rule, str | None, int], bool]
) -> Outcome:
    """The whole decision with every attempt made at once, whatever RETRYINT says (the handler itself
    uses ``advance`` and waits for each attempt's due time without blocking other records)."""
    result = advance(table, dead_letter, Progress(), math.inf, attempt)
    assert result.outcome is not None
    return result.outcome


class Schedule:
    """Records waiting for an attempt, by key, ordered by due time.

    A heap of (due, sequence, key); putting a key again supersedes its earlier entry, which is
    dropped when it reaches the top.  ``pop_due(now)`` yields the keys due at ``now``, earliest first.
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str]] = []
        self._live: dict[str, tuple[float, int]] = {}  # key -> (due, sequence) of its current entry
        self._seq = 0

    def put(self, key: str, due: float) -> None:
        self._seq += 1
        self._live[key] = (due, self._seq)
        heapq.heappush(self._heap, (due, self._seq, key))

    def remove(self, key: str) -> None:
        self._live.pop(key, None)

    def due_of(self, key: str) -> float | None:
        live = self._live.get(key)
        return None if live is None else live[0]

    def _top(self) -> tuple[float, int, str] | None:
        while self._heap:
            due, seq, key = self._heap[0]
            if self._live.get(key) == (due, seq):
                return self._heap[0]
            heapq.heappop(self._heap)  # superseded or removed
        return None

    def next_due(self) -> float | None:
        """The earliest due time, or None when nothing waits."""
        top = self._top()
        return None if top is None else top[0]

    def pop_due(self, now: float, limit: int | None = None) -> list[str]:
        """Remove and return the keys due at ``now`` (at most ``limit``), earliest first."""
        out: list[str] = []
        while limit is None or len(out) < limit:
            top = self._top()
            if top is None or top[0] > now:
                break
            heapq.heappop(self._heap)
            del self._live[top[2]]
            out.append(top[2])
        return out

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, key: object) -> bool:
        return key in self._live
