"""The per-queue and per-structure rules run in one plain Python process, without Spark or Kafka.

This is the reference the Spark operators are tested against (same outputs,
same event_ids), and the hand-written baseline of the benchmarks: one
``QueueMonitor`` per queue manager (no shards), one per queue-sharing group for its shared queues
(``qmon.core.sharing``), and one ``StructureMonitor`` per
structure, fed records in the order the job uses: (ts, commands first, arrival), with the job's duplicate
check ahead of them (``qmon.core.dedup``: the first copy of a record in its slice of ts is kept; within one
run nothing is forgotten).

A queue-sharing group member's records and commands go to its group's shard (``qmon.core.queues.queue_sharing_group``),
one for the whole group: the group's monitor for its shared queues, each member's for its own queues, as the
job delivers them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from qmon.core.dedup import SliceIds, slice_of
from qmon.core.journals import JournalStatus
from qmon.core.mqsc import MqscError, parse_command, split_script
from qmon.core.queues import MonitorSettings, QueueMonitor
from qmon.core.queues.queue_sharing_group import QueueSharingGroupShard
from qmon.core.records import Activity, Emit
from qmon.core.structures import StructureMonitor, StructureSettings


def run_reference(
    records: Iterable[dict[str, Any]],
    settings: MonitorSettings,
    final_clock: int | None = None,
    structure_settings: StructureSettings | None = None,
) -> list[Emit]:
    """``records``: activity dicts (QueueActivity fields) and command dicts (ts, qmgr, command[, command_id]),
    in arrival order.  ``final_clock``: fire the stall timers due by then, as the job does when its
    watermark reaches that time."""
    keyed: list[tuple[int, int, int, dict[str, Any]]] = []
    for seq, rec in enumerate(records, start=1):
        keyed.append((int(rec["ts"]), 0 if "command" in rec else 1, seq, rec))
    keyed.sort(key=lambda k: k[:3])
    monitors: dict[str, QueueMonitor] = {}
    structures: dict[str, StructureMonitor] = {}
    ssettings = structure_settings or StructureSettings()
    slices: dict[int, SliceIds] = {}
    sharing = settings.sharing
    out: list[Emit] = []

    def monitor(name: str) -> QueueMonitor:
        """The monitor of a queue manager's own queues, or of a queue-sharing group's shared queues."""
        mon = monitors.get(name)
        if mon is None:
            mon = monitors[name] = QueueMonitor(name, settings)
        return mon

    def shard(qmgr: str) -> QueueMonitor | QueueSharingGroupShard:
        """What a queue manager's queue records reach: its monitor, or its queue-sharing group's shard."""
        group = sharing.group_of(qmgr)
        return monitor(qmgr) if group is None else QueueSharingGroupShard(group, monitor(group.name), monitor)

    for ts, _rank, seq, rec in keyed:
        qmgr = rec["qmgr"]
        if "journal" in rec:
            out.extend(
                monitor(qmgr).on_journal(JournalStatus.of(str(rec.get("event_id") or seq), qmgr, ts, rec["journal"]))
            )
        elif "command" in rec:
            try:
                cmd = parse_command(split_script(rec["command"])[0])
            except (MqscError, IndexError):
                continue
            command_id = str(rec.get("command_id") or seq)
            out.extend(shard(qmgr).on_command(cmd, ts, command_id, True, qmgr))
        else:
            eid = str(rec.get("event_id") or seq)
            if slices.setdefault(slice_of(ts), SliceIds()).seen((qmgr, rec["queue"], eid)):
                continue  # a duplicate
            act = Activity.of({**rec, "event_id": eid, "ts": ts}, clock=ts, seq=seq)
            out.extend(shard(qmgr).on_activity(act))
            name = rec.get("structure")
            if name:
                smon = structures.get(name)
                if smon is None:
                    smon = structures[name] = StructureMonitor(name, ssettings)
                out.extend(smon.on_activity(act))
    if final_clock is not None:
        for mon in monitors.values():
            out.extend(mon.on_clock(final_clock))
        for smon in structures.values():
            out.extend(smon.on_clock(final_clock))
    return out
