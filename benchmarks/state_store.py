"""What a micro-batch pays to load and save one queue shard's state, as remembered event ids pile up.

    python benchmarks/state_store.py [--queues 625] [--ids 256] [--batch 170]

The operator keeps a shard's whole state as one stored value (two state-store calls per shard and
batch, whatever the number of queues).  Its largest part is the event ids each queue remembers for
duplicate suppression (up to ``dedup_max`` = 256 per queue within ``dedup_window``).  This script
fills a shard (default: 10,000 queues over 16 shards = 625 queues, each at the 256-id limit), then
times a batch of ``--batch`` records: load, apply, store — with the ids stored as dicts and pickled (0.1
before the packing), packed at rest and pickled (0.1), packed at rest as MessagePack (0.2), each queue
its own MessagePack value inside the shard's, decoded only when used (``qmon.core.lazy``), as a map (0.4
before) and by position (now: ``state.QUEUE_SHAPES``), side by side.  Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from collections.abc import Callable
from typing import Any

import msgpack

from qmon.core.lazy import Lazy
from qmon.core.queues import MonitorSettings, QueueMonitor
from qmon.core.records import Activity
from qmon.streaming import state as stored

_queue_as_map = msgpack.Packer(use_bin_type=True, default=lambda v: v.packed())


def _dumps_queues_as_maps(state: Any) -> bytes:
    """``stored.dumps`` as qmon stored a unit before a queue's fields went by position: each used queue a map."""

    def default(value: Any) -> Any:
        return value.encoded(_queue_as_map.pack) if isinstance(value, Lazy) else value.packed()

    return msgpack.packb(state, use_bin_type=True, default=default)


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
    codecs: dict[str, tuple[Callable[[Any], bytes], Callable[[bytes], Any]]] = {
        "pickle": (lambda v: pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL), pickle.loads),
        "msgpack": (stored.dumps, stored.loads),
        "lazy-map": (_dumps_queues_as_maps, stored.loads),
    }
    for label, packed, codec in (
        ("dicts, pickled (0.1, before packing)", False, "pickle"),
        ("packed, pickled (0.1)", True, "pickle"),
        ("packed, MessagePack (0.2)", True, "msgpack"),
        ("each queue its own value, a map (0.4, before)", True, "lazy-map"),
        ("each queue its own value, by position (now)", True, "lazy"),
    ):
        lazy = codec.startswith("lazy")
        dumps, loads = codecs[codec if codec == "lazy-map" else "msgpack" if lazy else codec]
        decode = stored.load_queue if lazy else None
        m = QueueMonitor("QM1", settings, pickle.loads(pickle.dumps(mon.state)), decode)
        if packed:
            m.recent.touched = {id(q): q for q in m.queues.values()}  # (this decodes every lazy queue too)
            m.pack()
        state = dumps(m.state)  # lazy: every queue its own value from here
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            m = QueueMonitor("QM1", settings, loads(state), decode)
            for j in range(args.batch):
                m.on_activity(
                    Activity(f"new-{n + j}", "QM1", f"APP.QUEUE.{j % args.queues:05d}", "PUT", n + j, msg_bytes=512)
                )
            if packed:
                m.pack()
            m.next_stall_clock()  # what the operator asks before storing: its timer
            dumps(m.state)
            best = min(best, time.perf_counter() - t)
        print(
            f"{label:<50} shard state {len(state) / 2**10:,.0f} KiB, a batch of {args.batch} records costs "
            f"{best * 1000:.1f} ms ({args.queues} queues x {args.ids} remembered ids)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
