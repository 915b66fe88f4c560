"""qmon end to end (Kafka -> Spark -> Kafka) against a hand-written Python consumer, on the local broker.

    python benchmarks/throughput.py [--records N [N ...]] [--latency --rate R [R ...] --seconds S --warmup W]
                                    [--targets] [--soak MINUTES --rate R --soak-csv PATH --soak-plot PATH]
                                    [--queues N] [--quix-python PATH] [--event-ids short|uuid]

Prints figures; asserts nothing.  The job runs with qmon's configuration defaults on ``local[2]``.  The workload
is fixed by a seed: 10,000 queues (``--queues N``: N, in every run) of 4 queue managers over 2 structures, 70/30
put/get, service-interval events on every queue.  The baseline (one Python process: confluent-kafka consumer ->
qmon.core's rules -> producer) applies the same rules, so its outputs must be qmon's (the same event_ids): the
script says whether they are.

* ``--records N`` (the default, 300,000): N records through the job (Trigger.AvailableNow), then through the
  baseline (and Quix Streams with ``--quix-python``): records/s, peak memory, the job's checkpoint on disk, the
  ratio qmon / baseline.
* ``--latency``: R records/s for W + S seconds while the job runs (200 ms trigger): whether it kept up, and
  p50/p95/p99 of (output record's Kafka timestamp - input record's) over the last S seconds.
* ``--targets``: 300,000 records to warm the JVM up, 1,000,000 (and Quix Streams), then 5,000, 20,000 and 100
  records/s; then a table of each target, this run's figure and whether it was met.
* ``--soak MINUTES``: a PUT on every queue (the estate), then R records/s (``--rate``, 2,000; half PUTs, half
  GETs, every queue's depth 4 at most) for MINUTES while the job runs (1 s trigger): a row a minute (micro-batch
  durations, state rows, checkpoint on disk, memory), printed and written to ``--soak-csv``, their plot to
  ``--soak-plot``, and whether each grew (benchmarks/soak.py).
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import soak

from qmon.connectors import avro
from qmon.connectors.kafka import client_config, ensure_topics
from qmon.core import topics
from qmon.core.config import Config
from qmon.core.records import Activity
from qmon.core.timeconv import to_ms
from qmon.devservers.kafka import LocalKafka

ROOT = Path(__file__).resolve().parents[1]

T0 = 1_700_000_000_000


#: "short" (b0, b1, ...) or "uuid" (36 characters, as producers usually send): ``--event-ids``
EVENT_IDS = "short"
#: the workload's queues, of QMGRS queue managers (queue q to QM{q mod QMGRS})
QUEUES, QMGRS = 10_000, 4
#: the soak's queues stay this deep at most
SOAK_DEPTH = 4


def queue_name(q: int, width: int) -> str:
    """Queue ``q``'s name: ``Q`` and ``width`` digits (``name_width``)."""
    return f"Q{q:0{width}d}"


def name_width() -> int:
    """The digits of the workload's queue names: 5 (Q00000 to Q99999, the default workload's), more when QUEUES
    needs them (Q000000 to Q999999 for 1,000,000 queues): every queue's name unique."""
    return max(5, len(str(QUEUES - 1)))


def _row(i: int, q: int, op: str, ids: random.Random, width: int) -> tuple[bytes, bytes]:
    """(key, Avro value) of the workload's record ``i`` (ts T0 + i), an ``op`` on queue ``q``."""
    rec = Activity(
        event_id=str(uuid.UUID(int=ids.getrandbits(128), version=4)) if EVENT_IDS == "uuid" else f"b{i}",
        qmgr=f"QM{q % QMGRS}",
        queue=queue_name(q, width),
        op=op,
        ts=T0 + i,
        msg_bytes=512 + (q % 7) * 300,
        structure="MSGQ1" if q % 2 else "MSGQ2",
    ).record()
    return f"{rec['qmgr']}/{rec['queue']}".encode(), avro.encode("QueueActivity", rec)


def activity(
    seed: int = 42, first: int = 0, depth: list[int] | None = None, puts: float = 0.7, most: int | None = None
) -> Iterator[tuple[bytes, bytes]]:
    """The workload's records without end, from record ``first`` (ts T0 + first) on: a random queue each, a
    PUT (always on an empty queue, never on one of depth ``most``) or a GET, ``puts`` of them PUTs; ``depth``:
    each queue's depth to start from (all 0)."""
    rng = random.Random(seed)
    ids = random.Random(seed + 1)  # its own stream: the workload is the same whatever the ids look like
    depth = [0] * QUEUES if depth is None else depth
    width = name_width()
    i = first
    while True:
        q = rng.randrange(QUEUES)
        op = "PUT" if depth[q] == 0 or (rng.random() < puts and (most is None or depth[q] < most)) else "GET"
        depth[q] += 1 if op == "PUT" else -1
        yield _row(i, q, op, ids, width)
        i += 1


def workload(n: int, seed: int = 42) -> list[tuple[bytes, bytes]]:
    """(key, Avro value) of n QueueActivity records, ts strictly increasing."""
    return list(itertools.islice(activity(seed), n))


def estate(seed: int = 99) -> Iterator[tuple[bytes, bytes]]:
    """One PUT on each of the QUEUES queues, in order (records 0 to QUEUES - 1): every queue has a record and a
    depth of 1; ``activity(first=QUEUES, depth=[1] * QUEUES)`` follows on.  (Its ids' stream is not one
    ``activity(42)`` draws: with ``--event-ids uuid`` no id comes twice.)"""
    ids = random.Random(seed)
    width = name_width()
    for q in range(QUEUES):
        yield _row(q, q, "PUT", ids, width)


def config_for(prefix: str, trigger: str = "1 second", qsvcint: int = 20_000) -> Config:
    """The workload's configuration; the job's settings are qmon's defaults but for master, trigger and watermark."""
    return Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 2},
            "job": {"watermark_delay": "0 seconds", "master": "local[2]", "trigger": trigger},
            "monitor": {"perfmev": "ENABLED"},
            "queues": [{"pattern": "*", "qsvciev": "HIGH", "qsvcint": qsvcint}],
            "structures": [
                {"strname": "MSGQ1", "size": 400_000, "initsize": 200_000, "ovflwstr": "OVFQ1", "ovflwsize": 400_000},
                {"strname": "MSGQ2", "size": 300_000},
            ],
        }
    )


def produce(bootstrap: str, topic: str, rows: Iterable[tuple[bytes, bytes]]) -> float:
    from confluent_kafka import Producer

    conf = {"linger.ms": 20, "batch.num.messages": 10000, "queue.buffering.max.messages": 1_000_000}
    p = Producer(client_config(bootstrap, **conf))
    t = time.perf_counter()
    for i, (k, v) in enumerate(rows):
        soak.send(p, topic, k, v)  # (partitioned by key: one queue's records stay in order in one partition)
        if i % 10000 == 0:
            p.poll(0)
    p.flush(120)
    return time.perf_counter() - t


def read_all(bootstrap: str, topic_names: list[str]) -> list[Any]:
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


class Proc(NamedTuple):
    """One process of ``/proc``: what the memory figures need."""

    ppid: int
    name: str
    cmdline: str
    rss: int  # bytes
    hwm: int  # the kernel's high-water mark of rss (VmHWM), bytes


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


def workers_rss(table: dict[int, Proc]) -> int:
    """The resident size of this process's Python descendants (Spark's Python workers and their daemon), bytes."""
    return sum(table[pid].rss for pid in _descendants(table, os.getpid()) if table[pid].name.startswith("python"))


def memory_now() -> tuple[int, int]:
    """The resident size of this process's Spark JVMs and of its Python workers now, bytes."""
    table = processes()
    return sum(table[pid].rss for pid in spark_jvms(table, os.getpid())), workers_rss(table)


class PeakMemory:
    """Peak memory while a run lasts, among this process's descendants: Spark's JVM by its high-water mark (reset
    when the run starts; no peak is missed between two samples) and the Python workers by their resident size,
    sampled every 0.5 s.  (The local broker's JVM is not counted.)"""

    def __init__(self) -> None:
        self.jvm = self.py = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        table = processes()
        jvms = spark_jvms(table, os.getpid())
        py = workers_rss(table)
        self.jvm = max(self.jvm, sum(max(table[pid].rss, table[pid].hwm) for pid in jvms))
        self.py = max(self.py, py)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.sample()

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
        self.sample()

    def __str__(self) -> str:
        return f"Spark JVM {self.jvm / 2**20:,.0f} MiB, Python workers {self.py / 2**20:,.0f} MiB"


def baseline(bootstrap: str, prefix: str, config: Config, n: int) -> tuple[float, set[str]]:
    """confluent-kafka consumer -> qmon's pure modules (the duplicate check, then the rules) -> producer, one
    process; partitions merged by ts."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    from qmon.core.dedup import SliceIds, slice_of
    from qmon.core.queues import QueueMonitor
    from qmon.core.structures import StructureMonitor

    settings, ssettings = config.monitor_settings(), config.structure_settings()
    src = topics.physical(topics.ACTIVITY, prefix)
    out_prefix = prefix + "base"
    ensure_topics(bootstrap, 2, prefix=out_prefix)
    conf = {"group.id": f"base-{uuid.uuid4()}", "enable.auto.commit": False, "fetch.max.bytes": 50_000_000}
    c = Consumer(client_config(bootstrap, **conf))
    parts = c.list_topics(src, timeout=10).topics[src].partitions
    c.assign([TopicPartition(src, p, 0) for p in parts])
    p = Producer(client_config(bootstrap, **{"linger.ms": 20, "queue.buffering.max.messages": 1_000_000}))
    queues: dict[str, QueueMonitor] = {}
    structs: dict[str, StructureMonitor] = {}
    slices: dict[int, SliceIds] = {}  # (within one run nothing is forgotten)
    ids: set[str] = set()
    t = time.perf_counter()
    heap: list = []
    seen = 0

    def emit(e: Any) -> None:
        ids.add(e.record["event_id"])
        value = avro.encode(topics.RECORD_OF[e.topic], e.record)
        soak.send(p, topics.physical(e.topic, out_prefix), e.key.encode(), value)

    pending = {pid: 0 for pid in parts}
    while seen < n:
        for m in c.consume(5000, 1.0):
            if m.error():
                continue
            value = m.value() or b""
            r = avro.decode("QueueActivity", value)
            ts = to_ms(r["ts"])
            heapq.heappush(heap, (ts, m.partition(), m.offset(), r))
            pending[m.partition()] += 1
        # merge partitions by ts: process while every partition has something buffered (or all read)
        while heap and (all(pending.values()) or seen + len(heap) >= n):
            ts, pid, off, r = heapq.heappop(heap)
            pending[pid] -= 1
            seen += 1
            qm = r["qmgr"]
            if slices.setdefault(slice_of(ts), SliceIds()).seen((qm, r["queue"], r["event_id"])):
                continue  # a duplicate: the first copy of a record in its slice of ts is kept (qmon.core.dedup)
            mon = queues.get(qm) or queues.setdefault(qm, QueueMonitor(qm, settings))
            act = Activity(**{k: r[k] for k in Activity._fields if k in r} | {"ts": ts, "seq": off})
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


def run_qmon(spark: Any, bootstrap: str, prefix: str, config: Config, tmp: Path) -> tuple[float, set[str], int, int]:
    """Run the job over the workload once (Trigger.AvailableNow): its seconds, output event_ids and records, and
    its checkpoint's size on disk when it ended (bytes)."""
    from qmon.streaming.job import start_query

    ensure_topics(bootstrap, config.kafka.partitions, prefix=prefix)
    checkpoint = str(tmp / f"ckpt-{prefix}-{uuid.uuid4().hex[:6]}")
    t = time.perf_counter()
    query = start_query(spark, config, bootstrap, checkpoint, available_now=True)
    query.awaitTermination()
    elapsed = time.perf_counter() - t
    size = soak.checkpoint_bytes(checkpoint)
    outs = read_all(bootstrap, [topics.physical(x, prefix) for x in topics.OUTPUTS])
    ids = set()
    for name, value, _ in outs:
        logical = next(x for x in topics.OUTPUTS if topics.physical(x, prefix) == name)
        ids.add(avro.decode(topics.RECORD_OF[logical], value)["event_id"])
    return elapsed, ids, len(outs), size


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


def latency(spark: Any, bootstrap: str, tmp: Path, rate: int, seconds: int, warmup: int) -> dict[str, Any]:
    """A sustained-rate run: produce at ``rate`` records/s for ``warmup`` + ``seconds`` while the job runs (200 ms
    trigger); over the last ``seconds`` (the first batches start the Python workers and compile the JVM's
    code: the warm-up is not counted), report whether it kept up (input lag when production stopped, and
    its trend), end-to-end latency percentiles and the micro-batches' durations from the query's progress."""
    from confluent_kafka import Producer

    from qmon.streaming.job import ProgressListener, start_query

    prefix = f"lat{uuid.uuid4().hex[:6]}"
    config = config_for(prefix, trigger="200 ms", qsvcint=max(50, QUEUES // 10))  # events at any rate
    ensure_topics(bootstrap, 2, prefix=prefix)
    src = topics.physical(topics.ACTIVITY, prefix)
    rows = workload(rate * (seconds + warmup), seed=7)
    counted_from = rate * warmup  # records before this one are the warm-up
    reports: list[dict[str, Any]] = []  # every progress report (the query's recentProgress keeps the last 100)
    query = start_query(spark, config, bootstrap, str(tmp / f"ckpt-{prefix}"))
    listener = ProgressListener(spark, reports.append).attach(query)
    deadline = time.monotonic() + 120
    while not query.recentProgress and time.monotonic() < deadline:  # started: its first (empty) batch ran
        time.sleep(0.5)
    time.sleep(2)
    counted_batches = 0  # reports[counted_batches:]: the batches after the warm-up
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
            counted_batches = len(reports)
        if i % 1000 == 0:
            p.poll(0)
            if time.monotonic() >= next_sample:
                next_sample += 5
                lag = _lag(bootstrap, src, reports[-1] if reports else None)
                if lag is not None:
                    lag_samples.append((time.monotonic() - t0, lag))
    p.flush(60)
    produced_in = time.monotonic() - t0
    lag_at_end = _lag(bootstrap, src, reports[-1] if reports else None)
    drained, drain_timeout = None, 20
    t_end = time.monotonic()
    while time.monotonic() - t_end < drain_timeout:
        time.sleep(0.5)
        lag = _lag(bootstrap, src, reports[-1] if reports else None)
        if lag == 0 and drained is None:
            drained = time.monotonic() - t_end
            time.sleep(2)  # the timers' no-data batch
            break
    progress = reports[counted_batches:]  # (each batch once, in order: ProgressListener)
    query.stop()
    listener.detach()
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
        f"produce), {QUEUES:,} queues:"
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
    if empty_durations:
        print(
            f"  empty micro-batches (timers only): {len(empty)}, duration p50 {_pct(empty_durations, 0.5):.2f} s, "
            f"max {empty_durations[-1]:.2f} s"
        )
    return {"rate": rate, "kept_up": kept_up, "p99": _pct(lat, 0.99) / 1000 if lat else None}


def quix(bootstrap: str, prefix: str, config: Config, n: int, q_ids: set[str], tmp: Path, python: str) -> float | None:
    """Quix Streams over the same input: its records/s (None if it failed)."""
    import subprocess

    src = topics.physical(topics.ACTIVITY, prefix)
    out = f"{prefix}.quix.out"
    cfg = tmp / "quix-config.json"
    cfg.write_text(config.model_dump_json())
    command = [python, str(ROOT / "benchmarks" / "quix_app.py"), bootstrap, src, out, str(n), str(cfg)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600)
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


def throughput(spark: Any, bootstrap: str, tmp: Path, records: int, quix_python: str | None = None) -> dict[str, Any]:
    """One throughput run: the workload of ``records`` through qmon, the baseline and (with ``quix_python``)
    Quix Streams; prints them and returns their figures."""
    prefix = f"bench{uuid.uuid4().hex[:6]}"
    config = config_for(prefix)
    ensure_topics(bootstrap, 2, prefix=prefix)
    rows = workload(records)
    secs = produce(bootstrap, topics.physical(topics.ACTIVITY, prefix), rows)
    print(
        f"workload: {records} records, {QUEUES} queues, 2 structures, 70/30 put/get; "
        f"produced in {secs:.1f} s ({records / secs:,.0f}/s)"
    )
    with PeakMemory() as mem:
        q_secs, q_ids, q_out, ckpt = run_qmon(spark, bootstrap, prefix, config, tmp)
    print(
        f"qmon (local[2], Kafka -> Spark -> Kafka): {q_secs:.1f} s, {records / q_secs:,.0f} records/s, "
        f"{q_out} output records; peak RSS {mem}; checkpoint {ckpt / 2**20:,.1f} MiB on disk"
    )
    figures: dict[str, Any] = {
        "records": records,
        "qmon": records / q_secs,
        "jvm": mem.jvm,
        "py": mem.py,
        "checkpoint": ckpt,
    }
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
    elif quix_python is None:
        print("Quix Streams: skipped (give --quix-python PATH, a virtualenv with quixstreams; see docs/benchmarks.md)")
    return figures


def targets(spark: Any, bootstrap: str, tmp: Path, args: argparse.Namespace) -> int:
    """The steady-state targets in one run: 300,000 records to warm the JVM up (judged against nothing: a job that
    runs for months runs on a JVM that has compiled Spark's code), 1,000,000 (and Quix Streams), then 5,000, 20,000
    and 100 records/s for ``--seconds`` each after ``--warmup``; then a table of each target, its figure (a
    latency's beside the baseline's records/s at 1,000,000 records: how fast this machine ran that day) and
    whether it was met."""
    given = sys.argv[1:]
    ignored = [f for f in ("--records", "--rate") if any(a == f or a.startswith(f + "=") for a in given)]
    if ignored:
        print(f"--targets: {', '.join(ignored)} not used (the targets fix their own sizes and rates)")
    print("300,000 records to warm the JVM up (judged against nothing)")
    # ("": no Quix Streams for the warm-up, and no word of it when --quix-python is given)
    t300 = throughput(spark, bootstrap, tmp, 300_000, quix_python="" if args.quix_python else None)
    t1m = throughput(spark, bootstrap, tmp, 1_000_000, quix_python=args.quix_python)
    lat = [latency(spark, bootstrap, tmp, rate, args.seconds, args.warmup) for rate in (5_000, 20_000, 100)]

    rows: list[tuple[str, str, bool | None]] = []
    for label, fig, other, floor in (
        ("1,000,000 records (JVM warm): qmon >= 1.2 x the baseline", t1m, "baseline", 1.2),
        ("1,000,000 records (JVM warm): qmon >= 3 x Quix Streams", t1m, "quix", 3.0),
        ("300,000 records, warming the JVM up: qmon / the baseline", t300, "baseline", None),
    ):
        r = fig["qmon"] / fig[other] if fig.get(other) else None
        judged = None if r is None or floor is None else r >= floor
        rows.append((label, f"{r:.2f} x" if r is not None else f"no {other} run", judged))
    machine = f"baseline {t1m['baseline']:,.0f} records/s"  # how fast this machine ran today
    for fig, limit in zip(lat, (2.0, 5.0, 1.5), strict=True):
        p99, kept = fig["p99"], "kept up" if fig["kept_up"] else "FELL BEHIND"
        text = f"{kept}, p99 {p99:.2f} s ({machine})" if p99 is not None else f"{kept}, no events ({machine})"
        met = bool(fig["kept_up"] and p99 is not None and p99 < limit)
        rows.append((f"{fig['rate']:,}/s for {args.seconds} s: kept up, p99 < {limit:g} s", text, met))
    memory = f"Spark JVM {t1m['jvm'] / 2**20:,.0f} MiB, Python workers {t1m['py'] / 2**20:,.0f} MiB"
    rows.append(("peak memory at 1,000,000 records (JVM warm: it ran the 300,000 first)", memory, None))
    match = t300["match"] and t1m["match"]
    outputs = "qmon's outputs match the baseline's" if match else "qmon's outputs DIFFER FROM the baseline's"
    print(f"\nthe targets, this run ({outputs}):")
    width, text_width = max(len(name) for name, _, _ in rows), max(len(text) for _, text, _ in rows)
    for name, text, ok in rows:
        verdict = "-" if ok is None else "met" if ok else "NOT met"
        print(f"  {name:<{width}}  {text:<{text_width}}  {verdict}")
    return 0


def soak_run(spark: Any, bootstrap: str, tmp: Path, args: argparse.Namespace) -> int:
    """``--soak``: ``soak.run`` with qmon's defaults (a 1 s trigger): the estate, one PUT on each of the QUEUES
    queues, then records on those queues at ``--rate``, half PUTs, half GETs, each queue's depth kept from 0 to
    SOAK_DEPTH: every queue stays served and the put times qmon keeps of its messages few (the throughput runs'
    70/30 fills every queue without end, and a queue keeps its messages' put times as up to 64 runs), so a state
    or a checkpoint that grows is the job's doing, not the workload's."""
    prefix = f"soak{uuid.uuid4().hex[:6]}"
    config = config_for(prefix)
    ensure_topics(bootstrap, 2, prefix=prefix)
    src = topics.physical(topics.ACTIVITY, prefix)
    return soak.run(
        spark,
        bootstrap,
        config,
        src,
        tmp / f"ckpt-{prefix}",
        minutes=args.soak,
        rate=args.rate[0] if args.rate else 2_000,
        queues=QUEUES,
        estate=lambda: produce(bootstrap, src, estate()),
        records=activity(first=QUEUES, depth=[1] * QUEUES, puts=0.5, most=SOAK_DEPTH),
        lag=lambda progress: _lag(bootstrap, src, progress),
        memory=memory_now,
        csv_path=args.soak_csv,
        plot_path=args.soak_plot,
    )


def main() -> int:
    global EVENT_IDS, QUEUES
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add = ap.add_argument
    add("--records", type=int, nargs="+", default=[300_000], help="a throughput run's records (several: on one JVM)")
    add("--latency", action="store_true", help="latency at each --rate, produced while the job runs")
    add("--rate", type=int, nargs="+", help="--latency: records/s, a run each (5000 20000); --soak: records/s (2000)")
    add("--seconds", type=int, default=60, help="--latency, --targets: seconds measured at a rate")
    add("--warmup", type=int, default=30, help="--latency, --targets: seconds at the rate before those measured")
    add("--targets", action="store_true", help="the steady-state targets in one run, then a table of them")
    add("--quix-python", help="python of a virtualenv with quixstreams: Quix Streams too (docs/benchmarks.md)")
    add("--event-ids", choices=["short", "uuid"], default="short", help="b0, b1, ... or UUIDs (as producers send)")
    add("--queues", type=int, default=QUEUES, help=f"the queues the workload spreads over ({QUEUES:,}), every run")
    add("--soak", type=int, metavar="MINUTES", help="a record on every queue, then --rate records/s for MINUTES")
    add("--soak-csv", default="soak.csv", help="--soak: the file of its rows, one a minute (soak.csv)")
    add("--soak-plot", default="soak.png", help="--soak: the file of their plot, if matplotlib imports (soak.png)")
    args = ap.parse_args()
    if len(args.records) > 1 and (args.latency or args.targets or args.soak is not None):
        ap.error("several --records sizes run only as throughput runs (not with --latency, --targets, --soak)")
    if args.soak is not None and (args.latency or args.targets):
        ap.error("--soak runs on its own (not with --latency, --targets)")
    if args.soak is not None and args.soak < 1:
        ap.error("--soak: at least 1 minute")
    if args.soak is not None and args.rate is not None and len(args.rate) > 1:
        ap.error("--soak runs at one --rate")
    if args.queues < 1 or any(r < 1 for r in args.rate or ()):
        ap.error("--queues and --rate: at least 1")
    EVENT_IDS, QUEUES = args.event_ids, args.queues
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else shutil.which("java")
    print(f"settings: qmon's defaults, event ids {args.event_ids}; Java {os.path.realpath(java) if java else None}")

    from qmon.streaming.spark import session, shutdown

    tmp = Path(tempfile.mkdtemp(prefix="qmon-bench-"))
    broker = LocalKafka(workdir=tmp / "kafka").start()
    bootstrap = broker.bootstrap
    spark = None
    try:
        started = time.perf_counter()
        spark = session("local[2]", "qmon-bench")
        print(f"Spark session (its JVM, not in the runs' figures): {time.perf_counter() - started:.1f} s")
        if args.soak is not None:
            return soak_run(spark, bootstrap, tmp, args)
        if args.latency:
            for rate in args.rate or [5_000, 20_000]:
                latency(spark, bootstrap, tmp, rate, args.seconds, args.warmup)
            return 0
        if args.targets:
            return targets(spark, bootstrap, tmp, args)
        for i, records in enumerate(args.records):
            if i:
                print(f"\n{records:,} records on the JVM that has run the {i} run{'s' if i > 1 else ''} above")
            throughput(spark, bootstrap, tmp, records, quix_python=args.quix_python)
        return 0
    finally:
        if spark is not None:
            shutdown(spark)
        broker.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
