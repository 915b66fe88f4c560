"""A streaming query's progress report (Spark's ``StreamingQueryProgress`` as JSON) -> a ``QueryProgress``
record, the job's own health for ``qmon metrics``.  Pure: plain dicts in and out.

Per input topic, the records the batch read (each of the job's Kafka sources subscribes to one topic);
per input partition, where the batch ended and the partition's latest offset when the batch was planned
(the lag is their difference).  The state store's rows and memory are summed over the query's stateful operators;
the records applied late come from the query's observed metrics (``qmon_order``).
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any

from qmon.core.ids import event_id
from qmon.core.timeconv import to_ms


def _offsets(value: Any) -> dict[str, dict[str, int]]:
    """A source's offsets: Spark gives the Kafka source's as a JSON string ``{"topic": {"0": 12, ...}}``."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def progress_record(p: dict[str, Any]) -> dict[str, Any]:
    query = p.get("name") or p.get("id") or "qmon"
    batch = int(p.get("batchId", -1))
    started = to_ms(_dt.datetime.fromisoformat(str(p["timestamp"]).replace("Z", "+00:00")))
    inputs, per_topic = [], []
    for source in p.get("sources") or []:
        end, latest = _offsets(source.get("endOffset")), _offsets(source.get("latestOffset"))
        names = sorted(t for t, parts in end.items() if isinstance(parts, dict))
        if len(names) == 1:
            per_topic.append({"topic": names[0], "rows": int(source.get("numInputRows", 0))})
        for topic in names:
            for part, offset in sorted(end[topic].items(), key=lambda kv: int(kv[0])):
                inputs.append(
                    {
                        "topic": topic,
                        "partition": int(part),
                        "end_offset": int(offset),
                        "latest_offset": latest.get(topic, {}).get(part),
                    }
                )
    ops = p.get("stateOperators") or []
    return {
        "event_id": event_id("progress", p.get("runId"), batch),
        "query": str(query),
        "batch_id": batch,
        "ts": started,
        "duration_ms": int((p.get("durationMs") or {}).get("triggerExecution", 0)),
        "input_rows": int(p.get("numInputRows", 0)),
        "input_topics": per_topic,
        "inputs": inputs,
        "state_rows": sum(int(o.get("numRowsTotal", 0)) for o in ops) if ops else None,
        "state_memory_bytes": sum(int(o.get("memoryUsedBytes", 0)) for o in ops) if ops else None,
        "late_records": _late(p),
    }


def _late(p: dict[str, Any]) -> int | None:
    observed = (p.get("observedMetrics") or {}).get("qmon_order")
    value = observed.get("late_records") if isinstance(observed, dict) else None
    return int(value) if value is not None else None
