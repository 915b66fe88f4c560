"""``qmon simulate``: a realistic MQ and IMS workload produced in real time."""

from __future__ import annotations

import argparse
import sys

from qmon.app.commands import options
from qmon.core import topics


def cmd_simulate(args: argparse.Namespace) -> int:
    import time as _time

    from qmon.app.simulator import SETUP_MQSC, Simulator, as_mq_trace
    from qmon.connectors.clients import produce_paced, send_commands
    from qmon.connectors.kafka import ensure_topics

    config = options.config(args)
    bootstrap = options.bootstrap(args, config)
    prefix = config.kafka.topic_prefix
    trace = args.format == "mq-trace"
    ensure_topics(bootstrap, config.kafka.partitions, config.kafka.security, prefix=prefix, mq_trace=trace)
    framing = options.framing(config)  # with a schema registry: the ids of qmon's schemas in Confluent's header
    t0 = int(_time.time() * 1000)
    if not args.no_setup:
        for qmgr, commands in SETUP_MQSC.items():
            send_commands(
                bootstrap,
                qmgr,
                commands,
                user="simulate",
                security=config.kafka.security,
                ts=t0 - 1,
                prefix=prefix,
                framing=framing,
            )
    sim = Simulator(seed=args.seed, rate=args.rate, t0=t0)
    tty = sys.stderr.isatty()

    def progress(elapsed: float, n: int) -> None:
        text = (
            f"simulate: {elapsed:5.0f} s  {n:>8} records  {n / max(elapsed, 1e-9):7.0f}/s  "
            f"puts {sim.stats.get('PUT', 0)}  gets {sim.stats.get('GET', 0)}  "
            f"malformed {sim.stats.get('malformed', 0)}"
        )
        print(("\r" + text) if tty else text, end="" if tty else "\n", file=sys.stderr, flush=True)

    try:
        n = produce_paced(
            bootstrap,
            as_mq_trace(sim.items()) if trace else sim.items(),
            duration=args.duration,
            security=config.kafka.security,
            prefix=prefix,
            progress=progress,
            framing=framing,
        )
    except KeyboardInterrupt:
        n = sim.seq
    where = topics.physical(topics.ACTIVITY, prefix)
    if trace:
        where += (
            f" and {topics.physical(topics.MQ_TRACE, prefix)} (MQ activity trace: run the job with mq_trace.enabled)"
        )
    print(f"\nsimulate: produced {n} records to {where} (seed {args.seed}); {sim.stats}", file=sys.stderr)
    return 0
