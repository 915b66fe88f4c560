"""``qmon demo``: a local broker, the job, the workload simulator, and a live view.

Everything runs in this one process: the Kafka broker (a child JVM), the Spark job
(local[2]), the simulator (a thread) and the view (the main thread).  Ctrl-C, or the
end of ``--duration``, stops them in reverse order and leaves nothing running.

The view (on a terminal) redraws once a second: structure usage bars against
OVFLWMAX and the full threshold, the queues worth watching with their depth and
service state, and the latest events and alerts.  Without a terminal it prints one
line per output record.  Either way it ends with a summary of counts per type.
"""

from __future__ import annotations

import collections
import logging
import shutil
import sys
import tempfile
import threading
import time
from importlib import resources
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: the sample configuration shipped in the package (``config/`` in the checkout, ``qmon/samples`` installed)
SAMPLES = resources.files("qmon") / "samples"


class View:
    """What the live view shows, updated from the simulator's records and the output topics."""

    def __init__(self, structures: Any):
        from qmon.core.structures import StructureMonitor

        self.lock = threading.Lock()
        self.settings = structures
        self.mirror = {d.strname: StructureMonitor(d.strname, structures) for d in structures.structures}
        self.service: dict[str, str] = {}
        self.latest: collections.deque[str] = collections.deque(maxlen=12)
        self.counts: collections.Counter[str] = collections.Counter()
        self.firing: collections.Counter[str] = collections.Counter()  # FIRING records per alert type
        self.episodes: dict[str, set[str]] = collections.defaultdict(set)  # distinct alert_ids per type
        self.depth: dict[tuple[str, str], int] = {}

    def on_item(self, item: Any) -> None:
        from qmon.core.records import Activity

        rec = item.value
        if isinstance(rec, bytes):
            return
        with self.lock:
            key = (rec["qmgr"], rec["queue"])
            self.depth[key] = self.depth.get(key, 0) + (1 if rec["op"] == "PUT" else -1)
            mon = self.mirror.get(rec.get("structure") or "")
            if mon is not None:
                mon.on_activity(
                    Activity(
                        rec["event_id"], rec["qmgr"], rec["queue"], rec["op"], rec["ts"], msg_bytes=rec.get("msg_bytes")
                    )
                )

    def on_output(self, topic: str, record: dict[str, Any], text: str) -> None:
        from qmon.core import topics

        with self.lock:
            self.counts[
                str(
                    record.get("type")
                    or (
                        "DEAD_LETTER"
                        if topic == topics.DLQ
                        else "OVERFLOW_CANDIDATES"
                        if topic == topics.OVERFLOW
                        else "WORK_AVAILABLE"
                        if topic == topics.NOTIFY
                        else topic
                    )
                )
            ] += 1
            if record.get("state") in ("FIRING", "RESOLVED") and record.get("alert_id"):
                self.episodes[str(record["type"])].add(str(record["alert_id"]))
                if record["state"] == "FIRING":
                    self.firing[str(record["type"])] += 1
            if topic == topics.PERFORMANCE:
                self.service[f"{record['qmgr']}/{record['queue']}"] = record["type"]
            elif topic == topics.ALERTS and record.get("type") == "QUEUE_STALLED":
                self.service[f"{record['qmgr']}/{record['queue']}"] = f"STALLED {record['state']}"
            self.latest.append(text)

    def render(self, elapsed: float) -> str:
        with self.lock:
            out = [f"\033[2J\033[Hqmon demo — {elapsed:4.0f} s   (Ctrl-C stops; events also on `qmon tail`)", ""]
            out.append("Structures (usage of the primary; | = OVFLWMAX, ! = full threshold)")
            for name, mon in self.mirror.items():
                d = mon.d
                assert d is not None
                width = 50
                used = min(width, int(mon.usage() / 100 * width))
                bar = ["#"] * used + ["."] * (width - used)
                bar[min(width - 1, int(d.ovflwmax / 100 * width))] = "|"
                bar[min(width - 1, int(d.fullthreshold / 100 * width))] = "!"
                mode = " OVERFLOW" if mon.state["mode"] else ""
                out.append(f"  {name:<6} [{''.join(bar)}] {mon.usage():5.1f}% of {mon.state['size_kb']} KB{mode}")
            out.append("")
            out.append("Queues with service-interval events (depth, last event)")
            watched = sorted(self.service)[:8]
            for q in watched:
                qm, name = q.split("/", 1)
                out.append(f"  {q:<28} depth {self.depth.get((qm, name), 0):>5}   {self.service[q]}")
            out.append("")
            out.append("Latest events and alerts")
            out.extend(f"  {line}" for line in self.latest)
            return "\n".join(out)


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
    from qmon.connectors.broker import LocalKafka
    from qmon.connectors.clients import consume, produce_paced, send_commands, wait_for_replies
    from qmon.connectors.kafka import ensure_topics
    from qmon.core import topics
    from qmon.core.config import load_config
    from qmon.core.mqsc import split_script
    from qmon.streaming.job import start_query
    from qmon.streaming.spark import session

    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="qmon-demo-"))
    base.mkdir(parents=True, exist_ok=True)
    with resources.as_file(SAMPLES / "demo.yaml") as path:
        config = load_config(path)
    trace = fmt == "mq-trace"  # the MQ calls as activity trace PCF messages on qmon.mq.trace
    if trace:
        config = config.model_copy(update={"mq_trace": config.mq_trace.model_copy(update={"enabled": True})})
    broker = LocalKafka(workdir=base / "kafka")
    view = View(config.structure_settings())
    stop = threading.Event()
    tty = sys.stdout.isatty()
    query = None
    spark = None
    producer_thread = None
    exporter = None
    t_start = time.monotonic()
    try:
        print(f"qmon demo: starting a local Kafka broker (working directory {base})", flush=True)
        broker.start()
        bootstrap = broker.bootstrap
        ensure_topics(bootstrap, config.kafka.partitions, mq_trace=trace)
        if metrics_port is not None:
            from qmon.app.exporter import Exporter

            exporter = Exporter(bootstrap)
            port = exporter.serve(metrics_port, "127.0.0.1")
            exporter.start()
            print(f"qmon demo: Prometheus metrics on http://127.0.0.1:{port}/metrics", flush=True)
        print(
            f"qmon demo: broker on {bootstrap}; starting the qmon job (Spark; the first start takes a while)",
            flush=True,
        )
        spark = session(
            config.job.master,
            "qmon-demo",
            shuffle_partitions=config.job.shuffle_partitions,
            checkpoint_fs=config.job.checkpoint_fs,
            make_class_archive=True,  # (stopped with shutdown, below)
        )
        query = start_query(spark, config, bootstrap, str(base / "checkpoint"))
        t0 = int(time.time() * 1000)
        commands = split_script((SAMPLES / "demo.mqsc").read_text())
        ids = send_commands(bootstrap, "QM1", commands, user="demo", ts=t0 - 1)
        replies = wait_for_replies(bootstrap, ids, timeout=240)
        for cid, text in zip(ids, commands, strict=True):
            r = replies.get(cid)
            print(f"  mqsc> {text}\n        {r['message'] if r else 'no reply (is the job running?)'}", flush=True)
        sim = Simulator(seed=seed, rate=rate, t0=int(time.time() * 1000))
        how = " (MQ calls as activity trace on qmon.mq.trace)" if trace else ""
        print(f"qmon demo: simulator running at {rate:.0f} records/s (seed {seed}){how}; events follow", flush=True)

        def items() -> Any:
            for item in sim.items():
                view.on_item(item)
                yield item

        def produce() -> None:
            produce_paced(bootstrap, as_mq_trace(items()) if trace else items(), duration=None, stop=stop)
            # Keep event time moving while inputs are quiet, so timers (stall, overflow scan) fire.

        def heartbeat() -> None:
            while not stop.wait(2.0):
                send_commands(bootstrap, "QM1", ["PING QMGR"], user="demo-heartbeat")

        producer_thread = threading.Thread(target=produce, name="simulator", daemon=True)
        producer_thread.start()
        threading.Thread(target=heartbeat, name="heartbeat", daemon=True).start()
        t_work = time.monotonic()
        last_draw = 0.0
        wanted = [t for t in topics.OUTPUTS if t != topics.REPLIES]
        for topic, record, _ in consume(bootstrap, wanted, from_beginning=True, timeout=duration, idle=None):
            text = line(topic, record, colour=tty)
            view.on_output(topic, record, text)
            now = time.monotonic()
            if tty:
                if now - last_draw >= 1.0:
                    last_draw = now
                    print(view.render(now - t_work), flush=True)
            else:
                print(text, flush=True)
            if query.exception() is not None:
                print(f"qmon demo: the job failed: {query.exception()}", file=sys.stderr)
                break
    except KeyboardInterrupt:
        print("\nqmon demo: stopping", flush=True)
    finally:
        stop.set()
        if producer_thread is not None:
            producer_thread.join(timeout=10)
        if query is not None:
            try:
                query.stop()
            except Exception:  # noqa: BLE001
                pass
        if spark is not None:
            from qmon.streaming.spark import shutdown

            shutdown(spark)
        if exporter is not None:
            exporter.stop()
        broker.stop()
        if workdir is None:
            shutil.rmtree(base, ignore_errors=True)
    print(f"qmon demo summary ({time.monotonic() - t_start:.0f} s):")
    for name, n in sorted(view.counts.items()):
        row = f"  {name:<26} {n}"
        if name in view.episodes:  # an alert kind: FIRING records against distinct episodes (alert_ids)
            row += f"  ({view.firing[name]} FIRING, {len(view.episodes[name])} episodes)"
        print(row)
    return 0
