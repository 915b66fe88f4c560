"""What a queue's first record costs the pure rules against a later one: one queue manager's shard
(``QueueMonitor``, configured as the throughput runs configure it: PERFMEV enabled, every queue QSVCIEV(HIGH)
QSVCINT(20000), fill forecasts on), a PUT on each of ``--queues`` queues it has never seen, then a second PUT on
each, then a GET on each, a queue's records ``--gap-ms`` of ``ts`` apart; microseconds a record, and the first
record's cost over a later one's.  Pure: no Spark, no Kafka (seconds to a minute on one core).

    python benchmarks/rules.py --queues 1000000 --gap-ms 1000 1800000
"""

from __future__ import annotations

import argparse
import gc
import time

from qmon.core.config import Config
from qmon.core.queues import QueueMonitor
from qmon.core.records import Activity

#: the throughput runs' configuration (``benchmarks/throughput.py``, ``config_for``)
CONFIG = {"monitor": {"perfmev": "ENABLED"}, "queues": [{"pattern": "*", "qsvciev": "HIGH", "qsvcint": 20_000}]}


def records(queues: int, op: str, t0: int, gap_ms: int, width: int) -> list[Activity]:
    """``op`` on each queue once, spread evenly over ``gap_ms`` from ``t0``."""
    return [
        Activity.of(
            {
                "event_id": f"{op}{i}",
                "qmgr": "QM1",
                "queue": f"Q{i:0{width}d}",
                "op": op,
                "ts": t0 + i * gap_ms // queues,
            },
            seq=i,
        )
        for i in range(queues)
    ]


def per_record_us(monitor: QueueMonitor, batch: list[Activity]) -> float:
    """The rules over ``batch``, record by record: microseconds a record (the garbage collector off, as
    the figure is the rules' own work)."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for rec in batch:
            monitor.on_activity(rec)
        return (time.perf_counter() - start) / len(batch) * 1e6
    finally:
        gc.enable()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--queues", type=int, default=1_000_000, help="queues, each met for the first time (1,000,000)")
    p.add_argument(
        "--gap-ms",
        type=int,
        nargs="+",
        default=[1_000, 1_800_000],
        help="ms of ts between a queue's records, a run each (1000: served every second; 1800000: half an hour)",
    )
    args = p.parse_args(argv)
    width = max(5, len(str(args.queues - 1)))
    t0 = 1_700_000_000_000
    print(f"pure rules, one shard of {args.queues:,} queues (the throughput runs' configuration):")
    for gap in args.gap_ms:
        monitor = QueueMonitor("QM1", Config.model_validate(CONFIG).monitor_settings())
        first = per_record_us(monitor, records(args.queues, "PUT", t0, gap, width))
        again = per_record_us(monitor, records(args.queues, "PUT", t0 + gap, gap, width))
        get = per_record_us(monitor, records(args.queues, "GET", t0 + 2 * gap, gap, width))
        later = (again + get) / 2
        print(
            f"  a queue's records {gap:,} ms apart: first record (PUT) {first:.1f} µs; later records PUT "
            f"{again:.1f} µs, GET {get:.1f} µs; first / later {first / later:.2f} x (target: at most 3 x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
