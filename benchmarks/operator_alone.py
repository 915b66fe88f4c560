"""The stateful operator's Python side alone: the throughput workload's routed rows through ``Monitor``.

    python benchmarks/operator_alone.py [--records 300000] [--batch 10000] [--repeat 3] [--event-ids uuid]

What the Python workers of the job do, in one process and without Spark: the rows ``pipeline.route``
makes of each record (a queue shard's row and a structure's row), grouped by key per micro-batch of
``--batch`` records, handed over in Arrow batches of at most ``spark.sql.execution.arrow.maxRecordsPerBatch``
= 10,000 rows converted to pandas (pyarrow's ``to_pandas``, close to PySpark's own conversion), each group's state
carried from batch to batch as ``GroupState`` carries it, timeouts fired when the watermark (the newest
arrival clock) passes them.  Timed: the Arrow-to-pandas conversion, and the operator's call
(``sorted_input``, loading the state, the rules, storing the state, encoding the outputs: qmon's).
Not included: the JVM, the Arrow transfer and RocksDB.

One process and no broker, so its figures vary far less than the end-to-end run's: use it to
measure a change to the operator or the rules.  It checks that the outputs' event_ids are those of the pure
modules applied record by record (the throughput benchmark's baseline, without Kafka).  Prints figures;
asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

sys.path.insert(0, str(Path(__file__).resolve().parent))
import throughput  # noqa: E402  (the same workload and configuration)

from qmon.connectors import avro  # noqa: E402
from qmon.core import topics  # noqa: E402
from qmon.core.config import duration_ms  # noqa: E402
from qmon.core.queues import QueueMonitor  # noqa: E402
from qmon.core.records import Activity  # noqa: E402
from qmon.core.structures import StructureMonitor  # noqa: E402
from qmon.streaming.operators import Monitor  # noqa: E402
from qmon.streaming.rows import ROUTED, ROUTED_COLUMNS, STATE  # noqa: E402

ARROW_BATCH = 10_000  # spark.sql.execution.arrow.maxRecordsPerBatch (its default)
#: records per millisecond of the arrival clock (the broker's append time), about as fast as the throughput
#: benchmark produces, so that, as there, no queue's stall deadline (QSVCINT on the arrival clock) passes in
#: the run
PRODUCED_PER_MS = 300


def routed(recs: list[dict[str, Any]], buckets: int, units: int) -> pa.Table:
    """The rows ``pipeline.route`` makes of activity records: one for the queue's shard (in its group of
    shards), one for its structure."""
    cols: dict[str, list[Any]] = {c: [] for c in ROUTED_COLUMNS}
    for i, r in enumerate(recs):
        shard = zlib.crc32(r["queue"].encode()) % buckets  # (Spark uses xxhash64: any spread will do here)
        group = (zlib.crc32(r["qmgr"].encode()) % units + shard) % units
        for unit, name, bucket, kind in (("Q", "", group, "A"), ("S", r["structure"], 0, "S")):
            row = {
                "unit": unit,
                "unit_name": name,
                "bucket": bucket,
                "shard": shard if unit == "Q" else None,
                "kind": kind,
                "qmgr": r["qmgr"],
                "event_id": r["event_id"],
                "queue": r["queue"],
                "op": r["op"],
                "ts": r["ts"],
                "depth_after": r["depth_after"],
                "msg_bytes": r["msg_bytes"],
                "structure": r["structure"],
                "reason": r["reason"],
                "reply": False,
                "rank": 1,
                "src_partition": i % 2,
                "src_offset": i // 2,
                "clock": throughput.T0 + i // PRODUCED_PER_MS,
            }
            for c in ROUTED_COLUMNS:
                cols[c].append(row.get(c))
    return pa.Table.from_pydict(cols, schema=to_arrow_schema(ROUTED))


class Groups:
    """Each group's state and timeout between batches, as Spark keeps them."""

    def __init__(self, monitor: Monitor) -> None:
        self.monitor = monitor
        self.values: dict[Any, Any] = {}
        self.timeouts: dict[Any, int] = {}

    def call(self, key: Any, frames: list[pd.DataFrame], watermark: int, timed_out: bool) -> list[pd.DataFrame]:
        value = self.values.get(key)
        state = GroupState(
            optionalValue=value,  # type: ignore[arg-type]
            batchProcessingTimeMs=0,
            eventTimeWatermarkMs=watermark,
            timeoutConf=GroupStateTimeout.EventTimeTimeout,
            hasTimedOut=timed_out,
            watermarkPresent=True,
            defined=value is not None,
            updated=False,
            removed=False,
            timeoutTimestamp=GroupState.NO_TIMESTAMP,
            keyAsUnsafe=b"",
            valueSchema=STATE,
        )
        out = list(self.monitor(key, iter(frames), state))
        if state.exists:
            self.values[key] = state.get
        if state._timeout_timestamp != GroupState.NO_TIMESTAMP:
            self.timeouts[key] = state._timeout_timestamp
        else:
            self.timeouts.pop(key, None)
        return out


def run(
    table: pa.Table, batch: int, n: int, config: Any
) -> tuple[float, float, dict[str, float], list[pd.DataFrame], int]:
    """(seconds converting, seconds in the operator and in it per kind of unit (Q, S: the rows' calls; the
    timeouts apart), its outputs, the bytes of state at the end)."""
    # (the monitor with its own duplicate check, monitor.dedup_state: queue: the check ahead of it is not here)
    monitor = Monitor(
        config.monitor_settings("queue"), config.structure_settings("queue"), duration_ms(config.monitor.queue_ttl)
    )
    groups = Groups(monitor)
    convert = operate = 0.0
    per_unit: dict[str, float] = {}
    outputs: list[pd.DataFrame] = []
    watermark = 0
    for start in range(0, n, batch):
        part = table.slice(2 * start, 2 * min(batch, n - start))
        keys = pd.DataFrame({c: part.column(c).to_numpy(zero_copy_only=False) for c in ("unit", "unit_name", "bucket")})
        for key, idx in keys.groupby(["unit", "unit_name", "bucket"], sort=True).indices.items():
            rows = part.take(pa.array(idx))
            t = time.perf_counter()
            frames = [rows.slice(i, ARROW_BATCH).to_pandas() for i in range(0, rows.num_rows, ARROW_BATCH)]
            t1 = time.perf_counter()
            outputs.extend(groups.call(tuple(key), frames, watermark, False))
            t2 = time.perf_counter()
            convert, operate = convert + t1 - t, operate + t2 - t1
            per_unit[key[0]] = per_unit.get(key[0], 0.0) + t2 - t1
        watermark = int(pa.compute.max(part.column("clock")).as_py())
        t = time.perf_counter()
        for key in [k for k, at in groups.timeouts.items() if at < watermark]:
            outputs.extend(groups.call(key, [], watermark, True))
        operate += time.perf_counter() - t
    return convert, operate, per_unit, outputs, sum(len(v[0]) for v in groups.values.values())


def expected_ids(recs: list[dict[str, Any]], config: Any) -> set[str]:
    """The pure modules, record by record in ts order (the throughput benchmark's baseline without Kafka)."""
    settings, ssettings = config.monitor_settings("queue"), config.structure_settings("queue")
    queues: dict[str, QueueMonitor] = {}
    structs: dict[str, StructureMonitor] = {}
    ids: set[str] = set()
    for off, r in enumerate(recs):
        act = Activity(r["event_id"], r["qmgr"], r["queue"], r["op"], r["ts"], None, r["msg_bytes"], r["structure"],
                       None, None, off)  # fmt: skip
        qm = queues.get(r["qmgr"]) or queues.setdefault(r["qmgr"], QueueMonitor(r["qmgr"], settings))
        ids.update(e.record["event_id"] for e in qm.on_activity(act))
        sm = structs.get(r["structure"]) or structs.setdefault(
            r["structure"], StructureMonitor(r["structure"], ssettings)
        )
        ids.update(e.record["event_id"] for e in sm.on_activity(act))
    return ids


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--queues", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=10_000, help="records per micro-batch")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--event-ids", choices=("short", "uuid"), default="short")
    ap.add_argument("--no-check", action="store_true", help="skip the comparison with the pure modules")
    args = ap.parse_args()
    throughput.EVENT_IDS = args.event_ids
    config = throughput.config_for("bench")
    recs = throughput.records(args.records, args.queues)
    table = routed(recs, config.job.queue_buckets, config.job.queue_units or config.job.shuffle_partitions)
    print(
        f"operator alone: {args.records:,} records ({2 * args.records:,} routed rows), {args.queues:,} queues, "
        f"batches of {args.batch:,} records, event ids {args.event_ids}"
    )
    best = None
    for i in range(args.repeat):
        convert, operate, per_unit, outputs, state = run(table, args.batch, args.records, config)
        best = operate if best is None else min(best, operate)
        print(
            f"  run {i + 1}: operator {operate:.2f} s ({args.records / operate:,.0f} records/s, "
            f"{1e6 * operate / (2 * args.records):.1f} µs a routed row: queue shards "
            f"{1e6 * per_unit.get('Q', 0) / args.records:.1f}, structures {1e6 * per_unit.get('S', 0) / args.records:.1f}); "
            f"Arrow to pandas {convert:.2f} s; "
            f"state at the end {state / 1e6:.1f} MB"
        )
    assert best is not None
    print(f"  best: {args.records / best:,.0f} records/s")
    if not args.no_check:
        got = [
            avro.decode(topics.RECORD_OF[t], bytes(v))["event_id"]
            for o in outputs
            for t, v in zip(o["topic"], o["value"], strict=True)
            if t in topics.OUTPUTS  # (as the throughput benchmark: the events, not the status snapshots)
        ]
        want = expected_ids(recs, config)
        same = len(got) == len(set(got)) and set(got) == want
        print(f"  outputs: {len(got):,}; {'match' if same else 'DIFFER FROM'} the pure modules' ({len(want):,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
