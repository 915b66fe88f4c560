"""One human-readable line per output record (``qmon tail``, ``qmon demo``). Pure."""

from __future__ import annotations

import datetime as dt
from typing import Any

from qmon.core import topics
from qmon.core.timeconv import from_ms

_COLOURS = {"CRITICAL": "\033[31;1m", "WARNING": "\033[33m", "INFO": "\033[36m", "OK": "\033[32m", "ERROR": "\033[31m"}
_RESET = "\033[0m"


def _time(ms: Any) -> str:
    if isinstance(ms, dt.datetime):
        return ms.strftime("%H:%M:%S.%f")[:-3]
    if isinstance(ms, int):
        return from_ms(ms).strftime("%H:%M:%S.%f")[:-3]
    return "--:--:--"


def severity(topic: str, r: dict[str, Any]) -> str:
    if topic == topics.PERFORMANCE:
        return "OK" if r.get("type") in ("QSVCINT_OK", "QDEPTH_LOW") else "WARNING"
    if topic == topics.ALERTS:
        return "OK" if r.get("state") == "RESOLVED" else str(r.get("severity", "INFO"))
    if topic == topics.REPLIES:
        return "OK" if r.get("ok") else "ERROR"
    if topic == topics.DLQ:
        return "ERROR"
    return "INFO"


def _queue(r: dict[str, Any], queue: str) -> str:
    """A record's queue as a line shows it: ``QM1/Q``; a shared queue's ``QSG1/Q (QM2)``, its group and the member
    that raised the record."""
    if r.get("qsg"):
        return f"{r['qsg']}/{queue} ({r['qmgr']})"
    return f"{r['qmgr']}/{queue}"


def line(topic: str, r: dict[str, Any], colour: bool = False) -> str:
    sev = severity(topic, r)
    if topic == topics.PERFORMANCE:
        text = (
            f"{r['type']:<13} {_queue(r, r['queue'])} reason {r['reason_code']} {r['reason']} "
            f"enq={r['msg_enq_count']} deq={r['msg_deq_count']} high={r['high_q_depth']} "
            f"since_reset={r['time_since_reset']}s"
        )
        if r.get("service_time_ms") is not None:
            text += f" service={r['service_time_ms']}ms/{r['service_interval_ms']}ms"
    elif topic == topics.ALERTS:
        subject = r["subject"] if r["subject_kind"] == "STRUCTURE" or not r.get("qmgr") else _queue(r, r["subject"])
        text = f"{r['type']} {r['state']} {subject}"
        if r.get("usage_after_pct") is not None:
            text += f" usage {r.get('usage_before_pct') or 0:.1f}%->{r['usage_after_pct']:.1f}%"
        if r.get("message"):
            text += f" {r['message']}"
        text += f" | {r['summary']}"
    elif topic == topics.OVERFLOW:
        offered = ", ".join(
            f"{c['queue']}({c['elements']}):{c['decision']}"
            + (
                " (no room in the overflow structure)"
                if c["decision"] == "approve" and not c.get("in_overflow", True)
                else ""
            )
            for c in r.get("candidates", [])
        )
        text = (
            f"OVERFLOW_CANDIDATES {r['structure']} usage {r['usage_pct']:.1f}% target {r['target_pct']:.1f}% "
            f"-> {r['usage_after_pct']:.1f}% [{offered}]"
        )
    elif topic == topics.NOTIFY:
        text = f"WORK_AVAILABLE {r['qmgr']}/{r['queue']} client={r['client']} depth={r['depth']}"
    elif topic == topics.REPLIES:
        text = f"REPLY {'ok' if r.get('ok') else 'FAILED'} {r.get('message')}"
    elif topic == topics.DLQ:
        text = (
            f"DEAD_LETTER {r.get('reason_name')} ({r.get('reason')}) from {r.get('dest_topic')} "
            f"partition {r.get('partition')} offset {r.get('offset')}: {r.get('error')}"
        )
    elif topic == topics.SNAPSHOT and r.get("structure"):
        used, cap = r.get("used_elements") or 0, r.get("capacity_elements") or 0
        text = f"SNAPSHOT {r['structure']} {used}/{cap} elements ({100 * used / cap if cap else 0:.1f}%)"
        if r.get("overflow_structure"):
            text += f", {r['overflow_structure']} {r.get('overflow_used_elements') or 0}/{r.get('overflow_capacity_elements')}"
        if r.get("overflow_mode"):
            text += f", OVERFLOW MODE ({r.get('queues_in_overflow')} queues)"
        for field, what in (("ovflwmax_eta", "OVFLWMAX"), ("full_eta", "full"), ("overflow_full_eta", "overflow full")):
            if r.get(field) is not None:
                text += f", {what} at {_time(r[field])}"
    elif topic == topics.SNAPSHOT:
        depths = " ".join(f"{q['queue']}={q['depth']}" for q in r.get("queues", [])[:12])
        more = len(r.get("queues", [])) - 12
        text = f"SNAPSHOT {r.get('qmgr')} {depths}{f' (+{more} queues)' if more > 0 else ''}"
        if r.get("forgotten"):
            text += f" forgotten: {', '.join(r['forgotten'])}"
    elif topic == topics.PROGRESS:
        lag = sum(max(0, (i.get("latest_offset") or 0) - i["end_offset"]) for i in r.get("inputs", []))
        text = f"PROGRESS batch {r['batch_id']} {r['input_rows']} records in {r['duration_ms']} ms, lag {lag}"
    else:
        text = str(r)
    out = f"{_time(r.get('ts') or r.get('put_time'))} {sev:<8} {text}"
    if colour and sev in _COLOURS:
        out = f"{_COLOURS[sev]}{out}{_RESET}"
    return out
