"""The operator's queue unit (unit Q): queue-manager shards kept under one key, each shard of a queue manager's queues
(or of a queue-sharing group's) its own monitor over its own stored value."""

from __future__ import annotations

import itertools
import json
from typing import Any

import numpy as np
import pandas as pd

from qmon.core.journals import JournalStatus
from qmon.core.mqsc import MqscError, parse_command, split_script
from qmon.core.queues import MonitorSettings, QueueMonitor, command_reply
from qmon.core.queues.queue_sharing_group import QueueSharingGroupShard
from qmon.core.records import Emit
from qmon.core.sharing import QueueSharingGroup
from qmon.streaming import state as stored
from qmon.streaming.rows import Kind
from qmon.streaming.unit_slot import UnitSlot
from qmon.streaming.unit_step import ACTIVITY_COLUMN, UnitStep, activities, apply_activities, by_shard, columns

#: the routed columns a queue unit reads: an activity's (``ACTIVITY_COLUMN``), a command's or journal record's
QUEUE_COLUMNS = [*ACTIVITY_COLUMN.values(), "kind", "payload", "reply"]
#: a command's or journal record's fields, in the order ``apply`` reads them
OTHER_COLUMNS = ("kind", "event_id", "ts", "payload", "reply", "src_offset")


class QueueUnit(UnitStep):
    """Queue-manager shards, of any queue managers, under one key (``route`` puts each shard in one unit): each
    shard is ``qmon.core.queues`` (with interest and journals) over its own stored value, decoded only when
    the batch has rows for it or one of its deadlines came (``stored.QueueUnitState``)."""

    def __init__(self, settings: MonitorSettings, ttl_ms: int):
        super().__init__(settings)
        self.ttl_ms = ttl_ms

    def monitor(self, name: str, state: dict[str, Any] | None) -> QueueMonitor:
        return QueueMonitor(name, self.settings, state, stored.load_queue)

    def due(self, mon: QueueMonitor) -> int | None:
        return mon.next_stall_clock()

    def expire_idle_queues(self, mon: QueueMonitor, now_ts: int | None) -> None:
        if now_ts is not None and self.ttl_ms > 0:
            mon.expire(now_ts, self.ttl_ms)

    def _shard(self, group: stored.QueueUnitState, qmgr: str, shard: int) -> QueueMonitor:
        blob = group["shards"].get(qmgr, {}).get(str(shard))
        return self.monitor(qmgr, stored.loads(blob) if blob is not None else None)

    def _put(self, group: stored.QueueUnitState, qmgr: str, shard: int, mon: QueueMonitor) -> None:
        mon.pack()
        group["shards"].setdefault(qmgr, {})[str(shard)] = stored.dumps(mon.state)
        at = self.deadline(mon)
        if at is not None:
            group["due"].setdefault(qmgr, {})[str(shard)] = at
        elif str(shard) in group["due"].get(qmgr, {}):
            del group["due"][qmgr][str(shard)]
            if not group["due"][qmgr]:
                del group["due"][qmgr]

    def _ticks(self, group: stored.QueueUnitState, watermark: int, skip: set[tuple[str, int]]) -> list[list[Any]]:
        """The shards (not in ``skip``) whose deadline the watermark has reached: their timers fire."""
        due = sorted((q, int(s)) for q, ats in group["due"].items() for s, at in ats.items() if at <= watermark)
        out = []
        for qmgr, shard in due:
            if (qmgr, shard) not in skip:
                mon = self._shard(group, qmgr, shard)
                out.append(self.tick(mon, watermark))
                self._put(group, qmgr, shard, mon)
        return out

    def _store(self, group: stored.QueueUnitState, slot: UnitSlot) -> None:
        dues = [at for ats in group["due"].values() for at in ats.values()]
        slot.store(stored.dumps(group), min(dues) if dues else None)

    def apply(self, qmgr: str, mon: QueueMonitor, pdf: pd.DataFrame) -> tuple[list[tuple[int, int, Emit]], int | None]:
        """The rows in order, as runs of one kind: puts and gets as ``Activity`` records, a command or journal
        record parsed, each to the rules in turn."""
        emits: list[tuple[int, int, Emit]] = []
        cols = columns(pdf, QUEUE_COLUMNS)
        kinds = pdf["kind"].values
        cuts = [0, *(np.flatnonzero(kinds[1:] != kinds[:-1]) + 1).tolist(), len(kinds)]
        for a, b in itertools.pairwise(cuts):
            if kinds[a] == Kind.ACTIVITY:
                apply_activities(mon, activities(cols, a, b, qmgr=qmgr), emits)
                continue
            for k, i, t, text, r, n in zip(*(cols[c][a:b] for c in OTHER_COLUMNS), strict=True):
                if k == Kind.JOURNAL:
                    out = mon.on_journal(JournalStatus.of(i, qmgr, t, json.loads(text)))
                else:
                    out = self._command(mon, text, t, i, bool(r), qmgr)
                emits.extend((n, t, e) for e in out)
        ts_all = cols["ts"]
        return emits, max(ts_all) if len(ts_all) else None

    @staticmethod
    def _command(
        mon: QueueMonitor | QueueSharingGroupShard, text: str, ts: int, command_id: str, reply: bool, member: str
    ) -> list[Emit]:
        try:
            cmd = parse_command(split_script(text)[0])
        except (MqscError, IndexError) as exc:  # validated upstream; kept safe all the same
            return [command_reply(command_id, member, ts, False, f"MQSC error: {exc}")] if reply else []
        if cmd.scope == "definition":  # every shard has a copy, and the queue's own shard replies
            return mon.on_command(cmd, ts, command_id, reply, member, own=reply)
        return mon.on_command(cmd, ts, command_id, reply, member)

    def batch(
        self, name: str, pdf: pd.DataFrame, slot: UnitSlot, watermark: int | None, flush: bool = False
    ) -> list[list[Any]]:
        group = stored.load_queue_unit(slot.load())
        out: list[list[Any]] = []
        touched: set[tuple[str, int]] = set()
        for (owner, shard), rows in by_shard(pdf):
            qsg = self.settings.sharing.group_named(owner)
            if qsg is not None:
                out.extend(self._group_shard(group, qsg, shard, rows, watermark, flush, touched))
                continue
            mon = self._shard(group, owner, shard)
            out.append(self.step(owner, mon, rows, watermark, flush))
            self._put(group, owner, shard, mon)
            touched.add((owner, shard))
        if watermark is not None:  # a group with rows is not timed out: the other shards' deadlines, now
            out.extend(self._ticks(group, watermark, touched))
        self._store(group, slot)
        return out

    def _group_shard(
        self,
        group: stored.QueueUnitState,
        qsg: QueueSharingGroup,
        shard: int,
        pdf: pd.DataFrame,
        watermark: int | None,
        flush: bool,
        touched: set[tuple[str, int]],
    ) -> list[list[Any]]:
        """A queue-sharing group's shard (``qmon.core.queues.queue_sharing_group``): its members' rows, each applied
        to the group's monitor or to its member's, both stored in the group's key under their own names."""
        loaded: dict[str, tuple[QueueMonitor, bool]] = {}

        def monitor(name: str) -> QueueMonitor:
            if name not in loaded:
                blob = group["shards"].get(name, {}).get(str(shard))
                loaded[name] = (self._shard(group, name, shard), blob is not None)
            return loaded[name][0]

        monitors = QueueSharingGroupShard(qsg, monitor(qsg.name), monitor)
        emits: list[tuple[int, int, Emit]] = []
        newest = None
        cols = columns(pdf, QUEUE_COLUMNS)
        recs = activities(cols, 0, len(pdf))  # (each of a member's records: ``qmgr`` names the member)
        for rec, kind, payload, reply in zip(recs, *(cols[c] for c in ("kind", "payload", "reply")), strict=True):
            if kind == Kind.ACTIVITY:
                out = monitors.on_activity(rec)
            else:  # (a command: its event_id is its command_id)
                out = self._command(monitors, payload, rec.ts, rec.event_id, bool(reply), rec.qmgr)
            emits.extend((rec.seq, rec.ts, e) for e in out)
            newest = rec.ts if newest is None or rec.ts > newest else newest
        result = [emits]
        for name, (mon, existed) in sorted(loaded.items()):
            if existed or _holds_anything(mon):  # (not a member's monitor only looked into)
                result.append(self.settle(mon, pdf, newest, watermark, flush))
                self._put(group, name, shard, mon)
                touched.add((name, shard))
        return result

    def fire(self, name: str, slot: UnitSlot, watermark: int) -> list[list[Any]]:
        group = stored.load_queue_unit(slot.load())
        out = self._ticks(group, watermark, set())
        self._store(group, slot)
        return out


def _holds_anything(mon: QueueMonitor) -> bool:
    """Whether a queue monitor holds more than a new one: queues, settings, registrations or journals."""
    return bool(mon.queues) or any(mon.state.get(k) for k in ("perfmev", "member_perfmev", "interest", "journals"))
