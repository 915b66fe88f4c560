"""The DLQ handler's rules table, in IBM MQ syntax (runmqdlq / CSQUDLQH; SPEC §7, seed 002).  Pure.

A table is a control-data entry (optional, first) and rules::

    * comment lines start with an asterisk
    INPUTQ(qmon.dlq) RETRYINT(60) WAIT(YES)
    REASON(QMON_INVALID_COMMAND) ACTION(FWD) FWDQ(qmon.dlq.commands) HEADER(YES)
    DESTQ(qmon.activity) REASON(QMON_UNDECODABLE) +
        ACTION(RETRY) RETRY(3)
    ACTION(FWD) FWDQ(REALLY.DEAD.QUEUE) HEADER(YES)

Keywords are case-insensitive and in any order, separated by blanks or commas; a value
may be quoted ('...'); ``KEYWORD (value)`` with a blank is accepted.  A line ending in
``+`` continues at the first non-blank of the next line, ``-`` at its first column.

Pattern keywords and what they match in a qmon DeadLetter:

=========  ==========================================================
REASON     ``reason`` (a number, an MQRC_/MQFB_ symbol or a QMON_ name)
DESTQ      ``dest_topic``: the topic the record was read from
FORMAT     ``format``: QueueActivity, ControlCommand, JournalStatus
APPLNAME   ``put_appl_name``: always ``qmon``
DESTQM, APPLIDAT, APPLTYPE, FEEDBACK, MSGTYPE, PERSIST, REPLYQ, REPLYQM, USERID:
           accepted for compatibility; qmon's dead letters have no such field, so
           they match a blank value: ``*`` matches, anything more specific does not.
=========  ==========================================================

``*`` matches any run of characters and ``?`` one character.  The table is validated
entirely before the handler starts; every error is reported with its line number.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any

from qmon.reasons import CODE as QMON_CODES

CONTROL_KEYWORDS = ("INPUTQ", "INPUTQM", "RETRYINT", "WAIT")
PATTERN_KEYWORDS = ("APPLIDAT", "APPLNAME", "APPLTYPE", "DESTQ", "DESTQM", "FEEDBACK", "FORMAT", "MSGTYPE",
                    "PERSIST", "REASON", "REPLYQ", "REPLYQM", "USERID")
ACTION_KEYWORDS = ("ACTION", "FWDQ", "FWDQM", "HEADER", "PUTAUT", "RETRY")
ACTIONS = ("DISCARD", "IGNORE", "RETRY", "FWD")
#: Pattern keywords that match a field of qmon's DeadLetter (the rest match a blank).
MEANINGFUL = {"REASON": "reason", "DESTQ": "dest_topic", "FORMAT": "format", "APPLNAME": "put_appl_name"}
MAX_RETRY = 999_999_999

#: MQ reason codes a rule may name by symbol (those a qmon user is likely to meet).
MQRC: dict[str, int] = {
    "MQRC_NONE": 0, "MQRC_PUT_INHIBITED": 2051, "MQRC_Q_FULL": 2053, "MQRC_Q_SPACE_NOT_AVAILABLE": 2056,
    "MQRC_MSG_TOO_BIG_FOR_Q": 2030, "MQRC_NOT_AUTHORIZED": 2035, "MQRC_UNKNOWN_OBJECT_NAME": 2085,
    "MQRC_Q_MGR_NOT_AVAILABLE": 2059, "MQRC_Q_DEPTH_HIGH": 2224, "MQRC_Q_DEPTH_LOW": 2225,
    "MQRC_Q_SERVICE_INTERVAL_HIGH": 2226, "MQRC_Q_SERVICE_INTERVAL_OK": 2227, "MQRC_FORMAT_ERROR": 2110,
    "MQRC_NOT_CONVERTED": 2119, "MQRC_UNKNOWN_REMOTE_Q_MGR": 2087, "MQRC_STORAGE_MEDIUM_FULL": 2192,
    "MQFB_APPL_FIRST": 65536,
}
_NUMERIC = {"REASON": {**MQRC, **QMON_CODES},
            "FEEDBACK": {"MQFB_NONE": 0, "MQFB_EXPIRATION": 258, "MQFB_COA": 259, "MQFB_COD": 260,
                         "MQFB_QUIT": 256, "MQFB_APPL_FIRST": 65536, **QMON_CODES},
            "MSGTYPE": {"MQMT_REQUEST": 1, "MQMT_REPLY": 2, "MQMT_DATAGRAM": 8, "MQMT_REPORT": 4},
            "PERSIST": {"MQPER_NOT_PERSISTENT": 0, "MQPER_PERSISTENT": 1},
            "APPLTYPE": {"MQAT_UNKNOWN": -1, "MQAT_NO_CONTEXT": 0, "MQAT_UNIX": 6, "MQAT_JAVA": 28,
                         "MQAT_DEFAULT": 6}}


class RulesError(ValueError):
    """An invalid rules table: ``errors`` lists every problem as 'line N: ...'."""

    def __init__(self, source: str, errors: list[str]):
        self.source = source
        self.errors = errors
        super().__init__(f"{source}: {len(errors)} error(s) in the rules table:\n" + "\n".join(
            f"{source}: {e}" for e in errors))


@dataclass(frozen=True)
class Control:
    inputq: str | None = None  # default: the DLQ topic of the configuration
    inputqm: str | None = None  # accepted; qmon's "queue manager" is the Kafka cluster given by --bootstrap
    retryint: int = 60  # seconds
    wait: bool | int = True  # True: wait for ever; False: stop when the DLQ is empty; n: stop after n idle seconds


@dataclass(frozen=True)
class Rule:
    line: int
    patterns: dict[str, Any]  # keyword -> str pattern or int
    action: str
    fwdq: str | None = None
    fwdqm: str | None = None
    header: bool = True
    putaut: str = "DEF"
    retry: int = 1
    text: str = ""

    def matches(self, dead_letter: dict[str, Any]) -> bool:
        for kw, pattern in self.patterns.items():
            value = dead_letter.get(MEANINGFUL[kw]) if kw in MEANINGFUL else None
            if isinstance(pattern, int):
                if value is None or int(value) != pattern:
                    return False
            elif not fnmatch.fnmatchcase("" if value is None else str(value), pattern):
                if not (value is None and pattern.strip() == ""):
                    return False
        return True

    def forward_topic(self, dead_letter: dict[str, Any]) -> str | None:
        """FWDQ with &DESTQ replaced by the record's original topic."""
        if self.fwdq is None:
            return None
        return self.fwdq.replace("&DESTQ", str(dead_letter.get("dest_topic", "")))

    def describe(self) -> str:
        parts = [f"{k}({v})" for k, v in self.patterns.items()] + [f"ACTION({self.action})"]
        if self.action == "FWD":
            parts.append(f"FWDQ({self.fwdq})")
            if self.fwdqm:
                parts.append(f"FWDQM({self.fwdqm})")
            parts.append(f"HEADER({'YES' if self.header else 'NO'})")
        parts.append(f"RETRY({self.retry})")
        return " ".join(parts)


@dataclass(frozen=True)
class RulesTable:
    control: Control = field(default_factory=Control)
    rules: tuple[Rule, ...] = ()

    def matching(self, dead_letter: dict[str, Any]) -> list[Rule]:
        return [r for r in self.rules if r.matches(dead_letter)]


# ---------------------------------------------------------------- lexing


def _entries(text: str) -> list[tuple[int, str]]:
    """(first line number, joined text) of each entry: comments dropped, continuations joined."""
    entries: list[tuple[int, str]] = []
    current: str | None = None
    start = 0
    mode = ""
    for no, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if current is None:
            if not line.strip() or line.lstrip().startswith("*"):
                continue
            start, current = no, ""
            piece = line
        else:
            piece = line.lstrip() if mode == "+" else line
        if piece[-1:] in ("+", "-"):
            mode = piece[-1]
            current += piece[:-1]
            continue
        current += piece
        entries.append((start, current))
        current = None
    if current is not None:
        entries.append((start, current))
    return entries


_TOKEN = re.compile(r"""\s*,?\s*([A-Za-z]+)\s*(?:\(\s*('(?:[^']|'')*'|[^)]*?)\s*\))?""")


def _tokens(entry: str) -> tuple[list[tuple[str, str | None]], str | None]:
    """[(KEYWORD, value)], or an error text for what could not be read."""
    out: list[tuple[str, str | None]] = []
    pos = 0
    entry = entry.rstrip()
    while pos < len(entry):
        rest = entry[pos:]
        if not rest.strip(" ,"):
            break
        m = _TOKEN.match(entry, pos)
        if not m or m.end() == pos:
            return out, f"cannot read {rest.strip()[:30]!r}: expected KEYWORD(value)"
        kw, value = m.group(1).upper(), m.group(2)
        if value is not None and value.startswith("'") and value.endswith("'") and len(value) >= 2:
            value = value[1:-1].replace("''", "'")
        out.append((kw, value))
        pos = m.end()
        nxt = entry[pos:pos + 1]
        if nxt and nxt not in " ,":
            return out, f"after {kw}: unexpected {entry[pos:].strip()[:30]!r} (missing blank or unbalanced parenthesis?)"
    return out, None


def _number(kw: str, value: str) -> int:
    v = value.strip().upper()
    if re.fullmatch(r"-?\d+", v):
        return int(v)
    table = _NUMERIC.get(kw, {})
    if v in table:
        return table[v]
    raise ValueError(f"{kw}({value}): not a number or a known symbol" + (
        f" (for example {', '.join(list(table)[:3])})" if table else ""))


# ---------------------------------------------------------------- parsing


def parse_rules(text: str, source: str = "rules table") -> RulesTable:
    """Parse and validate a whole table; raise RulesError listing every error with its line."""
    errors: list[str] = []
    control: Control | None = None
    rules: list[Rule] = []
    for index, (line, entry) in enumerate(_entries(text)):
        toks, lex_error = _tokens(entry)
        if lex_error:
            errors.append(f"line {line}: {lex_error}")
            continue
        seen: dict[str, str | None] = {}
        bad = False
        for kw, value in toks:
            if kw in seen:
                errors.append(f"line {line}: {kw} appears twice in one entry")
                bad = True
            seen[kw] = value
            known = kw in CONTROL_KEYWORDS or kw in PATTERN_KEYWORDS or kw in ACTION_KEYWORDS
            if not known:
                errors.append(f"line {line}: {kw}: unknown keyword")
                bad = True
            elif value is None:
                errors.append(f"line {line}: {kw} needs a value in parentheses, e.g. {kw}(...)")
                bad = True
        if bad:
            continue
        ctl = [k for k in seen if k in CONTROL_KEYWORDS]
        if ctl:
            other = [k for k in seen if k not in CONTROL_KEYWORDS]
            if other:
                errors.append(f"line {line}: control data ({', '.join(ctl)}) cannot be mixed with rule keywords "
                              f"({', '.join(other)}); put the control data entry on its own, first")
            elif index != 0 or control is not None:
                errors.append(f"line {line}: control data must be the first entry of the table")
            else:
                try:
                    control = _control(seen)
                except ValueError as exc:
                    errors.append(f"line {line}: {exc}")
            continue
        try:
            rules.append(_rule(line, seen, entry.strip()))
        except ValueError as exc:
            errors.append(f"line {line}: {exc}")
    if errors:
        raise RulesError(source, errors)
    return RulesTable(control or Control(), tuple(rules))


def _control(kws: dict[str, str | None]) -> Control:
    retryint = 60
    wait: bool | int = True
    if "RETRYINT" in kws:
        v = (kws["RETRYINT"] or "").strip()
        if not v.isdigit():
            raise ValueError(f"RETRYINT({v}): the retry interval is a whole number of seconds")
        retryint = int(v)
    if "WAIT" in kws:
        v = (kws["WAIT"] or "").strip().upper()
        if v == "YES":
            wait = True
        elif v == "NO":
            wait = False
        elif v.isdigit():
            wait = int(v)
        else:
            raise ValueError(f"WAIT({v}): expected YES, NO or a number of seconds")
    return Control((kws.get("INPUTQ") or "").strip() or None, (kws.get("INPUTQM") or "").strip() or None,
                   retryint, wait)


def _rule(line: int, kws: dict[str, str | None], text: str) -> Rule:
    if "ACTION" not in kws:
        raise ValueError("a rule needs ACTION(DISCARD|IGNORE|RETRY|FWD)")
    action = (kws["ACTION"] or "").strip().upper()
    if action not in ACTIONS:
        raise ValueError(f"ACTION({kws['ACTION']}): expected DISCARD, IGNORE, RETRY or FWD")
    patterns: dict[str, Any] = {}
    for kw in PATTERN_KEYWORDS:
        if kw not in kws:
            continue
        value = kws[kw] or ""
        if kw in _NUMERIC and not any(c in value for c in "*?"):
            patterns[kw] = _number(kw, value)
        else:
            if len(value) > 48:
                raise ValueError(f"{kw}: the pattern is {len(value)} characters long; at most 48")
            patterns[kw] = value
    if action == "FWD" and not kws.get("FWDQ"):
        raise ValueError("ACTION(FWD) needs FWDQ(topic) (the topic to forward to; &DESTQ is the original topic)")
    for kw in ("FWDQ", "FWDQM", "HEADER"):
        if kw in kws and action != "FWD":
            raise ValueError(f"{kw} applies only to ACTION(FWD), not ACTION({action})")
    header = True
    if "HEADER" in kws:
        h = (kws["HEADER"] or "").strip().upper()
        if h not in ("YES", "NO"):
            raise ValueError(f"HEADER({kws['HEADER']}): expected YES or NO")
        header = h == "YES"
    putaut = (kws.get("PUTAUT") or "DEF").strip().upper()
    if putaut not in ("DEF", "CTX"):
        raise ValueError(f"PUTAUT({kws['PUTAUT']}): expected DEF or CTX")
    retry = 1
    if "RETRY" in kws:
        v = (kws["RETRY"] or "").strip()
        if not v.isdigit() or not (1 <= int(v) <= MAX_RETRY):
            raise ValueError(f"RETRY({v}): the number of attempts is a whole number from 1 to {MAX_RETRY}")
        retry = int(v)
    fwdq = kws.get("FWDQ")
    if fwdq is not None and not re.fullmatch(r"(&DESTQ|[A-Za-z0-9._-])+", fwdq.strip()):
        raise ValueError(f"FWDQ({fwdq}): not a valid topic name (letters, digits, '.', '_', '-', or &DESTQ)")
    return Rule(line, patterns, action, fwdq.strip() if fwdq else None, kws.get("FWDQM"), header, putaut, retry,
                " ".join(text.split()))


# ---------------------------------------------------------------- the handler's decision


@dataclass(frozen=True)
class Outcome:
    action: str  # DISCARD, IGNORE, RETRY or FWD: what was done
    rule: Rule | None  # the rule whose action succeeded (None: no rule succeeded, IGNORE assumed)
    attempts: int  # attempts made over all matching rules
    topic: str | None = None  # where the record goes (RETRY: its original topic; FWD: FWDQ)


def decide(table: RulesTable, dead_letter: dict[str, Any], attempt: Any) -> Outcome:
    """Seed 002: the first matching rule is attempted up to RETRY times; when its attempts are used
    up, the next matching rule; when every matching rule has failed, or none matches, IGNORE.

    ``attempt(rule, topic, n)`` performs one attempt of a RETRY or FWD (n = 0, 1, ...) and says
    whether it succeeded; it is responsible for waiting RETRYINT between attempts.  DISCARD and
    IGNORE always succeed.
    """
    attempts = 0
    for rule in table.matching(dead_letter):
        if rule.action in ("DISCARD", "IGNORE"):
            return Outcome(rule.action, rule, attempts + 1)
        topic = dead_letter.get("dest_topic") if rule.action == "RETRY" else rule.forward_topic(dead_letter)
        for n in range(rule.retry):
            attempts += 1
            if attempt(rule, topic, n):
                return Outcome(rule.action, rule, attempts, topic)
    return Outcome("IGNORE", None, attempts)
