"""Bounded state: queue state under churning queue names, with and without the TTL.

    python benchmarks/state_ttl.py [--days 30] [--queues-per-day 2000] [--ttl-days 7]

Feeds a shard of the per-queue monitor (qmon.core.queues, the code the Spark operator runs) with
activity on queue names that change every day (as with dynamic reply queues), and prints, per
simulated day, the number of queues held and the size of the pickled state (what the operator
stores in RocksDB for the shard).  With the TTL the figures level off at about ttl-days worth of
queues; without it they grow for ever.  Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import pickle
import random
import sys

from qmon.core.queues import MonitorSettings, QueueMonitor
from qmon.core.records import Activity

DAY = 86_400_000


def run(days: int, per_day: int, ttl_days: int | None) -> list[tuple[int, int, int]]:
    rng = random.Random(1)
    mon = QueueMonitor("QM1", MonitorSettings(perfmev="ENABLED"))
    out = []
    n = 0
    for day in range(days):
        for i in range(per_day * 5):
            q = f"REPLY.D{day}.Q{rng.randrange(per_day)}"
            n += 1
            mon.on_activity(Activity(f"e{n}", "QM1", q, "PUT" if i % 2 == 0 else "GET", day * DAY + i * 10))
        if ttl_days is not None:
            mon.expire((day + 1) * DAY, ttl_days * DAY)  # the operator does this after every batch
        out.append((day + 1, len(mon.queues), len(pickle.dumps(mon.state, protocol=pickle.HIGHEST_PROTOCOL))))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--queues-per-day", type=int, default=2000)
    ap.add_argument("--ttl-days", type=int, default=7)
    args = ap.parse_args()
    with_ttl = run(args.days, args.queues_per_day, args.ttl_days)
    without = run(args.days, args.queues_per_day, None)
    print(
        f"{args.queues_per_day} new queue names a day, {args.days} days of event time; "
        f"queue_ttl {args.ttl_days} days vs none"
    )
    print(f"{'day':>4} {'queues (ttl)':>13} {'state KiB (ttl)':>16} {'queues (no ttl)':>16} {'state KiB (no ttl)':>19}")
    for (d, q1, b1), (_, q2, b2) in zip(with_ttl, without, strict=True):
        if d in (1, 2, 5, 7, 8, 10, 15, 20, 25, 30) or d == args.days:
            print(f"{d:>4} {q1:>13,} {b1 / 1024:>16,.0f} {q2:>16,} {b2 / 1024:>19,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
