"""``qmon state export FILE`` and ``qmon state import FILE``: the job's queues as JSON lines, read from a checkpoint,
and given to a job on another checkpoint (``qmon.streaming.state_export`` says what carries over)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from qmon.app.commands import options


def cmd_state_export(args: argparse.Namespace, config: Any) -> int:
    from qmon.streaming.spark import session
    from qmon.streaming.state_export import read_checkpoint

    checkpoint = args.checkpoint or config.job.checkpoint
    if not Path(checkpoint, "commits").is_dir():
        print(f"qmon state export: {checkpoint} is not a checkpoint of a job that ran (no commits/)", file=sys.stderr)
        return 2
    spark = session(app_name="qmon-state-export", shuffle_partitions=config.job.shuffle_partitions)
    counts: dict[str, int] = {}
    out = sys.stdout if args.file == "-" else open(args.file, "w")  # noqa: SIM115
    try:
        for line in read_checkpoint(spark, checkpoint):
            out.write(json.dumps(line, sort_keys=True) + "\n")
            counts[line["kind"]] = counts.get(line["kind"], 0) + 1
    except ValueError as exc:  # (a checkpoint without the monitor's state)
        print(f"qmon state export: {exc}", file=sys.stderr)
        return 2
    finally:
        if out is not sys.stdout:
            out.close()
    said = ", ".join(f"{n} {kind.replace('_', ' ')} line{'' if n == 1 else 's'}" for kind, n in sorted(counts.items()))
    print(f"qmon state export: {said or 'nothing held'} from {checkpoint}", file=sys.stderr)
    return 0


def cmd_state_import(args: argparse.Namespace, config: Any, bootstrap: str, framing: Any) -> int:
    from qmon.connectors import avro
    from qmon.connectors.clients import produce_rows
    from qmon.core import topics
    from qmon.streaming.state_export import ExportError, import_records, read_lines

    text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
    try:
        lines = read_lines(text)
    except ExportError as exc:
        print(f"qmon state import: {args.file}, {exc}; nothing sent", file=sys.stderr)
        return 2
    commands, activity = import_records(lines, config.monitor_settings(), int(time.time() * 1000))
    prefix = config.kafka.topic_prefix
    control, act = topics.physical(topics.CONTROL, prefix), topics.physical(topics.ACTIVITY, prefix)
    rows = [
        (control, c["qmgr"].encode(), framing.frame(control, "ControlCommand", avro.encode("ControlCommand", c)))
        for c in commands
    ]
    rows += [
        (
            act,
            f"{r['qmgr']}/{r['queue']}".encode(),
            framing.frame(act, "QueueActivity", avro.encode("QueueActivity", r)),
        )
        for r in activity
    ]
    n = produce_rows(bootstrap, rows, config.kafka.security)
    print(
        f"qmon state import: {len(commands)} commands and {len(activity)} START records sent ({n} acknowledged)",
        file=sys.stderr,
    )
    return 0 if n == len(rows) else 1


def cmd_state(verb: str, args: argparse.Namespace) -> int:
    """``qmon state export`` / ``qmon state import``, with the configuration the options name."""
    config = options.config(args)
    if verb == "export":
        return cmd_state_export(args, config)
    return cmd_state_import(args, config, options.bootstrap(args, config), options.framing(config))


def add_parser(sub: Any, common: Callable[..., None], run: Callable[..., int]) -> None:
    """``qmon state export`` and ``qmon state import``; ``run(name, args)`` calls the command."""
    sp = sub.add_parser("state", help="export the job's queues from a checkpoint, or import them into a job")
    verbs = sp.add_subparsers(dest="verb", required=True, help="export or import")
    ex = verbs.add_parser("export", help="write what a checkpoint holds as JSON lines, one per queue and structure")
    common(ex, bootstrap=False)
    ex.add_argument("file", help="the file to write (- for standard output)")
    ex.add_argument(
        "--checkpoint",
        help="the checkpoint directory, of this qmon's state version or qmon 0.4's (default: job.checkpoint)",
    )
    ex.set_defaults(func=lambda args: run("export", args))
    im = verbs.add_parser(
        "import",
        help="send a job on a new checkpoint the queues of an export: MQSC for attributes, PERFMEV and "
        "registrations, START records for depths",
    )
    common(im)
    im.add_argument("file", help="the file qmon state export wrote (- for standard input)")
    im.set_defaults(func=lambda args: run("import", args))
