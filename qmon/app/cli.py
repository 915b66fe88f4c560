"""The ``qmon`` command."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qmon.core import topics
from qmon.core.config import Config, ConfigError, load_config
from qmon.streaming.units import CheckpointError

if TYPE_CHECKING:
    from qmon.connectors.registry import Framing

logger = logging.getLogger("qmon")


def _config(args: argparse.Namespace) -> Config:
    return load_config(getattr(args, "config", None))


def _bootstrap(args: argparse.Namespace, config: Config) -> str:
    return args.bootstrap or os.environ.get("QMON_BOOTSTRAP") or config.kafka.bootstrap


def _framing(config: Config) -> Framing:
    """``connectors.registry.Framing`` of the configured schema registry (none: records as plain Avro)."""
    from qmon.connectors import registry

    return registry.Framing(registry.from_config(config.kafka))


def cmd_state(verb: str, args: argparse.Namespace) -> int:
    """``qmon state export`` / ``qmon state import`` (``qmon.app.state``)."""
    from qmon.app.state import cmd_state_export, cmd_state_import

    config = _config(args)
    if verb == "export":
        return cmd_state_export(args, config)
    return cmd_state_import(args, config, _bootstrap(args, config), _framing(config))


# ---------------------------------------------------------------- run / replay


def cmd_run(args: argparse.Namespace) -> int:
    from qmon.streaming.job import run

    config = _config(args)
    checkpoint = args.checkpoint or config.job.checkpoint
    if args.master:
        config = config.model_copy(update={"job": config.job.model_copy(update={"master": args.master})})
    return run(config, _bootstrap(args, config), checkpoint, available_now=args.available_now)


def cmd_replay(args: argparse.Namespace) -> int:
    from qmon.streaming.replay import replay_file

    config = _config(args)
    if not Path(args.input).exists():
        print(f"qmon replay: {args.input}: no such file", file=sys.stderr)
        return 2
    if args.master:
        config = config.model_copy(update={"job": config.job.model_copy(update={"master": args.master})})
    n = replay_file(args.input, config, args.output)
    if args.output:
        print(f"qmon replay: {n} records written to {args.output}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------- kafka


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


# ---------------------------------------------------------------- produce / mqsc / tail


def cmd_produce(args: argparse.Namespace) -> int:
    from qmon.connectors.clients import produce_rows
    from qmon.connectors.jsonl import encode_lines

    config = _config(args)
    with open(args.input) as fh:
        encoded = encode_lines(fh, Path(args.input).name)
    for d in encoded.dead:
        print(f"qmon produce: {args.input}: {d['error']} ({d['reason_name']}); not sent", file=sys.stderr)
    prefix = config.kafka.topic_prefix
    bootstrap = _bootstrap(args, config)
    if any(row[0] == topics.MQ_TRACE for row in encoded.rows):  # trace lines: the topic may not exist yet
        from qmon.connectors.kafka import ensure_topics

        ensure_topics(bootstrap, config.kafka.partitions, config.kafka.security, prefix=prefix, mq_trace=True)
    framing = _framing(config)  # with a schema registry: the ids of qmon's schemas in Confluent's header

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

    config = _config(args)
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
    framing = _framing(config)
    rows = [
        (
            topic,
            f"{r['qmgr']}/{r['queue']}".encode(),
            framing.frame(topic, "QueueActivity", avro.encode("QueueActivity", r)),
        )
        for r in records
    ]
    n = produce_rows(_bootstrap(args, config), rows, config.kafka.security)
    print(
        f"qmon seed-depth: {n} queues of {args.qmgr} seeded ({', '.join(f'{q}={d}' for q, d in depths[:5])}{' ...' if n > 5 else ''})",
        file=sys.stderr,
    )
    return 0


def read_mqsc_input(args: argparse.Namespace) -> list[str]:
    from qmon.core.mqsc import split_script

    if args.command:
        text = " ".join(args.command)
    elif args.file:
        text = Path(args.file).read_text()
    else:
        text = sys.stdin.read()
    return split_script(text)


def _wait_for_joined_replies(
    bootstrap: str, ids: list[str], *, timeout: float, security: Any, prefix: str
) -> dict[str, dict[str, Any]]:
    """Like ``connectors.clients.wait_for_replies``, but a command answered in parts (``RESET
    QSTATS`` with a generic name: one reply per shard) waits for every part and joins them."""
    from qmon.connectors.clients import consume
    from qmon.core.mqsc import join_parts

    wanted = set(ids)
    got: dict[str, list[dict[str, Any]]] = {}
    done: dict[str, dict[str, Any]] = {}

    def stop(topic: str, record: dict[str, Any]) -> bool:
        cid = record.get("command_id")
        if cid in wanted and cid not in done:
            got.setdefault(cid, []).append(record)
            if (joined := join_parts(got[cid])) is not None:
                done[cid] = joined
        return wanted <= done.keys()

    for _ in consume(bootstrap, [topics.REPLIES], timeout=timeout, security=security, stop=stop, prefix=prefix):
        pass
    for cid, records in got.items():  # parts still missing at the timeout: what arrived, marked failed
        if cid not in done:
            done[cid] = join_parts(records, partial=True)  # type: ignore[assignment]
    return done


def commands_read(n: int, failed: int) -> str:
    """runmqsc's summary of a run of ``n`` commands, ``failed`` of them failed."""
    read = "One MQSC command read." if n == 1 else f"{n} MQSC commands read."
    if failed == 0:
        return f"{read}\nAll valid MQSC commands were processed."
    return (
        f"{read}\n" + ("One command has" if failed == 1 else f"{failed} commands have") + " a syntax error or failed."
    )


def cmd_mqsc(args: argparse.Namespace) -> int:
    from qmon.connectors.clients import send_commands

    config = _config(args)
    bootstrap = _bootstrap(args, config)
    commands = read_mqsc_input(args)
    if not commands:
        print("qmon mqsc: no command given (argument, -f FILE or standard input)", file=sys.stderr)
        return 2
    prefix = config.kafka.topic_prefix
    ids = send_commands(
        bootstrap,
        args.qmgr,
        commands,
        user=os.environ.get("USER"),
        security=config.kafka.security,
        prefix=prefix,
        framing=_framing(config),
    )
    replies = _wait_for_joined_replies(
        bootstrap, ids, timeout=args.timeout, security=config.kafka.security, prefix=prefix
    )
    failed = 0
    for n, (cid, text) in enumerate(zip(ids, commands, strict=True), start=1):
        print(f"{n:>6} : {text}")
        reply = replies.get(cid)
        if reply is None:
            failed += 1
            print(f"qmon: no reply within {args.timeout:.0f} s (is `qmon run` running against {bootstrap}?)")
        else:
            failed += 0 if reply["ok"] else 1
            print(reply["message"])
    print(commands_read(len(commands), failed))
    return 1 if failed else 0


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
    config = _config(args)
    bootstrap = _bootstrap(args, config)
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

    config = _config(args)
    try:
        report = reportreader.read(
            _bootstrap(args, config),
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


def cmd_simulate(args: argparse.Namespace) -> int:
    import time as _time

    from qmon.app.simulator import SETUP_MQSC, Simulator, as_mq_trace
    from qmon.connectors.clients import produce_paced, send_commands
    from qmon.connectors.kafka import ensure_topics

    config = _config(args)
    bootstrap = _bootstrap(args, config)
    prefix = config.kafka.topic_prefix
    trace = args.format == "mq-trace"
    ensure_topics(bootstrap, config.kafka.partitions, config.kafka.security, prefix=prefix, mq_trace=trace)
    framing = _framing(config)  # with a schema registry: the ids of qmon's schemas in Confluent's header
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


def cmd_tail(args: argparse.Namespace) -> int:
    from qmon.app.render import line
    from qmon.connectors.avro import to_jsonable
    from qmon.connectors.clients import consume

    config = _config(args)
    names = args.topics or [t for t in topics.OUTPUTS]
    colour = sys.stdout.isatty() and not args.json
    count = 0
    try:
        for topic, record, _msg in consume(
            _bootstrap(args, config),
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


# ---------------------------------------------------------------- Prometheus, Alertmanager


def cmd_metrics(args: argparse.Namespace) -> int:
    from qmon.app.exporter import run as run_exporter

    config = _config(args)
    return run_exporter(
        _bootstrap(args, config),
        port=args.port,
        bind=args.bind,
        prefix=config.kafka.topic_prefix,
        security=config.kafka.security,
    )


def cmd_alertmanager(args: argparse.Namespace) -> int:
    from qmon.app.alertmanager import Forwarder
    from qmon.core.config import duration_ms

    config = _config(args)
    try:
        resend_ms = duration_ms(args.resend)
    except ValueError as exc:
        print(f"qmon alertmanager: --resend: {exc}", file=sys.stderr)
        return 2
    forwarder = Forwarder(
        _bootstrap(args, config),
        args.url,
        prefix=config.kafka.topic_prefix,
        security=config.kafka.security,
        group=args.group,
        resend_ms=resend_ms,
    )
    return forwarder.run()


# ---------------------------------------------------------------- demo


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


# ---------------------------------------------------------------- parser


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

    from qmon.app.state import add_parser as add_state_parser

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
