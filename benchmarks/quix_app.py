"""The same rules as a Quix Streams application: the Python stream processor a user would most likely
pick instead of qmon.  Run by benchmarks/throughput.py in its own virtualenv (Quix Streams pins an
older confluent-kafka than qmon):

    python3.11 -m venv .venv-quix && .venv-quix/bin/pip install quixstreams fastavro pydantic pyyaml msgpack
    .venv-quix/bin/pip install --no-deps -e .
    python benchmarks/throughput.py --quix-python .venv-quix/bin/python

Per-queue state (the duplicate check's ids, by slice of ts, as ``qmon.core.dedup`` keeps them, and the queue
rules' state) is keyed by the message key (qmgr/queue), per-structure state after a ``group_by``
on the structure (a repartition topic), both in Quix's RocksDB state (with changelog topics, as qmon's
state has its checkpoint).  Output values are ``<logical topic>\\0<Avro record>`` on one topic, so the benchmark can compare event_ids.

A structure's state is kept the way a Quix user would keep it: the structure's own figures under
one state key, each of its queues under a key of its own (``q/<queue>``) and the list of its queue
names under ``names``, read only when the rules walk every queue (candidate selection, the overflow
scan).  A message therefore reads and writes what it touches, not the whole structure (one value for the
whole structure would be rewritten by every message, and outgrow Kafka's 1 MB changelog limit).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import uuid
from collections.abc import MutableMapping
from pathlib import Path

from qmon.connectors import avro
from qmon.core.config import Config
from qmon.core.dedup import slice_of
from qmon.core.queues import QueueMonitor
from qmon.core.records import Activity
from qmon.core.structures import StructureMonitor
from qmon.core.timeconv import to_ms

ROOT = Path(__file__).resolve().parents[1]


class QueuesView(MutableMapping):
    """A structure's queues (``state["queues"]`` of qmon.core.structures) over Quix state keys."""

    def __init__(self, state) -> None:
        self.state = state
        self.cache: dict = {}
        self.names: list | None = None
        self.names_dirty = False

    def _names(self) -> list:
        if self.names is None:
            self.names = self.state.get("names") or []
        return self.names

    def __getitem__(self, name: str) -> dict:
        q = self.cache.get(name)
        if q is None:
            q = self.state.get("q/" + name)
            if q is None:
                raise KeyError(name)
            self.cache[name] = q
        return q

    def __setitem__(self, name: str, value: dict) -> None:
        if name not in self.cache and self.state.get("q/" + name) is None:
            self._names().append(name)
            self.names_dirty = True
        self.cache[name] = value

    def __delitem__(self, name: str) -> None:  # the structure rules never forget a queue
        raise NotImplementedError

    def __iter__(self):
        return iter(list(self._names()))

    def __len__(self) -> int:
        return len(self._names())

    def flush(self) -> None:
        for name, q in self.cache.items():  # queue dicts are changed in place: write back what was read
            self.state.set("q/" + name, q)
        if self.names_dirty:
            self.state.set("names", self.names)


def main() -> int:
    bootstrap, src_name, out_name, _n, config_path = (
        sys.argv[1],
        sys.argv[2],
        sys.argv[3],
        int(sys.argv[4]),
        sys.argv[5],
    )
    import msgpack
    from quixstreams import Application
    from quixstreams.state.rocksdb import RocksDBOptions

    config = Config.model_validate(json.loads(Path(config_path).read_text()))
    settings, ssettings = config.monitor_settings(), config.structure_settings()
    app = Application(
        broker_address=bootstrap,
        consumer_group=f"quix-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        loglevel="WARNING",
        # beside the config, in throughput.py's temporary directory, which it removes
        state_dir=tempfile.mkdtemp(prefix="quix-state-", dir=Path(config_path).parent),
        # state is recovered from changelog topics, as qmon's is from its checkpoint
        use_changelog_topics=True,
        consumer_extra_config={"fetch.max.bytes": 50_000_000},
        # the states in MessagePack, as qmon's Spark operator stores its state
        rocksdb_options=RocksDBOptions(
            dumps=lambda v: msgpack.packb(v, use_bin_type=True), loads=lambda b: msgpack.unpackb(b, raw=False)
        ),
    )
    src = app.topic(src_name, value_deserializer="bytes", key_deserializer="bytes")
    out = app.topic(out_name, value_serializer="bytes", key_serializer="bytes")
    sdf = app.dataframe(src)

    def frame(e) -> bytes:
        return (
            e.topic.encode()
            + b"\0"
            + avro.encode(
                {
                    "qmon.events.performance": "PerformanceEvent",
                    "qmon.events.alerts": "Alert",
                    "qmon.events.overflow": "OverflowCandidates",
                    "qmon.events.notify": "WorkAvailable",
                }[e.topic],
                e.record,
            )
        )

    def per_queue(value: bytes, state) -> dict:
        r = avro.decode("QueueActivity", value)
        ts = to_ms(r["ts"])
        # the duplicate check ahead of the rules: the first copy of a record in its slice of ts is kept
        ids = state.get(f"ids/{slice_of(ts)}") or []
        if r["event_id"] in ids:
            return {"emits": [], "s": None}
        state.set(f"ids/{slice_of(ts)}", [*ids, r["event_id"]])
        mon = QueueMonitor(r["qmgr"], settings, state.get("q"))
        emits = mon.on_activity(Activity.of({**r, "ts": ts}))
        mon.pack()  # (the remembered ids as plain bytes, as the Spark operator stores them)
        state.set("q", mon.state)
        s = None
        if r["structure"]:
            s = {
                "structure": r["structure"],
                "event_id": r["event_id"],
                "qmgr": r["qmgr"],
                "queue": r["queue"],
                "op": r["op"],
                "ts": ts,
                "msg_bytes": r["msg_bytes"],
                "reason": r["reason"],
            }
        return {"emits": [frame(e) for e in emits], "s": s}

    def per_structure(v: dict, state) -> list:
        top = state.get("top")
        view = QueuesView(state)
        if top is None:
            mon = StructureMonitor(v["structure"], ssettings)
            mon.state["queues"] = view
        else:
            top["queues"] = view
            mon = StructureMonitor(v["structure"], ssettings, top)
        emits = mon.on_activity(
            Activity(
                v["event_id"],
                v["qmgr"],
                v["queue"],
                v["op"],
                v["ts"],
                msg_bytes=v["msg_bytes"],
                reason=v["reason"],
                clock=None,
            )
        )
        view.flush()
        state.set("top", {k: x for k, x in mon.state.items() if k != "queues"})
        return [frame(e) for e in emits]

    q = sdf.apply(per_queue, stateful=True)
    q.apply(lambda v: v["emits"], expand=True).to_topic(out)
    s = q.filter(lambda v: v["s"] is not None).apply(lambda v: v["s"])
    s = s.group_by(lambda v: v["structure"], name="structure")
    s.apply(per_structure, stateful=True, expand=True).to_topic(out)
    t = time.perf_counter()
    app.run(timeout=15)  # until 15 s without a new message
    print(json.dumps({"seconds": time.perf_counter() - t - 15}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
