"""The stateful operator: load state, call the pure rules, reconcile timers, save state.

``MonitorProcessor`` is keyed by (unit, unit_name, bucket) and serves two kinds of unit:

* ``QueueUnit`` (unit Q): one shard of a queue manager's queues (see ``qmon.core.queues``);
* ``StructureUnit`` (unit S): one CF structure (see ``qmon.core.structures``).

One operator for both, so the input is read and shuffled once and the fixed per-batch cost of a
Python stateful operator (PySpark starts a driver-side worker per operator per batch) is paid
once.  A unit's whole state is one value (its plain-data state, versioned by the rules and stored as
MessagePack: ``qmon.streaming.state``), so a batch costs two state-store calls per unit whatever the
number of queues in it: the fixed per-key cost of Python ``transformWithState`` is paid per shard,
not per queue.  The rows it receives and returns are declared once in ``qmon.streaming.rows``.

Event-time timers (Spark's, not MQ's service timer): at most one per unit, kept in the value state
``event_timer``, at the arrival-clock time the earliest watched
queue would stall (Q) or the next overflow scan is due (S).  The watermark runs on the broker's
append time (``clock``), which only moves forward, so no input record is ever behind it and
dropped.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pandas as pd
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

from qmon.connectors import avro
from qmon.core import topics
from qmon.core.journals import JournalStatus
from qmon.core.mqsc import MqscError, parse_command, split_script
from qmon.core.queues import MonitorSettings, QueueMonitor, command_reply
from qmon.core.records import Activity, Emit
from qmon.core.structures import StructureMonitor, StructureSettings
from qmon.streaming import state as stored
from qmon.streaming.rows import OUTPUT_COLUMNS, Kind, Unit


def _opt_int(values: list[Any]) -> list[int | None]:
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else int(v) for v in values]


def _opt_str(values: list[Any]) -> list[str | None]:
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in values]


def reconcile_timer(handle: StatefulProcessorHandle, event_timer: Any, wanted: int | None) -> None:
    """Keep exactly one event-time timer per key, at ``wanted`` (none when None); ``event_timer`` remembers it."""
    current = event_timer.get()[0] if event_timer.exists() else None
    if wanted == current:
        return
    if current is not None:
        handle.deleteTimer(current)
    if wanted is not None:
        handle.registerTimer(wanted)
        event_timer.update((wanted,))
    else:
        event_timer.clear()


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


class _Unit:
    """What both kinds of unit share: their state is one stored value (plus the key's event-time timer)."""

    def __init__(self, settings: Any, handle: StatefulProcessorHandle, value: Any, event_timer: Any):
        self.settings, self.handle, self.value, self.event_timer = settings, handle, value, event_timer

    def monitor(self, name: str, state: dict[str, Any] | None) -> Any:
        raise NotImplementedError

    def _load(self, name: str) -> Any:
        return self.monitor(name, stored.loads(self.value.get()[0]) if self.value.exists() else None)

    def _store(self, mon: Any, timer_at: int | None) -> None:
        mon.pack()
        self.value.update((stored.dumps(mon.state),))
        reconcile_timer(self.handle, self.event_timer, timer_at)

    def _save(self, mon: Any) -> None:
        raise NotImplementedError

    def expired(self, name: str, watermark: int) -> Iterator[pd.DataFrame]:
        """The key's event-time timer fired: the monitor's clock reached ``watermark``."""
        mon = self._load(name)
        self.event_timer.clear()
        out = mon.on_clock(watermark)
        self._save(mon)
        if out:
            yield encode_emits([(-1, e.record["ts"], e) for e in out])


class QueueUnit(_Unit):
    """A shard of one queue manager's queues: ``qmon.core.queues`` (with interest and journals)."""

    def __init__(self, settings: MonitorSettings, ttl_ms: int, handle: StatefulProcessorHandle, value: Any, timer: Any):
        super().__init__(settings, handle, value, timer)
        self.ttl_ms = ttl_ms

    def monitor(self, name: str, state: dict[str, Any] | None) -> QueueMonitor:
        return QueueMonitor(name, self.settings, state)

    def _save(self, mon: QueueMonitor, now_ts: int | None = None) -> None:
        if now_ts is not None and self.ttl_ms > 0:
            mon.expire(now_ts, self.ttl_ms)
        self._store(mon, mon.next_stall_clock())

    def rows(self, qmgr: str, pdf: pd.DataFrame) -> Iterator[pd.DataFrame]:
        passing = pdf["kind"].values == Kind.PASS
        if passing.any():
            yield passed_through(pdf[passing])
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
            pdf["payload"].tolist(),
            pdf["reply"].tolist(),
            pdf["src_offset"].astype("int64").tolist(),
            pdf["clock"].astype("int64").tolist(),
        )
        newest = None
        for kind, eid, queue, op, ts, depth, nbytes, structure, reason, payload, reply, seq, clock in zip(
            *cols, strict=True
        ):
            if kind == Kind.ACTIVITY:
                out = mon.on_activity(Activity(eid, qmgr, queue, op, ts, depth, nbytes, structure, reason, clock, seq))
            elif kind == Kind.JOURNAL:
                out = mon.on_journal(JournalStatus.of(eid, qmgr, ts, json.loads(payload)))
            else:
                out = self._command(mon, payload, ts, eid, bool(reply))
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
        emits: list[tuple[int, int, Emit]] = []
        on_activity = mon.on_activity
        for eid, qmgr, queue, op, ts, nbytes, reason, clock, seq in zip(*cols, strict=True):
            out = on_activity(Activity(eid, qmgr, queue, op, ts, msg_bytes=nbytes, reason=reason, clock=clock))
            if out:
                emits.extend((seq, ts, e) for e in out)
        self._save(mon)
        if emits:
            yield encode_emits(emits)


class MonitorProcessor(StatefulProcessor):
    """Keyed by (unit, unit_name, bucket): a queue shard (Q, qmgr, bucket) or a structure (S, name, bucket).
    Each key uses its own state variable ("shard" or "structure") and the shared "event_timer"."""

    def __init__(self, settings: MonitorSettings, structure_settings: StructureSettings, ttl_ms: int):
        self.settings = settings
        self.structure_settings = structure_settings
        self.ttl_ms = ttl_ms

    def init(self, handle: StatefulProcessorHandle) -> None:
        value = StructType([StructField("value", BinaryType())])
        timer = handle.getValueState("event_timer", StructType([StructField("at", LongType())]))
        self.queues = QueueUnit(self.settings, self.ttl_ms, handle, handle.getValueState("shard", value), timer)
        self.structures = StructureUnit(
            self.structure_settings, handle, handle.getValueState("structure", value), timer
        )

    def unit(self, key: Any) -> QueueUnit | StructureUnit:
        return self.structures if key[0] == Unit.STRUCTURE else self.queues

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        yield from self.unit(key).rows(key[1], sorted_input(rows))

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        yield from self.unit(key).expired(key[1], timerValues.getCurrentWatermarkInMs())
