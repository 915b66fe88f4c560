"""What a duplicate check of its own, ahead of the monitor, would cost a micro-batch: a feasibility figure.

    python benchmarks/dedup_step.py [--rates 2 2000] [--seconds 60] [--slice-ms 10000]

The remembered event ids are most of qmon's state, and every batch writes every touched group's ids
(README, Benchmarks, *Where the time goes now*, item 1).  The design checked against Spark 4.3's code there
moves the duplicate check into a ``transformWithStateInPandas`` step keyed by a slice of the record's ts,
ahead of the monitor's ``applyInPandasWithState``, so that a batch writes only the ids of the slices it
touches.  Spark allows that shape only in this order, with ``timeMode="EventTime"`` and
``eventTimeColumnName``.  A second stateful operator is also a second shuffle and a second Python round
in every batch: this script measures what that adds, before any of qmon is changed.

Two queries of the same shape as qmon's, one after the other on one session, at each ``--rate`` (the
``rate`` source, a 200 ms trigger, 2 shuffle partitions, as ``throughput.py --latency``):

* **monitor only**: a watermark on ``HORIZON`` (the arrival time a century ahead, as qmon's), then
  ``applyInPandasWithState`` over 6 keys with an event-time timeout (a stand-in for qmon's operator: it
  counts rows and sets its timeout, no rules);
* **with the duplicate check**: the same, behind a ``transformWithStateInPandas`` keyed by ``ts //
  --slice-ms``.  It keeps a slice's ids in one ``ValueState`` (8-byte ints, rewritten whole when the slice
  is touched), drops the rows whose id it holds, and clears the slice with an event-time timer.

Printed for each: the median and p95 duration of the batches with rows and of the no-data batches that
follow them, and the median of each part of a batch.  Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.streaming.state import GroupState
from pyspark.sql.types import BinaryType, StructField, StructType

CENTURY_DAYS = 36_500
WINDOW_MS = 60_000  # how long the check remembers a slice's ids after the watermark passes it
KEYS = 6  # the monitor's keys (qmon: 4 queue groups and 2 structures)


class DuplicateCheck(StatefulProcessor):
    """One slice of ts: its ids in one ValueState; rows whose id it holds are dropped."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.ids = handle.getValueState("ids", StructType([StructField("ids", BinaryType())]))

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        stored = self.ids.get() if self.ids.exists() else None
        held = np.frombuffer(stored[0], dtype=np.int64) if stored else np.empty(0, np.int64)
        first = not len(held)
        for pdf in rows:
            ids = pdf["value"].to_numpy(dtype=np.int64)
            fresh = np.zeros(len(ids), dtype=bool)
            fresh[np.unique(ids, return_index=True)[1]] = True  # (an id's first row in the batch)
            fresh &= ~np.isin(ids, held)
            held = np.concatenate([held, ids[fresh]])
            if fresh.any():
                yield pdf[fresh]
        self.ids.update((held.tobytes(),))
        if first:
            self.handle.registerTimer(timerValues.getCurrentWatermarkInMs() + WINDOW_MS)

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


def run(spark: Any, with_check: bool, rate: int, seconds: int, slice_ms: int, workdir: str) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

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
                DuplicateCheck(),
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
    from qmon.streaming.spark import checkpoint_fs

    name = f"{'check' if with_check else 'monitor'}-{rate}"
    checkpoint_fs(spark, f"{workdir}/{name}")  # (java.nio, as qmon's own checkpoints)
    q = (
        out.writeStream.format("noop")
        .option("checkpointLocation", f"{workdir}/{name}")
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    reports: list[dict[str, Any]] = []
    time.sleep(seconds)
    reports = list(q.recentProgress)
    spark.sparkContext.setLogLevel("OFF")  # (stopping aborts the batch in flight, which Spark logs as an error)
    q.stop()
    spark.sparkContext.setLogLevel("ERROR")
    return reports


def describe(label: str, reports: list[dict[str, Any]], warm: int) -> str:
    reports = reports[warm:]
    data = [p for p in reports if p["numInputRows"] > 0]
    empty = [p for p in reports if p["numInputRows"] == 0]

    def q(ps: list[dict[str, Any]], f: float) -> float:
        xs = sorted(p["durationMs"].get("triggerExecution", 0) for p in ps)
        return xs[min(len(xs) - 1, int(f * len(xs)))] / 1000 if xs else float("nan")

    parts = (
        {
            k: statistics.median(p["durationMs"].get(k, 0) for p in data)
            for k in ("addBatch", "queryPlanning", "latestOffset", "walCommit", "commitOffsets")
        }
        if data
        else {}
    )
    rows = statistics.median(p["numInputRows"] for p in data) if data else 0
    return (
        f"  {label:<26} batches with rows: {len(data)} of {rows:,.0f} rows (median), p50 {q(data, 0.5):.2f} s, "
        f"p95 {q(data, 0.95):.2f} s; no-data batches: {len(empty)}, p50 {q(empty, 0.5):.2f} s, p95 {q(empty, 0.95):.2f} s\n"
        f"  {'':<26} a batch with rows, median ms: " + ", ".join(f"{k} {v:.0f}" for k, v in parts.items())
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", type=int, nargs="+", default=[2, 2000], help="records/s (default 2 2000)")
    ap.add_argument("--seconds", type=int, default=60, help="each query's run (default 60)")
    ap.add_argument("--warm", type=int, default=20, help="progress reports not counted (the workers' start)")
    ap.add_argument("--slice-ms", type=int, default=10_000, help="the duplicate check's slice of ts")
    args = ap.parse_args()

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from qmon.streaming.spark import session

    spark = session(master="local[2]", app_name="qmon-dedup-step", shuffle_partitions=2)
    print(
        f"settings: local[2], 2 shuffle partitions, 200 ms trigger, {KEYS} monitor keys, slices of "
        f"{args.slice_ms:,} ms, {args.seconds} s a query ({args.warm} reports not counted)"
    )
    # (a stopped query's last files may still be written as the directory goes)
    with tempfile.TemporaryDirectory(prefix="qmon-dedup-step-", ignore_cleanup_errors=True) as workdir:
        for rate in args.rates:
            print(f"{rate:,} records/s:")
            for with_check in (False, True):
                reports = run(spark, with_check, rate, args.seconds, args.slice_ms, workdir)
                print(describe("with the duplicate check" if with_check else "monitor only", reports, args.warm))
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
