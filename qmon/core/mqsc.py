"""MQSC command parsing, pure.

qmon accepts the subset of MQSC that drives its rules: the verbs, objects and attributes below, with keywords
abbreviated the way runmqsc allows for the common ones (DEF, QL), and a keyword given twice in one command an
error (z/OS CSQ9000E "'keyword' appears more than once").  MQSC's lexical rules (continuations, comments,
quotes, names and values) are ``qmon.core.mqsc_syntax``'s, and replies in parts ``qmon.core.mqsc_parts``';
their names are imported here, so this module is the one to import.

Every error names the keyword at fault and says what would be accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from qmon.core.interest import NO_INTEREST_TYPES as NO_INTEREST_TYPES
from qmon.core.interest import refused
from qmon.core.mqsc_parts import PART_MARK as PART_MARK
from qmon.core.mqsc_parts import join_parts as join_parts
from qmon.core.mqsc_parts import part_command_id as part_command_id
from qmon.core.mqsc_parts import reply_part as reply_part
from qmon.core.mqsc_parts import split_part as split_part
from qmon.core.mqsc_syntax import MAX_NAME as MAX_NAME
from qmon.core.mqsc_syntax import MqscError, parse_choice, parse_int, parse_name, tokens
from qmon.core.mqsc_syntax import split_script as split_script


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
    "QSVCIEV": lambda v, q: parse_choice("QSVCIEV", v, ("HIGH", "OK", "NONE")),
    "QSVCINT": lambda v, q: parse_int("QSVCINT", v, 0, 999_999_999, " milliseconds"),
    "MAXDEPTH": lambda v, q: parse_int("MAXDEPTH", v, 0, 999_999_999),
    "QDEPTHHI": lambda v, q: parse_int("QDEPTHHI", v, 0, 100, " percent"),
    "QDEPTHLO": lambda v, q: parse_int("QDEPTHLO", v, 0, 100, " percent"),
    "QDPHIEV": lambda v, q: parse_choice("QDPHIEV", v, ("ENABLED", "DISABLED")) == "ENABLED",
    "QDPLOEV": lambda v, q: parse_choice("QDPLOEV", v, ("ENABLED", "DISABLED")) == "ENABLED",
    "QDPMAXEV": lambda v, q: parse_choice("QDPMAXEV", v, ("ENABLED", "DISABLED")) == "ENABLED",
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
    toks = tokens(text.strip())
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
                attrs["PERFMEV"] = parse_choice("PERFMEV", value, ("ENABLED", "DISABLED"))
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
        name = parse_name("QLOCAL", obj_value, obj_quoted)
        attrs = {}
        ignored = []
        for kw, value, quoted in rest:
            if kw == LIKE and verb == "DEFINE":
                attrs[LIKE] = parse_name(LIKE, value, quoted)
            elif kw in _QUEUE_ATTRS:
                attrs[kw] = _QUEUE_ATTRS[kw](value, None)
            elif kw == QSGDISP:
                attrs[kw] = parse_choice(QSGDISP, value, _QSGDISP[verb])
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
        name = parse_name("QSTATS", obj_value, obj_quoted, generic_ok=True)  # PAYROLL.*: every matching queue
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
        name = parse_name("QUEUE", *kws["QUEUE"], generic_ok=True)
        client = parse_name("CLIENT", *kws["CLIENT"])
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
        name = parse_name(obj, obj_value, obj_quoted, generic_ok=True)
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
