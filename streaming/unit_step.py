"""What both kinds of the operator's unit share (``UnitStep``: load, step, settle, store), and the rows they
read and write: a group's input in order (``sorted_input``), by shard, its emits encoded."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pandas as pd

from qmon.core.queues import QueueMonitor
from qmon.core.records import Activity, Emit
from qmon.core.structures import StructureMonitor
from qmon.streaming.encode import encode_emits
from qmon.streaming.rows import ROUTED, Kind
from qmon.streaming.unit_slot import UnitSlot

#: the routed column each field of the rules' ``Activity`` is read from: its own name (``rows.ROUTED`` holds
#: QueueActivity's fields by name), but for ``seq``, the arrival order, which is the record's input offset
ACTIVITY_COLUMN = {field: field for field in Activity._fields} | {"seq": "src_offset"}


def column(pdf: pd.DataFrame, name: str) -> list[Any]:
    """Routed column ``name`` as the rules read it, a list: numbers as ints (None where null), strings as str or
    None."""
    values = pdf[name]
    if ROUTED[name].dataType.typeName() in ("long", "integer"):
        if not values.hasnans:
            return values.astype("int64").tolist()
        return [None if v is None or (isinstance(v, float) and math.isnan(v)) else int(v) for v in values.tolist()]
    if not values.hasnans:
        return values.tolist()
    return [None if isinstance(v, float) and math.isnan(v) else v for v in values.tolist()]


def columns(pdf: pd.DataFrame, names: Iterable[str]) -> dict[str, list[Any]]:
    """Routed columns ``names`` as the rules read them (``column``), by name."""
    return {name: column(pdf, name) for name in names}


def activities(cols: dict[str, list[Any]], a: int, b: int, **given: Any) -> Iterator[Activity]:
    """The ``Activity`` records of rows ``a`` to ``b`` of ``cols`` (``columns``: read by ``ACTIVITY_COLUMN``),
    with the fields in ``given`` the same for all (``_make``: no keyword handling, which calling the class
    would do for every record)."""
    fields = [itertools.repeat(given[f]) if f in given else cols[ACTIVITY_COLUMN[f]][a:b] for f in Activity._fields]
    return map(Activity._make, zip(*fields, strict=False))  # (given fields are repeat(): endless)


def apply_activities(mon: QueueMonitor | StructureMonitor, recs: Iterator[Activity], emits: list[Any]) -> None:
    """The rules over puts and gets, one record at a time: each output with its record's (seq, ts)."""
    on_activity = mon.on_activity
    for rec in recs:
        if out := on_activity(rec):
            emits.extend((rec.seq, rec.ts, e) for e in out)


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


class UnitStep:
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
        self, name: str, pdf: pd.DataFrame, slot: UnitSlot, watermark: int | None, flush: bool = False
    ) -> list[list[Any]]:
        """A key's rows (none passed through): its monitors' emits, a list per monitor; with ``flush`` (the end
        of the input), each monitor's snapshot due or not."""
        raise NotImplementedError

    def fire(self, name: str, slot: UnitSlot, watermark: int) -> list[list[Any]]:
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
        self, name: str, pdf: pd.DataFrame, slot: UnitSlot, watermark: int | None = None, flush: bool = False
    ) -> Iterator[pd.DataFrame]:
        """A key's rows in a batch (rows passed through first, and without loading the state); ``flush``: they
        end the input."""
        passing = pdf["kind"].values == Kind.PASS
        if passing.any():
            yield passed_through(pdf[passing])
            pdf = pdf[~passing]
        if pdf.empty:
            # Spark clears a key's timeout at every call (``UnitSlot``): a key with state has it set again,
            # and deadlines the watermark reached run now, as in a call with rows
            if watermark is not None and slot.load() is not None:
                emits = self.fire(name, slot, watermark)
                if any(emits):
                    yield encode_emits(emits)
            return
        emits = self.batch(name, pdf, slot, watermark, flush)
        if any(emits):
            yield encode_emits(emits)

    def expired(self, name: str, slot: UnitSlot, watermark: int) -> Iterator[pd.DataFrame]:
        """The key's event-time timer fired: the watermark reached one of its monitors' deadlines."""
        emits = self.fire(name, slot, watermark)
        if any(emits):
            yield encode_emits(emits)
