"""``qmon mqsc``: MQSC commands sent to the control topic, their replies printed as runmqsc prints them."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from qmon.app.commands import options
from qmon.core import topics


def read_mqsc_input(args: argparse.Namespace) -> list[str]:
    from qmon.core.mqsc import split_script

    if args.command:
        text = " ".join(args.command)
    elif args.file:
        text = Path(args.file).read_text()
    else:
        text = sys.stdin.read()
    return split_script(text)


def _wait_for_joined_replies(
    bootstrap: str, ids: list[str], *, timeout: float, security: Any, prefix: str
) -> dict[str, dict[str, Any]]:
    """Like ``connectors.clients.wait_for_replies``, but a command answered in parts (``RESET
    QSTATS`` with a generic name: one reply per shard) waits for every part and joins them."""
    from qmon.connectors.clients import consume
    from qmon.core.mqsc import join_parts

    wanted = set(ids)
    got: dict[str, list[dict[str, Any]]] = {}
    done: dict[str, dict[str, Any]] = {}

    def stop(topic: str, record: dict[str, Any]) -> bool:
        cid = record.get("command_id")
        if cid in wanted and cid not in done:
            got.setdefault(cid, []).append(record)
            if (joined := join_parts(got[cid])) is not None:
                done[cid] = joined
        return wanted <= done.keys()

    for _ in consume(bootstrap, [topics.REPLIES], timeout=timeout, security=security, stop=stop, prefix=prefix):
        pass
    for cid, records in got.items():  # parts still missing at the timeout: what arrived, marked failed
        if cid not in done:
            done[cid] = join_parts(records, partial=True)  # type: ignore[assignment]
    return done


def commands_read(n: int, failed: int) -> str:
    """runmqsc's summary of a run of ``n`` commands, ``failed`` of them failed."""
    read = "One MQSC command read." if n == 1 else f"{n} MQSC commands read."
    if failed == 0:
        return f"{read}\nAll valid MQSC commands were processed."
    return (
        f"{read}\n" + ("One command has" if failed == 1 else f"{failed} commands have") + " a syntax error or failed."
    )


def cmd_mqsc(args: argparse.Namespace) -> int:
    from qmon.connectors.clients import send_commands

    config = options.config(args)
    bootstrap = options.bootstrap(args, config)
    commands = read_mqsc_input(args)
    if not commands:
        print("qmon mqsc: no command given (argument, -f FILE or standard input)", file=sys.stderr)
        return 2
    prefix = config.kafka.topic_prefix
    ids = send_commands(
        bootstrap,
        args.qmgr,
        commands,
        user=os.environ.get("USER"),
        security=config.kafka.security,
        prefix=prefix,
        framing=options.framing(config),
    )
    replies = _wait_for_joined_replies(
        bootstrap, ids, timeout=args.timeout, security=config.kafka.security, prefix=prefix
    )
    failed = 0
    for n, (cid, text) in enumerate(zip(ids, commands, strict=True), start=1):
        print(f"{n:>6} : {text}")
        reply = replies.get(cid)
        if reply is None:
            failed += 1
            print(f"qmon: no reply within {args.timeout:.0f} s (is `qmon run` running against {bootstrap}?)")
        else:
            failed += 0 if reply["ok"] else 1
            print(reply["message"])
    print(commands_read(len(commands), failed))
    return 1 if failed else 0
