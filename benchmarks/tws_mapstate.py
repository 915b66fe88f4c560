"""What a per-entry state lookup costs in a Python stateful operator: ``transformWithStateInPandas``' MapState.

    python benchmarks/tws_mapstate.py [--rows 8000] [--keys 1] [--batches 10]

The remembered event ids are most of qmon's state, and every micro-batch ships each touched unit's ids to
the Python workers and back (README, Benchmarks, "the steady state").  The one Python API that reads and
writes state an entry at a time is ``transformWithStateInPandas``' MapState.  This script runs two queries
one after the other on the same session, ``--rows`` rows a micro-batch over ``--keys`` grouping keys (the
``rate-micro-batch`` source, so the input costs nothing): one touches no state, the other makes a
``containsKey`` and an ``updateValue`` per row, as a duplicate check would.  It prints the median
``addBatch`` of each and the difference per state operation (with one key, all of them in one task, one
after another).  Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pandas as pd
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import LongType, StructField, StructType


class Lookups(StatefulProcessor):
    """Counts a key's rows; with ``lookups``, checks and remembers each row's value in a MapState."""

    def __init__(self, lookups: bool) -> None:
        self.lookups = lookups

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.ids = handle.getMapState(
            "ids", StructType([StructField("id", LongType())]), StructType([StructField("ts", LongType())])
        )

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        n = seen = 0
        for pdf in rows:
            values = pdf["value"].tolist()
            n += len(values)
            if self.lookups:
                ids = self.ids
                for v in values:
                    if ids.containsKey((v,)):
                        seen += 1
                    ids.updateValue((v,), (v,))
        yield pd.DataFrame({"k": [int(key[0])], "n": [n], "seen": [seen]})


def median_add_batch(spark: Any, lookups: bool, rows: int, keys: int, batches: int, workdir: str) -> float:
    src = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", rows)
        .option("numPartitions", 2)
        .load()
        .selectExpr(f"value % {keys} AS k", "value")
    )
    out = src.groupBy("k").transformWithStateInPandas(Lookups(lookups), "k long, n long, seen long", "Append", "None")
    q = (
        out.writeStream.format("noop")
        .option("checkpointLocation", f"{workdir}/{'map' if lookups else 'none'}")
        .trigger(processingTime="0 seconds")
        .start()
    )
    warm = 3  # the first batches start the Python workers
    deadline = time.time() + 900
    while len(q.recentProgress) < warm + batches and time.time() < deadline:
        time.sleep(0.5)
    spark.sparkContext.setLogLevel("OFF")  # (stopping aborts the batch in flight, which Spark logs as an error)
    q.stop()
    spark.sparkContext.setLogLevel("ERROR")
    durations = [p["durationMs"].get("addBatch", 0) for p in q.recentProgress[warm : warm + batches]]
    return statistics.median(durations) / 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=8_000, help="rows a micro-batch (5,000/s makes ~8,000)")
    ap.add_argument("--keys", type=int, default=1, help="grouping keys (one: every operation in one task)")
    ap.add_argument("--batches", type=int, default=10)
    args = ap.parse_args()

    from qmon.streaming.spark import session

    spark = session("local[2]", "qmon-bench-mapstate", shuffle_partitions=2)
    workdir = tempfile.mkdtemp(prefix="qmon-mapstate-")
    none = median_add_batch(spark, False, args.rows, args.keys, args.batches, workdir)
    lookups = median_add_batch(spark, True, args.rows, args.keys, args.batches, workdir)
    print(
        f"transformWithStateInPandas, {args.rows:,} rows a micro-batch over {args.keys} keys, median addBatch of "
        f"{args.batches} batches:\n"
        f"  no state touched:                      {none:.2f} s\n"
        f"  a containsKey and an updateValue a row: {lookups:.2f} s\n"
        f"  ~{(lookups - none) / (2 * args.rows) * 1e6:,.0f} µs a state operation (of the batch's wall time"
        + (", the keys' tasks side by side)" if args.keys > 1 else ")")
    )
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
