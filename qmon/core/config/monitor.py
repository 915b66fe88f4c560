"""``monitor:`` and ``queues:``: the monitor's rules (PERFMEV, duplicates, bounded state, stalls, snapshots), and
queue attributes by name pattern, as DEFINE QLOCAL would set them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from qmon.core.config.base import Frozen
from qmon.core.config.durations import duration_ms
from qmon.core.mqsc import MAX_NAME
from qmon.core.queues import MQ_DEFAULTS


class QueueDefaultsConfig(Frozen):
    """Defaults for queues whose names match ``pattern`` (first match wins)."""

    pattern: str = Field(description="queue-name pattern (glob, * and ?); the first matching entry applies")
    qsvciev: Literal["HIGH", "OK", "NONE"] | None = Field(None, description="QSVCIEV: which service interval event")
    qsvcint: int | None = Field(None, ge=0, le=999_999_999, description="QSVCINT: the service interval (ms)")
    maxdepth: int | None = Field(None, ge=0, le=999_999_999, description="MAXDEPTH: messages the queue may hold")
    qdepthhi: int | None = Field(None, ge=0, le=100, description="QDEPTHHI: % of MAXDEPTH for QDEPTH_HIGH")
    qdepthlo: int | None = Field(None, ge=0, le=100, description="QDEPTHLO: % of MAXDEPTH for QDEPTH_LOW")
    qdphiev: Literal["ENABLED", "DISABLED"] | None = Field(None, description="QDPHIEV: queue depth high events")
    qdploev: Literal["ENABLED", "DISABLED"] | None = Field(None, description="QDPLOEV: queue depth low events")
    qdpmaxev: Literal["ENABLED", "DISABLED"] | None = Field(None, description="QDPMAXEV: queue full events")

    @field_validator("qsvciev", "qdphiev", "qdploev", "qdpmaxev", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, v: str) -> str:
        if not v or len(v) > MAX_NAME:
            raise ValueError(f"a queue-name pattern is 1 to {MAX_NAME} characters")
        return v

    def attrs(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in MQ_DEFAULTS:
            value = getattr(self, key.lower())
            if value is None:
                continue
            out[key] = (value == "ENABLED") if key.startswith("QDP") else value
        return out


class MonitorConfig(Frozen):
    perfmev: Literal["ENABLED", "DISABLED"] = Field(
        "DISABLED", description="PERFMEV of every queue manager until ALTER QMGR changes it"
    )
    dedup_window: str = Field("10 minutes", description="how long a record's event_id is remembered (duplicates)")
    queue_ttl: str = Field("7 days", description="a queue idle (no record) this long is forgotten (bounded state)")
    journal_near_pct: int = Field(90, ge=1, le=100, description="RECEIVER_NEAR_THRESHOLD at this % of THRESHOLD")
    stall_clear_hold: str = Field(
        "30 seconds",
        description="QUEUE_STALLED resolves once the queue has been served within QSVCINT (or emptied) for this long",
    )
    snapshot_interval: str = Field(
        "10 seconds",
        description="a unit that changed publishes a snapshot (qmon.events.snapshot) at most this often; 0 turns them off",
    )

    @field_validator("perfmev", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v

    @field_validator("dedup_window", "queue_ttl", "stall_clear_hold", "snapshot_interval")
    @classmethod
    def _duration(cls, v: str) -> str:
        duration_ms(v)
        return v
