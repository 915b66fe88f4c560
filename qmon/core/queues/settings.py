"""The per-queue rules' settings: MQ's defaults for the attributes qmon models, and the defaults by queue
name from the configuration.  Pure."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

from qmon.core.forecaster import ForecastSettings
from qmon.core.sharing import Sharing

#: MQ's defaults for the attributes qmon models (IBM MQ, *DEFINE queues*): a new queue displays QDPHIEV(DISABLED)
#: QDPLOEV(DISABLED) QDPMAXEV(ENABLED), so a put that fails on a full queue raises Queue Full out of the box.
MQ_DEFAULTS: dict[str, Any] = {
    "QSVCIEV": "NONE",
    "QSVCINT": 999_999_999,
    "MAXDEPTH": 5000,
    "QDEPTHHI": 80,
    "QDEPTHLO": 20,
    "QDPHIEV": False,
    "QDPLOEV": False,
    "QDPMAXEV": True,
}


@dataclass(frozen=True)
class QueueDefaults:
    """Attribute defaults for queues whose name matches ``pattern`` (MQ generic name or glob)."""

    pattern: str
    attrs: dict[str, Any]

    def matches(self, queue: str) -> bool:
        return fnmatch.fnmatchcase(queue, self.pattern)


@dataclass(frozen=True)
class MonitorSettings:
    """What the per-queue rules take from configuration."""

    perfmev: str = "DISABLED"
    queue_defaults: tuple[QueueDefaults, ...] = ()
    journal_near_pct: int = 90
    stall_clear_hold_ms: int = 30_000  # a stall resolves once the queue has been served in time this long
    snapshot_interval_ms: int = 0  # at most one snapshot per shard this often (arrival clock); 0: none
    forecast: ForecastSettings = field(default_factory=ForecastSettings)  # QUEUE_FILL_FORECAST
    sharing: Sharing = field(default_factory=Sharing)  # queue-sharing groups and their shared queues

    def attrs_for(self, queue: str) -> dict[str, Any]:
        attrs = dict(MQ_DEFAULTS)
        for rule in self.queue_defaults:
            if rule.matches(queue):
                attrs.update(rule.attrs)
                break
        return attrs
