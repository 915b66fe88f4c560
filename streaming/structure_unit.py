"""The operator's structure unit (unit S): one CF structure's monitor (``qmon.core.structures``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from qmon.core.records import Activity, Emit
from qmon.core.structures import StructureMonitor
from qmon.streaming import state as stored
from qmon.streaming.unit_slot import UnitSlot
from qmon.streaming.unit_step import ACTIVITY_COLUMN, UnitStep, activities, apply_activities, columns


class StructureUnit(UnitStep):
    """One CF structure (and its overflow structure): ``qmon.core.structures``."""

    def monitor(self, name: str, state: dict[str, Any] | None) -> StructureMonitor:
        return StructureMonitor(name, self.settings, state, stored.load_queue)

    def due(self, mon: StructureMonitor) -> int | None:
        return mon.next_scan_clock()

    def apply(
        self, name: str, mon: StructureMonitor, pdf: pd.DataFrame
    ) -> tuple[list[tuple[int, int, Emit]], int | None]:
        emits: list[tuple[int, int, Emit]] = []
        cols = columns(pdf, [ACTIVITY_COLUMN[f] for f in Activity._fields if f not in ("depth_after", "structure")])
        # (a structure's copy of a record: its rules read neither the depth nor the structure it names)
        apply_activities(mon, activities(cols, 0, len(pdf), depth_after=None, structure=None), emits)
        return emits, None

    def _load(self, name: str, slot: UnitSlot) -> StructureMonitor:
        blob = slot.load()
        return self.monitor(name, stored.loads(blob) if blob is not None else None)

    def _store(self, mon: StructureMonitor, slot: UnitSlot) -> None:
        slot.store(stored.dumps(mon.state), self.deadline(mon))

    def batch(
        self, name: str, pdf: pd.DataFrame, slot: UnitSlot, watermark: int | None, flush: bool = False
    ) -> list[list[Any]]:
        mon = self._load(name, slot)
        out = self.step(name, mon, pdf, watermark, flush)
        self._store(mon, slot)
        return [out]

    def fire(self, name: str, slot: UnitSlot, watermark: int) -> list[list[Any]]:
        mon = self._load(name, slot)
        at = self.deadline(mon)
        out = self.tick(mon, watermark) if at is not None and at <= watermark else []
        self._store(mon, slot)
        return [out]
