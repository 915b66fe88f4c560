"""A structure's definition: its CQSSGxxx STRUCTURE statement and CFRM policy entry, and the settings of
every structure's rules.  Pure."""

from __future__ import annotations

from dataclasses import dataclass, field

from qmon.core.forecaster import ForecastSettings
from qmon.core.structures.overflow_exit import OverflowExit


@dataclass(frozen=True)
class StructureDef:
    """A CQSSGxxx STRUCTURE statement plus its CFRM policy entry (sizes in KB)."""

    strname: str
    size: int
    initsize: int | None = None
    ovflwmax: int = 70
    ovflwstr: str | None = None
    ovflwsize: int | None = None
    fullthreshold: int = 80
    lgmsgsz: int = 4096
    overflow_scan_interval_ms: int = 15 * 60 * 1000
    resource: bool = False  # resource structures never overflow
    clear_margin: int = 5  # points below a threshold an alert needs to resolve (hysteresis) ...
    clear_hold_ms: int = 30_000  # ... for this long (event time) without going back above it

    @property
    def target(self) -> int:
        """OVFLWMAX − 20: the usage alter and candidate selection aim for."""
        return max(0, self.ovflwmax - 20)


@dataclass(frozen=True)
class StructureSettings:
    structures: tuple[StructureDef, ...] = ()
    overflow_exit: OverflowExit = field(default_factory=OverflowExit)
    snapshot_interval_ms: int = 0  # at most one snapshot per structure this often (arrival clock); 0: none
    forecast: ForecastSettings = field(default_factory=ForecastSettings)  # STRUCTURE_FILL_FORECAST

    def get(self, strname: str) -> StructureDef | None:
        for s in self.structures:
            if s.strname == strname:
                return s
        return None
