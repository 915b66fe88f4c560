"""``qmon run`` and ``qmon replay``: the streaming job, against a Kafka cluster or once over a JSONL file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from qmon.app.commands import options


def cmd_run(args: argparse.Namespace) -> int:
    from qmon.streaming.job import run

    config = options.config(args)
    checkpoint = args.checkpoint or config.job.checkpoint
    if args.master:
        config = config.model_copy(update={"job": config.job.model_copy(update={"master": args.master})})
    return run(config, options.bootstrap(args, config), checkpoint, available_now=args.available_now)


def cmd_replay(args: argparse.Namespace) -> int:
    from qmon.streaming.replay import replay_file

    config = options.config(args)
    if not Path(args.input).exists():
        print(f"qmon replay: {args.input}: no such file", file=sys.stderr)
        return 2
    if args.master:
        config = config.model_copy(update={"job": config.job.model_copy(update={"master": args.master})})
    n = replay_file(args.input, config, args.output)
    if args.output:
        print(f"qmon replay: {n} records written to {args.output}", file=sys.stderr)
    return 0
