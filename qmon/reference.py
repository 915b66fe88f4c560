"""The per-queue rules run in one plain Python process, without Spark or Kafka.

This is the reference the Spark operator is tested against (same outputs,
same event_ids), and the hand-written baseline of the benchmarks: one
``QueueMonitor`` per queue manager (no shards), fed each queue manager's
records in the order the job uses: (ts, commands first, arrival).
"""

from __future__ import annotations

from typing import Any, Iterable

from qmon.mqsc import MqscError, parse_command, split_script
from qmon.queues import Activity, Emit, MonitorSettings, QueueMonitor


def run_reference(records: Iterable[dict[str, Any]], settings: MonitorSettings,
                  final_clock: int | None = None) -> list[Emit]:
    """``records``: activity dicts (QueueActivity fields) and command dicts (ts, qmgr, command[, command_id]),
    in arrival order.  ``final_clock``: fire the stall timers due by then, as the job does when its
    watermark reaches that time."""
    keyed: list[tuple[int, int, int, dict[str, Any]]] = []
    for seq, rec in enumerate(records, start=1):
        keyed.append((int(rec["ts"]), 0 if "command" in rec else 1, seq, rec))
    keyed.sort(key=lambda k: k[:3])
    monitors: dict[str, QueueMonitor] = {}
    out: list[Emit] = []
    for ts, _rank, seq, rec in keyed:
        qmgr = rec["qmgr"]
        mon = monitors.get(qmgr)
        if mon is None:
            mon = monitors[qmgr] = QueueMonitor(qmgr, settings)
        if "command" in rec:
            try:
                cmd = parse_command(split_script(rec["command"])[0])
            except (MqscError, IndexError):
                continue
            out.extend(mon.on_command(cmd, ts, str(rec.get("command_id") or seq), True))
        else:
            out.extend(mon.on_activity(Activity(
                str(rec.get("event_id") or seq), qmgr, rec["queue"], rec["op"], ts, rec.get("depth_after"),
                rec.get("msg_bytes"), rec.get("structure"), rec.get("reason"), None, seq)))
    if final_clock is not None:
        for mon in monitors.values():
            out.extend(mon.on_clock(final_clock))
    return out
