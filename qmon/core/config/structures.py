"""``structures:`` and ``overflow_exit:``: the CF structures of IMS CQS (CQSSGxxx STRUCTURE statements and CFRM
sizes), and the Queue Overflow exit, as rules or a module:function path."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from qmon.core.config.base import Frozen
from qmon.core.config.durations import duration_ms
from qmon.core.mqsc import MAX_NAME
from qmon.core.structures import StructureDef


class StructureConfig(Frozen):
    """A CQSSGxxx STRUCTURE statement plus its CFRM policy entry (IMS, *CQS structure overflow function*); sizes
    in KB."""

    strname: str = Field(
        pattern=r"^[A-Z][A-Z0-9@#$_]{0,15}$",
        description="CF list structure name: 1-16 characters, upper case, starting with a letter",
    )
    size: int = Field(ge=1, description="SIZE in the CFRM policy: the most an alter can grow it to (KB)")
    initsize: int | None = Field(None, ge=1, description="INITSIZE in the CFRM policy (KB); default SIZE")
    ovflwmax: int = Field(70, ge=21, le=100, description="OVFLWMAX: usage % that triggers alter / overflow")
    ovflwstr: str | None = Field(
        None, pattern=r"^[A-Z][A-Z0-9@#$_]{0,15}$", description="OVFLWSTR: the overflow structure's name, if any"
    )
    ovflwsize: int | None = Field(None, ge=1, description="SIZE of the overflow structure (KB)")
    fullthreshold: int = Field(80, ge=1, le=100, description="FULLTHRESHOLD %: STRUCTURE_NEAR_FULL")
    lgmsgsz: int = Field(4096, ge=512, description="bytes of a long message kept on its ready queue")
    overflow_scan_interval: str = Field(
        "15 minutes", description="how often queues in overflow mode are scanned for emptiness (a duration)"
    )
    type: Literal["msgq", "resource"] = Field(
        "msgq", description="msgq, or resource: never altered and never overflowed (full monitoring still warns)"
    )
    clear_margin: int = Field(
        5,
        ge=0,
        le=50,
        description="points below FULLTHRESHOLD (near full) or 100% (full) "
        "that usage must fall before the alert resolves ...",
    )
    clear_hold: str = Field("30 seconds", description="... and how long (event time) it must stay there")

    @field_validator("strname", "ovflwstr", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v

    @field_validator("overflow_scan_interval")
    @classmethod
    def _duration(cls, v: str) -> str:
        if duration_ms(v) <= 0:
            raise ValueError("the overflow scan interval must be positive")
        return v

    @field_validator("clear_hold")
    @classmethod
    def _hold(cls, v: str) -> str:
        duration_ms(v)
        return v

    @model_validator(mode="after")
    def _consistent(self) -> StructureConfig:
        if self.initsize is not None and self.initsize > self.size:
            raise ValueError(
                f"initsize ({self.initsize} KB) is larger than size ({self.size} KB); INITSIZE must not exceed SIZE"
            )
        if self.ovflwstr and not self.ovflwsize:
            raise ValueError(f"ovflwstr {self.ovflwstr} needs ovflwsize (its SIZE in KB)")
        if self.ovflwsize and not self.ovflwstr:
            raise ValueError("ovflwsize is set but ovflwstr (the overflow structure's name) is not")
        if self.clear_margin >= self.fullthreshold:
            raise ValueError(
                f"clear_margin ({self.clear_margin}) must be smaller than fullthreshold "
                f"({self.fullthreshold}): STRUCTURE_NEAR_FULL resolves below fullthreshold - clear_margin"
            )
        return self

    def definition(self) -> StructureDef:
        return StructureDef(
            self.strname,
            self.size,
            self.initsize,
            self.ovflwmax,
            self.ovflwstr,
            self.ovflwsize,
            self.fullthreshold,
            self.lgmsgsz,
            duration_ms(self.overflow_scan_interval),
            self.type == "resource",
            self.clear_margin,
            duration_ms(self.clear_hold),
        )


class ExitRuleConfig(Frozen):
    queue: str = Field(min_length=1, max_length=MAX_NAME, description="queue-name pattern (glob, * and ?)")
    decision: Literal["approve", "reject"] = Field(description="what the overflow exit answers for these queues")

    @field_validator("decision", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.lower() if isinstance(v, str) else v


def exit_path(v: str) -> str:
    if not re.match(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", v):
        raise ValueError(f"{v!r} is not a module:function path (e.g. mysite.exits:overflow)")
    return v
