"""MQSC commands and queue statistics: ALTER QMGR, DEFINE and ALTER QLOCAL, RESET QSTATS (one queue or a generic
name, answered in parts by shard), registration of interest, PING QMGR; one reply each.  Pure."""

from __future__ import annotations

from typing import Any

from qmon.core import topics
from qmon.core.ids import event_id
from qmon.core.interest import listing, work_available
from qmon.core.interest import matches as _interest_match
from qmon.core.mqsc import LIKE, QSGDISP, Command, canonical, split_part
from qmon.core.queues.display import not_found, qmgr_details, queue_details, queue_status
from qmon.core.queues.shard import Shard
from qmon.core.queues.state import QueueState
from qmon.core.records import Emit


class Commands:
    """How a shard answers MQSC: the commands it applies (``on_command``), the queues' definitions (``definition``,
    ``define``) and what DISPLAY shows of them (``display_blocks``)."""

    def __init__(self, shard: Shard):
        self.shard = shard
        self.settings = shard.settings

    def on_command(
        self,
        cmd: Command,
        ts: int,
        command_id: str,
        reply: bool,
        member: str | None = None,
        like: dict[str, Any] | None = None,
        own: bool = True,
    ) -> list[Emit]:
        """Apply a parsed command; the reply is emitted only when ``reply`` (one shard answers).  ``member``: in a
        queue-sharing group's shard, the member the command was sent to (the reply names it); a queue manager's
        own shard is its queue manager's.  A DEFINE or ALTER QLOCAL of a queue another shard holds (``own``
        false: the job gives every shard a copy) keeps only its definition (``define``).  ``like``: the
        attributes of the queue a ``LIKE`` names, when the caller found them (else this shard's ``definition``)."""
        shard = self.shard
        qmgr = member or shard.qmgr
        ok, message = True, ""
        if cmd.verb == "DISPLAY":
            return self._display(cmd, ts, command_id, qmgr) if reply else []
        if cmd.obj == "QMGR" and cmd.verb == "ALTER":
            if "PERFMEV" in cmd.attrs:
                if shard.qsg is None:
                    shard.state["perfmev"] = cmd.attrs["PERFMEV"]
                else:  # a member's: its operations on the shared queues follow it
                    shard.state.setdefault("member_perfmev", {})[qmgr] = cmd.attrs["PERFMEV"]
                shard.touch_all()  # every queue's stall deadline depends on it
            message = f"AMQ8005I: IBM MQ queue manager {qmgr} changed."
        elif cmd.obj == "QMGR" and cmd.verb == "PING":
            message = "AMQ8415I: Ping IBM MQ Queue Manager command complete."
        elif cmd.obj == "QLOCAL":
            name = cmd.name
            assert name is not None
            given = {k: v for k, v in cmd.attrs.items() if k not in ("REPLACE", QSGDISP, LIKE)}
            refused = self._qsgdisp_refused(name, cmd.attrs.get(QSGDISP), qmgr)
            if not refused and LIKE in cmd.attrs:
                like = like if like is not None else self.definition(cmd.attrs[LIKE])
                if like is None:
                    refused = (
                        f"AMQ8147E: IBM MQ object {cmd.attrs[LIKE]} not found (qmon holds no definition of it: no "
                        "DEFINE or ALTER QLOCAL of it, and no queues[] entry matches its name)."
                    )
            held = shard.state.get("defs", {}).get(name)
            again = cmd.verb == "DEFINE" and not cmd.attrs.get("REPLACE")
            if not own:  # another shard's queue: its definition, as its own shard keeps it
                if not refused and not (again and held is not None and held["defined"]):
                    self.define(name, cmd.verb, given, like)
                return []
            known = name in shard.queues
            if refused:
                ok, message = False, refused
            elif cmd.verb == "DEFINE":
                q = shard.queue(name, ts)
                if again and (q["defined"] or (held is not None and held["defined"])):
                    ok = False
                    message = f"AMQ8150E: IBM MQ object {name} already exists (use REPLACE to redefine it)."
                else:
                    q["attrs"] = {**(like if like is not None else self.settings.attrs_for(name)), **given}
                    q["defined"] = True
                    self.define(name, "DEFINE", given, like)
                    message = f"AMQ8006I: IBM MQ queue {name} created."
            else:
                q = shard.queue(name, ts)
                q["attrs"].update(given)
                self.define(name, "ALTER", given, None)
                message = f"AMQ8008I: IBM MQ queue {name} changed."
                if not known:
                    message += " (qmon has seen no activity for it yet; the attributes apply when it has.)"
            if ok and shard.qsg is not None:
                message += f" It is a shared queue of queue-sharing group {shard.qsg}."
        elif cmd.obj == "INTEREST":
            if shard.qsg is not None:
                return []  # registrations are each member's own (its shards hold them), not the group's
            return self._interest(cmd, ts, command_id, reply)
        elif cmd.obj == "QSTATS":
            name = cmd.name
            assert name is not None
            if cmd.generic:
                return self._reset_qstats_generic(cmd, ts, command_id, reply)
            q = shard.queue(name, ts)
            message = self._qstats_detail(name, q, ts)
            shard.reset_stats(q, ts)
        else:
            ok, message = False, f"{cmd.verb} {cmd.obj} is not handled by the queue monitor."
        if ignored := cmd.ignored:
            message += f" Not modelled by qmon, accepted and ignored: {', '.join(ignored)}."
        if not reply:
            return []
        return [command_reply(command_id, qmgr, ts, ok, f"{canonical(cmd)}: {message}")]

    def _qsgdisp_refused(self, name: str, disp: str | None, qmgr: str) -> str | None:
        """Why a DEFINE or ALTER QLOCAL with QSGDISP(``disp``) cannot apply here, or None.  A queue-sharing group
        member's queues reach its group's shard, which sends a shared queue's commands to the group's monitor
        and QSGDISP(SHARED) of a name that can be shared there too (``queue_sharing_group``); so the group's
        monitor takes QSGDISP(SHARED) or none, and QSGDISP(SHARED) reaches a queue manager's own monitor only
        when it is a member of no group."""
        shard = self.shard
        if shard.qsg is not None and disp not in (None, "SHARED"):
            return (
                f"QSGDISP({disp}): {name} is a shared queue of queue-sharing group {shard.qsg}, and qmon keeps no "
                f"queue of {qmgr} alone beside it; give QSGDISP(SHARED) or no QSGDISP."
            )
        if shard.qsg is None and disp == "SHARED":
            return (
                f"QSGDISP(SHARED): {qmgr} is a member of no queue-sharing group in qmon's configuration; declare its "
                f"group under qsgs for the members' puts and gets of {name} to reach one queue."
            )
        return None

    def definition(self, name: str) -> dict[str, Any] | None:
        """The attributes queue ``name`` is defined with, as ``LIKE(name)`` copies them: those the configuration
        gives its name, then those every DEFINE and ALTER QLOCAL of it gave (not the ones its events switched
        since); None when neither names it."""
        held = self.shard.state.get("defs", {}).get(name)
        if held is not None:
            return dict(held["attrs"])
        if any(rule.matches(name) for rule in self.settings.queue_defaults):
            return self.settings.attrs_for(name)
        return None

    def define(self, name: str, verb: str, given: dict[str, Any], like: dict[str, Any] | None) -> None:
        """Keep queue ``name``'s definition (``defs``): a DEFINE's replaces it, over the attributes of the queue
        it is LIKE or the configuration's; an ALTER's changes it."""
        defs = self.shard.state.setdefault("defs", {})
        if verb == "DEFINE":
            base = like if like is not None else self.settings.attrs_for(name)
            defs[name] = {"defined": True, "attrs": {**base, **given}}
        else:
            held = defs.get(name) or {"defined": False, "attrs": self.settings.attrs_for(name)}
            defs[name] = {"defined": held["defined"], "attrs": {**held["attrs"], **given}}

    def _display(self, cmd: Command, ts: int, command_id: str, qmgr: str) -> list[Emit]:
        """DISPLAY QMGR, and DISPLAY QLOCAL or QSTATUS of one queue or (in parts) of a generic name."""
        shard = self.shard
        if cmd.obj == "QMGR":
            perfmev = shard.perfmev if shard.qsg is None else shard.member_perfmev(qmgr)
            return [command_reply(command_id, qmgr, ts, True, qmgr_details(cmd, qmgr, perfmev))]
        assert cmd.name is not None
        if cmd.generic:
            return [display_reply(cmd, self.display_blocks(cmd, ts), command_id, qmgr, ts)]
        q = shard.queues.get(cmd.name)
        if q is None:
            return [command_reply(command_id, qmgr, ts, False, not_found(cmd.name))]
        return [command_reply(command_id, qmgr, ts, True, self._block(cmd, cmd.name, q, ts))]

    def display_blocks(self, cmd: Command, ts: int) -> list[tuple[str, str]]:
        """(name, what DISPLAY shows) of every queue of this monitor that ``cmd``'s generic name matches."""
        assert cmd.name is not None
        prefix = cmd.name[:-1]
        names = sorted(n for n in self.shard.queues if n.startswith(prefix))
        return [(n, self._block(cmd, n, self.shard.queues[n], ts)) for n in names]

    def _block(self, cmd: Command, name: str, q: QueueState, ts: int) -> str:
        if cmd.obj == "QLOCAL":
            return queue_details(cmd, name, q, self.shard.qsg is not None)
        return queue_status(cmd, name, q, ts)

    def _interest(self, cmd: Command, ts: int, command_id: str, reply: bool) -> list[Emit]:
        """REGISTER / DEREGISTER INTEREST.  Every shard receives every interest command and holds all
        registrations; each tells of work on its own queues, shard 0 replies (``reply``)."""
        shard = self.shard
        pattern, client = cmd.name, cmd.attrs["CLIENT"]
        assert pattern is not None
        registry = shard.interest
        out: list[Emit] = []
        if cmd.verb == "REGISTER":
            ok = True
            if registry.register(pattern, client):
                message = f"client {client} registered interest in {pattern}."
                # work already there: one WorkAvailable per queue of this shard it covers, unless
                # another registration of the client covers the queue (it has been told already)
                names = sorted(shard.queues) if pattern.endswith("*") else [pattern] if pattern in shard.queues else []
                for name in names:
                    q = shard.queues[name]
                    if (
                        q["depth"] > 0
                        and _interest_match(pattern, name)
                        and not registry.covered_otherwise(client, name, pattern)
                    ):
                        out.append(Emit(*work_available(shard.qmgr, name, client, q["depth"], ts, command_id)))
                if reply:
                    message += registry.lterm_warning(pattern, client)
            else:
                message = f"client {client} was already registered for {pattern}; nothing changed."
        elif pattern == registry.EVERYTHING:
            # DEREGISTER INTEREST QUEUE(*): every registration of the client (CQS does this for an
            # IMS that terminates), exact and generic, ``*`` itself included
            removed = registry.deregister_all(client)
            ok = bool(removed)
            message = (
                f"client {client} deregistered from every name it had registered ({len(removed)}): {listing(removed)}."
                if removed
                else f"client {client} has no interest registered in any queue."
            )
        else:
            ok = registry.deregister(pattern, client)
            message = (
                f"client {client} deregistered from {pattern}."
                if ok
                else f"client {client} has no interest registered in {pattern}."
            )
        if reply:
            out.append(command_reply(command_id, shard.qmgr, ts, ok, f"{canonical(cmd)}: {message}"))
        return out

    @staticmethod
    def _qstats_detail(name: str, q: QueueState, ts: int) -> str:
        reset_ts = q["reset_ts"] if q["reset_ts"] is not None else ts
        return (
            f"AMQ8450I: Display queue status details. QUEUE({name}) RESETINT({max(0, (ts - reset_ts) // 1000)}) "
            f"HIQDEPTH({q['high_depth']}) MSGSIN({q['enq']}) MSGSOUT({q['deq']})"
        )

    def _reset_qstats_generic(self, cmd: Command, ts: int, command_id: str, reply: bool) -> list[Emit]:
        """RESET QSTATS with a generic name: reset every queue of this shard it matches.

        A shard holds only its own queues' statistics, so the job delivers the command to every
        shard with the shard's part in the command id (``k/N``, ``qmon.core.mqsc_parts.split_part``) and each
        replies with its part: the reply says ``part k of N`` and has an event_id of its own.  The
        pure reference (one monitor, no parts) and a single shard give one reply listing them all."""
        shard = self.shard
        assert cmd.name is not None
        command_id, part, parts = split_part(command_id)
        prefix = cmd.name[:-1]
        lines = []
        for name in sorted(n for n in shard.queues if n.startswith(prefix)):
            q = shard.queues[name]
            lines.append(self._qstats_detail(name, q, ts))
            shard.reset_stats(q, ts)
        if not reply:
            return []
        where = f"part {part} of {parts}: " if parts > 1 else ""
        if lines:
            found = f"{len(lines)} queue{'' if len(lines) == 1 else 's'} reset" + (" in this part" if parts > 1 else "")
            message = f"{canonical(cmd)}: {where}{found}:\n" + "\n".join(lines)
        else:
            found = "no matching queue in this part." if parts > 1 else f"no queue matches {cmd.name}; nothing reset."
            message = f"{canonical(cmd)}: {where}{found}"
        out = command_reply(command_id, shard.qmgr, ts, True, message)
        if parts > 1:  # each part its own record, so consumers dropping duplicates keep them all
            out.record["event_id"] = event_id("reply", command_id, "part", part, parts)
        return [out]


def display_reply(cmd: Command, blocks: list[tuple[str, str]], command_id: str, qmgr: str, ts: int) -> Emit:
    """The reply to a DISPLAY of a generic name: every matching queue's block, by name; in the job, each shard's
    part (``part k of N``, joined by ``qmon.core.mqsc_parts.join_parts``), with an event_id of its own."""
    assert cmd.name is not None
    command_id, part, parts = split_part(command_id)
    body = "\n".join(block for _, block in sorted(blocks))
    if parts > 1:
        found = f"{len(blocks)} in this part"
        out = command_reply(command_id, qmgr, ts, True, f"{canonical(cmd)}: part {part} of {parts}: {found}\n{body}")
        out.record["event_id"] = event_id("reply", command_id, "part", part, parts)
        return out
    if not blocks:
        return command_reply(command_id, qmgr, ts, False, not_found(cmd.name))
    return command_reply(command_id, qmgr, ts, True, body)


def command_reply(command_id: str, qmgr: str | None, ts: int | None, ok: bool, message: str) -> Emit:
    record = {
        "event_id": event_id("reply", command_id),
        "command_id": command_id,
        "qmgr": qmgr,
        "ts": ts,
        "ok": ok,
        "message": message,
    }
    return Emit(topics.REPLIES, command_id, record)
