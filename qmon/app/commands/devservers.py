"""``qmon kafka start`` and ``qmon registry start``: a local Kafka broker and a local schema registry, for
development, running until Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path


def cmd_kafka_start(args: argparse.Namespace) -> int:
    from qmon.connectors.kafka import ensure_topics
    from qmon.devservers.kafka import LocalKafka

    broker = LocalKafka(workdir=Path(args.dir) if args.dir else None, port=args.port or 0, host=args.host).start()
    ensure_topics(broker.bootstrap, args.partitions)
    print(f"Kafka broker ready: --bootstrap {broker.bootstrap}  (log: {broker.log_path}); Ctrl-C stops it", flush=True)
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    try:
        while not stop["now"] and broker.running:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    broker.stop()
    return 0


def cmd_registry_start(args: argparse.Namespace) -> int:
    from qmon.devservers.schema_registry import LocalRegistry, RegistryServerError

    try:
        server = LocalRegistry(port=args.port or 0, host=args.host, version=args.version).start()
    except RegistryServerError as exc:
        print(f"qmon registry start: {exc}", file=sys.stderr)
        return 1
    print(
        f"Apicurio Registry {server.version} ready, schemas in memory: kafka.schema_registry_url {server.url}"
        f"  (log: {server.log_path}); Ctrl-C stops it",
        flush=True,
    )
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    try:
        while not stop["now"] and server.running:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    server.remove()
    return 0
