"""Replies in parts, pure: a command the job gives every shard of a queue manager, each shard replying with its
part (``RESET QSTATS``, ``DISPLAY QLOCAL`` and ``DISPLAY QSTATUS`` with a generic name), and the one reply joined
from the parts."""

from __future__ import annotations

import re
from typing import Any

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
