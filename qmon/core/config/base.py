"""What every section of the configuration is: a frozen pydantic model that refuses a key it does not have."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
