"""What a micro-batch pays to load and save one queue shard's state, as remembered event ids pile up.

    python benchmarks/state_store.py [--queues 625] [--ids 256] [--batch 170]

The operator keeps a shard's whole state as one pickled value (two state-store calls per shard and
batch, whatever the number of queues).  Its largest part is the event ids each queue remembers for
duplicate suppression (up to ``dedup_max`` = 256 per queue within ``dedup_window``).  This script
fills a shard (default: 10,000 queues over 16 shards = 625 queues, each at the 256-id limit), then
times a batch of ``--batch`` records: unpickle, apply, pickle — with the ids stored as dicts (before)
and packed at rest (``qmon.core.dedup``, now).  Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time

from qmon.core.queues import MonitorSettings, QueueMonitor
from qmon.core.records import Activity


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queues", type=int, default=625)
    ap.add_argument("--ids", type=int, default=256)
    ap.add_argument("--batch", type=int, default=170)
    args = ap.parse_args()
    settings = MonitorSettings(perfmev="ENABLED", dedup_window_ms=10**12)
    mon = QueueMonitor("QM1", settings)
    n = 0
    for i in range(args.ids):
        for q in range(args.queues):
            op = "PUT" if i % 2 == 0 else "GET"
            mon.on_activity(
                Activity(f"evt-{n:012d}", "QM1", f"APP.QUEUE.{q:05d}", op, n, None, 512, None, None, None, 0)
            )
            n += 1
    for packed in (False, True):
        state = pickle.dumps(mon.state, protocol=pickle.HIGHEST_PROTOCOL)
        if packed:
            m = QueueMonitor("QM1", settings, pickle.loads(state))
            m.recent.touched = {id(q): q for q in m.queues.values()}
            m.pack()
            state = pickle.dumps(m.state, protocol=pickle.HIGHEST_PROTOCOL)
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            m = QueueMonitor("QM1", settings, pickle.loads(state))
            for j in range(args.batch):
                m.on_activity(
                    Activity(
                        f"new-{n + j}",
                        "QM1",
                        f"APP.QUEUE.{j % args.queues:05d}",
                        "PUT",
                        n + j,
                        None,
                        512,
                        None,
                        None,
                        None,
                        0,
                    )
                )
            if packed:
                m.pack()
            pickle.dumps(m.state, protocol=pickle.HIGHEST_PROTOCOL)
            best = min(best, time.perf_counter() - t)
        print(
            f"{'packed at rest (now)' if packed else 'dicts (before)'}: shard state {len(state) / 2**20:.1f} MiB, "
            f"a batch of {args.batch} records costs {best * 1000:.1f} ms "
            f"({args.queues} queues x {args.ids} remembered ids)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
