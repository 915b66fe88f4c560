"""The stateful operator: load state, call the pure rules, reconcile timers, save state.

``MonitorProcessor`` is keyed by (unit, unit_name, bucket) and serves two kinds of unit:

* ``QueueUnit`` (unit Q): one shard of a queue manager's queues (see ``qmon.core.queues``);
* ``StructureUnit`` (unit S): one CF structure (see ``qmon.core.structures``).

One operator for both, so the input is read and shuffled once and the fixed per-batch cost of a
Python stateful operator (PySpark starts a driver-side worker per operator per batch) is paid
once.  A unit's whole state is one value, its pickled plain-dict state, so a batch costs two
state-store calls per unit whatever the number of queues in it: the fixed per-key cost of Python
``transformWithState`` is paid per shard, not per queue.

Timers: at most one event-time timer per unit, at the arrival-clock time the earliest watched
queue would stall (Q) or the next overflow scan is due (S).  The watermark runs on the broker's
append time (``clock``), which only moves forward, so no input record is ever behind it and
dropped.
"""

from __future__ import annotations

import json
import logging
import math
import os
import pickle
import sys
import time
from collections.abc import Iterator
from typing import Any

import pandas as pd
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

from qmon.connectors import avro
from qmon.core import topics
from qmon.core.journals import JournalStatus
from qmon.core.mqsc import MqscError, parse_command, split_script
from qmon.core.queues import Activity, Emit, MonitorSettings, QueueMonitor, command_reply
from qmon.core.structures import Op as StructureOp
from qmon.core.structures import StructureMonitor, StructureSettings

#: the operator's units (the first key column), as routed by streaming.pipeline
QUEUES, STRUCTURE = "Q", "S"

logger = logging.getLogger(__name__)

OUTPUT_COLUMNS = ["topic", "key", "value", "order_ts", "order_seq", "order_idx"]

#: QMON_PROFILE=1: time spent in the Python side of the operators, printed by each worker at close.
_PROFILE = os.environ.get("QMON_PROFILE") == "1"
_PROFILE_TOTALS: dict[str, tuple[float, float]] = {}  # name -> (wall, CPU) seconds


def _opt_int(values: list[Any]) -> list[int | None]:
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else int(v) for v in values]


def _opt_str(values: list[Any]) -> list[str | None]:
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in values]


def _profile(name: str, t0: float, c0: float) -> None:
    """Add wall and CPU seconds since (t0, c0) under ``name`` (QMON_PROFILE=1)."""
    wall, cpu = _PROFILE_TOTALS.get(name, (0.0, 0.0))
    _PROFILE_TOTALS[name] = (wall + time.perf_counter() - t0, cpu + time.process_time() - c0)


def reconcile_timer(handle: StatefulProcessorHandle, timer: Any, wanted: int | None) -> None:
    """Keep exactly one event-time timer per key, at ``wanted`` (none when None); ``timer`` remembers it."""
    current = timer.get()[0] if timer.exists() else None
    if wanted == current:
        return
    if current is not None:
        handle.deleteTimer(current)
    if wanted is not None:
        handle.registerTimer(wanted)
        timer.update((wanted,))
    else:
        timer.clear()


def encode_emits(emits: list[tuple[int, int, Emit]]) -> pd.DataFrame:
    """(order_seq, order_ts, Emit) -> the operator's output rows, Avro-encoded."""
    rows = []
    for idx, (seq, ts, e) in enumerate(emits):
        value = avro.encode(topics.RECORD_OF[e.topic], e.record)
        rows.append((e.topic, e.key, value, int(e.record.get("ts") or ts), seq, idx))
    return pd.DataFrame(rows, columns=OUTPUT_COLUMNS)


def sorted_input(rows: Iterator[pd.DataFrame]) -> pd.DataFrame:
    """All of a key's rows in (ts, rank, arrival) order: commands before activity at equal ts."""
    frames = list(rows)
    pdf = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    return pdf.sort_values(["ts", "rank", "src_partition", "src_offset"], kind="stable")


class _Unit:
    """What both kinds of unit share: their state is one pickled value (plus the key's timer)."""

    kind = ""  # QUEUES or STRUCTURE

    def __init__(self, settings: Any, handle: StatefulProcessorHandle, blob: Any, timer: Any):
        self.settings, self.handle, self.blob, self.timer = settings, handle, blob, timer

    def monitor(self, name: str, state: dict[str, Any] | None) -> Any:
        raise NotImplementedError

    def _load(self, name: str) -> Any:
        t0, c0 = time.perf_counter(), time.process_time()
        state = pickle.loads(self.blob.get()[0]) if self.blob.exists() else None
        if _PROFILE:
            _profile(f"{self.kind}_state_load", t0, c0)
        return self.monitor(name, state)

    def _store(self, mon: Any, timer_at: int | None) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        mon.pack()
        self.blob.update((pickle.dumps(mon.state, protocol=pickle.HIGHEST_PROTOCOL),))
        reconcile_timer(self.handle, self.timer, timer_at)
        if _PROFILE:
            _profile(f"{self.kind}_state_save", t0, c0)

    def _save(self, mon: Any) -> None:
        raise NotImplementedError

    def expired(self, name: str, watermark: int) -> Iterator[pd.DataFrame]:
        """The key's timer fired: the monitor's clock reached ``watermark``."""
        mon = self._load(name)
        self.timer.clear()
        out = mon.on_clock(watermark)
        self._save(mon)
        if out:
            yield encode_emits([(-1, e.record["ts"], e) for e in out])


class QueueUnit(_Unit):
    """A shard of one queue manager's queues: ``qmon.core.queues`` (with interest and journals)."""

    kind = QUEUES

    def __init__(self, settings: MonitorSettings, ttl_ms: int, handle: StatefulProcessorHandle, blob: Any, timer: Any):
        super().__init__(settings, handle, blob, timer)
        self.ttl_ms = ttl_ms

    def monitor(self, name: str, state: dict[str, Any] | None) -> QueueMonitor:
        return QueueMonitor(name, self.settings, state)

    def _save(self, mon: QueueMonitor, now_ts: int | None = None) -> None:
        if now_ts is not None and self.ttl_ms > 0:
            mon.expire(now_ts, self.ttl_ms)
        self._store(mon, mon.next_stall_clock())

    def rows(self, qmgr: str, pdf: pd.DataFrame) -> Iterator[pd.DataFrame]:
        passing = pdf["kind"].values == "P"
        if passing.any():
            # dead letters and invalid-command replies, encoded upstream: passed through untouched
            p = pdf[passing]
            yield pd.DataFrame(
                {
                    "topic": p["out_topic"].values,
                    "key": p["out_key"].values,
                    "value": p["out_value"].values,
                    "order_ts": p["ts"].astype("int64").values,
                    "order_seq": p["src_offset"].astype("int64").values,
                    "order_idx": p["rank"].astype("int32").values,
                }
            )
            pdf = pdf[~passing]
            if pdf.empty:
                return
        mon = self._load(qmgr)
        emits: list[tuple[int, int, Emit]] = []
        cols = (
            pdf["kind"].tolist(),
            pdf["event_id"].tolist(),
            pdf["queue"].tolist(),
            pdf["op"].tolist(),
            pdf["ts"].astype("int64").tolist(),
            _opt_int(pdf["depth_after"].tolist()),
            _opt_int(pdf["msg_bytes"].tolist()),
            _opt_str(pdf["structure"].tolist()),
            _opt_int(pdf["reason"].tolist()),
            pdf["text"].tolist(),
            pdf["reply"].tolist(),
            pdf["src_offset"].astype("int64").tolist(),
            pdf["clock"].astype("int64").tolist(),
        )
        newest = None
        for kind, eid, queue, op, ts, depth, nbytes, structure, reason, text, reply, seq, clock in zip(
            *cols, strict=True
        ):
            if kind == "A":
                out = mon.on_activity(Activity(eid, qmgr, queue, op, ts, depth, nbytes, structure, reason, clock, seq))
            elif kind == "J":
                j = json.loads(text)
                out = mon.on_journal(
                    JournalStatus(
                        eid,
                        qmgr,
                        ts,
                        j["library"],
                        j["attached"],
                        int(j["size_kb"]),
                        int(j["threshold_kb"]),
                        tuple(j["receivers"]),
                    )
                )
            else:
                out = self._command(mon, text, ts, eid, bool(reply))
            if out:
                emits.extend((seq, ts, e) for e in out)
            newest = ts if newest is None or ts > newest else newest
        self._save(mon, newest)
        if emits:
            yield encode_emits(emits)

    @staticmethod
    def _command(mon: QueueMonitor, text: str, ts: int, command_id: str, reply: bool) -> list[Emit]:
        try:
            cmd = parse_command(split_script(text)[0])
        except (MqscError, IndexError) as exc:  # validated upstream; kept safe all the same
            return [command_reply(command_id, mon.qmgr, ts, False, f"MQSC error: {exc}")] if reply else []
        return mon.on_command(cmd, ts, command_id, reply)


class StructureUnit(_Unit):
    """One CF structure (and its overflow structure): ``qmon.core.structures``."""

    kind = STRUCTURE

    def monitor(self, name: str, state: dict[str, Any] | None) -> StructureMonitor:
        return StructureMonitor(name, self.settings, state)

    def _save(self, mon: StructureMonitor) -> None:
        self._store(mon, mon.next_scan_clock())

    def rows(self, name: str, pdf: pd.DataFrame) -> Iterator[pd.DataFrame]:
        mon = self._load(name)
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
        emits: list[tuple[int, int, Any]] = []
        on_activity = mon.on_activity
        for eid, qmgr, queue, op, ts, nbytes, reason, clock, seq in zip(*cols, strict=True):
            out = on_activity(StructureOp(eid, qmgr, queue, op, ts, nbytes, reason, clock))
            if out:
                emits.extend((seq, ts, e) for e in out)
        self._save(mon)
        if emits:
            yield encode_emits(emits)


class MonitorProcessor(StatefulProcessor):
    """Keyed by (unit, unit_name, bucket): a queue shard (Q, qmgr, bucket) or a structure (S, name, 0).
    Each key uses its own state variable ("shard" or "structure") and the shared "timer"."""

    def __init__(self, settings: MonitorSettings, structure_settings: StructureSettings, ttl_ms: int):
        self.settings = settings
        self.structure_settings = structure_settings
        self.ttl_ms = ttl_ms

    def init(self, handle: StatefulProcessorHandle) -> None:
        blob = StructType([StructField("blob", BinaryType())])
        timer = handle.getValueState("timer", StructType([StructField("at", LongType())]))
        self.queues = QueueUnit(self.settings, self.ttl_ms, handle, handle.getValueState("shard", blob), timer)
        self.structures = StructureUnit(self.structure_settings, handle, handle.getValueState("structure", blob), timer)

    def _unit(self, key: Any) -> QueueUnit | StructureUnit:
        return self.structures if key[0] == STRUCTURE else self.queues

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        if _PROFILE:
            t0, c0 = time.perf_counter(), time.process_time()
            pdf = sorted_input(rows)
            _profile(f"{key[0]}_read", t0, c0)
            t0, c0 = time.perf_counter(), time.process_time()
            out = list(self._unit(key).rows(key[1], pdf))
            _profile(key[0], t0, c0)
            yield from out
        else:
            yield from self._unit(key).rows(key[1], sorted_input(rows))

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        yield from self._unit(key).expired(key[1], timerValues.getCurrentWatermarkInMs())

    def close(self) -> None:
        if _PROFILE:
            logger.warning("qmon profile (seconds in this Python worker): %s", _PROFILE_TOTALS)
            print(f"qmon profile: {_PROFILE_TOTALS}", file=sys.stderr, flush=True)
