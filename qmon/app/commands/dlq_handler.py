"""``qmon dlq-handler``: the DLQ handler run with a rules table, its table checked or dry-run, or a report on
the DLQ."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from qmon.app.commands import options
from qmon.core import topics


def cmd_dlq_handler(args: argparse.Namespace) -> int:
    from qmon.core.dlqrules import RulesError, RulesTable, parse_rules

    rules = args.dry_run if isinstance(args.dry_run, str) else args.rules
    if (args.since or args.until) and not args.report:
        print("qmon dlq-handler: --since and --until go with --report", file=sys.stderr)
        return 2
    if args.report and (args.check or args.dry_run):
        print("qmon dlq-handler: --report reads the DLQ alone: leave out --check and --dry-run", file=sys.stderr)
        return 2
    if isinstance(args.dry_run, str) and args.rules and args.rules != args.dry_run:
        print(f"qmon dlq-handler: two rules tables: --rules {args.rules} and --dry-run {args.dry_run}", file=sys.stderr)
        return 2
    if not rules and not args.report:
        print(
            "qmon dlq-handler: no rules table: give --rules FILE (or --dry-run FILE; --report needs none)",
            file=sys.stderr,
        )
        return 2
    table: RulesTable | None = None
    if rules:
        path = Path(rules)
        try:
            table = parse_rules(path.read_text(), source=str(path))
        except OSError as exc:
            print(f"qmon dlq-handler: cannot read the rules table {path}: {exc.strerror}", file=sys.stderr)
            return 2
        except RulesError as exc:
            print(str(exc), file=sys.stderr)
            print("The rules table is not valid; the DLQ handler does not start.", file=sys.stderr)
            return 1
    if args.check and table is not None:
        c = table.control
        wait = {True: "YES", False: "NO"}.get(c.wait, str(c.wait)) if isinstance(c.wait, bool) else str(c.wait)
        print(
            f"{Path(rules)}: valid. Control data: INPUTQ({c.inputq or '<the DLQ topic>'}) RETRYINT({c.retryint}) WAIT({wait})"
        )
        for n, rule in enumerate(table.rules, start=1):
            print(f"  rule {n} (line {rule.line}): {rule.describe()}")
        if not table.rules or table.rules[-1].patterns:
            print(
                "  note: the last rule is not a catch-all (action only); records no rule handles stay on "
                "the DLQ (IGNORE). IBM MQ recommends a final ACTION(FWD) FWDQ(...) HEADER(YES)."
            )
        return 0
    config = options.config(args)
    bootstrap = options.bootstrap(args, config)
    security = config.kafka.security
    dlq = (table.control.inputq if table is not None else None) or topics.physical(
        topics.DLQ, config.kafka.topic_prefix
    )
    if args.report or args.dry_run:
        from qmon.connectors import dlqreader
        from qmon.core.deadletters import parse_time

        now_ms = int(time.time() * 1000)
        try:
            if args.report:
                since = parse_time(args.since, now_ms) if args.since else None
                until = parse_time(args.until, now_ms) if args.until else now_ms
                if since is not None and since >= until:
                    print(f"qmon dlq-handler: --since {args.since} is not before --until", file=sys.stderr)
                    return 2
                print(dlqreader.report(bootstrap, dlq, security, since_ms=since, until_ms=until), end="")
            else:
                assert table is not None
                print(dlqreader.dry_run(bootstrap, table, dlq, security, now=now_ms / 1000, source=str(rules)), end="")
        except ValueError as exc:
            print(f"qmon dlq-handler: {exc}", file=sys.stderr)
            return 2
        except dlqreader.DlqReadError as exc:
            print(f"qmon dlq-handler: {exc}", file=sys.stderr)
            return 1
        return 0
    from qmon.connectors.dlqhandler import Handler

    assert table is not None
    handler = Handler(bootstrap, table, prefix=config.kafka.topic_prefix, security=security)
    try:
        handler.run()
    except KeyboardInterrupt:
        pass
    return 0
