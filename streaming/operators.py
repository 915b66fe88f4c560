"""The stateful operator: load state, call the pure rules, reconcile the unit's timer, save state.

``monitor_groups`` (for ``applyInPandasWithState``) is keyed by (unit, unit_name, bucket) and serves two
kinds of unit:

* ``QueueUnit`` (unit Q): a group of queue-manager shards, each shard of a queue manager's queues (or of a
  queue-sharing group's shared queues, ``qmon.core.sharing``) its own monitor (see ``qmon.core.queues``) over its
  own stored value (``qmon.streaming.state.ShardGroup``);
* ``StructureUnit`` (unit S): one CF structure (see ``qmon.core.structures``).

One operator for both, so the input is read and shuffled once.  A unit's whole state is one value (its
plain-data state, versioned by the rules and stored as MessagePack: ``qmon.streaming.state``) in Spark's
``GroupState``; the rows it receives and returns are declared once in ``qmon.streaming.rows``.

Event-time timeout (Spark's, not MQ's service timer): at most one per unit, at the arrival-clock time of its
earliest deadline: a watched queue that would stall or a snapshot due (Q: the earliest of its shards'), the
next overflow scan (S).  The watermark runs on the
broker's append time (``clock``), which only moves forward, so no input record is ever behind it and
dropped.  Spark times a group out when the watermark passes its timeout; a deadline the watermark has
already reached when a batch's rows have been applied is run at once, in the same call (Spark refuses a
timeout behind the watermark, and a group with rows is not timed out in that batch).

Why ``applyInPandasWithState`` and not ``transformWithStateInPandas``: it hands each group a zero-copy Arrow
slice with its state in the same stream, where the other regroups every row in Python and makes socket round
trips to a state server per key.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator
from itertools import islice, repeat
from typing import Any

import msgpack
import numpy as np
import pandas as pd
from pyspark.sql.streaming.state import GroupState

from qmon.connectors import avro
from qmon.core import topics
from qmon.core.journals import JournalStatus
from qmon.core.mqsc import MqscError, parse_command, split_script
from qmon.core.queues import MonitorSettings, QueueMonitor, command_reply
from qmon.core.queues.queue_sharing_group import QueueSharingGroupShard
from qmon.core.records import Activity, Emit
from qmon.core.sharing import QueueSharingGroup
from qmon.core.structures import StructureMonitor, StructureSettings
from qmon.streaming import state as stored
from qmon.streaming import state_0_4
from qmon.streaming.event_order import Held
from qmon.streaming.rows import LATE, OUTPUT_COLUMNS, Kind, Unit
from qmon.streaming.worker import freeze_imports


def _opt_int(values: list[Any]) -> list[int | None]:
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else int(v) for v in values]


def _opt_str(values: list[Any]) -> list[str | None]:
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in values]


#: records made into ``Activity`` objects at a time (``_apply_activities``): bounds the objects held at once
CHUNK = 10_000


def _activities(*fields: Any) -> Iterator[Activity]:
    """Activity records from their fields' columns, in ``Activity``'s order (``_make``: no keyword handling,
    which calling the class would do for every record)."""
    return map(Activity._make, zip(*fields, strict=False))  # (some fields are repeat(): endless)


def _apply_activities(mon: QueueMonitor | StructureMonitor, recs: Iterator[Activity], emits: list[Any]) -> None:
    """The rules over puts and gets (nothing else between them), a chunk of records at a time
    (``on_activities``: the common case without the rules' checks)."""
    while chunk := list(islice(recs, CHUNK)):
        for rec, out in mon.on_activities(chunk):
            emits.extend((rec.seq, rec.ts, e) for e in out)


def encode_emits(monitors: list[list[tuple[int, int, Emit]]]) -> pd.DataFrame:
    """Each monitor's (order_seq, order_ts, Emit) -> the operator's output rows, Avro-encoded (``order_idx``:
    the output's place among its monitor's)."""
    rows = []
    for emits in monitors:
        for idx, (seq, ts, e) in enumerate(emits):
            value = avro.encode(topics.RECORD_OF[e.topic], e.record)
            rows.append((e.topic, e.key, value, int(e.record.get("ts") or ts), seq, idx))
    return pd.DataFrame(rows, columns=OUTPUT_COLUMNS)


def owners(pdf: pd.DataFrame) -> np.ndarray:
    """Each queue unit row's shard owner: its queue-sharing group (``qsg``: a shared queue's row) or its queue
    manager."""
    qmgrs = pdf["qmgr"].values
    if "qsg" not in pdf.columns:
        return qmgrs
    groups = pdf["qsg"].values
    shared = pd.notna(groups)
    return np.where(shared, groups, qmgrs) if shared.any() else qmgrs


def by_shard(pdf: pd.DataFrame) -> Iterator[tuple[tuple[str, int], pd.DataFrame]]:
    """A queue unit's rows, by (queue manager or queue-sharing group, shard), each in the order given.  Rows sorted
    by shard first (``sorted_input(..., shards=True)``) are cut into slices, which share the frame's memory;
    otherwise each shard's rows are copied out."""
    names, shards = owners(pdf), pdf["shard"].values
    change = (names[1:] != names[:-1]) | (shards[1:] != shards[:-1])
    bounds = [0, *(np.flatnonzero(change) + 1).tolist(), len(pdf)]
    keys = [(names[a], int(shards[a])) for a in bounds[:-1]]
    if len(set(keys)) == len(keys):  # each shard's rows together
        for key, a, b in zip(keys, bounds[:-1], bounds[1:], strict=True):
            yield key, pdf.iloc[a:b]
        return
    grouped = pd.DataFrame({"owner": names, "shard": shards}).groupby(["owner", "shard"], sort=False)
    for (name, shard), positions in sorted(grouped.indices.items()):
        yield (name, int(shard)), pdf.take(positions)


def _numpy(col: pd.Series) -> bool:
    """A column held as a plain numpy array (not an extension array: nullable integers, time zones, ...)."""
    return isinstance(col.dtype, np.dtype)


def _joined(frames: Iterator[pd.DataFrame]) -> pd.DataFrame:
    """Arrow batches of one key as one frame, column by column.

    ``pd.concat`` of frames checks, for every column that is all null in one frame, every value of it
    (whether it may be reindexed as NA): most of the operator's columns are null for most rows, so for a
    big batch (many Arrow batches of a key) that check is a large part of the operator's Python time.  Columns
    are concatenated as numpy arrays, with numpy's promotion (int64 beside float64, the same column with
    nulls, gives float64, as ``pd.concat`` does); other columns by pandas.

    Memory: each batch's columns are copied out and the batch dropped as it arrives (PySpark's frames keep
    same-typed columns in one block, so a column cannot be freed alone), and each column's parts are
    dropped once joined: the key's rows are held about once, not twice."""
    parts: dict[str, list[Any]] = {}
    for f in frames:
        for name in f.columns:
            col = f[name]
            parts.setdefault(name, []).append(col.to_numpy(copy=True) if _numpy(col) else col.copy())
            del col
        del f  # (before PySpark builds the next batch)
    columns: dict[str, Any] = {}
    for name in list(parts):
        chunks = parts.pop(name)
        if all(isinstance(c, np.ndarray) for c in chunks):
            columns[name] = np.concatenate(chunks)
        else:
            columns[name] = pd.concat([pd.Series(c) for c in chunks], ignore_index=True)
        del chunks
    return pd.DataFrame(columns, copy=False)  # (a copy would consolidate the object columns, row by row)


def sorted_input(rows: Iterator[pd.DataFrame], shards: bool = False) -> pd.DataFrame:
    """All of a key's rows in (ts, rank, arrival) order: commands before activity at equal ts.  With
    ``shards`` (a queue unit), by (queue manager, shard) first, so that each shard's rows are one slice."""
    rows = iter(rows)
    first = next(rows)
    second = next(rows, None)
    # one batch (a key's rows of a small batch): used as it is; several: joined column by column
    if second is None:
        pdf = first
    else:
        batches = itertools.chain((first, second), rows)
        del first, second
        pdf = _joined(batches)
    # numpy's stable lexsort on the raw columns (the last key is the primary): no index or dtype handling,
    # which pandas' sort_values does on every call
    keys = [pdf[c].values for c in ("src_offset", "src_partition", "rank", "ts")]
    if shards:  # (rows passed through have neither: they sort first, and are taken out by ``rows``)
        keys += [pdf["shard"].astype("float64").fillna(-1).values, pd.factorize(owners(pdf), sort=True)[0]]
    order = np.lexsort(keys)
    del keys
    if (order[1:] > order[:-1]).all():  # already in order (a batch of one partition's records usually is)
        return pdf
    # column by column, each unsorted column dropped once its sorted copy exists (``take`` would hold both,
    # and so does this for a single batch's columns that share a block)
    columns: dict[str, Any] = {name: pdf[name] for name in pdf.columns}
    del pdf
    for name in list(columns):
        col = columns[name]
        columns[name] = col.to_numpy()[order] if _numpy(col) else col.take(order).reset_index(drop=True)
        del col
    return pd.DataFrame(columns, copy=False)


def passed_through(pdf: pd.DataFrame) -> pd.DataFrame:
    """Rows of kind PASS (dead letters, invalid-command replies, encoded upstream) as output rows."""
    return pd.DataFrame(
        {
            "topic": pdf["out_topic"].values,
            "key": pdf["out_key"].values,
            "value": pdf["out_value"].values,
            "order_ts": pdf["ts"].astype("int64").values,
            "order_seq": pdf["src_offset"].astype("int64").values,
            "order_idx": pdf["rank"].astype("int32").values,
        }
    )


class GroupSlot:
    """An ``applyInPandasWithState`` group's state: the unit's value, the records it holds for event-time
    order (``held``, ``streaming.event_order``), and the group's event-time timeout; written once, by
    ``commit``, at the end of a call.

    Spark times a group out when the watermark passes the timeout (strictly), so a deadline ``at`` (due
    when the watermark reaches it) becomes the timeout ``at - 1``; the timeout is set again in every call
    (a call that sets none leaves the group without one).  A group holding records is timed out at the next
    batch whose watermark has moved: a batch without data, in which every partition is at its end.

    A value qmon 0.4 stored is migrated when it is loaded (``streaming.state_0_4``), and stored as this qmon's
    at the end of the call."""

    def __init__(self, state: GroupState, settings: MonitorSettings):
        self.state = state
        value = msgpack.unpackb(state.get[0], raw=False) if state.exists else {}
        if state_0_4.is_0_4(value):
            value = {"u": state_0_4.upgrade(value, lambda queue: settings.attrs_for(queue)["QDPMAXEV"])}
        self.blob: bytes | None = value.get("u")
        self.held = Held(value.get("o"))
        self.timer_at: int | None = None
        self.changed = False

    def load(self) -> bytes | None:
        return self.blob

    @staticmethod
    def unit_value(stored_value: bytes) -> bytes | None:
        """The unit's own value (``qmon.streaming.state``) inside a group's stored value."""
        return msgpack.unpackb(stored_value, raw=False).get("u")

    def store(self, blob: bytes, timer_at: int | None) -> None:
        self.blob, self.timer_at, self.changed = blob, timer_at, True

    def commit(self) -> None:
        order = self.held.stored()
        if self.blob is None and order == {"f": None}:
            return  # nothing to keep
        self.state.update((msgpack.packb({"u": self.blob, "o": order}, use_bin_type=True),))
        watermark = self.state.getCurrentWatermarkMs()
        timer_at = self.timer_at
        if self.held:
            timer_at = watermark + 1 if timer_at is None else min(timer_at, watermark + 1)
        if timer_at is not None:
            self.state.setTimeoutTimestamp(max(timer_at - 1, watermark, 1))


class _Unit:
    """What both kinds of unit share: their state is one stored value (plus the key's event-time timer), and a
    monitor's step in a batch is the same: its rows, its deadlines, what it forgets, its snapshot."""

    def __init__(self, settings: Any):
        self.settings = settings

    def monitor(self, name: str, state: dict[str, Any] | None) -> Any:
        raise NotImplementedError

    def due(self, mon: Any) -> int | None:
        """The arrival-clock time of the monitor's next deadline (its Spark timer), or None."""
        raise NotImplementedError

    def expire_idle_queues(self, mon: Any, now_ts: int | None) -> None:
        """Before the state is stored: what the monitor forgets (queues idle past their TTL)."""

    def apply(self, name: str, mon: Any, pdf: pd.DataFrame) -> tuple[list[tuple[int, int, Emit]], int | None]:
        """The rules over a monitor's rows in order: (emits with their order, the newest ts)."""
        raise NotImplementedError

    def batch(
        self, name: str, pdf: pd.DataFrame, slot: GroupSlot, watermark: int | None, flush: bool = False
    ) -> list[list[Any]]:
        """A key's rows (none passed through): its monitors' emits, a list per monitor; with ``flush`` (the end
        of the input), each monitor's snapshot due or not."""
        raise NotImplementedError

    def fire(self, name: str, slot: GroupSlot, watermark: int) -> list[list[Any]]:
        """The key's timer fired (or it must be set again): the monitors whose deadline ``watermark`` reached
        run; their emits, a list per monitor."""
        raise NotImplementedError

    def deadline(self, mon: Any) -> int | None:
        dues = [at for at in (self.due(mon), mon.snapshot_due()) if at is not None]
        return min(dues) if dues else None

    def step(
        self, name: str, mon: Any, pdf: pd.DataFrame, watermark: int | None, flush: bool = False
    ) -> list[tuple[int, int, Emit]]:
        """One monitor's rows in a batch (``apply``), then what follows them (``settle``)."""
        emits, newest = self.apply(name, mon, pdf)
        emits.extend(self.settle(mon, pdf, newest, watermark, flush))
        return emits

    def settle(
        self, mon: Any, pdf: pd.DataFrame, newest: int | None, watermark: int | None, flush: bool = False
    ) -> list[tuple[int, int, Emit]]:
        """What follows a monitor's rows in a batch.  With ``watermark`` (``applyInPandasWithState``), deadlines the
        watermark has already reached are run at once, as a timer that fires in the same batch.  With ``flush``
        (the end of the input), the snapshot is taken now if one is waiting: no later batch moves the arrival
        clock to it."""
        emits: list[tuple[int, int, Emit]] = []
        if watermark is not None:
            for _ in range(3):  # a deadline due now; running it may make another one due (rarely)
                at = self.due(mon)
                if at is None or at > watermark:
                    break
                emits.extend((-1, e.record["ts"], e) for e in mon.on_clock(watermark))
        self.expire_idle_queues(mon, newest)
        newest_clock = pdf["clock"].max()  # (the arrival clock: the snapshot's pace)
        clock = max(int(newest_clock) if newest_clock == newest_clock else 0, watermark or 0)
        snapshot = mon.snapshot(clock)
        due = mon.snapshot_due() if flush and not snapshot else None  # (it has noted what waits for it)
        if due is not None:
            snapshot = mon.snapshot(max(clock, due))
        emits.extend((-1, e.record["ts"], e) for e in snapshot)
        return emits

    def tick(self, mon: Any, watermark: int) -> list[tuple[int, int, Emit]]:
        """One monitor's deadline came: its clock reached ``watermark``."""
        out = mon.on_clock(watermark)
        self.expire_idle_queues(mon, None)
        out.extend(mon.snapshot(watermark))
        return [(-1, e.record["ts"], e) for e in out]

    def rows(
        self, name: str, pdf: pd.DataFrame, slot: GroupSlot, watermark: int | None = None, flush: bool = False
    ) -> Iterator[pd.DataFrame]:
        """A key's rows in a batch (rows passed through first, and without loading the state); ``flush``: they
        end the input."""
        passing = pdf["kind"].values == Kind.PASS
        if passing.any():
            yield passed_through(pdf[passing])
            pdf = pdf[~passing]
        if pdf.empty:
            # Spark clears a key's timeout at every call (``GroupSlot``): a key with state has it set again,
            # and deadlines the watermark reached run now, as in a call with rows
            if watermark is not None and slot.load() is not None:
                emits = self.fire(name, slot, watermark)
                if any(emits):
                    yield encode_emits(emits)
            return
        emits = self.batch(name, pdf, slot, watermark, flush)
        if any(emits):
            yield encode_emits(emits)

    def expired(self, name: str, slot: GroupSlot, watermark: int) -> Iterator[pd.DataFrame]:
        """The key's event-time timer fired: the watermark reached one of its monitors' deadlines."""
        emits = self.fire(name, slot, watermark)
        if any(emits):
            yield encode_emits(emits)


class QueueUnit(_Unit):
    """A group of queue-manager shards, of any queue managers (``route`` puts each shard in one group): each
    shard is ``qmon.core.queues`` (with interest and journals) over its own stored value, decoded only when
    the batch has rows for it or one of its deadlines came (``stored.ShardGroup``)."""

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

    def _shard(self, group: stored.ShardGroup, qmgr: str, shard: int) -> QueueMonitor:
        blob = group["shards"].get(qmgr, {}).get(str(shard))
        return self.monitor(qmgr, stored.loads(blob) if blob is not None else None)

    def _put(self, group: stored.ShardGroup, qmgr: str, shard: int, mon: QueueMonitor) -> None:
        mon.pack()
        group["shards"].setdefault(qmgr, {})[str(shard)] = stored.dumps(mon.state)
        at = self.deadline(mon)
        if at is not None:
            group["due"].setdefault(qmgr, {})[str(shard)] = at
        elif str(shard) in group["due"].get(qmgr, {}):
            del group["due"][qmgr][str(shard)]
            if not group["due"][qmgr]:
                del group["due"][qmgr]

    def _ticks(self, group: stored.ShardGroup, watermark: int, skip: set[tuple[str, int]]) -> list[list[Any]]:
        """The shards (not in ``skip``) whose deadline the watermark has reached: their timers fire."""
        due = sorted((q, int(s)) for q, ats in group["due"].items() for s, at in ats.items() if at <= watermark)
        out = []
        for qmgr, shard in due:
            if (qmgr, shard) not in skip:
                mon = self._shard(group, qmgr, shard)
                out.append(self.tick(mon, watermark))
                self._put(group, qmgr, shard, mon)
        return out

    def _store(self, group: stored.ShardGroup, slot: GroupSlot) -> None:
        dues = [at for ats in group["due"].values() for at in ats.values()]
        slot.store(stored.dumps(group), min(dues) if dues else None)

    def apply(self, qmgr: str, mon: QueueMonitor, pdf: pd.DataFrame) -> tuple[list[tuple[int, int, Emit]], int | None]:
        """The rows in order, as runs of one kind: a run of puts and gets goes to the rules at once
        (``on_activities``), a command or journal record one at a time."""
        emits: list[tuple[int, int, Emit]] = []
        cols = _queue_columns(pdf)
        kinds = pdf["kind"].values
        cuts = [0, *(np.flatnonzero(kinds[1:] != kinds[:-1]) + 1).tolist(), len(kinds)]
        for a, b in itertools.pairwise(cuts):
            kind, eid, queue, op, ts, depth, nbytes, structure, reason, payload, reply, seq, clock = (
                (c[a:b] for c in cols) if len(cuts) > 2 else cols
            )
            if kind[0] == Kind.ACTIVITY:
                recs = _activities(eid, repeat(qmgr), queue, op, ts, depth, nbytes, structure, reason, clock, seq)
                _apply_activities(mon, recs, emits)
                continue
            for k, i, t, text, r, n in zip(kind, eid, ts, payload, reply, seq, strict=True):
                if k == Kind.JOURNAL:
                    out = mon.on_journal(JournalStatus.of(i, qmgr, t, json.loads(text)))
                else:
                    out = self._command(mon, text, t, i, bool(r), qmgr)
                emits.extend((n, t, e) for e in out)
        ts_all = cols[4]
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
        self, name: str, pdf: pd.DataFrame, slot: GroupSlot, watermark: int | None, flush: bool = False
    ) -> list[list[Any]]:
        group = stored.load_group(slot.load())
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
        group: stored.ShardGroup,
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
        for kind, eid, queue, op, ts, depth, nbytes, structure, reason, payload, reply, seq, clock, member in zip(
            *_queue_columns(pdf), pdf["qmgr"].tolist(), strict=True
        ):
            if kind == Kind.ACTIVITY:
                rec = Activity(eid, member, queue, op, ts, depth, nbytes, structure, reason, clock, seq)
                out = monitors.on_activity(rec)
            else:
                out = self._command(monitors, payload, ts, eid, bool(reply), member)
            emits.extend((seq, ts, e) for e in out)
            newest = ts if newest is None or ts > newest else newest
        result = [emits]
        for name, (mon, existed) in sorted(loaded.items()):
            if existed or _holds_anything(mon):  # (not a member's monitor only looked into)
                result.append(self.settle(mon, pdf, newest, watermark, flush))
                self._put(group, name, shard, mon)
                touched.add((name, shard))
        return result

    def fire(self, name: str, slot: GroupSlot, watermark: int) -> list[list[Any]]:
        group = stored.load_group(slot.load())
        out = self._ticks(group, watermark, set())
        self._store(group, slot)
        return out


def _queue_columns(pdf: pd.DataFrame) -> tuple[list[Any], ...]:
    """A queue unit's rows as the rules read them: (kind, event_id, queue, op, ts, depth_after, msg_bytes,
    structure, reason, payload, reply, src_offset, clock), a list each."""
    return (
        pdf["kind"].tolist(),
        pdf["event_id"].tolist(),
        pdf["queue"].tolist(),
        pdf["op"].tolist(),
        pdf["ts"].astype("int64").tolist(),
        _opt_int(pdf["depth_after"].tolist()),
        _opt_int(pdf["msg_bytes"].tolist()),
        _opt_str(pdf["structure"].tolist()),
        _opt_int(pdf["reason"].tolist()),
        pdf["payload"].tolist(),
        pdf["reply"].tolist(),
        pdf["src_offset"].astype("int64").tolist(),
        pdf["clock"].astype("int64").tolist(),
    )


def _holds_anything(mon: QueueMonitor) -> bool:
    """Whether a queue monitor holds more than a new one: queues, settings, registrations or journals."""
    return bool(mon.queues) or any(mon.state.get(k) for k in ("perfmev", "member_perfmev", "interest", "journals"))


class StructureUnit(_Unit):
    """One CF structure (and its overflow structure): ``qmon.core.structures``."""

    def monitor(self, name: str, state: dict[str, Any] | None) -> StructureMonitor:
        return StructureMonitor(name, self.settings, state, stored.load_queue)

    def due(self, mon: StructureMonitor) -> int | None:
        return mon.next_scan_clock()

    def apply(
        self, name: str, mon: StructureMonitor, pdf: pd.DataFrame
    ) -> tuple[list[tuple[int, int, Emit]], int | None]:
        cols = (
            pdf["event_id"].tolist(),
            pdf["qmgr"].tolist(),
            pdf["queue"].tolist(),
            pdf["op"].tolist(),
            pdf["ts"].astype("int64").tolist(),
            _opt_int(pdf["msg_bytes"].tolist()),
            _opt_int(pdf["reason"].tolist()),
            pdf["clock"].astype("int64").tolist(),
            pdf["src_offset"].astype("int64").tolist(),
        )
        emits: list[tuple[int, int, Emit]] = []
        eid, qmgr, queue, op, ts, nbytes, reason, clock, seq = cols
        recs = _activities(eid, qmgr, queue, op, ts, repeat(None), nbytes, repeat(None), reason, clock, seq)
        _apply_activities(mon, recs, emits)
        return emits, None

    def _load(self, name: str, slot: GroupSlot) -> StructureMonitor:
        blob = slot.load()
        return self.monitor(name, stored.loads(blob) if blob is not None else None)

    def _store(self, mon: StructureMonitor, slot: GroupSlot) -> None:
        slot.store(stored.dumps(mon.state), self.deadline(mon))

    def batch(
        self, name: str, pdf: pd.DataFrame, slot: GroupSlot, watermark: int | None, flush: bool = False
    ) -> list[list[Any]]:
        mon = self._load(name, slot)
        out = self.step(name, mon, pdf, watermark, flush)
        self._store(mon, slot)
        return [out]

    def fire(self, name: str, slot: GroupSlot, watermark: int) -> list[list[Any]]:
        mon = self._load(name, slot)
        at = self.deadline(mon)
        out = self.tick(mon, watermark) if at is not None and at <= watermark else []
        self._store(mon, slot)
        return [out]


class Monitor:
    """The units of both kinds, and the one function ``applyInPandasWithState`` calls per group."""

    def __init__(
        self, settings: MonitorSettings, structure_settings: StructureSettings, ttl_ms: int, lateness_ms: int = 0
    ):
        self.queues = QueueUnit(settings, ttl_ms)
        self.structures = StructureUnit(structure_settings)
        self.lateness_ms = lateness_ms

    def unit(self, key: Any) -> QueueUnit | StructureUnit:
        return self.structures if key[0] == Unit.STRUCTURE else self.queues

    def __call__(self, key: Any, pdfs: Iterator[pd.DataFrame], state: GroupState) -> Iterator[pd.DataFrame]:
        freeze_imports()
        slot = GroupSlot(state, self.queues.settings)
        unit, watermark = self.unit(key), state.getCurrentWatermarkMs()
        queues = key[0] == Unit.QUEUES
        if state.hasTimedOut:  # a batch without data: every partition is at its end, so nothing waits
            held = slot.held.release_all()
            if held is not None:
                yield from unit.rows(key[1], held, slot, watermark)
            else:
                yield from unit.expired(key[1], slot, watermark)
        else:
            passed, rows = slot.held.admit(
                sorted_input(pdfs, shards=queues),
                self.lateness_ms,
                lambda frames: sorted_input(frames, shards=queues),
            )
            if passed is not None:
                yield passed_through(passed)
            yield from unit.rows(key[1], rows, slot, watermark, slot.held.ended)
            if slot.held.late:
                yield late_records(slot.held.late)
        slot.commit()


def late_records(count: int) -> pd.DataFrame:
    """The row that counts a call's late records (``LATE``): observed by the query, never written."""
    return pd.DataFrame([(LATE, None, b"", 0, count, 0)], columns=OUTPUT_COLUMNS)
