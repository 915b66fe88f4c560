"""``qmon demo``: a local broker, the job, the workload simulator, and a live view.

Everything runs in this one process: the Kafka broker (a child JVM), the Spark job
(local[2]), the simulator (a thread) and the view.  Ctrl-C, or the end of ``--duration``,
stops them in reverse order (the job between two micro-batches) and leaves nothing
running.

On a terminal the view redraws once a second, from the moment the demo starts: what it is
waiting for while the broker and Spark start, then the structures' usage bars against
OVFLWMAX and the full threshold with the time their trend takes to OVFLWMAX and to full
(from the job's snapshots), the queues with service-interval events, and the latest events
and alerts, fill forecasts among them.  Without a terminal it prints one line per output
record.  Either way it ends with a summary of counts per type.  What Spark and qmon log goes
to ``demo_log()``, not the screen.
"""

from __future__ import annotations

import collections
import datetime as dt
import logging
import math
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from qmon.core import topics
from qmon.core.records import Snapshot
from qmon.core.timeconv import to_ms

logger = logging.getLogger(__name__)

#: the sample configuration shipped in the package (``config/`` in the checkout, ``qmon/samples`` installed)
SAMPLES = resources.files("qmon") / "samples"


def demo_log() -> Path:
    """Where the demo writes what Spark's JVM and qmon log (kept after the demo ends, rewritten by the next)."""
    from qmon.cache import cache_dir

    return cache_dir() / "logs" / "demo.log"


@dataclass
class Usage:
    """One structure as its latest snapshot describes it."""

    size_kb: int
    used_pct: float
    overflow_structure: str | None = None
    overflow_used_pct: float | None = None
    overflow_mode: bool = False
    queues_in_overflow: int = 0
    # how long after the snapshot its trend reaches OVFLWMAX, full, the overflow structure's full (ms; None: not
    # heading there)
    to_ovflwmax_ms: int | None = None
    to_full_ms: int | None = None
    to_overflow_full_ms: int | None = None

    @classmethod
    def of(cls, rec: Snapshot) -> Usage | None:
        capacity = rec.get("capacity_elements")
        if not capacity:
            return None
        ovf_capacity = rec.get("overflow_capacity_elements")
        ts = _epoch_ms(rec.get("ts"))

        def until(eta: object) -> int | None:
            at = _epoch_ms(eta)
            return at - ts if at is not None and ts is not None else None

        return cls(
            size_kb=rec.get("size_kb") or 0,
            used_pct=100.0 * (rec.get("used_elements") or 0) / capacity,
            overflow_structure=rec.get("overflow_structure"),
            overflow_used_pct=100.0 * (rec.get("overflow_used_elements") or 0) / ovf_capacity if ovf_capacity else None,
            overflow_mode=bool(rec.get("overflow_mode")),
            queues_in_overflow=rec.get("queues_in_overflow") or 0,
            to_ovflwmax_ms=until(rec.get("ovflwmax_eta")),
            to_full_ms=until(rec.get("full_eta")),
            to_overflow_full_ms=until(rec.get("overflow_full_eta")),
        )

    def times(self) -> str:
        """When the structure's trend reaches OVFLWMAX and full: ``OVFLWMAX in 12 s, full in 40 s`` ('' if never)."""
        ahead = (("OVFLWMAX", self.to_ovflwmax_ms), ("full", self.to_full_ms))
        return ", ".join(f"{what} {_until(ms)}" for what, ms in ahead if ms is not None)


@dataclass(frozen=True)
class Thresholds:
    """What a structure's bar marks: OVFLWMAX and the full threshold, in % of the structure."""

    ovflwmax: int
    fullthreshold: int


class View:
    """What the live view shows, from the job's output records (events, alerts, snapshots). Pure but for
    its lock: the main thread updates it, the screen's thread draws it."""

    def __init__(self, thresholds: dict[str, Thresholds]):
        self.lock = threading.Lock()
        self.thresholds = thresholds
        self.usage: dict[str, Usage] = {}
        self.status = "starting"
        self.setup: list[str] = []  # the demo's MQSC commands and their replies
        self.service: dict[str, str] = {}
        self.latest: collections.deque[str] = collections.deque(maxlen=12)
        self.counts: collections.Counter[str] = collections.Counter()
        self.firing: collections.Counter[str] = collections.Counter()  # FIRING records per alert type
        self.episodes: dict[str, set[str]] = collections.defaultdict(set)  # distinct alert_ids per type
        self.depth: dict[tuple[str, str], int] = {}

    def set_status(self, text: str) -> None:
        with self.lock:
            self.status = text

    def on_output(self, topic: str, record: dict[str, Any], text: str) -> None:
        with self.lock:
            if topic == topics.SNAPSHOT:
                self._snapshot(record)  # type: ignore[arg-type]
                return
            self.counts[_kind(topic, record)] += 1
            if record.get("state") in ("FIRING", "RESOLVED") and record.get("alert_id"):
                self.episodes[str(record["type"])].add(str(record["alert_id"]))
                if record["state"] == "FIRING":
                    self.firing[str(record["type"])] += 1
            if topic == topics.PERFORMANCE:
                service = record.get("service_time_ms")
                shown = str(record["type"])
                if service is not None:
                    shown += f"  service {service / 1000:.1f} s of {record['service_interval_ms'] / 1000:.1f} s"
                self.service[f"{record.get('qsg') or record['qmgr']}/{record['queue']}"] = shown
            elif topic == topics.ALERTS and record.get("type") == "QUEUE_STALLED":
                self.service[f"{record.get('qsg') or record['qmgr']}/{record['subject']}"] = (
                    f"STALLED {record['state']}"
                )
            self.latest.append(text)

    def _snapshot(self, rec: Snapshot) -> None:
        qmgr = rec.get("qmgr")
        if qmgr is not None:
            for q in rec.get("queues") or []:
                self.depth[(qmgr, q["queue"])] = q["depth"]
        name = rec.get("structure")
        usage = Usage.of(rec)
        if name is not None and usage is not None:
            self.usage[name] = usage

    def frame(self, elapsed: float, width: int = 100, height: int = 40) -> list[str]:
        """The screen's lines (no cursor movement), cut to ``width`` columns and ``height`` lines."""
        with self.lock:
            out = [
                f"qmon demo  {elapsed:4.0f} s   {self.status}",
                "Ctrl-C stops; the events are also on `qmon tail`",
                "",
            ]
            out.append("Structures: usage of each (| OVFLWMAX, ! full threshold), time to OVFLWMAX and 100 % (full)")
            bar_width = max(20, min(50, width - 82))  # (room for the mode and the times after the bar)
            for name, th in self.thresholds.items():
                u = self.usage.get(name)
                if u is None:
                    out.append(f"  {name:<6} (no snapshot yet)")
                    continue
                mode = f"  OVERFLOW ({u.queues_in_overflow} queues)" if u.overflow_mode else ""
                times = f"  {t}" if (t := u.times()) else ""
                bar = _bar(u.used_pct, th, bar_width)
                out.append(f"  {name:<6} {bar} {u.used_pct:5.1f}% of {u.size_kb} KB{mode}{times}")
                if u.overflow_structure is not None and u.overflow_used_pct is not None:
                    full = f", full {_until(u.to_overflow_full_ms)}" if u.to_overflow_full_ms is not None else ""
                    out.append(f"    overflow {u.overflow_structure}: {u.overflow_used_pct:5.1f}% used{full}")
            out.append("")
            out.append("Queues with service-interval events: depth, latest event")
            for q in sorted(self.service)[:8]:
                qm, name = q.split("/", 1)
                out.append(f"  {q:<28} depth {self.depth.get((qm, name), 0):>5}   {self.service[q]}")
            if not self.service:
                out.append("  (none yet)")
            if self.setup and not self.latest:
                out.append("")
                out.append("Set-up commands (MQSC)")
                out.extend(f"  {text}" for text in self.setup)
            out.append("")
            out.append("Latest events and alerts")
            room = max(1, height - len(out) - 1)
            out.extend(f"  {text}" for text in list(self.latest)[-room:])
            return [_cut(row, width) for row in out[:height]]


def _epoch_ms(value: object) -> int | None:
    """A timestamp as the job's records carry it (epoch ms as written, a datetime once Avro-decoded), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, dt.datetime)):
        return None
    return to_ms(value)


def _until(ms: int) -> str:
    """``ms`` milliseconds from now as the view says it: ``now``, ``in 12 s``, ``in 3 min``, ``in 2 h``."""
    if ms <= 0:
        return "now"
    seconds = math.ceil(ms / 1000)
    if seconds < 120:
        return f"in {seconds} s"
    mins = round(seconds / 60)
    return f"in {mins} min" if mins < 120 else f"in {round(mins / 60)} h"


def _kind(topic: str, record: dict[str, Any]) -> str:
    if record.get("type"):
        return str(record["type"])
    return {topics.DLQ: "DEAD_LETTER", topics.OVERFLOW: "OVERFLOW_CANDIDATES", topics.NOTIFY: "WORK_AVAILABLE"}.get(
        topic, topic
    )


def _bar(pct: float, th: Thresholds, width: int) -> str:
    used = min(width, int(pct / 100 * width))
    cells = ["#"] * used + ["."] * (width - used)
    cells[min(width - 1, int(th.ovflwmax / 100 * width))] = "|"
    cells[min(width - 1, int(th.fullthreshold / 100 * width))] = "!"
    return "[" + "".join(cells) + "]"


def _cut(row: str, width: int) -> str:
    """``row`` cut to ``width`` visible columns (colour codes kept whole, and reset at a cut)."""
    shown, out, i = 0, [], 0
    while i < len(row):
        if row[i] == "\033":
            end = row.find("m", i)
            if end < 0:
                break
            out.append(row[i : end + 1])
            i = end + 1
            continue
        if shown == width:
            out.append("\033[0m")
            break
        out.append(row[i])
        shown += 1
        i += 1
    return "".join(out)


class Screen:
    """Draws the view on a terminal once a second, on the alternate screen, from a thread of its own.  A
    frame that cannot be drawn is reported in one line, and the demo goes on printing one line per record."""

    def __init__(self, view: View, out: TextIO):
        self.view, self.out = view, out
        self.t0 = time.monotonic()
        self.stopping = threading.Event()
        self.failed: str | None = None
        self.thread = threading.Thread(target=self._loop, name="qmon-demo-screen", daemon=True)

    def start(self) -> Screen:
        self.out.write("\033[?1049h\033[?25l")  # the alternate screen, no cursor
        self.out.flush()
        self.thread.start()
        return self

    @property
    def drawing(self) -> bool:
        return self.failed is None and not self.stopping.is_set()

    def draw(self) -> None:
        size = shutil.get_terminal_size((100, 40))
        try:
            rows = self.view.frame(time.monotonic() - self.t0, size.columns, size.lines)
        except Exception as exc:  # noqa: BLE001 - a view that cannot draw must not stop the demo
            self.failed = f"{type(exc).__name__}: {exc}"
            self.close()
            print(f"qmon demo: the live view cannot draw ({self.failed}); showing one line per record", flush=True)
            return
        self.out.write("\033[H" + "\033[K\n".join(rows) + "\033[K\033[J")
        self.out.flush()

    def _loop(self) -> None:
        while not self.stopping.is_set():
            self.draw()
            self.stopping.wait(1.0)

    def close(self) -> None:
        """Leave the alternate screen (the terminal as it was); the summary is printed after."""
        if self.stopping.is_set():
            return
        self.stopping.set()
        if self.thread.is_alive() and threading.current_thread() is not self.thread:
            self.thread.join(timeout=5)
        self.out.write("\033[?25h\033[?1049l")
        self.out.flush()


def demo(
    duration: float | None = None,
    workdir: str | None = None,
    rate: float = 100.0,
    seed: int = 1,
    metrics_port: int | None = None,
    fmt: str = "avro",
) -> int:
    from qmon.app.render import line
    from qmon.app.simulator import Simulator, as_mq_trace
    from qmon.connectors.clients import consume, produce_paced, send_commands, wait_for_replies
    from qmon.connectors.kafka import ensure_topics
    from qmon.core.config import load_config
    from qmon.core.mqsc import split_script
    from qmon.devservers.kafka import LocalKafka
    from qmon.streaming.job import start_query, stop_query
    from qmon.streaming.spark import log_to_file, session, shutdown

    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="qmon-demo-"))
    base.mkdir(parents=True, exist_ok=True)
    with resources.as_file(SAMPLES / "demo.yaml") as path:
        config = load_config(path)
    trace = fmt == "mq-trace"  # the MQ calls as activity trace PCF messages on qmon.mq.trace
    if trace:
        config = config.model_copy(update={"mq_trace": config.mq_trace.model_copy(update={"enabled": True})})
    broker = LocalKafka(workdir=base / "kafka")
    view = View({s.strname: Thresholds(s.ovflwmax, s.fullthreshold) for s in config.structures})
    tty = sys.stdout.isatty()
    log = demo_log()
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")  # this run's log only
    log_to_file(log)  # Spark's JVM, from its start
    _log_to(log, quiet=tty)
    screen = Screen(view, sys.stdout).start() if tty else None

    def say(text: str) -> None:
        view.set_status(text)
        if screen is None or not screen.drawing:
            print(f"qmon demo: {text}", flush=True)

    stop = threading.Event()
    query = None
    spark = None
    producer_thread = None
    exporter = None
    failed: str | None = None
    t_start = time.monotonic()
    try:
        say(f"starting a local Kafka broker (working directory {base}; log {log})")
        broker.start()
        bootstrap = broker.bootstrap
        ensure_topics(bootstrap, config.kafka.partitions, mq_trace=trace)
        if metrics_port is not None:
            from qmon.app.exporter import Exporter

            exporter = Exporter(bootstrap)
            port = exporter.serve(metrics_port, "127.0.0.1")
            exporter.start()
            say(f"Prometheus metrics on http://127.0.0.1:{port}/metrics")
        say(f"broker on {bootstrap}; starting Spark (a first start downloads its Kafka and Avro connectors)")
        spark = session(
            config.job.master,
            "qmon-demo",
            shuffle_partitions=config.job.shuffle_partitions,
            checkpoint_fs=config.job.checkpoint_fs,
            settings=config.spark_settings(),
        )
        say("starting the qmon job; waiting for its first micro-batch to answer the set-up commands")
        query = start_query(spark, config, bootstrap, str(base / "checkpoint"))
        t0 = int(time.time() * 1000)
        commands = split_script((SAMPLES / "demo.mqsc").read_text())
        ids = send_commands(bootstrap, "QM1", commands, user="demo", ts=t0 - 1)
        replies = wait_for_replies(bootstrap, ids, timeout=240)
        for cid, text in zip(ids, commands, strict=True):
            r = replies.get(cid)
            answer = r["message"] if r else "no reply (is the job running?)"
            with view.lock:
                view.setup.append(f"{text}: {answer}")
            if screen is None or not screen.drawing:
                print(f"  mqsc> {text}\n        {answer}", flush=True)
        sim = Simulator(seed=seed, rate=rate, t0=int(time.time() * 1000))
        how = " (MQ calls as activity trace on qmon.mq.trace)" if trace else ""
        say(f"simulator running at {rate:.0f} records/s (seed {seed}){how}; events follow")

        def produce() -> None:
            produce_paced(bootstrap, as_mq_trace(sim.items()) if trace else sim.items(), duration=None, stop=stop)

        def heartbeat() -> None:
            # Keep event time moving while inputs are quiet, so timers (stall, overflow scan) fire.
            while not stop.wait(2.0):
                send_commands(bootstrap, "QM1", ["PING QMGR"], user="demo-heartbeat")

        producer_thread = threading.Thread(target=produce, name="simulator", daemon=True)
        producer_thread.start()
        threading.Thread(target=heartbeat, name="heartbeat", daemon=True).start()
        wanted = [t for t in topics.OUTPUTS if t != topics.REPLIES] + [topics.SNAPSHOT]
        checked = time.monotonic()
        for topic, record, _ in consume(bootstrap, wanted, from_beginning=True, timeout=duration, idle=None):
            text = line(topic, record, colour=tty)
            view.on_output(topic, record, text)
            if topic != topics.SNAPSHOT and (screen is None or not screen.drawing):
                print(text, flush=True)
            if time.monotonic() - checked >= 1.0:
                checked = time.monotonic()
                if query.exception() is not None:
                    failed = str(query.exception()).splitlines()[0]
                    break
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not cut the stop short
        if screen is not None:
            screen.close()
        print("qmon demo: stopping", flush=True)
        stop.set()
        if producer_thread is not None:
            producer_thread.join(timeout=10)
        if query is not None:
            stop_query(query, log=log)
        if spark is not None:
            shutdown(spark)
        if exporter is not None:
            exporter.stop()
        broker.stop()
        if workdir is None:
            shutil.rmtree(base, ignore_errors=True)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if failed is not None:
        print(f"qmon demo: the job failed: {failed} (log: {log})", file=sys.stderr)
    print(f"qmon demo summary ({time.monotonic() - t_start:.0f} s):")
    for name, n in sorted(view.counts.items()):
        row = f"  {name:<26} {n}"
        if name in view.episodes:  # an alert kind: FIRING records against distinct episodes (alert_ids)
            row += f"  ({view.firing[name]} FIRING, {len(view.episodes[name])} episodes)"
        print(row)
    return 1 if failed is not None else 0


def _log_to(path: Path, *, quiet: bool) -> None:
    """qmon's own log to ``path`` too; with ``quiet`` (the live view owns the terminal) to ``path`` only."""
    root = logging.getLogger()
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    if quiet:
        for h in list(root.handlers):
            root.removeHandler(h)
    root.addHandler(handler)
