"""JSONL lines (the format of ``examples/*.jsonl``) -> the Avro values a producer sends, keyed as qmon's
producers key them, with a dead letter for each line that is a fault of the file.

Used by ``qmon produce`` (to Kafka) and ``qmon replay`` (rows shaped like Spark's Kafka source).  A line
that is not JSON, is neither activity, a command nor journal status, or lacks a required field becomes a
dead letter here: those are faults of the file, which never reach Avro.  Everything else is validated by
the query.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from qmon.connectors import avro
from qmon.connectors.schema import field_names, required_fields
from qmon.core import topics
from qmon.core.ids import dlq_event_id
from qmon.core.reasons import CODE

#: an activity line's fields, and those it must carry (all the record's required ones but event_id, which a
#: line may leave out: the loader makes one up from the file's name and the line's number)
_ACTIVITY_FIELDS = field_names("QueueActivity")
_ACTIVITY_REQUIRED = tuple(name for name in required_fields("QueueActivity") if name != "event_id")
_OPS = ("PUT", "GET", "START")


@dataclass
class Encoded:
    rows: list[tuple]
    dead: list[dict[str, Any]]


def _dead(reason: str, error: str, line_no: int, raw: bytes, ts: int, topic: str, fmt: str) -> dict[str, Any]:
    return {
        "topic": topics.DLQ,
        "event_id": dlq_event_id(topic, 0, line_no),
        "reason": CODE[reason],
        "reason_name": reason,
        "dest_topic": topic,
        "format": fmt,
        "put_appl_name": "qmon",
        "put_time": ts,
        "partition": 0,
        "offset": line_no,
        "error": f"line {line_no}: {error}",
        "key": None,
        "value": base64.b64encode(raw).decode(),
    }


def _trace_row(obj: dict[str, Any], line_no: int, raw: bytes, last_ts: int) -> tuple | dict[str, Any]:
    """``{"mq_trace": base64[, "partition": P, "offset": O]}`` -> a trace topic row (the message body's bytes,
    at P/O: the coordinates its ids derive from; default 0 and the line number).  Its time on the replay's
    clock is its newest call's (``qmon.core.pcf``), or the previous line's."""
    import base64
    import binascii

    from qmon.core import pcf

    fmt = "MQ activity trace (PCF)"
    try:
        body = base64.b64decode(str(obj["mq_trace"]), validate=True)
    except (binascii.Error, ValueError) as exc:
        return _dead(
            "QMON_INVALID_FIELD", f"mq_trace is not base64: {exc}", line_no, raw, last_ts, topics.MQ_TRACE, fmt
        )
    partition, offset = obj.get("partition", 0), obj.get("offset", line_no)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (partition, offset)):
        return _dead(
            "QMON_INVALID_FIELD",
            "partition and offset must be whole numbers",
            line_no,
            raw,
            last_ts,
            topics.MQ_TRACE,
            fmt,
        )
    calls = pcf.decode(body, partition=partition, offset=offset).activity
    ts = max((c["ts"] for c in calls), default=last_ts)
    return (topics.MQ_TRACE, partition, offset, None, body, ts)  # no key, as the Kafka Connect MQ source


def encode_lines(lines: Iterable[str], source: str = "input") -> Encoded:
    """JSONL lines -> Kafka-shaped rows (or dead letters for faults of the file)."""
    rows: list[tuple] = []
    dead: list[dict[str, Any]] = []
    last_ts = 0
    for line_no, line in enumerate(lines, start=1):
        raw = line.rstrip("\n").encode()
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            dead.append(
                _dead(
                    "QMON_INVALID_JSON",
                    f"not valid JSON: {exc.msg} at column {exc.colno}",
                    line_no,
                    raw,
                    last_ts,
                    topics.ACTIVITY,
                    "QueueActivity",
                )
            )
            continue
        if not isinstance(obj, dict):
            dead.append(
                _dead(
                    "QMON_INVALID_JSON",
                    "a line must be a JSON object",
                    line_no,
                    raw,
                    last_ts,
                    topics.ACTIVITY,
                    "QueueActivity",
                )
            )
            continue
        ts = obj.get("ts")
        if isinstance(ts, int) and not isinstance(ts, bool):
            last_ts = ts
        if "mq_trace" in obj:  # an MQ activity trace message, as the Kafka Connect MQ source copies it
            trace = _trace_row(obj, line_no, raw, last_ts)
            if isinstance(trace, dict):
                dead.append(trace)
            else:
                rows.append(trace)
                last_ts = max(last_ts, trace[5])
            continue
        if "command" in obj:
            topic, fmt = topics.CONTROL, "ControlCommand"
            missing = [k for k in ("ts", "qmgr", "command") if obj.get(k) is None]
            if missing:
                dead.append(
                    _dead(
                        "QMON_MISSING_FIELD", f"a command needs {', '.join(missing)}", line_no, raw, last_ts, topic, fmt
                    )
                )
                continue
            record = {
                "command_id": str(obj.get("command_id") or f"{source}:{line_no}"),
                "ts": obj["ts"],
                "qmgr": obj["qmgr"],
                "text": obj["command"],
                "user": obj.get("user"),
            }
            key = str(obj["qmgr"])
        elif "journal" in obj:
            topic, fmt = topics.JOURNAL, "JournalStatus"
            j = obj["journal"]
            missing = [k for k in ("ts", "qmgr") if obj.get(k) is None]
            if not isinstance(j, dict):
                missing.append("journal (an object)")
            else:
                missing += [
                    f"journal.{k}"
                    for k in ("library", "attached", "size_kb", "threshold_kb", "receivers")
                    if j.get(k) is None
                ]
            if missing:
                dead.append(
                    _dead(
                        "QMON_MISSING_FIELD",
                        f"journal status needs {', '.join(missing)}",
                        line_no,
                        raw,
                        last_ts,
                        topic,
                        fmt,
                    )
                )
                continue
            record = {
                "event_id": str(obj.get("event_id") or f"{source}:{line_no}"),
                "qmgr": obj["qmgr"],
                "ts": obj["ts"],
                **{k: j[k] for k in ("library", "attached", "size_kb", "threshold_kb", "receivers")},
            }
            key = f"{obj['qmgr']}/{j['library']}"
        elif "op" in obj or "queue" in obj:
            topic, fmt = topics.ACTIVITY, "QueueActivity"
            missing = [k for k in _ACTIVITY_REQUIRED if obj.get(k) is None]
            if missing:
                dead.append(
                    _dead(
                        "QMON_MISSING_FIELD",
                        f"required field(s) missing: {', '.join(missing)}",
                        line_no,
                        raw,
                        last_ts,
                        topic,
                        fmt,
                    )
                )
                continue
            if obj["op"] not in _OPS:
                dead.append(
                    _dead(
                        "QMON_UNKNOWN_OP",
                        f"op {obj['op']!r} is not PUT, GET or START",
                        line_no,
                        raw,
                        last_ts,
                        topic,
                        fmt,
                    )
                )
                continue
            record = {k: obj.get(k) for k in _ACTIVITY_FIELDS}
            record["event_id"] = str(obj.get("event_id") or f"{source}:{line_no}")
            key = f"{obj['qmgr']}/{obj['queue']}"
        else:
            dead.append(
                _dead(
                    "QMON_UNKNOWN_RECORD",
                    "neither activity (op, queue), a command nor journal status",
                    line_no,
                    raw,
                    last_ts,
                    topics.ACTIVITY,
                    "QueueActivity",
                )
            )
            continue
        try:
            value = avro.encode(fmt, record)
        except (TypeError, ValueError, OverflowError) as exc:
            dead.append(
                _dead("QMON_INVALID_FIELD", f"a field has the wrong type: {exc}", line_no, raw, last_ts, topic, fmt)
            )
            continue
        rows.append((topic, 0, line_no, key.encode(), value, int(obj["ts"])))
    return Encoded(rows, dead)
