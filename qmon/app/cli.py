"""The ``qmon`` command: its argument parser, and ``main``, which runs the subcommand given (``qmon.app.commands``)."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from qmon.app.commands.demo import cmd_demo
from qmon.app.commands.devservers import cmd_kafka_start, cmd_registry_start
from qmon.app.commands.dlq_handler import cmd_dlq_handler
from qmon.app.commands.job import cmd_replay, cmd_run
from qmon.app.commands.mqsc import cmd_mqsc
from qmon.app.commands.produce import cmd_produce, cmd_seed_depth
from qmon.app.commands.prometheus import cmd_alertmanager, cmd_metrics
from qmon.app.commands.report import cmd_report
from qmon.app.commands.simulate import cmd_simulate
from qmon.app.commands.state import add_parser as add_state_parser
from qmon.app.commands.state import cmd_state
from qmon.app.commands.tail import cmd_tail
from qmon.core import topics
from qmon.core.config import ConfigError
from qmon.streaming.units import CheckpointError

logger = logging.getLogger("qmon")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="qmon",
        description="Real-time queue monitor and event generator "
        "(IBM MQ service interval and depth events, IMS CQS structures) on Kafka + Spark.",
    )
    p.add_argument(
        "--log-level",
        default=os.environ.get("QMON_LOG_LEVEL", "INFO"),
        help="how much qmon logs on standard error: DEBUG, INFO, WARNING or ERROR (default QMON_LOG_LEVEL, else INFO)",
    )
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp: argparse.ArgumentParser, bootstrap: bool = True) -> None:
        sp.add_argument("--config", help="YAML configuration file (see the configuration reference)")
        if bootstrap:
            sp.add_argument(
                "--bootstrap", help="Kafka bootstrap servers (default: config kafka.bootstrap, or QMON_BOOTSTRAP)"
            )

    sp = sub.add_parser("run", help="run the streaming job against a Kafka cluster")
    common(sp)
    sp.add_argument("--checkpoint", help="checkpoint directory (state and offsets; keep it to restart)")
    sp.add_argument(
        "--master",
        help="Spark master (default: job.master, else spark-submit's or spark-defaults.conf's, else local[*])",
    )
    sp.add_argument(
        "--available-now",
        action="store_true",
        help="consume what the topics hold now, then stop (Trigger.AvailableNow)",
    )
    sp.set_defaults(func=cmd_run)

    sp = sub.add_parser("replay", help="run the pipeline once over a JSONL file of activity and commands")
    common(sp, bootstrap=False)
    sp.add_argument(
        "input", help="the JSONL file: one activity record, MQSC command, journal status or trace message a line"
    )
    sp.add_argument("--output", help="write the output records here (JSONL); default standard output")
    sp.add_argument(
        "--master",
        help="Spark master (default: job.master, else spark-submit's or spark-defaults.conf's, else local[*])",
    )
    sp.set_defaults(func=cmd_replay)

    sp = sub.add_parser("kafka", help="a local Apache Kafka broker (KRaft) on loopback")
    ksub = sp.add_subparsers(dest="kafka_cmd", required=True)
    kp = ksub.add_parser("start", help="start a broker and create qmon's topics; runs until Ctrl-C")
    kp.add_argument("--port", type=int, default=9092, help="the port to listen on (default 9092; 0: a free one)")
    kp.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on and give clients (default loopback: a development broker for this host only)",
    )
    kp.add_argument("--dir", help="broker data directory (default: a new temporary directory)")
    kp.add_argument("--partitions", type=int, default=4, help="partitions of each qmon topic it creates (default 4)")
    kp.set_defaults(func=cmd_kafka_start)

    sp = sub.add_parser(
        "registry", help="a local schema registry (Apicurio Registry, Confluent's REST API) on loopback"
    )
    rsub = sp.add_subparsers(dest="registry_cmd", required=True)
    rp = rsub.add_parser("start", help="start a schema registry, its schemas in memory; runs until Ctrl-C")
    rp.add_argument("--port", type=int, default=8081, help="the HTTP port (0: a free one)")
    rp.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default loopback: a development registry for this host only)",
    )
    rp.add_argument(
        "--version",
        help="the Apicurio Registry release (default: the newest a Java here runs; 3.3.3 needs Java 21, "
        "3.0.9 runs on 17)",
    )
    rp.set_defaults(func=cmd_registry_start)

    sp = sub.add_parser("produce", help="send a JSONL file of activity and commands to qmon's input topics")
    common(sp)
    sp.add_argument(
        "input", help="the JSONL file: one activity record, MQSC command, journal status or trace message a line"
    )
    sp.set_defaults(func=cmd_produce)

    sp = sub.add_parser("mqsc", help="send MQSC commands to qmon.control and print the replies")
    common(sp)
    sp.add_argument("command", nargs="*", help="one command (otherwise -f FILE or standard input)")
    sp.add_argument("-f", "--file", help="a file of MQSC commands (+/- continuation, * comments)")
    sp.add_argument("-m", "--qmgr", default=os.environ.get("QMON_QMGR", "QM1"), help="queue manager (default QM1)")
    sp.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the replies")
    sp.set_defaults(func=cmd_mqsc)

    sp = sub.add_parser(
        "seed-depth", help="set queue depths from runmqsc DISPLAY QLOCAL(*) CURDEPTH output (START records)"
    )
    common(sp)
    sp.add_argument("file", nargs="?", default="-", help="the DISPLAY output (default: standard input)")
    sp.add_argument("-m", "--qmgr", default=os.environ.get("QMON_QMGR", "QM1"), help="queue manager (default QM1)")
    sp.set_defaults(func=cmd_seed_depth)

    add_state_parser(sub, common, cmd_state)

    sp = sub.add_parser("tail", help="follow output topics")
    common(sp)
    sp.add_argument("topics", nargs="*", help=f"topics (default: {', '.join(topics.OUTPUTS)})")
    sp.add_argument("--json", action="store_true", help="JSON lines instead of text")
    sp.add_argument(
        "--from-beginning",
        action="store_true",
        help="read the topics from their beginning (default: only the records written from now on)",
    )
    sp.add_argument("--timeout", type=float, default=None, help="stop after this many seconds")
    sp.add_argument(
        "--idle",
        type=float,
        default=None,
        help="stop after this many seconds without a record (counted from when the partitions are assigned)",
    )
    sp.add_argument("--max", type=int, default=0, help="stop after this many records")
    sp.set_defaults(func=cmd_tail)

    sp = sub.add_parser("simulate", help="produce a realistic MQ and IMS workload in real time")
    common(sp)
    sp.add_argument("--rate", type=float, default=200.0, help="records per second (default 200)")
    sp.add_argument("--duration", type=float, default=None, help="seconds to run (default: until Ctrl-C)")
    sp.add_argument("--seed", type=int, default=1, help="the same seed gives the same records")
    sp.add_argument("--no-setup", action="store_true", help="do not send the setup MQSC (PERFMEV, QSVCINT)")
    sp.add_argument(
        "--format",
        choices=["avro", "mq-trace"],
        default="avro",
        help="mq-trace: MQ puts and gets as activity trace PCF messages on qmon.mq.trace (IMS stays Avro)",
    )
    sp.set_defaults(func=cmd_simulate)

    sp = sub.add_parser(
        "dlq-handler",
        help="work qmon.dlq down with an IBM MQ style rules table, dry-run a table, or report on the DLQ",
    )
    common(sp)
    sp.add_argument("--rules", help="the rules table (runmqdlq syntax; see config/dlq.rules)")
    sp.add_argument("--check", action="store_true", help="validate and print the rules, then exit (0 valid, 1 not)")
    sp.add_argument(
        "--dry-run",
        nargs="?",
        const=True,
        default=None,
        metavar="RULES",
        help="read the DLQ and print which rule each record matches and what the handler would do with it, "
        "with counts per rule and action; writes nothing, commits no offset (RULES: the table, or --rules)",
    )
    sp.add_argument(
        "--report",
        action="store_true",
        help="print the dead letters put on the DLQ in a time range, by reason, original topic and application, "
        "with what the handler has done with them (the topic: INPUTQ of --rules, else the configured DLQ)",
    )
    sp.add_argument("--since", help="--report: from this time: 7d, 12h, 30m (back from now) or an ISO time (UTC)")
    sp.add_argument("--until", help="--report: up to this time (default now), as --since")
    sp.set_defaults(func=cmd_dlq_handler)

    sp = sub.add_parser(
        "report",
        help="a service report from the output topics: alert episodes, service within QSVCINT, overflow mode "
        "and peak usage, per queue and structure, over a time range",
    )
    common(sp)
    sp.add_argument("--since", required=True, help="from this time: 7d, 12h, 30m (back from now) or an ISO time (UTC)")
    sp.add_argument("--until", help="up to this time (default now; a later time is taken as now), as --since")
    sp.add_argument(
        "--queue",
        action="append",
        metavar="PATTERN",
        help="only queues whose name or QMGR/QUEUE matches (* and ? wildcards; repeatable); with --queue alone, "
        "no structure",
    )
    sp.add_argument(
        "--structure",
        action="append",
        metavar="PATTERN",
        help="only structures whose name matches (* and ? wildcards; repeatable); with --structure alone, no queue",
    )
    out = sp.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print JSON (times in epoch milliseconds)")
    out.add_argument("--csv", action="store_true", help="print CSV, one row per queue or structure and alert type")
    out.add_argument(
        "--html",
        metavar="FILE",
        help="write a self-contained HTML page with plots to FILE (needs matplotlib: pip install 'qmon[report]')",
    )
    sp.set_defaults(func=cmd_report)

    sp = sub.add_parser("metrics", help="a Prometheus exporter of qmon's outputs and the job's health")
    common(sp)
    sp.add_argument("--port", type=int, default=9464, help="HTTP port of /metrics (default 9464)")
    sp.add_argument("--bind", default="0.0.0.0", help="address to listen on (default all)")
    sp.set_defaults(func=cmd_metrics)

    sp = sub.add_parser("alertmanager", help="forward qmon's alerts to Alertmanager (v2 API)")
    common(sp)
    sp.add_argument("--url", required=True, help="Alertmanager's base URL, e.g. http://localhost:9093")
    sp.add_argument("--group", default="qmon-alertmanager", help="Kafka consumer group (its offsets: what was sent)")
    sp.add_argument(
        "--resend", default="1 minute", help="re-send firing alerts this often (default 1 minute, as Prometheus)"
    )
    sp.set_defaults(func=cmd_alertmanager)

    sp = sub.add_parser("demo", help="local broker + sample workload + the job, events shown live")
    sp.add_argument(
        "--duration",
        type=float,
        default=None,
        help="stop by itself this many seconds after the workload starts, and print a summary",
    )
    sp.add_argument("--dir", help="working directory (default: a new temporary directory, removed at the end)")
    sp.add_argument("--rate", type=float, default=100.0, help="simulator records per second (default 100)")
    sp.add_argument("--seed", type=int, default=1, help="the simulator's seed: the same seed gives the same workload")
    sp.add_argument(
        "--metrics-port", type=int, default=None, help="also serve qmon's Prometheus metrics on this port (e.g. 9464)"
    )
    sp.add_argument(
        "--format",
        choices=["avro", "mq-trace"],
        default="avro",
        help="mq-trace: the MQ calls reach the job as activity trace PCF messages (qmon.mq.trace)",
    )
    sp.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    try:
        return int(args.func(args) or 0)
    except ConfigError as exc:
        print(f"qmon: configuration error:\n{exc}", file=sys.stderr)
        return 2
    except CheckpointError as exc:
        print(f"qmon: checkpoint error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        from qmon.connectors.registry import RegistryError

        if not isinstance(exc, RegistryError):
            raise
        print(f"qmon: schema registry: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
