"""The same rules as a Quix Streams application: the Python stream processor a user would most likely
pick instead of qmon.  Run by benchmarks/throughput.py in its own virtualenv (Quix Streams pins an
older confluent-kafka than qmon):

    python -m venv .venv-quix && .venv-quix/bin/pip install quixstreams fastavro pydantic pyyaml
    python benchmarks/throughput.py --quix-python .venv-quix/bin/python

Per-queue state is keyed by the message key (qmgr/queue), per-structure state after a ``group_by``
on the structure (a repartition topic), both in Quix's RocksDB state (without changelog topics: see below).  Output
values are ``<logical topic>\\0<Avro record>`` on one topic, so the benchmark can compare event_ids.

Status: it runs, but it is not yet a fair competitor: a structure's whole state (every queue of the
structure) is read and written as one value per message, which is quadratic; on 100,000 records it
had not finished after 10 minutes.  A fair version keeps the structure's queues under separate state
keys; until then the benchmark reports no Quix figure unless asked with --quix-python.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from connectors import avro  # noqa: E402
from qmon.config import Config  # noqa: E402
from qmon.queues import Activity, QueueMonitor  # noqa: E402
from qmon.structures import Op, StructureMonitor  # noqa: E402


def main() -> int:
    bootstrap, src_name, out_name, n, config_path = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    from quixstreams import Application

    config = Config.model_validate(json.loads(Path(config_path).read_text()))
    settings, ssettings = config.monitor_settings(), config.structure_settings()
    app = Application(broker_address=bootstrap, consumer_group=f"quix-{uuid.uuid4().hex[:8]}",
                      auto_offset_reset="earliest", loglevel="WARNING", state_dir=tempfile.mkdtemp(),
                      # a structure's state (every queue of it) outgrows Kafka's 1 MB message limit as a
                      # changelog record, so state is local RocksDB only: cheaper for Quix than for qmon
                      use_changelog_topics=False,
                      consumer_extra_config={"fetch.max.bytes": 50_000_000})
    src = app.topic(src_name, value_deserializer="bytes", key_deserializer="bytes")
    out = app.topic(out_name, value_serializer="bytes", key_serializer="bytes")
    sdf = app.dataframe(src)

    def frame(e) -> bytes:
        return e.topic.encode() + b"\0" + avro.encode({"qmon.events.performance": "PerformanceEvent",
                                                       "qmon.events.structure": "StructureAlert",
                                                       "qmon.events.overflow": "OverflowCandidates",
                                                       "qmon.events.notify": "WorkAvailable"}[e.topic], e.record)

    def per_queue(value: bytes, state) -> dict:
        r = avro.decode("QueueActivity", value)
        ts = r["ts"] if isinstance(r["ts"], int) else round(r["ts"].timestamp() * 1000)
        mon = QueueMonitor(r["qmgr"], settings, state.get("q"))
        emits = mon.on_activity(Activity(r["event_id"], r["qmgr"], r["queue"], r["op"], ts, r["depth_after"],
                                         r["msg_bytes"], r["structure"], r["reason"], None, None))
        state.set("q", mon.state)
        s = None
        if r["structure"]:
            s = {"structure": r["structure"], "event_id": r["event_id"], "qmgr": r["qmgr"], "queue": r["queue"],
                 "op": r["op"], "ts": ts, "msg_bytes": r["msg_bytes"], "reason": r["reason"]}
        return {"emits": [frame(e) for e in emits], "s": s}

    def per_structure(v: dict, state) -> list:
        mon = StructureMonitor(v["structure"], ssettings, state.get("s"))
        emits = mon.on_activity(Op(v["event_id"], v["qmgr"], v["queue"], v["op"], v["ts"], v["msg_bytes"],
                                   v["reason"], None))
        state.set("s", mon.state)
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
