"""``qmon metrics`` and ``qmon alertmanager``: the Prometheus exporter, and the forwarder of qmon's alerts
to Alertmanager."""

from __future__ import annotations

import argparse
import sys

from qmon.app.commands import options


def cmd_metrics(args: argparse.Namespace) -> int:
    from qmon.app.exporter import run as run_exporter

    config = options.config(args)
    return run_exporter(
        options.bootstrap(args, config),
        port=args.port,
        bind=args.bind,
        prefix=config.kafka.topic_prefix,
        security=config.kafka.security,
    )


def cmd_alertmanager(args: argparse.Namespace) -> int:
    from qmon.app.alertmanager import Forwarder
    from qmon.core.config import duration_ms

    config = options.config(args)
    try:
        resend_ms = duration_ms(args.resend)
    except ValueError as exc:
        print(f"qmon alertmanager: --resend: {exc}", file=sys.stderr)
        return 2
    forwarder = Forwarder(
        options.bootstrap(args, config),
        args.url,
        prefix=config.kafka.topic_prefix,
        security=config.kafka.security,
        group=args.group,
        resend_ms=resend_ms,
    )
    return forwarder.run()
