"""``forecast:``: the fill forecasts of structures and queues."""

from __future__ import annotations

from pydantic import Field, field_validator

from qmon.core.config.base import Frozen
from qmon.core.config.durations import duration_ms
from qmon.core.forecaster import SAMPLES, ForecastSettings


class ForecastConfig(Frozen):
    """Fill forecasts: STRUCTURE_FILL_FORECAST and QUEUE_FILL_FORECAST (the alert catalogue)."""

    horizon: str = Field(
        "15 minutes",
        description="a forecast fires when a structure or queue is predicted to reach its threshold within this "
        "much event time; the trend is read over as long a window (a duration; 0 s turns forecasts off)",
    )
    min_confidence: float = Field(
        0.5,
        ge=0,
        le=1,
        description="the least confidence a forecast fires with: the rank correlation of the window's samples "
        "with time, 1 for a level that only rises, near 0 for one that climbs and falls back (a consumer "
        "draining in batches)",
    )

    @field_validator("horizon")
    @classmethod
    def _horizon(cls, v: str) -> str:
        ms = duration_ms(v)
        if 0 < ms < 1000 * SAMPLES:
            raise ValueError(f"{v!r} is shorter than {SAMPLES} seconds (the trend is sampled {SAMPLES} times over it)")
        return v

    def settings(self) -> ForecastSettings:
        return ForecastSettings(duration_ms(self.horizon), self.min_confidence)
