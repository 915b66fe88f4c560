"""``qmon demo``: a local broker, a small live workload, the job, and the events as they come.

The workload (``demo_workload``) is deterministic in shape and runs in real time:
a consumer that keeps up, then stalls and recovers (QSVCINT_HIGH, QUEUE_STALLED,
QSVCINT_OK), a queue nobody serves, and one malformed record (a dead letter).
"""

from __future__ import annotations

import collections
import logging
import os
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

logger = logging.getLogger(__name__)

CONFIG_DIR = Path(__file__).resolve().parent.parent / "config"


def demo_workload(start_ms: int) -> Iterator[tuple[float, dict[str, Any] | bytes]]:
    """(seconds after start, activity record or raw bytes) in time order."""
    t = 0.0
    depth = 0
    seq = 0

    def act(queue: str, op: str, at: float) -> dict[str, Any]:
        nonlocal seq
        seq += 1
        return {"event_id": f"demo-{seq}", "qmgr": "QM1", "queue": queue, "op": op,
                "ts": start_ms + int(at * 1000), "depth_after": None, "msg_bytes": 1000, "structure": None,
                "reason": None}

    yield 0.5, act("DEMO.UNSERVED", "PUT", 0.5)
    # 0-6 s: the consumer keeps up; 6-10 s: it stops; 10-14 s: it catches up.
    while t < 16.0:
        yield t, act("PAYROLL.REQUEST", "PUT", t)
        depth += 1
        if t < 6.0 or t >= 10.0:
            while depth > 0:
                yield t + 0.05, act("PAYROLL.REQUEST", "GET", t + 0.05)
                depth -= 1
        t += 0.25
    yield 8.0, b"\x07not an avro record"


def demo(duration: float | None = None, workdir: str | None = None) -> int:
    from connectors import avro
    from connectors.broker import LocalKafka
    from connectors.clients import consume, produce_rows, send_commands, wait_for_replies
    from connectors.kafka import ensure_topics
    from qmon import topics
    from qmon.config import load_config
    from qmon.mqsc import split_script
    from qmon.render import line
    from streaming.job import start_query
    from streaming.spark import session

    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="qmon-demo-"))
    base.mkdir(parents=True, exist_ok=True)
    config = load_config(CONFIG_DIR / "demo.yaml")
    broker = LocalKafka(workdir=base / "kafka")
    counts: collections.Counter[str] = collections.Counter()
    stop = threading.Event()
    query = None
    spark = None
    try:
        print(f"qmon demo: starting a local Kafka broker (working directory {base})", flush=True)
        broker.start()
        bootstrap = broker.bootstrap
        ensure_topics(bootstrap, config.kafka.partitions)
        print(f"qmon demo: broker on {bootstrap}; starting the job (Spark, first start takes a while)", flush=True)
        spark = session(config.job.master, "qmon-demo", shuffle_partitions=config.job.shuffle_partitions)
        query = start_query(spark, config, bootstrap, str(base / "checkpoint"))
        commands = split_script((CONFIG_DIR / "demo.mqsc").read_text())
        ids = send_commands(bootstrap, "QM1", commands, user="demo", ts=int(time.time() * 1000) - 1000)
        replies = wait_for_replies(bootstrap, ids, timeout=180)
        for cid, text in zip(ids, commands):
            r = replies.get(cid)
            print(f"  mqsc> {text}\n        {r['message'] if r else 'no reply'}", flush=True)
        print("qmon demo: workload running; events and alerts follow (Ctrl-C stops)", flush=True)

        start_ms = int(time.time() * 1000)
        t0 = time.monotonic()

        def produce() -> None:
            items = sorted(demo_workload(start_ms), key=lambda x: x[0])
            for at, item in items:
                while not stop.is_set() and time.monotonic() - t0 < at:
                    time.sleep(0.02)
                if stop.is_set():
                    return
                if isinstance(item, bytes):
                    produce_rows(bootstrap, [(topics.ACTIVITY, b"QM1/DEMO", item)])
                else:
                    item["ts"] = int(time.time() * 1000)
                    produce_rows(bootstrap, [(topics.ACTIVITY, f"QM1/{item['queue']}".encode(),
                                              avro.encode("QueueActivity", item))])
            # Keep the event-time clock moving while the system is otherwise quiet (stall timers).
            while not stop.is_set():
                send_commands(bootstrap, "QM1", ["PING QMGR"], user="demo-heartbeat")
                stop.wait(2.0)

        threading.Thread(target=produce, daemon=True).start()
        end = None if duration is None else t0 + duration
        for topic, record, _ in consume(bootstrap, [t for t in topics.OUTPUTS if t != topics.REPLIES],
                                        from_beginning=True, timeout=duration):
            counts[str(record.get("type") or record.get("reason_name") or topic)] += 1
            print(line(topic, record, colour=os.isatty(1)), flush=True)
            if end is not None and time.monotonic() > end:
                break
    except KeyboardInterrupt:
        print("\nqmon demo: stopping", flush=True)
    finally:
        stop.set()
        if query is not None:
            try:
                query.stop()
            except Exception:  # noqa: BLE001
                pass
        if spark is not None:
            spark.stop()
        broker.stop()
        if workdir is None:
            shutil.rmtree(base, ignore_errors=True)
    print("qmon demo summary:")
    for name, n in sorted(counts.items()):
        print(f"  {name:<24} {n}")
    return 0


__all__ = ["demo", "demo_workload", "uuid"]
