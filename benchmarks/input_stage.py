"""The input stage alone: decode, validate and route the throughput workload in one Spark job, no broker.

    python benchmarks/input_stage.py [--records 300000] [--conf KEY=VALUE ...]

The same Kafka-shaped rows the job reads (the throughput benchmark's Avro records, cached in Spark), through
``pipeline.decode`` and ``pipeline.route`` (and the shuffle write the operator's input needs), written to
Spark's ``noop`` sink: best of three, in µs a record of wall time on ``local[2]``.  ``--conf`` sets Spark
settings for the comparison; ``--conf spark.driver.extraJavaOptions=-XX:+DontCompileHugeMethods`` runs it
with HotSpot's default, huge methods left interpreted (what ``qmon.streaming.spark.JIT_HUGE_METHODS``
changes).  Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import throughput  # noqa: E402  (the same workload)

from qmon.core import topics  # noqa: E402
from qmon.streaming import pipeline  # noqa: E402
from qmon.streaming.spark import session  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--queues", type=int, default=10_000)
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting (repeatable)")
    args = ap.parse_args()
    from pyspark.sql import functions as F

    spark = session(
        "local[2]", "qmon-input-stage", shuffle_partitions=2, extra=dict(c.split("=", 1) for c in args.conf)
    )
    names = topics.physical_map("qmon")
    rows = throughput.workload(args.records, args.queues)
    data = [
        (names[topics.ACTIVITY], i % 2, i // 2, throughput.T0 + i // 300, key, value)
        for i, (key, value) in enumerate(rows)
    ]
    raw = spark.createDataFrame(data, "topic string, partition int, offset long, ts long, key binary, value binary")
    raw = raw.withColumn("timestamp", F.timestamp_millis("ts")).drop("ts").repartition(2).cache()
    raw.count()
    dec = pipeline.decode(raw, names)
    dec = dec.withColumn(pipeline.HORIZON, F.col("timestamp") + F.expr("INTERVAL 36500 DAYS"))
    routed = pipeline.route(dec, names, 4, {"MSGQ1": 0, "MSGQ2": 1})
    print(f"input stage alone: {args.records:,} records, local[2]; settings: {args.conf or 'qmon defaults'}")
    for label, df in (
        ("decode and validate", dec),
        ("... and route", routed),
        ("... and the shuffle write", routed.repartition(2, "unit", "unit_name", "bucket")),
    ):
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            best = min(best, time.perf_counter() - t)
        print(f"  {label:<28} {best:5.2f} s, {1e6 * best / args.records:5.1f} µs a record")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
