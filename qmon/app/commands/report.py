"""``qmon report``: a service report read from the output topics over a time range."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from qmon.app.commands import options


def _has_matplotlib() -> bool:
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def cmd_report(args: argparse.Namespace) -> int:
    from qmon.core.deadletters import parse_time

    now_ms = int(time.time() * 1000)
    times = {}
    for option, text in (("--since", args.since), ("--until", args.until)):
        try:
            times[option] = parse_time(text, now_ms) if text else now_ms
        except ValueError as exc:
            print(f"qmon report: {option}: {exc}", file=sys.stderr)
            return 2
    since, until = times["--since"], min(times["--until"], now_ms)  # after now: up to now
    if since >= until:
        print(f"qmon report: --since {args.since} is not before --until {args.until or 'now'}", file=sys.stderr)
        return 2
    if args.html and not _has_matplotlib():
        from qmon.app.report import HTML_NEEDS

        print(f"qmon report: --html needs matplotlib, which is not installed: {HTML_NEEDS}", file=sys.stderr)
        return 2
    from qmon.app import report as render
    from qmon.connectors import reportreader

    config = options.config(args)
    try:
        report = reportreader.read(
            options.bootstrap(args, config),
            config.kafka.security,
            prefix=config.kafka.topic_prefix,
            since_ms=since,
            until_ms=until,
            queues=args.queue or [],
            structures=args.structure or [],
        )
    except reportreader.ReportReadError as exc:
        print(f"qmon report: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(render.json_text(report), end="")
    elif args.csv:
        print(render.csv_text(report), end="")
    elif args.html:
        try:
            Path(args.html).write_text(render.html(report))
        except OSError as exc:
            print(f"qmon report: cannot write {args.html}: {exc.strerror}", file=sys.stderr)
            return 1
        print(f"qmon report: wrote {args.html}", file=sys.stderr)
    else:
        print(render.text(report), end="")
    return 0
