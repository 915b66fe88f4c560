"""The stateful operator: load state, call the pure rules, reconcile the unit's timer, save state.

``UnitOperator`` (the function ``applyInPandasWithState`` calls) is keyed by (unit, unit_name, bucket) and serves two
kinds of unit:

* ``QueueUnit`` (unit Q): queue-manager shards kept under one key, each shard of a queue manager's queues (or of a
  queue-sharing group's shared queues, ``qmon.core.sharing``) its own monitor (see ``qmon.core.queues``) over its
  own stored value (``qmon.streaming.state.QueueUnitState``);
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

from collections.abc import Iterator
from typing import Any

import pandas as pd
from pyspark.sql.streaming.state import GroupState

from qmon.core.queues import MonitorSettings
from qmon.core.structures import StructureSettings
from qmon.streaming.queue_unit import QueueUnit
from qmon.streaming.rows import LATE, OUTPUT_COLUMNS, Unit
from qmon.streaming.structure_unit import StructureUnit
from qmon.streaming.unit_slot import UnitSlot
from qmon.streaming.unit_step import passed_through, sorted_input
from qmon.streaming.worker import freeze_imports


class UnitOperator:
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
        slot = UnitSlot(state, self.queues.settings)
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
