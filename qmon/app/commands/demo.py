"""``qmon demo``: a local broker, a sample workload and the job, the events shown live."""

from __future__ import annotations

import argparse


def cmd_demo(args: argparse.Namespace) -> int:
    from qmon.app.demo import demo

    return demo(
        duration=args.duration,
        workdir=args.dir,
        rate=args.rate,
        seed=args.seed,
        metrics_port=args.metrics_port,
        fmt=args.format,
    )
