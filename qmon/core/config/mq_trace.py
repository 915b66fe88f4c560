"""``mq_trace:``: IBM MQ application activity trace as input."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from qmon.core.config.base import Frozen


class MqTraceConfig(Frozen):
    """The MQ application activity trace input (``<prefix>.mq.trace``)."""

    enabled: bool | Literal["auto"] = Field(
        "auto", description="read the trace topic: auto (when it exists at start), true (created if missing), false"
    )
    encoding: str = Field("utf-8", description="character set of the trace's strings (cp037, cp500: EBCDIC)")
    timezone: str = Field("UTC", description="time zone of OperationDate/OperationTime, when a call has no HighResTime")

    @field_validator("enabled", mode="before")
    @classmethod
    def _switch(cls, v: Any) -> Any:
        if isinstance(v, bool) or v == "auto":
            return v
        raise ValueError(f"{v!r} is not auto, true or false")

    @field_validator("encoding")
    @classmethod
    def _codec(cls, v: str) -> str:
        import codecs

        try:
            codecs.lookup(v)
        except LookupError as exc:
            raise ValueError(f"{v!r} is not a character set Python knows (e.g. utf-8, cp037, cp500)") from exc
        return v

    @field_validator("timezone")
    @classmethod
    def _zone(cls, v: str) -> str:
        if v.upper() == "UTC":
            return v
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"{v!r} is not a time zone (e.g. UTC, Europe/London)") from exc
        return v

    def settings(self) -> tuple[str, str]:
        return (self.encoding, self.timezone)
