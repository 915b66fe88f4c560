"""MQSC command parsing, pure.

qmon accepts the subset of MQSC that drives its rules with MQSC's
own lexical rules: keywords are case-insensitive and may be abbreviated the
way runmqsc allows for the common ones (DEF, QL); unquoted names fold to upper
case, quoted names keep their case ('' is a quote inside quotes); a line
ending in ``+`` continues with the next line's first non-blank character, one
ending in ``-`` continues with the next line as it stands; a line whose first
character is ``*`` is a comment and a blank line is ignored, wherever they stand,
even between the lines of a continued command (IBM: "any comments or blank lines
are discarded when the command is reassembled into a single string").  Blanks or
commas separate keywords, and a blank may stand between a keyword and its
parenthesised value; a keyword given twice in one command is an error (z/OS
CSQ9000E "'keyword' appears more than once").

Every error names the keyword at fault and says what would be accepted.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from qmon.core.interest import NO_INTEREST_TYPES as NO_INTEREST_TYPES
from qmon.core.interest import refused

logger = logging.getLogger(__name__)

MAX_NAME = 48
_NAME_RE = re.compile(r"^[A-Za-z0-9._/%*]+$")


class MqscError(ValueError):
    """An MQSC command qmon cannot accept; ``keyword`` names the part at fault."""

    def __init__(self, keyword: str, message: str):
        super().__init__(message)
        self.keyword = keyword
        self.message = message


@dataclass(frozen=True)
class Command:
    """A parsed command. ``attrs`` holds normalised attribute values."""

    verb: str  # DEFINE, ALTER, RESET, REGISTER, DEREGISTER, PING, DISPLAY
    obj: str  # QMGR, QLOCAL, QSTATS, QSTATUS, INTEREST
    name: str | None = None  # queue name (or pattern for INTEREST)
    attrs: dict[str, Any] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()  # MQ keywords accepted but not modelled

    @property
    def generic(self) -> bool:
        return self.name is not None and self.name.endswith("*")

    @property
    def scope(self) -> str:
        """Which shards of the queue manager the job delivers the command to (``streaming.pipeline``):

        * ``queue``: the shard of the named queue, which replies;
        * ``qmgr``: every shard, and shard 0 replies: ALTER QMGR, PING, generic names, and every
          REGISTER / DEREGISTER INTEREST, so that each shard holds all of the queue manager's
          registrations and shard 0's reply is right (already registered, LTERM warnings, what
          ``DEREGISTER INTEREST QUEUE(*)`` removed) whichever shard holds the queue;
        * ``parts``: every shard, and every shard replies with its part (``RESET QSTATS``, ``DISPLAY QLOCAL``
          and ``DISPLAY QSTATUS`` with a generic name: each shard holds its own queues only);
        * ``definition``: every shard, and the named queue's shard applies it and replies (``DEFINE`` and
          ``ALTER QLOCAL``): every shard keeps the definitions of all the queue manager's queues, so that
          ``DEFINE ... LIKE(name)`` finds the named queue's wherever it is held.
        """
        if self.generic and (self.obj == "QSTATS" or self.verb == "DISPLAY"):
            return "parts"
        if self.obj in ("QMGR", "INTEREST") or self.generic:
            return "qmgr"
        if self.obj == "QLOCAL" and self.verb in ("DEFINE", "ALTER"):
            return "definition"
        return "queue"


# ---------------------------------------------------------------- script level


def split_script(text: str) -> list[str]:
    """Join continuation lines and drop comments; one string per command."""
    commands: list[str] = []
    current = ""
    continuing = False
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.startswith("*") or not line.strip():
            continue  # comments and blank lines are dropped, inside a continued command too
        if continuing == "+":
            line = line.lstrip()
        if line.endswith("+") or line.endswith("-"):
            mark = line[-1]
            current += line[:-1]
            continuing = mark  # type: ignore[assignment]
            continue
        current += line
        continuing = False
        if current.strip():
            commands.append(current.strip())
        current = ""
    if current.strip():
        commands.append(current.strip())
    return commands


# ---------------------------------------------------------------- tokens


def _tokens(text: str) -> list[tuple[str, str | None, bool]]:
    """(KEYWORD, value or None, value_was_quoted) in order."""
    out: list[tuple[str, str | None, bool]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " ,\t":
            i += 1
            continue
        m = re.match(r"[A-Za-z0-9_.*%/]+", text[i:])
        if not m:
            raise MqscError(text[i : i + 10], f"unexpected character {c!r} at position {i + 1}")
        word = m.group(0)
        i += len(word)
        j = i
        while j < n and text[j] == " ":
            j += 1
        value: str | None = None
        quoted = False
        if j < n and text[j] == "(":
            i = j + 1
            while i < n and text[i] == " ":
                i += 1
            if i < n and text[i] == "'":
                quoted = True
                i += 1
                buf = []
                while True:
                    if i >= n:
                        raise MqscError(word.upper(), f"{word.upper()}: the quoted value has no closing quote")
                    if text[i] == "'":
                        if i + 1 < n and text[i + 1] == "'":
                            buf.append("'")
                            i += 2
                            continue
                        i += 1
                        break
                    buf.append(text[i])
                    i += 1
                value = "".join(buf)
                while i < n and text[i] == " ":
                    i += 1
                if i >= n or text[i] != ")":
                    raise MqscError(word.upper(), f"{word.upper()}: expected ')' after the quoted value")
                i += 1
            else:
                close = text.find(")", i)
                if close < 0:
                    raise MqscError(word.upper(), f"{word.upper()}: the value has no closing parenthesis")
                value = text[i:close].strip()
                i = close + 1
        out.append((word.upper(), value, quoted))
    return out


def _name(keyword: str, value: str | None, quoted: bool, *, generic_ok: bool = False) -> str:
    if value is None or value == "":
        raise MqscError(keyword, f"{keyword} needs a name in parentheses, e.g. {keyword}(PAYROLL.REQUEST)")
    name = value if quoted else value.upper()
    if len(name) > MAX_NAME:
        raise MqscError(
            keyword, f"{keyword}({name}): a name is at most {MAX_NAME} characters, this one has {len(name)}"
        )
    if not _NAME_RE.match(name) or ("*" in name and not (generic_ok and name.endswith("*") and name.count("*") == 1)):
        allowed = "letters, digits, . / _ %" + (" and a final * for a generic name" if generic_ok else "")
        raise MqscError(keyword, f"{keyword}({name}): a name may hold only {allowed}")
    return name


def _int(keyword: str, value: str | None, lo: int, hi: int, unit: str = "") -> int:
    of_unit = f" of{unit}" if unit else ""
    if value is None or not re.fullmatch(r"\d+", value.strip()):
        raise MqscError(keyword, f"{keyword}({value or ''}): expected a whole number{of_unit} from {lo} to {hi}")
    digits = value.strip().lstrip("0") or "0"
    if len(digits) > len(str(hi)):  # never int() a 10,000-digit string
        raise MqscError(keyword, f"{keyword}({digits[:12]}...): out of range, expected {lo} to {hi}{unit}")
    number = int(digits)
    if not lo <= number <= hi:
        raise MqscError(keyword, f"{keyword}({number}): out of range, expected {lo} to {hi}{unit}")
    return number


def _choice(keyword: str, value: str | None, choices: tuple[str, ...]) -> str:
    v = (value or "").upper()
    if v not in choices:
        raise MqscError(keyword, f"{keyword}({value or ''}): expected one of {', '.join(choices)}")
    return v


_VERBS = {
    "DEFINE": "DEFINE",
    "DEF": "DEFINE",
    "ALTER": "ALTER",
    "ALT": "ALTER",
    "RESET": "RESET",
    "REGISTER": "REGISTER",
    "DEREGISTER": "DEREGISTER",
    "PING": "PING",
    "DISPLAY": "DISPLAY",
    "DIS": "DISPLAY",
}
_QLOCAL = {"QLOCAL", "QL"}

#: Queue attributes qmon models, with their parsers.
_QUEUE_ATTRS = {
    "QSVCIEV": lambda v, q: _choice("QSVCIEV", v, ("HIGH", "OK", "NONE")),
    "QSVCINT": lambda v, q: _int("QSVCINT", v, 0, 999_999_999, " milliseconds"),
    "MAXDEPTH": lambda v, q: _int("MAXDEPTH", v, 0, 999_999_999),
    "QDEPTHHI": lambda v, q: _int("QDEPTHHI", v, 0, 100, " percent"),
    "QDEPTHLO": lambda v, q: _int("QDEPTHLO", v, 0, 100, " percent"),
    "QDPHIEV": lambda v, q: _choice("QDPHIEV", v, ("ENABLED", "DISABLED")) == "ENABLED",
    "QDPLOEV": lambda v, q: _choice("QDPLOEV", v, ("ENABLED", "DISABLED")) == "ENABLED",
    "QDPMAXEV": lambda v, q: _choice("QDPMAXEV", v, ("ENABLED", "DISABLED")) == "ENABLED",
}
#: Real MQ queue keywords that qmon accepts and does not model.
_IGNORED_QUEUE_ATTRS = {
    "DESCR",
    "MAXMSGL",
    "DEFPSIST",
    "DEFPRTY",
    "PUT",
    "GET",
    "SHARE",
    "NOSHARE",
    "TRIGGER",
    "NOTRIGGER",
    "TRIGTYPE",
    "INITQ",
    "PROCESS",
    "BOQNAME",
    "BOTHRESH",
    "USAGE",
    "STATQ",
    "MONQ",
    "ACCTQ",
    "CLUSTER",
    "CLUSNL",
    "CMDSCOPE",
}

#: QSGDISP on DEFINE and ALTER QLOCAL (IBM MQ for z/OS, *DEFINE queues*): where the queue's definition is and
#: who shares it.  SHARED: one queue for every member of the queue-sharing group; the others: the queue of the
#: queue manager the command is for (PRIVATE, on ALTER only: its QMGR or COPY definition).  Kept in
#: ``Command.attrs`` as ``QSGDISP``; which queues are shared is qmon's configuration's to say
#: (``qmon.core.sharing``), so the rules check it against the configuration rather than apply it.
QSGDISP = "QSGDISP"
#: LIKE on DEFINE QLOCAL: the queue whose attributes the new one takes (``Command.attrs["LIKE"]``: its name)
LIKE = "LIKE"
_QSGDISP = {"DEFINE": ("QMGR", "COPY", "GROUP", "SHARED"), "ALTER": ("QMGR", "COPY", "GROUP", "SHARED", "PRIVATE")}

#: IMS queue types that never register interest (staging, suspend, APPC, OTMA) are
#: ``qmon.core.interest.NO_INTEREST_TYPES`` (imported above, and still importable from here).


def parse_command(text: str) -> Command:
    """Parse one MQSC command (continuations already joined)."""
    toks = _tokens(text.strip())
    if not toks:
        raise MqscError("", "empty command")
    verb_word, verb_value, _ = toks[0]
    verb = _VERBS.get(verb_word)
    if verb is None or verb_value is not None:
        known = "DEFINE, ALTER, RESET, REGISTER, DEREGISTER, PING, DISPLAY"
        raise MqscError(verb_word, f"{verb_word}: unknown or unsupported command verb (qmon accepts {known})")
    if len(toks) < 2:
        raise MqscError(verb_word, f"{verb}: an object type must follow, e.g. {verb} QLOCAL(name)")
    obj_word, obj_value, obj_quoted = toks[1]
    rest = toks[2:]
    seen: set[str] = set()
    for kw, _, _ in rest:
        if kw in seen:
            raise MqscError(kw, f"{kw}: the keyword appears more than once in the command (CSQ9000E); give it once")
        seen.add(kw)

    if verb == "DISPLAY":
        return _display(obj_word, obj_value, obj_quoted, rest)

    if verb in ("ALTER", "PING") and obj_word == "QMGR":
        if obj_value is not None:
            raise MqscError("QMGR", "QMGR takes no name here: the control record's qmgr field names the queue manager")
        attrs: dict[str, Any] = {}
        ignored: list[str] = []
        for kw, value, _ in rest:
            if verb == "ALTER" and kw == "PERFMEV":
                attrs["PERFMEV"] = _choice("PERFMEV", value, ("ENABLED", "DISABLED"))
            elif verb == "ALTER" and kw in {"DESCR", "FORCE", "STATQ", "MONQ"}:
                ignored.append(kw)
            else:
                raise MqscError(
                    kw,
                    f"{kw}: not a keyword qmon accepts on {verb} QMGR" + (" (PERFMEV is)" if verb == "ALTER" else ""),
                )
        if verb == "ALTER" and not attrs and not ignored:
            raise MqscError("QMGR", "ALTER QMGR needs an attribute, e.g. PERFMEV(ENABLED)")
        return Command(verb, "QMGR", None, attrs, tuple(ignored))

    if verb in ("DEFINE", "ALTER") and obj_word in _QLOCAL:
        name = _name("QLOCAL", obj_value, obj_quoted)
        attrs = {}
        ignored = []
        for kw, value, quoted in rest:
            if kw == LIKE and verb == "DEFINE":
                attrs[LIKE] = _name(LIKE, value, quoted)
            elif kw in _QUEUE_ATTRS:
                attrs[kw] = _QUEUE_ATTRS[kw](value, None)
            elif kw == QSGDISP:
                attrs[kw] = _choice(QSGDISP, value, _QSGDISP[verb])
            elif kw in ("REPLACE", "NOREPLACE") and verb == "DEFINE":
                attrs["REPLACE"] = kw == "REPLACE"
            elif kw == "FORCE" and verb == "ALTER" and value is None:
                pass  # (MQ: alter even while the queue is open; qmon holds no open handles to refuse for)
            elif kw in _IGNORED_QUEUE_ATTRS:
                ignored.append(kw)
            else:
                raise MqscError(
                    kw,
                    f"{kw}: not a queue attribute qmon accepts "
                    f"(QSVCIEV, QSVCINT, MAXDEPTH, QDEPTHHI, QDEPTHLO, QDPHIEV, QDPLOEV, QDPMAXEV, QSGDISP)",
                )
        return Command(verb, "QLOCAL", name, attrs, tuple(ignored))

    if verb == "RESET" and obj_word == "QSTATS":
        name = _name("QSTATS", obj_value, obj_quoted, generic_ok=True)  # PAYROLL.*: every matching queue
        for kw, _, _ in rest:
            if kw != "CMDSCOPE":
                raise MqscError(kw, f"{kw}: RESET QSTATS takes no other keyword")
        return Command(verb, "QSTATS", name)

    if verb in ("REGISTER", "DEREGISTER") and obj_word == "INTEREST":
        if obj_value is not None:
            raise MqscError("INTEREST", f"{verb} INTEREST takes no value; name the queue with QUEUE(name)")
        kws = {kw: (value, quoted) for kw, value, quoted in rest}
        for kw in kws:
            if kw not in ("QUEUE", "CLIENT"):
                raise MqscError(kw, f"{kw}: {verb} INTEREST takes QUEUE(name) and CLIENT(id)")
        if "QUEUE" not in kws:
            hint = " (QUEUE(*) drops every registration of the client)" if verb == "DEREGISTER" else ""
            raise MqscError("QUEUE", f"{verb} INTEREST needs QUEUE(name){hint}")
        if "CLIENT" not in kws:
            raise MqscError("CLIENT", f"{verb} INTEREST needs CLIENT(id)")
        name = _name("QUEUE", *kws["QUEUE"], generic_ok=True)
        client = _name("CLIENT", *kws["CLIENT"])
        if verb == "REGISTER" and (kind := refused(name)):
            what = (
                f"the generic name matches only {kind} queues (type {name[0]}), which"
                if name.endswith("*")
                else f"a {kind} queue (type {name[0]})"
            )
            raise MqscError(
                "QUEUE",
                f"QUEUE({name}): {what} cannot have interest registered; IMS registers interest only in ready queues",
            )
        return Command(verb, "INTEREST", name, {"CLIENT": client})

    raise MqscError(
        obj_word,
        f"{obj_word}: {verb} does not apply to {obj_word} in qmon (docs/reference/mqsc.md lists the supported commands)",
    )


#: What DISPLAY shows of each object (IBM MQ, *DISPLAY QUEUE*, *DISPLAY QSTATUS*, *DISPLAY QMGR*), in runmqsc's
#: order; ``ALL`` asks for all of them.  Kept in ``Command.attrs`` as ``SHOW``: the attributes asked for, or
#: ``("ALL",)``.
SHOW = "SHOW"
DISPLAYED = {
    "QLOCAL": ("CURDEPTH", "MAXDEPTH", "QDEPTHHI", "QDEPTHLO", "QDPHIEV", "QDPLOEV", "QDPMAXEV", "QSGDISP",
               "QSVCIEV", "QSVCINT"),
    "QSTATUS": ("CURDEPTH", "LGETDATE", "LGETTIME", "LPUTDATE", "LPUTTIME", "MSGAGE"),
    "QMGR": ("PERFMEV",),
}  # fmt: skip
_DISPLAY_OBJECTS = {"QLOCAL": "QLOCAL", "QL": "QLOCAL", "QSTATUS": "QSTATUS", "QS": "QSTATUS", "QMGR": "QMGR"}


def _display(
    obj_word: str, obj_value: str | None, obj_quoted: bool, rest: list[tuple[str, str | None, bool]]
) -> Command:
    """DISPLAY QLOCAL(name) / QSTATUS(name) [TYPE(QUEUE)] / QMGR, with ALL or the attributes to show."""
    obj = _DISPLAY_OBJECTS.get(obj_word)
    if obj is None:
        raise MqscError(obj_word, f"{obj_word}: qmon displays QLOCAL(name), QSTATUS(name) and QMGR")
    name = None
    if obj == "QMGR":
        if obj_value is not None:
            raise MqscError("QMGR", "QMGR takes no name here: the control record's qmgr field names the queue manager")
    else:
        name = _name(obj, obj_value, obj_quoted, generic_ok=True)
    shown: list[str] = []
    for kw, value, _ in rest:
        if kw == "CMDSCOPE":
            continue
        if obj == "QSTATUS" and kw == "TYPE":
            if (value or "").upper() != "QUEUE":
                raise MqscError("TYPE", f"TYPE({value}): qmon displays the status of queues only, TYPE(QUEUE)")
            continue
        if value is not None or (kw != "ALL" and kw not in DISPLAYED[obj]):
            accepted = ", ".join(("ALL", *DISPLAYED[obj]))
            raise MqscError(kw, f"{kw}: not an attribute qmon displays for {obj} ({accepted})")
        shown.append(kw)
    show = ("ALL",) if "ALL" in shown else tuple(dict.fromkeys(shown))
    return Command("DISPLAY", obj, name, {SHOW: show})


def canonical(cmd: Command) -> str:
    """The command as runmqsc would echo it, for replies and logs."""
    parts = [cmd.verb, cmd.obj if cmd.name is None or cmd.obj == "INTEREST" else f"{cmd.obj}('{cmd.name}')"]
    if cmd.verb == "DISPLAY":
        parts.extend(cmd.attrs[SHOW])
    elif cmd.obj == "INTEREST":
        parts.append(f"QUEUE('{cmd.name}') CLIENT('{cmd.attrs['CLIENT']}')")
    else:
        for k, v in cmd.attrs.items():
            if isinstance(v, bool):
                v = "ENABLED" if v else "DISABLED"
            parts.append(f"{k}({v})")
    return " ".join(parts)


# ---------------------------------------------------------------- replies in parts


#: Appended by the job to the command id of each shard's copy of a ``parts`` command (``RESET
#: QSTATS`` with a generic name): ``<command_id>`` PART_MARK ``k/N``.  Internal to the query: the
#: replies carry the command id as sent.
PART_MARK = "\x1fqmon-part\x1f"

_PART_TAIL = re.compile(r"(\d+)/(\d+)")
_PART_IN_REPLY = re.compile(r"^((?:RESET|DISPLAY) [A-Z]+\('[^']*'\)[A-Z ]*): part (\d+) of (\d+): ")


def part_command_id(command_id: str, part: int, parts: int) -> str:
    """The command id the job gives shard ``part - 1`` of ``parts`` (the pure form of the pipeline's)."""
    return f"{command_id}{PART_MARK}{part}/{parts}"


def split_part(command_id: str) -> tuple[str, int, int]:
    """(command id as sent, part, parts); ``(command_id, 1, 1)`` for an id without a part."""
    head, mark, tail = command_id.rpartition(PART_MARK)
    m = _PART_TAIL.fullmatch(tail) if mark else None
    if m is None:
        return command_id, 1, 1
    return head, int(m.group(1)), int(m.group(2))


def reply_part(message: str) -> tuple[int, int] | None:
    """(part, parts) of a reply that is one shard's part (``RESET QSTATS('P*'): part 2 of 8: …``)."""
    m = _PART_IN_REPLY.match(message)
    return (int(m.group(2)), int(m.group(3))) if m else None


def join_parts(replies: list[dict[str, Any]], *, partial: bool = False) -> dict[str, Any] | None:
    """One reply from the replies to one command: the reply itself when it came whole; for a reply
    in parts, one record once every part is there (None before), with ``ok`` true when every part
    is ok and the parts' queue lines sorted by queue name.  ``partial``: join what arrived and say which parts
    are missing (``ok`` false), for a caller that gives up waiting."""
    if not replies:
        return None
    whole = [r for r in replies if reply_part(r["message"]) is None]
    if whole:
        return whole[0]
    by_part: dict[int, dict[str, Any]] = {}
    parts = 0
    for r in replies:
        k, parts = reply_part(r["message"])  # type: ignore[misc]
        by_part.setdefault(k, r)
    missing = [k for k in range(1, parts + 1) if k not in by_part]
    if missing and not partial:
        return None
    first = by_part[min(by_part)]
    head = _PART_IN_REPLY.match(first["message"]).group(1)  # type: ignore[union-attr]
    if head.startswith("DISPLAY"):
        return _join_display(head, by_part, parts, missing)
    lines: list[str] = []
    for k in sorted(by_part):
        body = _PART_IN_REPLY.sub("", by_part[k]["message"], count=1)
        lines.extend(line for line in body.split("\n")[1:] if line)  # the part's queue lines
    lines.sort()  # by queue name, whichever shard held the queue
    found = f"{len(lines)} queue{'' if len(lines) == 1 else 's'} reset" if lines else "no queue matches"
    message = f"{head}: {found} (the replies of {parts} shards joined)" + "".join(f"\n{line}" for line in lines)
    if missing:
        message += f"\nNo reply from part {', '.join(map(str, missing))} of {parts}: those queues are not listed."
    ok = not missing and all(r["ok"] for r in by_part.values())
    return {**first, "ok": ok, "message": message}


def _join_display(head: str, by_part: dict[int, dict[str, Any]], parts: int, missing: list[int]) -> dict[str, Any]:
    """A DISPLAY of a generic name joined from its parts: every queue's block, by name, as runmqsc lists them."""
    blocks: list[list[str]] = []
    for k in sorted(by_part):
        body = _PART_IN_REPLY.sub("", by_part[k]["message"], count=1)
        for line in body.split("\n")[1:]:
            if line.startswith("AMQ"):
                blocks.append([line])
            elif line and blocks:
                blocks[-1].append(line)
    blocks.sort(key=lambda b: b[1] if len(b) > 1 else "")  # by the QUEUE(name) line
    name = re.search(r"\('([^']*)'\)", head).group(1)  # type: ignore[union-attr]
    message = "\n".join("\n".join(b) for b in blocks) if blocks else f"AMQ8147E: IBM MQ object {name} not found."
    if missing:
        message += f"\nNo reply from part {', '.join(map(str, missing))} of {parts}: those queues are not listed."
    first = by_part[min(by_part)]
    return {**first, "ok": bool(blocks) and not missing, "message": message}
