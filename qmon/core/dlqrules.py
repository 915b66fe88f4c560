"""The DLQ handler's rules table, in IBM MQ syntax (runmqdlq / CSQUDLQH; IBM MQ, *The DLQ handler rules
table*).  Pure.

A table is a control-data entry (optional, first) and at least one rule::

    * comment lines start with an asterisk
    INPUTQ(qmon.dlq) RETRYINT(60) WAIT(YES)
    REASON(QMON_INVALID_COMMAND) ACTION(FWD) FWDQ(qmon.dlq.commands) HEADER(YES)
    DESTQ(qmon.activity) REASON(QMON_UNDECODABLE) +
        ACTION(RETRY) RETRY(3)
    ACTION(FWD) FWDQ(REALLY.DEAD.QUEUE) HEADER(YES)

Keywords are case-insensitive and in any order, separated by blanks or commas; a value
may be quoted ('...'); ``KEYWORD (value)`` with a blank is accepted.  A line ending in
``+`` continues at the first non-blank of the next line, ``-`` at its first column.
Comment lines and blank lines may stand anywhere, also between the lines of a continued
entry: they are skipped, never joined (MQ's rules table conventions: "comment lines ...
can occur anywhere in the rules table"; "blank lines are ignored").

As in MQ, an unquoted value is folded to upper case, except the values of ``INPUTQ``,
``DESTQ`` and ``FWDQ``, which name Kafka topics (case-sensitive names).  A quoted value
keeps its case.  Every value needs at least one significant character (``FORMAT()`` and
``FORMAT('')`` are errors; ``FORMAT(' ')`` is a blank).  A numeric keyword (``REASON``,
``FEEDBACK``, ``MSGTYPE``, ``PERSIST``, ``APPLTYPE``) takes a number, a symbol, or ``*``
alone; a wildcard inside a number (``REASON(655*)``) is an error.

Pattern keywords and what they match in a qmon DeadLetter:

=========  ==========================================================
REASON     ``reason`` (a number, an MQRC_/MQFB_ symbol or a QMON_ name)
DESTQ      ``dest_topic``: the topic the record was read from
FORMAT     ``format``: QueueActivity, ControlCommand, JournalStatus (mixed
           case: quote the value, ``FORMAT('QueueActivity')``)
APPLNAME   ``put_appl_name``: always ``qmon`` (quote it: ``APPLNAME('qmon')``)
DESTQM, APPLIDAT, APPLTYPE, FEEDBACK, MSGTYPE, PERSIST, REPLYQ, REPLYQM, USERID:
           accepted for compatibility; qmon's dead letters have no such field, so
           they match a blank value: ``*`` matches, anything more specific does not.
=========  ==========================================================

``*`` matches any run of characters and ``?`` one character.  The table is validated
entirely before the handler starts; every error is reported with its line number.

The attempts a table asks for (which matching rule next, its RETRY attempts RETRYINT apart)
are scheduled by ``qmon.core.dlqretry``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from qmon.core import topics
from qmon.core.reasons import CODE as QMON_CODES

CONTROL_KEYWORDS = ("INPUTQ", "INPUTQM", "RETRYINT", "WAIT")
PATTERN_KEYWORDS = (
    "APPLIDAT",
    "APPLNAME",
    "APPLTYPE",
    "DESTQ",
    "DESTQM",
    "FEEDBACK",
    "FORMAT",
    "MSGTYPE",
    "PERSIST",
    "REASON",
    "REPLYQ",
    "REPLYQM",
    "USERID",
)
ACTION_KEYWORDS = ("ACTION", "FWDQ", "FWDQM", "HEADER", "PUTAUT", "RETRY")
ACTIONS = ("DISCARD", "IGNORE", "RETRY", "FWD")
#: Keywords whose unquoted values keep their case: they name Kafka topics, and topic names are
#: case-sensitive.  Every other unquoted value is folded to upper case, as MQ does.
CASE_KEPT = ("INPUTQ", "DESTQ", "FWDQ")
#: Pattern keywords that match a field of qmon's DeadLetter (the rest match a blank).
MEANINGFUL = {"REASON": "reason", "DESTQ": "dest_topic", "FORMAT": "format", "APPLNAME": "put_appl_name"}
#: The only values qmon ever writes in these fields (a folded pattern that can match none of them is an error).
KNOWN_VALUES = {"FORMAT": tuple(topics.RECORD_OF[t] for t in topics.INPUTS), "APPLNAME": ("qmon",)}
MAX_RETRY = 999_999_999

#: MQ reason codes a rule may name by symbol (those a qmon user is likely to meet).
MQRC: dict[str, int] = {
    "MQRC_NONE": 0,
    "MQRC_PUT_INHIBITED": 2051,
    "MQRC_Q_FULL": 2053,
    "MQRC_Q_SPACE_NOT_AVAILABLE": 2056,
    "MQRC_MSG_TOO_BIG_FOR_Q": 2030,
    "MQRC_NOT_AUTHORIZED": 2035,
    "MQRC_UNKNOWN_OBJECT_NAME": 2085,
    "MQRC_Q_MGR_NOT_AVAILABLE": 2059,
    "MQRC_Q_DEPTH_HIGH": 2224,
    "MQRC_Q_DEPTH_LOW": 2225,
    "MQRC_Q_SERVICE_INTERVAL_HIGH": 2226,
    "MQRC_Q_SERVICE_INTERVAL_OK": 2227,
    "MQRC_FORMAT_ERROR": 2110,
    "MQRC_NOT_CONVERTED": 2119,
    "MQRC_UNKNOWN_REMOTE_Q_MGR": 2087,
    "MQRC_STORAGE_MEDIUM_FULL": 2192,
    "MQFB_APPL_FIRST": 65536,
}
_NUMERIC = {
    "REASON": {**MQRC, **QMON_CODES},
    "FEEDBACK": {
        "MQFB_NONE": 0,
        "MQFB_EXPIRATION": 258,
        "MQFB_COA": 259,
        "MQFB_COD": 260,
        "MQFB_QUIT": 256,
        "MQFB_APPL_FIRST": 65536,
        **QMON_CODES,
    },
    "MSGTYPE": {"MQMT_REQUEST": 1, "MQMT_REPLY": 2, "MQMT_DATAGRAM": 8, "MQMT_REPORT": 4},
    "PERSIST": {"MQPER_NOT_PERSISTENT": 0, "MQPER_PERSISTENT": 1},
    "APPLTYPE": {"MQAT_UNKNOWN": -1, "MQAT_NO_CONTEXT": 0, "MQAT_UNIX": 6, "MQAT_JAVA": 28, "MQAT_DEFAULT": 6},
}


class RulesError(ValueError):
    """An invalid rules table: ``errors`` lists every problem as 'line N: ...'."""

    def __init__(self, source: str, errors: list[str]):
        self.source = source
        self.errors = errors
        super().__init__(
            f"{source}: {len(errors)} error(s) in the rules table:\n" + "\n".join(f"{source}: {e}" for e in errors)
        )


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
    #: What the handler counts attempts against (see ``identity``); set by the parser, unique in a table.
    key: str = ""

    def matches(self, dead_letter: Mapping[str, Any]) -> bool:
        for kw, pattern in self.patterns.items():
            value = dead_letter.get(MEANINGFUL[kw]) if kw in MEANINGFUL else None
            if isinstance(pattern, int):
                if value is None or int(value) != pattern:
                    return False
            elif not fnmatch.fnmatchcase("" if value is None else str(value), pattern):
                if not (value is None and pattern.strip() == ""):
                    return False
        return True

    def forward_topic(self, dead_letter: Mapping[str, Any]) -> str | None:
        """FWDQ with &DESTQ replaced by the record's original topic."""
        if self.fwdq is None:
            return None
        return self.fwdq.replace("&DESTQ", str(dead_letter.get("dest_topic", "")))

    @property
    def identity(self) -> str:
        """The rule without its RETRY count, FWDQM and PUTAUT (which qmon does not use) and its line.

        Attempt counts are kept against this, so a table edited between two runs of the handler
        (a comment added, RETRY raised) keeps the counts of the rules it still has: a count is
        never reset, and a raised RETRY gives only the extra attempts.
        """
        parts = [f"{k}({self.patterns[k]})" for k in sorted(self.patterns)] + [f"ACTION({self.action})"]
        if self.action == "FWD":
            parts += [f"FWDQ({self.fwdq})", f"HEADER({'YES' if self.header else 'NO'})"]
        return " ".join(parts)

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

    def matching(self, dead_letter: Mapping[str, Any]) -> list[Rule]:
        return [r for r in self.rules if r.matches(dead_letter)]


# ---------------------------------------------------------------- lexing


def _entries(text: str) -> list[tuple[int, str]]:
    """(first line number, joined text) of each entry: comments dropped, continuations joined.

    A comment line or a blank line inside a continued entry is skipped: the entry goes on
    at the next line that is neither.
    """
    entries: list[tuple[int, str]] = []
    current: str | None = None
    start = 0
    mode = ""
    for no, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("*"):
            continue
        if current is None:
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


@dataclass(frozen=True)
class _Token:
    keyword: str
    value: str | None  # None: no parenthesis at all
    quoted: bool = False


def _tokens(entry: str) -> tuple[list[_Token], str | None]:
    """The entry's keywords and values, or an error text for what could not be read."""
    out: list[_Token] = []
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
        quoted = value is not None and len(value) >= 2 and value.startswith("'") and value.endswith("'")
        if quoted:
            assert value is not None
            value = value[1:-1].replace("''", "'")
        out.append(_Token(kw, value, quoted))
        pos = m.end()
        nxt = entry[pos : pos + 1]
        if nxt and nxt not in " ,":
            return (
                out,
                f"after {kw}: unexpected {entry[pos:].strip()[:30]!r} (missing blank or unbalanced parenthesis?)",
            )
    return out, None


def _number(kw: str, value: str) -> int:
    v = value.strip().upper()
    if re.fullmatch(r"-?\d+", v):
        return int(v)
    table = _NUMERIC.get(kw, {})
    if v in table:
        return table[v]
    raise ValueError(
        f"{kw}({value}): not a number or a known symbol"
        + (f" (for example {', '.join(list(table)[:3])})" if table else "")
    )


# ---------------------------------------------------------------- parsing


def parse_rules(text: str, source: str = "rules table") -> RulesTable:
    """Parse and validate a whole table; raise RulesError listing every error with its line."""
    errors: list[str] = []
    control: Control | None = None
    rules: list[Rule] = []
    rule_entries = 0
    for index, (line, entry) in enumerate(_entries(text)):
        toks, lex_error = _tokens(entry)
        if lex_error:
            errors.append(f"line {line}: {lex_error}")
            rule_entries += 1  # unreadable: do not also report "no rules" for it
            continue
        seen: dict[str, str | None] = {}
        raw: dict[str, str] = {}  # the values as written (for messages)
        bad = False
        for tok in toks:
            kw, value = tok.keyword, tok.value
            if kw in seen:
                errors.append(f"line {line}: {kw} appears twice in one entry")
                bad = True
            known = kw in CONTROL_KEYWORDS or kw in PATTERN_KEYWORDS or kw in ACTION_KEYWORDS
            if not known:
                errors.append(f"line {line}: {kw}: unknown keyword")
                bad = True
            elif value is None:
                errors.append(f"line {line}: {kw} needs a value in parentheses, e.g. {kw}(...)")
                bad = True
            elif value == "" or (not tok.quoted and not value.strip()):
                shown = f"{kw}('')" if tok.quoted else f"{kw}()"
                hint = (
                    f"write {kw}(*) to match anything or {kw}(' ') for a blank"
                    if kw in PATTERN_KEYWORDS
                    else "give it a value or leave the keyword out"
                )
                msg = f"line {line}: {shown}: a value needs at least one significant character; {hint}"
                errors.append(msg)
                bad = True
            if value is not None:
                raw[kw] = f"'{value}'" if tok.quoted else value
                if not tok.quoted and kw not in CASE_KEPT:
                    value = value.upper()
            seen[kw] = value
        ctl = [k for k in seen if k in CONTROL_KEYWORDS]
        if len(ctl) < len(seen):  # meant as a rule (or mixed, which is reported as such)
            rule_entries += 1
        if bad:
            continue
        if ctl:
            other = [k for k in seen if k not in CONTROL_KEYWORDS]
            if other:
                errors.append(
                    f"line {line}: control data ({', '.join(ctl)}) cannot be mixed with rule keywords "
                    f"({', '.join(other)}); put the control data entry on its own, first"
                )
            elif index != 0 or control is not None:
                errors.append(f"line {line}: control data must be the first entry of the table")
            else:
                try:
                    control = _control(seen)
                except ValueError as exc:
                    errors.append(f"line {line}: {exc}")
            continue
        try:
            rules.append(_rule(line, seen, raw, entry.strip()))
        except ValueError as exc:
            errors.append(f"line {line}: {exc}")
    if rule_entries == 0:
        last = max(1, len(text.splitlines()))
        what = "only control data" if control is not None or errors else "only comments and blank lines"
        errors.append(
            f"line {last}: end of the table, and no rule ({what}): a rules table needs at least one "
            f"rule, e.g. the catch-all IBM MQ recommends, ACTION(FWD) FWDQ(topic) HEADER(YES)"
        )
    if errors:
        raise RulesError(source, errors)
    return RulesTable(control or Control(), _keyed(rules))


def _keyed(rules: list[Rule]) -> tuple[Rule, ...]:
    """Each rule with its attempt-count key: its identity, and ' #n' for the n-th copy of an identical rule."""
    out: list[Rule] = []
    copies: dict[str, int] = {}
    for r in rules:
        n = copies[r.identity] = copies.get(r.identity, 0) + 1
        out.append(
            Rule(
                r.line,
                r.patterns,
                r.action,
                r.fwdq,
                r.fwdqm,
                r.header,
                r.putaut,
                r.retry,
                r.text,
                r.identity if n == 1 else f"{r.identity} #{n}",
            )
        )
    return tuple(out)


def _control(kws: dict[str, str | None]) -> Control:
    retryint = 60
    wait: bool | int = True
    if "RETRYINT" in kws:
        v = (kws["RETRYINT"] or "").strip()
        if not v.isdigit() or int(v) < 1:
            raise ValueError(
                f"RETRYINT({v}): the retry interval is a whole number of seconds, at least 1 (0 would "
                "make every attempt of a RETRY(n) rule at once)"
            )
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
    return Control(
        (kws.get("INPUTQ") or "").strip() or None, (kws.get("INPUTQM") or "").strip() or None, retryint, wait
    )


def _case_trap(kw: str, written: str, pattern: str) -> str | None:
    """An error text when a folded FORMAT/APPLNAME pattern can match none of qmon's values only because of case."""
    known = KNOWN_VALUES.get(kw)
    if not known or written.startswith("'") or any(fnmatch.fnmatchcase(v, pattern) for v in known):
        return None
    near = [v for v in known if fnmatch.fnmatchcase(v.upper(), pattern)]
    if not near:
        return None
    example = written if any(fnmatch.fnmatchcase(v, written) for v in known) else near[0]
    return (
        f"{kw}({written}): an unquoted value is folded to upper case, and {pattern} matches none of the values "
        f"qmon writes there ({', '.join(known)}); quote it to keep its case: {kw}('{example}')"
    )


def _rule(line: int, kws: dict[str, str | None], raw: dict[str, str], text: str) -> Rule:
    if "ACTION" not in kws:
        raise ValueError("a rule needs ACTION(DISCARD|IGNORE|RETRY|FWD)")
    action = (kws["ACTION"] or "").strip().upper()
    if action not in ACTIONS:
        raise ValueError(f"ACTION({raw['ACTION']}): expected DISCARD, IGNORE, RETRY or FWD")
    patterns: dict[str, Any] = {}
    for kw in PATTERN_KEYWORDS:
        if kw not in kws:
            continue
        value = kws[kw] or ""
        if kw in _NUMERIC:
            if value.strip() == "*":
                patterns[kw] = "*"
            elif any(c in value for c in "*?"):
                raise ValueError(
                    f"{kw}({raw[kw]}): a numeric value cannot hold a wildcard; write {kw}(*) to match "
                    f"any value, or a number or symbol"
                )
            else:
                patterns[kw] = _number(kw, value)
        else:
            if len(value) > 48:
                raise ValueError(f"{kw}: the pattern is {len(value)} characters long; at most 48")
            trap = _case_trap(kw, raw[kw], value)
            if trap:
                raise ValueError(trap)
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
            raise ValueError(f"HEADER({raw['HEADER']}): expected YES or NO")
        header = h == "YES"
    putaut = (kws.get("PUTAUT") or "DEF").strip().upper()
    if putaut not in ("DEF", "CTX"):
        raise ValueError(f"PUTAUT({raw['PUTAUT']}): expected DEF or CTX")
    retry = 1
    if "RETRY" in kws:
        v = (kws["RETRY"] or "").strip()
        if not v.isdigit() or not (1 <= int(v) <= MAX_RETRY):
            raise ValueError(f"RETRY({raw['RETRY']}): the number of attempts is a whole number from 1 to {MAX_RETRY}")
        retry = int(v)
    fwdq = kws.get("FWDQ")
    if fwdq is not None:
        fwdq = re.sub("&DESTQ", "&DESTQ", fwdq.strip(), flags=re.IGNORECASE)
        if re.search("&REPLYQ", fwdq, flags=re.IGNORECASE):
            raise ValueError(
                f"FWDQ({raw['FWDQ']}): &REPLYQ cannot be resolved: dead letters have no reply-to field "
                f"(qmon's DeadLetter record carries no ReplyToQ); name a topic, or use &DESTQ"
            )
        if not re.fullmatch(r"(&DESTQ|[A-Za-z0-9._-])+", fwdq):
            raise ValueError(f"FWDQ({raw['FWDQ']}): not a valid topic name (letters, digits, '.', '_', '-', or &DESTQ)")
    return Rule(line, patterns, action, fwdq or None, kws.get("FWDQM"), header, putaut, retry, " ".join(text.split()))
