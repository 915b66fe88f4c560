"""``qmon produce`` and ``qmon seed-depth``: records sent to qmon's input topics, from a JSONL file or from
runmqsc's ``DISPLAY QLOCAL(*) CURDEPTH`` output."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from qmon.app.commands import options
from qmon.core import topics


def cmd_produce(args: argparse.Namespace) -> int:
    from qmon.connectors.clients import produce_rows
    from qmon.connectors.jsonl import encode_lines

    config = options.config(args)
    with open(args.input) as fh:
        encoded = encode_lines(fh, Path(args.input).name)
    for d in encoded.dead:
        print(f"qmon produce: {args.input}: {d['error']} ({d['reason_name']}); not sent", file=sys.stderr)
    prefix = config.kafka.topic_prefix
    bootstrap = options.bootstrap(args, config)
    if any(row[0] == topics.MQ_TRACE for row in encoded.rows):  # trace lines: the topic may not exist yet
        from qmon.connectors.kafka import ensure_topics

        ensure_topics(bootstrap, config.kafka.partitions, config.kafka.security, prefix=prefix, mq_trace=True)
    framing = options.framing(config)  # with a schema registry: the ids of qmon's schemas in Confluent's header

    def value(topic: str, v: bytes) -> bytes:
        record = topics.RECORD_OF.get(topic)
        return framing.frame(topics.physical(topic, prefix), record, v) if record else v  # (trace: PCF bytes)

    n = produce_rows(
        bootstrap,
        ((topics.physical(t, prefix), k, value(t, v)) for t, _p, _o, k, v, _ts in encoded.rows),
        config.kafka.security,
    )
    print(f"qmon produce: {n} records sent", file=sys.stderr)
    return 0


def cmd_seed_depth(args: argparse.Namespace) -> int:
    from qmon.connectors import avro
    from qmon.connectors.clients import produce_rows
    from qmon.core.seed import depths_from_display, start_records

    config = options.config(args)
    text = Path(args.file).read_text() if args.file and args.file != "-" else sys.stdin.read()
    depths = depths_from_display(text)
    if not depths:
        print(
            "qmon seed-depth: no QUEUE(...) with CURDEPTH(...) in the input (paste DISPLAY QLOCAL(*) CURDEPTH)",
            file=sys.stderr,
        )
        return 1
    records = start_records(args.qmgr, depths, int(time.time() * 1000))
    topic = topics.physical(topics.ACTIVITY, config.kafka.topic_prefix)
    framing = options.framing(config)
    rows = [
        (
            topic,
            f"{r['qmgr']}/{r['queue']}".encode(),
            framing.frame(topic, "QueueActivity", avro.encode("QueueActivity", r)),
        )
        for r in records
    ]
    n = produce_rows(options.bootstrap(args, config), rows, config.kafka.security)
    print(
        f"qmon seed-depth: {n} queues of {args.qmgr} seeded ({', '.join(f'{q}={d}' for q, d in depths[:5])}{' ...' if n > 5 else ''})",
        file=sys.stderr,
    )
    return 0
