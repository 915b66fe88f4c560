"""qmon end to end (Kafka -> Spark -> Kafka) against a hand-written Python consumer, on the local broker.

    python benchmarks/throughput.py [--records N [N ...]] [--queues Q] [--latency --rate R --seconds S] [--targets] [--cluster]

Prints figures; asserts nothing.  The workload is fixed by a seed: Q queues (default 10,000) over
2 structures, 70/30 put/get, service-interval events enabled on every queue.  Both qmon and the
baseline apply qmon's own pure modules, so their outputs must match (same event_ids): the script
says whether they do.

* throughput (default): produce N records, run the job with Trigger.AvailableNow until it has
  consumed them, then run the baseline (confluent-kafka consumer -> qmon.core.queues / qmon.core.structures
  -> producer) over the same input.  Prints records/s, output records and the peak memory of Spark's JVM
  (its high-water mark) and of the Python workers (the local broker's JVM apart), and the ratio qmon / baseline.
* ``--latency``: produce at R records/s for S seconds while the job runs with a short trigger;
  prints p50/p95/p99 of (output record's Kafka timestamp - input record's Kafka timestamp).
* ``--mq-trace``: the same puts and gets (no structure) twice through the job, as QueueActivity Avro records
  on ``qmon.activity`` and as MQ activity trace PCF messages (``--calls`` calls each) on ``qmon.mq.trace``;
  prints the job's records/s for each, side by side, and whether both gave the same performance events.
* ``--targets``: the steady-state targets in one run, side by side: 300,000 records to warm the JVM up,
  1,000,000 records (and Quix Streams with ``--quix-python``), 5,000, 20,000 and 2 records/s (the fixed
  cost per batch) for ``--seconds`` each; then a table of each target, this run's figure and whether it
  was met.
* ``--cluster``: also run the job on a Spark standalone cluster (master + 2 workers on loopback)
  and check its output equals the local run's.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, NamedTuple

from qmon.connectors import avro
from qmon.connectors.broker import LocalKafka
from qmon.connectors.kafka import client_config, ensure_topics
from qmon.core import topics
from qmon.core.config import Config
from qmon.core.timeconv import to_ms

ROOT = Path(__file__).resolve().parents[1]

T0 = 1_700_000_000_000


# ---------------------------------------------------------------- workload


def workload(n: int, queues: int, seed: int = 42) -> list[tuple[bytes, bytes]]:
    """(key, Avro value) for n activity records, ts strictly increasing."""
    return [(f"{r['qmgr']}/{r['queue']}".encode(), avro.encode("QueueActivity", r)) for r in records(n, queues, seed)]


#: "short" (b0, b1, ...) or "uuid" (36 characters, as producers usually send)
EVENT_IDS = "short"
#: the queue managers the queues belong to (queue q to QM{q mod QMGRS})
QMGRS = 4


def records(n: int, queues: int, seed: int = 42) -> list[dict[str, Any]]:
    """n QueueActivity records (dicts), ts strictly increasing."""
    rng = random.Random(seed)
    ids = random.Random(seed + 1)  # its own stream: the workload is the same whatever the ids look like
    depth = [0] * queues
    out = []
    for i in range(n):
        q = rng.randrange(queues)
        op = "PUT" if depth[q] == 0 or rng.random() < 0.7 else "GET"
        depth[q] += 1 if op == "PUT" else -1
        qmgr = f"QM{q % QMGRS}"
        rec = {
            "event_id": str(uuid.UUID(int=ids.getrandbits(128), version=4)) if EVENT_IDS == "uuid" else f"b{i}",
            "qmgr": qmgr,
            "queue": f"Q{q:05d}",
            "op": op,
            "ts": T0 + i,
            "depth_after": None,
            "msg_bytes": 512 + (q % 7) * 300,
            "structure": "MSGQ1" if q % 2 else "MSGQ2",
            "reason": None,
        }
        out.append(rec)
    return out


def trace_workload(recs: list[dict[str, Any]], calls: int) -> list[tuple[bytes, bytes]]:
    """The same puts and gets as MQ activity trace: per queue manager, one PCF message per ``calls`` calls
    (keyed by queue manager, so each one's messages stay in order)."""
    from qmon.core import pcf

    enc = pcf.Encoder()
    pending: dict[str, list[bytes]] = {}
    out = []
    for r in recs:
        op = pcf.XF_PUT if r["op"] == "PUT" else pcf.XF_GET
        group = pending.setdefault(r["qmgr"], [])
        group.append(enc.call(op, r["queue"], ts_ms=r["ts"], msg_length=r["msg_bytes"], options=0x4))
        if len(group) == calls:
            out.append((r["qmgr"].encode(), enc.trace(r["qmgr"], pending.pop(r["qmgr"]))))
    out.extend((q.encode(), enc.trace(q, group)) for q, group in pending.items())
    return out


#: --shuffle / --input-tasks: the job's shuffle partitions and input tasks (None: the mode's default)
TUNING: dict[str, Any] = {}


def config_for(
    prefix: str, master: str = "local[2]", trigger: str = "1 second", qsvcint: int = 20_000, shuffle: int = 4
) -> Config:
    return Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 2},
            "job": {
                "queue_buckets": TUNING.get("queue_buckets") or 4,
                "queue_units": TUNING.get("queue_units"),
                "shuffle_partitions": TUNING.get("shuffle") or shuffle,
                "input_tasks": TUNING.get("input_tasks"),
                "checkpoint_fs": TUNING.get("checkpoint_fs") or "nio",
                **({"fetch_max_wait": TUNING["fetch_max_wait"]} if TUNING.get("fetch_max_wait") else {}),
                "watermark_delay": "0 seconds",
                "master": master,
                "trigger": trigger,
            },
            "monitor": {
                "perfmev": "ENABLED",
                **{k: TUNING[k] for k in ("dedup_window", "dedup_max", "dedup_state") if TUNING.get(k) is not None},
            },
            "queues": [{"pattern": "*", "qsvciev": "HIGH", "qsvcint": qsvcint}],
            "structures": [
                {"strname": "MSGQ1", "size": 400_000, "initsize": 200_000, "ovflwstr": "OVFQ1", "ovflwsize": 400_000},
                {"strname": "MSGQ2", "size": 300_000},
            ],
        }
    )


def produce(bootstrap: str, topic: str, rows: list[tuple[bytes, bytes]]) -> float:
    from confluent_kafka import Producer

    p = Producer(
        client_config(
            bootstrap, **{"linger.ms": 20, "batch.num.messages": 10000, "queue.buffering.max.messages": 1_000_000}
        )
    )
    t = time.perf_counter()
    for i, (k, v) in enumerate(rows):
        while True:
            try:
                # queue partition by key: one queue's records stay in order in one partition
                p.produce(topic, key=k, value=v)
                break
            except BufferError:
                p.poll(0.05)
        if i % 10000 == 0:
            p.poll(0)
    p.flush(120)
    return time.perf_counter() - t


def read_all(bootstrap: str, topic_names: list[str], ids_only: bool = True) -> list[Any]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(client_config(bootstrap, **{"group.id": f"bench-{uuid.uuid4()}", "enable.auto.commit": False}))
    out = []
    for name in topic_names:
        md = c.list_topics(name, timeout=10).topics.get(name)
        if md is None:
            continue
        for pid in md.partitions:
            low, high = c.get_watermark_offsets(TopicPartition(name, pid), timeout=10)
            if high <= low:
                continue
            c.assign([TopicPartition(name, pid, low)])
            while True:
                msgs = c.consume(10000, 2.0)
                for m in msgs:
                    if m.error():
                        continue
                    out.append((name, m.value(), m.timestamp()[1]))
                if not msgs or (msgs[-1].offset() or 0) >= high - 1:
                    break
    c.close()
    return out


# ---------------------------------------------------------------- memory


class Proc(NamedTuple):
    """One process of ``/proc``: what the memory figures need."""

    ppid: int
    name: str
    cmdline: str
    rss: int  # bytes
    hwm: int  # the kernel's high-water mark of rss (VmHWM), bytes


class MemoryInUse(NamedTuple):
    spark_jvm: int  # Spark's JVM (the driver, and the executors in local mode): its high-water mark
    broker_jvm: int  # the local Kafka broker the benchmark started (another JVM): apart, not qmon's
    python_workers: int  # PySpark's daemon and workers


_SPARK_MAIN = "org.apache.spark.deploy.SparkSubmit"


def processes() -> dict[int, Proc]:
    table: dict[int, Proc] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{d}/status") as fh:
                status = {k: v.strip() for k, _, v in (line.partition(":") for line in fh.read().splitlines())}
            with open(f"/proc/{d}/cmdline", "rb") as fb:
                cmdline = fb.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
        kib = {k: int(status.get(k, "0 kB").split()[0]) * 1024 for k in ("VmRSS", "VmHWM")}
        table[int(d)] = Proc(ppid, status.get("Name", ""), cmdline, kib["VmRSS"], kib["VmHWM"])
    return table


def _descendants(table: dict[int, Proc], root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, proc in table.items():
        children.setdefault(proc.ppid, []).append(pid)
    out: list[int] = []
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(children.get(pid, []))
    return out


def spark_jvms(table: dict[int, Proc], root: int) -> list[int]:
    """The Spark JVMs among the descendants of ``root`` (another benchmark's, or CI's, are not ours)."""
    return [pid for pid in _descendants(table, root) if table[pid].name == "java" and _SPARK_MAIN in table[pid].cmdline]


def memory_in_use(table: dict[int, Proc], root: int) -> MemoryInUse:
    """Among the descendants of ``root``: Spark's JVM by its high-water mark (no peak is missed between two
    samples), any other JVM (the local broker) and the Python processes by their resident size now."""
    spark = broker = py = 0
    for pid in _descendants(table, root):
        proc = table[pid]
        if proc.name == "java" and _SPARK_MAIN in proc.cmdline:
            spark += max(proc.rss, proc.hwm)
        elif proc.name == "java":
            broker += proc.rss
        elif proc.name.startswith("python"):
            py += proc.rss
    return MemoryInUse(spark, broker, py)


def _memory(mem: PeakMemory) -> str:
    return (
        f"Spark JVM {mem.jvm / 2**20:,.0f} MiB, Python workers {mem.py / 2**20:,.0f} MiB "
        f"(the local broker's JVM {mem.broker / 2**20:,.0f} MiB, not counted)"
    )


class PeakMemory:
    """Peak memory while a run lasts: Spark's JVM (its high-water mark, reset when the run starts), the broker's
    JVM and the Python workers (sampled every 0.5 s)."""

    def __init__(self) -> None:
        self.jvm = self.broker = self.py = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def add(self, use: MemoryInUse) -> None:
        self.jvm, self.broker = max(self.jvm, use.spark_jvm), max(self.broker, use.broker_jvm)
        self.py = max(self.py, use.python_workers)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.add(memory_in_use(processes(), os.getpid()))

    def __enter__(self) -> PeakMemory:
        for pid in spark_jvms(processes(), os.getpid()):  # the run's own peak: the JVM may have run others before
            try:
                with open(f"/proc/{pid}/clear_refs", "w") as fh:
                    fh.write("5")  # resets VmHWM to the current RSS (proc(5))
            except OSError as exc:
                print(f"  (could not reset the Spark JVM's peak memory: {exc}; it includes the runs before)")
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()
        self.add(memory_in_use(processes(), os.getpid()))


# ---------------------------------------------------------------- the hand-written baseline


def baseline(bootstrap: str, prefix: str, config: Config, n: int) -> tuple[float, set[str]]:
    """confluent-kafka consumer -> qmon's pure modules -> producer, one process; partitions merged by ts."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    from qmon.core.queues import QueueMonitor
    from qmon.core.records import Activity
    from qmon.core.structures import StructureMonitor

    # (the rules' own duplicate check, whatever monitor.dedup_state the job runs with: the same baseline)
    settings, ssettings = config.monitor_settings("queue"), config.structure_settings("queue")
    src = topics.physical(topics.ACTIVITY, prefix)
    out_prefix = prefix + "base"
    ensure_topics(bootstrap, 2, prefix=out_prefix)
    c = Consumer(
        client_config(
            bootstrap,
            **{"group.id": f"base-{uuid.uuid4()}", "enable.auto.commit": False, "fetch.max.bytes": 50_000_000},
        )
    )
    parts = c.list_topics(src, timeout=10).topics[src].partitions
    c.assign([TopicPartition(src, p, 0) for p in parts])
    p = Producer(client_config(bootstrap, **{"linger.ms": 20, "queue.buffering.max.messages": 1_000_000}))
    queues: dict[str, QueueMonitor] = {}
    structs: dict[str, StructureMonitor] = {}
    ids: set[str] = set()
    decoder = avro.decoder("QueueActivity") if hasattr(avro, "decoder") else None
    t = time.perf_counter()
    heap: list = []
    seen = 0

    def emit(e: Any) -> None:
        ids.add(e.record["event_id"])
        value = avro.encode(topics.RECORD_OF[e.topic], e.record)
        while True:
            try:
                p.produce(topics.physical(e.topic, out_prefix), key=e.key.encode(), value=value)
                return
            except BufferError:
                p.poll(0.05)

    pending = {pid: 0 for pid in parts}
    while seen < n:
        for m in c.consume(5000, 1.0):
            if m.error():
                continue
            value = m.value() or b""
            r = decoder(value) if decoder else avro.decode("QueueActivity", value)
            ts = to_ms(r["ts"])
            heapq.heappush(heap, (ts, m.partition(), m.offset(), r))
            pending[m.partition()] += 1
        # merge partitions by ts: process while every partition has something buffered (or all read)
        while heap and (all(pending.values()) or seen + len(heap) >= n):
            ts, pid, off, r = heapq.heappop(heap)
            pending[pid] -= 1
            seen += 1
            qm = r["qmgr"]
            mon = queues.get(qm) or queues.setdefault(qm, QueueMonitor(qm, settings))
            act = Activity(
                r["event_id"],
                qm,
                r["queue"],
                r["op"],
                ts,
                r["depth_after"],
                r["msg_bytes"],
                r["structure"],
                r["reason"],
                None,
                off,
            )
            for e in mon.on_activity(act):
                emit(e)
            if r["structure"]:
                s = r["structure"]
                smon = structs.get(s) or structs.setdefault(s, StructureMonitor(s, ssettings))
                for e in smon.on_activity(act):
                    emit(e)
        p.poll(0)
    p.flush(120)
    elapsed = time.perf_counter() - t
    c.close()
    return elapsed, ids


# ---------------------------------------------------------------- qmon


class ProgressLog:
    """Every progress report of one query run, as dicts (``qmon.streaming.job.ProgressListener``: polling
    ``recentProgress`` renders every retained report in the JVM each time, a cost the job would pay too)."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.reports: list[dict[str, Any]] = []
        self.listener: Any = None

    def follow(self, query: Any) -> None:
        from qmon.streaming.job import ProgressListener

        self.listener = ProgressListener(self.spark, self.reports.append).attach(query)

    def close(self) -> None:
        if self.listener is not None:
            self.listener.detach()


def state_operators(p: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A report's state operators, labelled: ``monitor`` (qmon's operator) and, with ``monitor.dedup_state:
    slice``, ``check`` (the duplicate check ahead of it: the report's other operator)."""
    ops = p.get("stateOperators") or []
    if len(ops) < 2:
        return [("monitor", op) for op in ops]
    return [("check" if op.get("operatorName", "").startswith("transformWithState") else "monitor", op) for op in ops]


def written(op: dict[str, Any]) -> int | None:
    """Bytes the operator's state stores wrote in the batch (RocksDB's own count), or None."""
    return (op.get("customMetrics") or {}).get("rocksdbTotalBytesWritten")


def batch_lines(progress: list[dict[str, Any]]) -> str:
    """A line per micro-batch: its parts (ms) as Spark reports them, and each state operator's update,
    removal and commit times and the bytes its state stores wrote, or "-" when the report has none."""
    lines = ""
    for p in progress:
        d = p["durationMs"]
        parts = ", ".join(f"{k} {v:,}" for k, v in d.items() if k != "triggerExecution" and v)
        timed = ("allUpdatesTimeMs", "allRemovalsTimeMs", "commitTimeMs")
        states = []
        for label, op in state_operators(p):
            fields = [f"{k} {op[k]:,}" for k in timed if k in op]
            if written(op) is not None:
                fields.append(f"written {written(op):,} B")
            states.append((f"{label} " if len(p.get("stateOperators") or []) > 1 else "") + ", ".join(fields))
        state = "; ".join(s for s in states if s) or "-"
        lines += (
            f"\n    batch {p['batchId']}: {p['numInputRows']:,} rows in {d.get('triggerExecution', 0):,} ms "
            f"({parts}; state: {state})"
        )
    return lines


class Parts(NamedTuple):
    """Where a run's wall time went (seconds), from the query's own progress reports."""

    start: float  # outside every micro-batch: building and starting the query, and waiting for its end
    planning: float  # every batch's query planning, summed (the no-data batch's too)
    processing: float  # the data batches' addBatch, summed
    rest: float  # the rest of the batches: offsets, commits, the no-data batch that fires timers
    rows: int  # the records the data batches read
    batches: int

    @property
    def once_running(self) -> float:
        """Records/s over the data batches' addBatch."""
        return self.rows / self.processing if self.processing else 0.0

    def line(self) -> str:
        return (
            f"{self.batches} micro-batches: {self.start:.1f} s starting the query, {self.planning:.1f} s "
            f"planning, {self.processing:.1f} s processing the data ({self.once_running:,.0f} records/s once "
            f"running), {self.rest:.1f} s in the rest (offsets, commits, the no-data batch that fires timers)"
        )


def time_parts(progress: list[dict[str, Any]], elapsed: float) -> Parts:
    """``elapsed`` (``start_query`` to the query's end) taken apart with the query's progress reports."""
    batches = sum(p["durationMs"].get("triggerExecution", 0) for p in progress) / 1000
    planning = sum(p["durationMs"].get("queryPlanning", 0) for p in progress) / 1000
    data = [p for p in progress if p["numInputRows"] > 0]
    processing = sum(p["durationMs"].get("addBatch", 0) for p in data) / 1000
    return Parts(
        start=elapsed - batches,
        planning=planning,
        processing=processing,
        rest=batches - planning - processing,
        rows=sum(p["numInputRows"] for p in data),
        batches=len(progress),
    )


class QmonRun(NamedTuple):
    """One run of the job over a workload: its wall time, its outputs and where the time went."""

    secs: float
    ids: set[str]
    outputs: int
    breakdown: str  # printed under qmon's line
    parts: Parts


def run_qmon(spark: Any, bootstrap: str, prefix: str, config: Config, tmp: Path) -> QmonRun:
    """Run the job over the workload once (Trigger.AvailableNow)."""
    from qmon.streaming.job import start_query

    ensure_topics(bootstrap, config.kafka.partitions, prefix=prefix)
    t = time.perf_counter()
    query = start_query(
        spark, config, bootstrap, str(tmp / f"ckpt-{prefix}-{uuid.uuid4().hex[:6]}"), available_now=True
    )
    query.awaitTermination()
    elapsed = time.perf_counter() - t
    # where the wall time went, from the query's own progress reports (read once, at the end)
    progress = query.recentProgress
    parts = time_parts(progress, elapsed)
    breakdown = parts.line() + batch_lines(progress)
    outs = read_all(bootstrap, [topics.physical(x, prefix) for x in topics.OUTPUTS])
    ids = set()
    for name, value, _ in outs:
        logical = next(x for x in topics.OUTPUTS if topics.physical(x, prefix) == name)
        ids.add(avro.decode(topics.RECORD_OF[logical], value)["event_id"])
    return QmonRun(secs=elapsed, ids=ids, outputs=len(outs), breakdown=breakdown, parts=parts)


def mq_trace(spark: Any, bootstrap: str, n: int, queues: int, calls: int, tmp: Path) -> None:
    """The job's input decoding, side by side: the same puts and gets (no structure, so the rest of the job is
    the same work) as QueueActivity Avro on qmon.activity, then as activity trace PCF on qmon.mq.trace."""
    results = []
    runs = [("warm-up", False), ("warm-up", True)]  # not counted: the first runs start workers, compile code
    runs += [("QueueActivity (Avro)", False), (f"activity trace (PCF, {calls} calls a message)", True)]
    for how, trace in runs:
        recs = records(min(n, 20_000) if how == "warm-up" else n, queues)
        for r in recs:
            r["structure"] = None
        prefix = f"bench{uuid.uuid4().hex[:6]}"
        config = config_for(prefix)
        config = config.model_copy(
            update={"structures": (), "mq_trace": config.mq_trace.model_copy(update={"enabled": trace})}
        )
        ensure_topics(bootstrap, 2, prefix=prefix, mq_trace=trace)
        if trace:
            rows = trace_workload(recs, calls)
            topic = topics.physical(topics.MQ_TRACE, prefix)
        else:
            rows = [(f"{r['qmgr']}/{r['queue']}".encode(), avro.encode("QueueActivity", r)) for r in recs]
            topic = topics.physical(topics.ACTIVITY, prefix)
        produce(bootstrap, topic, rows)
        with PeakMemory() as mem:
            secs, _ids, outs, breakdown, *_ = run_qmon(spark, bootstrap, prefix, config, tmp)
        events = sorted(
            (e["type"], e["queue"], to_ms(e["ts"]))
            for _, v, _ in read_all(bootstrap, [topics.physical(topics.PERFORMANCE, prefix)])
            for e in [avro.decode("PerformanceEvent", v)]
        )
        if how == "warm-up":
            continue
        results.append(events)
        print(
            f"{how}: {len(rows):,} Kafka records, {secs:.1f} s, {len(recs) / secs:,.0f} puts and gets/s, {outs} output "
            f"records; peak RSS {_memory(mem)}"
        )
        print(f"  {breakdown}")
    print(
        "the same performance events both ways: "
        + ("yes" if results[0] == results[1] else f"NO ({len(results[0])} against {len(results[1])})")
    )


def _pct(values: list[float], f: float) -> float:
    return values[min(len(values) - 1, int(f * len(values)))] if values else float("nan")


def _lag(bootstrap: str, src: str, progress: dict[str, Any] | None) -> int | None:
    """Records of ``src`` the query had not read at ``progress`` (its end offsets vs the topic's ends now)."""

    from confluent_kafka import Consumer, TopicPartition

    if not progress:
        return None
    read: dict[str, int] = {}
    for source in progress["sources"]:
        end = source.get("endOffset")
        offsets = json.loads(end) if isinstance(end, str) else end
        if offsets and src in offsets:
            read = {str(k): int(v) for k, v in offsets[src].items()}
    c = Consumer(client_config(bootstrap, **{"group.id": f"lag-{uuid.uuid4()}"}))
    try:
        parts = c.list_topics(src, timeout=10).topics[src].partitions
        return sum(c.get_watermark_offsets(TopicPartition(src, p), timeout=10)[1] - read.get(str(p), 0) for p in parts)
    finally:
        c.close()


def latency(
    spark: Any,
    bootstrap: str,
    rate: int,
    seconds: int,
    queues: int,
    tmp: Path,
    drain_timeout: int = 20,
    warmup: int = 30,
    progress_json: Path | None = None,
) -> dict[str, Any]:
    """A sustained-rate run: produce at ``rate`` records/s for ``warmup`` + ``seconds`` while the job runs (200 ms
    trigger); over the last ``seconds`` (the first batches start the Python workers and compile the JVM's
    code: the warm-up is not counted), report whether it kept up (input lag when production stopped, and
    its trend), end-to-end latency percentiles and the micro-batches' durations from the query's progress."""
    from confluent_kafka import Producer

    from qmon.streaming.job import start_query

    prefix = f"lat{uuid.uuid4().hex[:6]}"
    # events at any rate; one shuffle partition per core: each partition adds fixed cost to every batch
    config = config_for(prefix, trigger="200 ms", qsvcint=max(50, queues // 10), shuffle=2)
    ensure_topics(bootstrap, 2, prefix=prefix)
    src = topics.physical(topics.ACTIVITY, prefix)
    rows = workload(rate * (seconds + warmup), queues, seed=7)
    counted_from = rate * warmup  # records before this one are the warm-up
    log = ProgressLog(spark)
    query = start_query(spark, config, bootstrap, str(tmp / f"ckpt-{prefix}"))
    log.follow(query)
    deadline = time.monotonic() + 120
    while not query.recentProgress and time.monotonic() < deadline:  # started: its first (empty) batch ran
        time.sleep(0.5)
    time.sleep(2)
    progress: list[dict[str, Any]] = []
    seen: set[int] = set()

    def collect() -> None:
        for prog in list(log.reports):
            if prog["batchId"] not in seen:
                seen.add(prog["batchId"])
                progress.append(prog)

    p = Producer(client_config(bootstrap, **{"linger.ms": 5}))
    t0 = time.monotonic()
    lag_samples: list[tuple[float, int]] = []
    next_sample = t0 + warmup + 5
    for i, (k, v) in enumerate(rows):
        due = t0 + i / rate
        while time.monotonic() < due:
            time.sleep(0.001)
        p.produce(src, key=k, value=v)
        if i == counted_from:
            progress.clear()
            seen.update(pr["batchId"] for pr in list(log.reports))  # batches of the warm-up: not counted
        if i % 1000 == 0:
            p.poll(0)
            if time.monotonic() >= next_sample:
                next_sample += 5
                collect()
                lag = _lag(bootstrap, src, log.reports[-1] if log.reports else None)
                if lag is not None:
                    lag_samples.append((time.monotonic() - t0, lag))
    p.flush(60)
    produced_in = time.monotonic() - t0
    collect()
    lag_at_end = _lag(bootstrap, src, log.reports[-1] if log.reports else None)
    drained = None
    t_end = time.monotonic()
    while time.monotonic() - t_end < drain_timeout:
        time.sleep(0.5)
        lag = _lag(bootstrap, src, log.reports[-1] if log.reports else None)
        if lag == 0 and drained is None:
            drained = time.monotonic() - t_end
            time.sleep(2)  # the timers' no-data batch
            break
    collect()
    query.stop()
    log.close()
    if progress_json is not None:  # the counted batches' progress reports, one JSON object a line
        with progress_json.open("a") as f:
            for pr in progress:
                f.write(json.dumps({"rate": rate, **pr}) + "\n")
    # every input record has its own ts (T0 + its index): the key from an output back to its source
    inputs = {to_ms(avro.decode("QueueActivity", v)["ts"]): ts for _, v, ts in read_all(bootstrap, [src])}
    lat = []
    for _name, value, ts in read_all(bootstrap, [topics.physical(topics.PERFORMANCE, prefix)]):
        rec = avro.decode("PerformanceEvent", value)
        # a performance event's source is the operation that generated it: same ts in the workload
        n = to_ms(rec["ts"]) - T0
        src_ts = inputs.get(to_ms(rec["ts"]))
        if src_ts is not None and n >= counted_from:
            lat.append(ts - src_ts)
    lat.sort()
    first = min((pr["batchId"] for pr in progress), default=0)  # the query's first batch: plans it, reads nothing
    data = [pr for pr in progress if pr["numInputRows"] > 0]
    empty = [pr for pr in progress if pr["numInputRows"] == 0 and pr["batchId"] != first]
    durations = sorted(pr["durationMs"].get("triggerExecution", 0) / 1000 for pr in data)
    empty_durations = sorted(pr["durationMs"].get("triggerExecution", 0) / 1000 for pr in empty)
    sizes = sorted(pr["numInputRows"] for pr in data)
    third = max(1, len(lag_samples) // 3)
    early = sum(x for _, x in lag_samples[:third]) / third if lag_samples else 0
    late = sum(x for _, x in lag_samples[-third:]) / third if lag_samples else 0
    # kept up: the lag drained soon after production stopped and did not grow beyond a second of input
    kept_up = drained is not None and drained <= 10 and late <= 1.25 * early + rate
    print(
        f"sustained rate {rate:,} records/s for {seconds} s after {warmup} s of warm-up ({produced_in:.1f} s to "
        f"produce), {queues:,} queues:"
    )
    print(
        f"  kept up: {'yes' if kept_up else 'NO'} - input lag when production stopped {lag_at_end} records, "
        + (f"drained {drained:.1f} s later" if drained is not None else f"not drained {drain_timeout} s later")
        + "; lag every 5 s: "
        + ", ".join(f"{x:,}" for _, x in lag_samples)
    )
    if lat:
        print(
            f"  latency (input Kafka timestamp -> output Kafka timestamp), {len(lat):,} performance events: "
            f"p50 {_pct(lat, 0.5) / 1000:.2f} s, p95 {_pct(lat, 0.95) / 1000:.2f} s, p99 {_pct(lat, 0.99) / 1000:.2f} s, "
            f"max {lat[-1] / 1000:.2f} s"
        )
    else:
        print("  latency: no performance events matched")
    if durations:
        print(
            f"  micro-batches with data: {len(data)}, {_pct(sizes, 0.5):,} records each (median); duration "
            f"p50 {_pct(durations, 0.5):.2f} s, p95 {_pct(durations, 0.95):.2f} s, max {durations[-1]:.2f} s"
        )
    if data:
        parts = sorted({k for pr in data for k in pr["durationMs"]} - {"triggerExecution"})
        medians = {k: _pct(sorted(pr["durationMs"].get(k, 0) for pr in data), 0.5) for k in parts}
        print(
            "  where a data micro-batch's time goes (median ms): "
            + ", ".join(f"{k} {v:,.0f}" for k, v in sorted(medians.items(), key=lambda kv: -kv[1]) if v)
        )
    if data:
        by_op: dict[str, list[int]] = {}
        for pr in data:
            for label, op in state_operators(pr):
                if written(op) is not None:
                    by_op.setdefault(label, []).append(written(op))  # type: ignore[arg-type]
        if by_op:
            print(
                "  state written by a data micro-batch (RocksDB's bytes, median / max): "
                + "; ".join(
                    f"{label} {_pct(sorted(xs), 0.5) / 1e6:,.2f} / {max(xs) / 1e6:,.2f} MB"
                    for label, xs in by_op.items()
                )
            )
    if empty_durations:
        print(
            f"  empty micro-batches (timers only): {len(empty)}, duration p50 {_pct(empty_durations, 0.5):.2f} s, "
            f"max {empty_durations[-1]:.2f} s"
        )
    return {
        "rate": rate,
        "kept_up": kept_up,
        "p99": _pct(lat, 0.99) / 1000 if lat else None,
        "batch_p50": _pct(durations, 0.5) if durations else None,
        "batch_records": _pct(sizes, 0.5) if sizes else None,
        "empty": empty_durations,
    }


def quix(bootstrap: str, prefix: str, config: Config, n: int, q_ids: set[str], tmp: Path, python: str) -> float | None:
    """Quix Streams over the same input: its records/s (None if it failed)."""
    import subprocess

    src = topics.physical(topics.ACTIVITY, prefix)
    out = f"{prefix}.quix.out"
    cfg = tmp / "quix-config.json"
    cfg.write_text(config.model_dump_json())
    done = subprocess.run(
        [python, str(ROOT / "benchmarks" / "quix_app.py"), bootstrap, src, out, str(n), str(cfg)],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if done.returncode != 0:
        print(f"Quix Streams: failed: {done.stderr[-2000:]}")
        return None
    secs = json.loads(done.stdout.strip().splitlines()[-1])["seconds"]
    ids = set()
    for _, value, _ in read_all(bootstrap, [out]):
        logical, record = value.split(b"\0", 1)
        ids.add(avro.decode(topics.RECORD_OF[logical.decode()], record)["event_id"])
    print(
        f"Quix Streams (one process, RocksDB state with changelog topics): {secs:.1f} s, {n / secs:,.0f} records/s, "
        f"{len(ids)} output records"
    )
    print(
        "Quix outputs match qmon's"
        if ids == q_ids
        else f"Quix OUTPUTS DIFFER: {len(q_ids - ids)} only in qmon, {len(ids - q_ids)} only in Quix "
        "(the structure step sees records in repartition order, not in ts order)"
    )
    return n / secs


#: --targets: the rate of the fixed cost's run (a batch of a record, then a timers-only batch)
IDLE_RATE = 2


def throughput(
    spark: Any, bootstrap: str, tmp: Path, records: int, args: argparse.Namespace, quix_python: str | None = None
) -> dict[str, Any]:
    """One throughput run: the workload of ``records`` through qmon, the baseline and (with ``quix_python``)
    Quix Streams; prints them and returns their figures."""
    prefix = f"bench{uuid.uuid4().hex[:6]}"
    config = config_for(prefix)
    ensure_topics(bootstrap, 2, prefix=prefix)
    rows = workload(records, args.queues)
    secs = produce(bootstrap, topics.physical(topics.ACTIVITY, prefix), rows)
    print(
        f"workload: {records} records, {args.queues} queues, 2 structures, 70/30 put/get; "
        f"produced in {secs:.1f} s ({records / secs:,.0f}/s)"
    )
    with PeakMemory() as mem:
        run = run_qmon(spark, bootstrap, prefix, config, tmp)
    q_secs, q_ids, q_out, breakdown = run.secs, run.ids, run.outputs, run.breakdown
    print(
        f"qmon (local[2], Kafka -> Spark -> Kafka): {q_secs:.1f} s, {records / q_secs:,.0f} records/s, "
        f"{q_out} output records; peak RSS {_memory(mem)}"
    )
    print(f"  {breakdown}")
    figures: dict[str, Any] = {
        "records": records,
        "qmon": records / q_secs,
        "jvm": mem.jvm,
        "py": mem.py,
        "broker": mem.broker,
        "parts": run.parts,
    }
    if not args.no_baseline:
        b_secs, b_ids = baseline(bootstrap, prefix, config, records)
        print(
            f"baseline (one Python process, confluent-kafka + qmon's pure modules): {b_secs:.1f} s, "
            f"{records / b_secs:,.0f} records/s, {len(b_ids)} output records"
        )
        print(f"ratio qmon / baseline: {b_secs / q_secs:.2f}")
        figures.update(baseline=records / b_secs, match=q_ids == b_ids)
        print(
            "outputs match (same event_ids)"
            if q_ids == b_ids
            else f"OUTPUTS DIFFER: {len(q_ids - b_ids)} only in qmon, {len(b_ids - q_ids)} only in the baseline"
        )
    if quix_python:
        figures["quix"] = quix(bootstrap, prefix, config, records, q_ids, tmp, quix_python)
    elif not args.quix_python:
        print("Quix Streams: skipped (give --quix-python PATH, a virtualenv with quixstreams; see quix_app.py)")
    return figures


def targets(spark: Any, bootstrap: str, tmp: Path, args: argparse.Namespace) -> int:
    """The steady-state targets in one run, side by side: 300,000 records first to warm the JVM up (shown,
    judged against nothing: a job that runs for months runs on a JVM that has compiled Spark's code), then
    1,000,000 (with Quix Streams if ``--quix-python``), then 5,000, 20,000 and ``IDLE_RATE`` records/s for
    ``--seconds`` each after ``--warmup``; then a table of each target, its figure and whether it was met.
    The low rate measures the fixed cost: a batch of a record, then a timers-only batch, again and again."""
    given = sys.argv[1:]
    ignored = [f for f in ("--records", "--rate", "--cluster") if any(a == f or a.startswith(f + "=") for a in given)]
    if ignored:
        print(f"--targets: {', '.join(ignored)} not used (the targets fix their own sizes and rates)")
    print("300,000 records to warm the JVM up (judged against nothing)")
    t300 = throughput(spark, bootstrap, tmp, 300_000, args)
    t1m = throughput(spark, bootstrap, tmp, 1_000_000, args, quix_python=args.quix_python)
    lat = [
        latency(
            spark, bootstrap, rate, args.seconds, args.queues, tmp, warmup=args.warmup, progress_json=args.progress_json
        )
        for rate in (5_000, 20_000, IDLE_RATE)
    ]
    idle = lat.pop()

    def ratio(fig: dict[str, Any], other: str) -> float | None:
        return fig["qmon"] / fig[other] if fig.get(other) else None

    rows: list[tuple[str, str, bool | None]] = []
    for label, fig, other, floor in (
        ("1,000,000 records (JVM warm): qmon >= 1.2 x the baseline", t1m, "baseline", 1.2),
        ("1,000,000 records (JVM warm): qmon >= 3 x Quix Streams", t1m, "quix", 3.0),
        ("300,000 records, warming the JVM up: qmon / the baseline", t300, "baseline", None),
    ):
        r = ratio(fig, other)
        judged = None if r is None or floor is None else r >= floor
        rows.append((label, f"{r:.2f} x" if r is not None else f"no {other} run", judged))
    for fig, limit in zip(lat, (2.0, 5.0), strict=True):
        p99 = fig["p99"]
        kept = "kept up" if fig["kept_up"] else "FELL BEHIND"
        rows.append(
            (
                f"{fig['rate']:,}/s for {args.seconds} s: kept up, p99 < {limit:.0f} s",
                f"{kept}, p99 {p99:.2f} s" if p99 is not None else f"{kept}, no events",
                bool(fig["kept_up"] and p99 is not None and p99 < limit),
            )
        )
    empty = sorted(x for fig in (*lat, idle) for x in fig["empty"])
    fixed = (
        f"; a batch of {idle['batch_records']:,} record{'s' if idle['batch_records'] != 1 else ''} "
        f"p50 {idle['batch_p50']:.2f} s"
        if idle["batch_p50"] is not None
        else ""
    )
    rows.append(
        (
            "an empty (timers-only) batch <= 0.3 s",
            f"p50 {_pct(empty, 0.5):.2f} s of {len(empty)}, max {empty[-1]:.2f} s{fixed}" if empty else "none ran",
            _pct(empty, 0.5) <= 0.3 if empty else None,
        )
    )
    rows.append(
        (
            "peak memory at 1,000,000 records (JVM warm: it ran the 300,000 first)",
            f"Spark JVM {t1m['jvm'] / 2**20:,.0f} MiB, Python workers {t1m['py'] / 2**20:,.0f} MiB",
            None,
        )
    )
    compared = [f["match"] for f in (t300, t1m) if "match" in f]
    outputs = (
        "no baseline run"
        if not compared
        else "qmon's outputs match the baseline's"
        if all(compared)
        else "qmon's outputs DIFFER FROM the baseline's"
    )
    print(f"\nthe targets, this run ({outputs}):")
    width, text_width = max(len(name) for name, _, _ in rows), max(len(text) for _, text, _ in rows)
    for name, text, ok in rows:
        verdict = "-" if ok is None else "met" if ok else "NOT met"
        print(f"  {name:<{width}}  {text:<{text_width}}  {verdict}")
    return 0


def java_description() -> str:
    """The Java Spark's JVM runs (``$JAVA_HOME``, else ``java`` on ``PATH``): its version, from the JDK's
    ``release`` file, and where it is."""
    home_env = os.environ.get("JAVA_HOME")
    found = os.path.join(home_env, "bin", "java") if home_env else shutil.which("java")
    java = os.path.realpath(found) if found and os.path.exists(found) else None
    if java is None:
        return "not found"
    home = Path(java).parent.parent
    version = "?"
    if (home / "release").is_file():
        for line in (home / "release").read_text(errors="replace").splitlines():
            if line.startswith("JAVA_VERSION="):
                version = line.split("=", 1)[1].strip('"')
    return f"{version} ({home})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--records",
        type=int,
        nargs="+",
        default=[300_000],
        help="records of a throughput run; several sizes run one after another on the same JVM (the later ones "
        "on a JVM that has run, as --targets' 1,000,000)",
    )
    ap.add_argument("--queues", type=int, default=10_000)
    ap.add_argument("--bootstrap", help="an existing cluster (default: start the local broker)")
    ap.add_argument("--latency", action="store_true")
    ap.add_argument(
        "--targets",
        action="store_true",
        help="the steady-state targets in one run: 300,000 and 1,000,000 records, 5,000 and 20,000 records/s for "
        "--seconds each, then a table of each target and whether it was met",
    )
    ap.add_argument(
        "--rate", type=int, nargs="+", default=[5_000, 20_000], help="one or more rates, run one after another"
    )
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument(
        "--warmup",
        type=int,
        default=30,
        help="seconds at the rate before the measured window (the JVM compiles for ~2 minutes)",
    )
    ap.add_argument("--cluster", action="store_true")
    ap.add_argument("--quix-python", help="python of a virtualenv with quixstreams (see benchmarks/quix_app.py)")
    ap.add_argument("--shuffle", type=int, help="shuffle partitions (default: 4 for throughput, 2 for latency)")
    ap.add_argument("--input-tasks", type=int, help="tasks reading the input per batch (default: one per partition)")
    ap.add_argument("--no-baseline", action="store_true", help="qmon only (when measuring one change)")
    ap.add_argument(
        "--keep-tmp",
        action="store_true",
        help="keep the temporary directory (the broker's log, the checkpoints; up to several GB) instead of removing it",
    )
    ap.add_argument("--mq-trace", action="store_true", help="the job over Avro and over activity trace (PCF)")
    ap.add_argument("--calls", type=int, default=50, help="--mq-trace: MQI calls per trace message")
    ap.add_argument(
        "--event-ids",
        choices=["short", "uuid"],
        default="short",
        help="the records' event_ids: b0, b1, ... (short) or random UUIDs, as producers usually send (uuid)",
    )
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting (repeatable)")
    ap.add_argument(
        "--dedup-window",
        help="monitor.dedup_window (default: qmon's, 10 minutes).  The records' ts advance 1 ms a record, so at "
        "5,000/s event time runs 5x faster than the wall clock: '50 minutes' remembers as many ids per queue as "
        "10 minutes would at that rate in production",
    )
    ap.add_argument("--dedup-max", type=int, help="monitor.dedup_max (default: qmon's, 256)")
    ap.add_argument(
        "--dedup-state",
        choices=["queue", "slice"],
        help="monitor.dedup_state: the remembered ids in the monitor's state (queue) or in a step of their own "
        "ahead of it, by slice of ts (slice).  The baseline keeps the rules' own check either way",
    )
    ap.add_argument(
        "--queue-buckets",
        type=int,
        default=4,
        help="job.queue_buckets: shards per queue manager (the workload has 4 queue managers: 16 shards with 4)",
    )
    ap.add_argument("--qmgrs", type=int, default=4, help="queue managers the workload's queues belong to")
    ap.add_argument(
        "--queue-units",
        type=int,
        help="job.queue_units: groups the shards are kept in, each a key of the operator (default: qmon's, the "
        "shuffle partitions)",
    )
    ap.add_argument(
        "--checkpoint-fs",
        choices=["nio", "hadoop"],
        default="nio",
        help="job.checkpoint_fs: the checkpoint's files through Java's file API (qmon's default) or Hadoop's",
    )
    ap.add_argument(
        "--fetch-max-wait",
        help="job.fetch_max_wait: the broker's hold on the input's fetch past the log end (default: qmon's, "
        "10 milliseconds; Kafka's own is 500 ms)",
    )
    ap.add_argument(
        "--progress-json",
        type=Path,
        help="--latency: append the measured micro-batches' progress reports (Spark's JSON, one a line) to this file",
    )
    args = ap.parse_args()
    if len(args.records) > 1 and (args.mq_trace or args.latency or args.targets):
        ap.error("several --records sizes run only as throughput runs (not with --mq-trace, --latency, --targets)")
    global EVENT_IDS, QMGRS
    EVENT_IDS, QMGRS = args.event_ids, args.qmgrs
    TUNING.update(
        checkpoint_fs=args.checkpoint_fs,
        queue_buckets=args.queue_buckets,
        queue_units=args.queue_units,
        shuffle=args.shuffle,
        input_tasks=args.input_tasks,
        dedup_window=args.dedup_window,
        dedup_max=args.dedup_max,
        dedup_state=args.dedup_state,
        fetch_max_wait=args.fetch_max_wait,
    )
    print(
        f"settings: event ids {args.event_ids}, shuffle partitions {args.shuffle or 'default'}, input tasks "
        f"{args.input_tasks or 'one per Kafka partition'}, checkpoint files through {args.checkpoint_fs}, queue buckets {args.queue_buckets}, "
        f"queue units {args.queue_units or 'default'}, {args.qmgrs} queue managers"
        + (f", monitor.dedup_window {args.dedup_window}" if args.dedup_window else "")
        + (f", monitor.dedup_max {args.dedup_max}" if args.dedup_max is not None else "")
        + (f", monitor.dedup_state {args.dedup_state}" if args.dedup_state else "")
        + (f", job.fetch_max_wait {args.fetch_max_wait}" if args.fetch_max_wait else "")
        + "".join(f", {c}" for c in args.conf)
        + f", Java {java_description()}"
    )

    from qmon.streaming.spark import session

    tmp = Path(tempfile.mkdtemp(prefix="qmon-bench-"))
    broker = None
    if args.bootstrap:
        bootstrap = args.bootstrap
    else:
        broker = LocalKafka(workdir=tmp / "kafka").start()
        bootstrap = broker.bootstrap
    spark = None
    try:
        started = time.perf_counter()
        spark = session(
            "local[2]",
            "qmon-bench",
            shuffle_partitions=4,
            extra={
                "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
                **dict(c.split("=", 1) for c in args.conf),
            },
        )
        print(f"Spark session (its JVM, not in the runs' figures): {time.perf_counter() - started:.1f} s")
        if args.latency:
            for rate in args.rate:
                latency(
                    spark,
                    bootstrap,
                    rate,
                    args.seconds,
                    args.queues,
                    tmp,
                    warmup=args.warmup,
                    progress_json=args.progress_json,
                )
            return 0
        if args.mq_trace:
            mq_trace(spark, bootstrap, args.records[0], args.queues, args.calls, tmp)
            return 0
        if args.targets:
            return targets(spark, bootstrap, tmp, args)
        for i, records in enumerate(args.records):
            if i:
                print(f"\n{records:,} records on the JVM that has run the {i} run{'s' if i > 1 else ''} above")
            throughput(spark, bootstrap, tmp, records, args, quix_python=args.quix_python)
        if args.cluster:
            from qmon.streaming.cluster import LocalSparkCluster
            from qmon.streaming.spark import shutdown

            shutdown(spark)
            spark = None
            with LocalSparkCluster(tmp / "cluster", workers=2):
                pass
            print("cluster mode: see tests/streaming/test_cluster.py (output equality on a small input)")
        return 0
    finally:
        if spark is not None:
            from qmon.streaming.spark import shutdown

            shutdown(spark)
        if broker is not None:
            broker.stop()
        if args.keep_tmp:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
