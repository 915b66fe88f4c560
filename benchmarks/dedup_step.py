"""What a duplicate check of its own, ahead of the monitor, would cost a micro-batch: a feasibility figure.

    python benchmarks/dedup_step.py [--rates 2 2000] [--seconds 60] [--warm 15] [--slice-ms 10000]

The remembered event ids are most of qmon's state, and every batch writes every touched group's ids
(README, Benchmarks, *Where the time goes now*, item 1).  The design checked against Spark 4.3's code there
moves the duplicate check into a ``transformWithStateInPandas`` step keyed by a slice of the record's ts,
ahead of the monitor's ``applyInPandasWithState``, so that a batch writes only the ids of the slices it
touches.  Spark allows that shape only in this order, with ``timeMode="EventTime"`` and
``eventTimeColumnName``.  A second stateful operator is also a second shuffle and a second Python round
in every batch: this script measures what that adds, before any of qmon is changed.

Two queries of the same shape as qmon's, one after the other on one session, at each of ``--rates`` (the
``rate`` source, a 200 ms trigger, 2 shuffle partitions, checkpoints through ``java.nio``, as
``throughput.py --latency``):

* **monitor only**: a watermark on ``HORIZON`` (the arrival time a century ahead, as qmon's), then
  ``applyInPandasWithState`` over 6 keys with an event-time timeout (a stand-in for qmon's operator: it
  counts rows and sets its timeout, no rules);
* **with the duplicate check**: the same, behind a ``transformWithStateInPandas`` keyed by ``ts //
  --slice-ms``.  It keeps a slice's ids in one ``ValueState`` (8-byte ints, rewritten whole when the slice
  is touched), drops a row whose id it holds or that an earlier row of the batch had, and clears the slice
  with an event-time timer ``--window-ms`` after the slice's end.

The ``rate`` source makes its rows once a second, so a second's batches are one with rows and one no-data
batch (the watermark moved: Spark runs the stateful operators again for their timers).  A short warm-up
query runs first (the Python workers' start), and at each rate the two queries run in alternate order.
Printed for each query, after its first ``--warm`` seconds: the median and 95th percentile duration of the
batches with rows and of the no-data batches (Spark's idle reports, which run no batch, left out), and the
median of each part of a batch with rows.  Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.streaming.state import GroupState
from pyspark.sql.types import BinaryType, StructField, StructType

CENTURY_DAYS = 36_500
KEYS = 6  # the monitor's keys (qmon: 4 queue groups and 2 structures)


class DuplicateCheck(StatefulProcessor):
    """One slice of ts: its ids in one ValueState; rows whose id it holds are dropped."""

    def __init__(self, slice_ms: int, window_ms: int) -> None:
        self.slice_ms, self.window_ms = slice_ms, window_ms

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.ids = handle.getValueState("ids", StructType([StructField("ids", BinaryType())]))

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        stored = self.ids.get()  # (None when the slice has no state: one round trip, not two)
        held = np.frombuffer(stored[0], dtype=np.int64) if stored else np.empty(0, np.int64)
        for pdf in rows:
            ids = pdf["value"].to_numpy(dtype=np.int64)
            fresh = np.zeros(len(ids), dtype=bool)
            fresh[np.unique(ids, return_index=True)[1]] = True  # (an id's first row in the batch)
            fresh &= ~np.isin(ids, held)
            held = np.concatenate([held, ids[fresh]])
            if fresh.any():
                yield pdf[fresh]
        self.ids.update((held.tobytes(),))
        if stored is None:
            # the slice's end on the watermark's timeline (HORIZON less its century delay: the arrival time)
            self.handle.registerTimer((int(key[0]) + 1) * self.slice_ms + self.window_ms)

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        self.ids.clear()
        return iter(())


def monitor(key: Any, pdfs: Iterator[pd.DataFrame], state: GroupState) -> Iterator[pd.DataFrame]:
    """The monitor's stand-in: counts a key's rows, times out 5 s after the watermark."""
    if state.hasTimedOut:
        state.remove()
        yield pd.DataFrame({"k": [int(key[0])], "n": [-1]})
        return
    n = (state.get[0] if state.exists else 0) + sum(len(p) for p in pdfs)
    state.update((n,))
    state.setTimeoutTimestamp(state.getCurrentWatermarkMs() + 5_000)
    yield pd.DataFrame({"k": [int(key[0])], "n": [n]})


def run(
    spark: Any,
    with_check: bool,
    rate: int,
    seconds: float,
    slice_ms: int,
    workdir: str,
    window_ms: int = 60_000,
    min_batches: int = 3,
) -> list[dict[str, Any]]:
    """One query for ``seconds`` (longer, up to 5 minutes, until ``min_batches`` batches with rows are done);
    every progress report of it, in order.  Raises the query's error if it stopped."""
    from pyspark.sql import functions as F

    from qmon.streaming.job import ProgressListener
    from qmon.streaming.spark import checkpoint_fs

    src = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", rate)
        .option("numPartitions", 2)
        .load()
        .select(F.col("value"), F.unix_millis("timestamp").alias("ts"), F.col("timestamp"))
        .withColumn("HORIZON", F.col("timestamp") + F.expr(f"INTERVAL {CENTURY_DAYS} DAYS"))
        .withWatermark("HORIZON", f"{CENTURY_DAYS} days 2000 milliseconds")
        .select("value", "ts", "HORIZON")
    )
    if with_check:
        src = (
            src.withColumn("slice", F.floor(F.col("ts") / slice_ms))
            .groupBy("slice")
            .transformWithStateInPandas(
                DuplicateCheck(slice_ms, window_ms),
                "value long, ts long, HORIZON timestamp, slice long",
                "Append",
                "EventTime",
                eventTimeColumnName="HORIZON",
            )
        )
    out = (
        src.withColumn("k", F.col("value") % KEYS)
        .groupBy("k")
        .applyInPandasWithState(monitor, "k long, n long", "n long", "Append", "EventTimeTimeout")
    )
    name = f"{'check' if with_check else 'monitor'}-{rate}-{time.monotonic_ns()}"
    checkpoint_fs(spark, f"{workdir}/{name}")  # (java.nio, as qmon's own checkpoints)
    reports: list[dict[str, Any]] = []
    q = (
        out.writeStream.format("noop")
        .option("checkpointLocation", f"{workdir}/{name}")
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    listener = ProgressListener(spark, reports.append).attach(q)  # (every report: recentProgress keeps 100)
    started = time.monotonic()
    try:
        while q.isActive:
            done = time.monotonic() - started
            with_rows = sum(1 for p in list(reports) if p["numInputRows"] > 0)
            if (done >= seconds and with_rows >= min_batches) or done >= max(seconds, 300):
                break
            time.sleep(0.2)
        if not q.isActive and q.exception() is not None:
            raise RuntimeError(f"the {name} query stopped: {q.exception()}")
    finally:
        spark.sparkContext.setLogLevel("OFF")  # (stopping aborts the batch in flight, which Spark logs as an error)
        q.stop()
        spark.sparkContext.setLogLevel(os.environ.get("QMON_SPARK_LOG_LEVEL", "ERROR"))
        listener.detach()
    return sorted({p["batchId"]: p for p in reports}.values(), key=lambda p: p["batchId"])


def describe(label: str, reports: list[dict[str, Any]], warm: float) -> str:
    """The batches after the first ``warm`` seconds of the run: with rows, and no-data (Spark's idle
    reports, which ran no batch and time no ``addBatch``, left out)."""

    def when(p: dict[str, Any]) -> float:
        return datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()

    start = when(reports[0]) if reports else 0.0
    ran = [p for p in reports if "addBatch" in p["durationMs"] and when(p) >= start + warm]
    data = [p for p in ran if p["numInputRows"] > 0]
    empty = [p for p in ran if p["numInputRows"] == 0]

    def pct(ps: list[dict[str, Any]]) -> str:
        xs = [p["durationMs"]["triggerExecution"] / 1000 for p in ps]
        if len(xs) < 2:
            return "too few to tell"
        p95 = statistics.quantiles(xs, n=20, method="inclusive")[18]
        return f"p50 {statistics.median(xs):.2f} s, p95 {p95:.2f} s"

    parts = ("addBatch", "queryPlanning", "latestOffset", "walCommit", "commitOffsets")
    medians = {k: statistics.median(p["durationMs"].get(k, 0) for p in data) for k in parts} if data else {}
    rows = statistics.median(p["numInputRows"] for p in data) if data else 0
    return (
        f"  {label:<26} {len(data)} batches with rows ({rows:,.0f} rows, median): {pct(data)}; "
        f"{len(empty)} no-data batches: {pct(empty)}\n"
        f"  {'':<26} a batch with rows, median ms: " + ", ".join(f"{k} {v:.0f}" for k, v in medians.items())
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", type=int, nargs="+", default=[2, 2000], help="records/s (default 2 2000)")
    ap.add_argument("--seconds", type=int, default=60, help="each query's run (default 60)")
    ap.add_argument("--warm", type=float, default=15, help="seconds of each run not counted (default 15)")
    ap.add_argument("--slice-ms", type=int, default=10_000, help="the duplicate check's slice of ts")
    ap.add_argument("--window-ms", type=int, default=60_000, help="how long after a slice's end it is kept")
    args = ap.parse_args()

    from qmon.streaming.spark import session

    spark = session(master="local[2]", app_name="qmon-dedup-step", shuffle_partitions=2)
    print(
        f"settings: local[2], 2 shuffle partitions, 200 ms trigger, {KEYS} monitor keys, slices of "
        f"{args.slice_ms:,} ms kept {args.window_ms:,} ms after their end, {args.seconds} s a query "
        f"(its first {args.warm:g} s not counted)"
    )
    # (a stopped query's last files may still be written as the directory goes)
    with tempfile.TemporaryDirectory(prefix="qmon-dedup-step-", ignore_cleanup_errors=True) as workdir:
        run(spark, True, 10, 15, args.slice_ms, workdir, args.window_ms)  # the Python workers' start: not shown
        for i, rate in enumerate(args.rates):
            print(f"{rate:,} records/s:")
            for with_check in (False, True) if i % 2 == 0 else (True, False):
                reports = run(spark, with_check, rate, args.seconds, args.slice_ms, workdir, args.window_ms)
                print(describe("with the duplicate check" if with_check else "monitor only", reports, args.warm))
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
