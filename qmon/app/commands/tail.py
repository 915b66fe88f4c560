"""``qmon tail``: the output topics followed, as text or JSON lines."""

from __future__ import annotations

import argparse
import json
import sys

from qmon.app.commands import options
from qmon.core import topics


def cmd_tail(args: argparse.Namespace) -> int:
    from qmon.app.render import line
    from qmon.connectors.avro import to_jsonable
    from qmon.connectors.clients import consume

    config = options.config(args)
    names = args.topics or [t for t in topics.OUTPUTS]
    colour = sys.stdout.isatty() and not args.json
    count = 0
    try:
        for topic, record, _msg in consume(
            options.bootstrap(args, config),
            names,
            from_beginning=args.from_beginning,
            timeout=args.timeout,
            idle=args.idle,
            security=config.kafka.security,
            prefix=config.kafka.topic_prefix,
        ):
            if args.json:
                rec = to_jsonable(record)
                if topic == topics.DLQ:
                    import base64

                    for k in ("key", "value"):
                        if isinstance(record.get(k), bytes):
                            rec[k] = base64.b64encode(record[k]).decode()
                print(json.dumps({"topic": topic, **rec}), flush=True)
            else:
                print(line(topic, record, colour), flush=True)
            count += 1
            if args.max and count >= args.max:
                break
    except KeyboardInterrupt:
        pass
    return 0
