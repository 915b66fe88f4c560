"""The Queue Overflow user exit: which candidate queues CQS may put into overflow mode.  Pure."""

from __future__ import annotations

import fnmatch
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ExitRule:
    queue: str  # MQ-style generic name or glob
    decision: str  # approve | reject


@dataclass(frozen=True)
class OverflowExit:
    """The overflow exit: an ordered rule list (first match wins, default approve) or a callable
    ``module:function`` taking (structure, queue, elements) and returning approve/reject (or a bool)."""

    rules: tuple[ExitRule, ...] = ()
    callable_path: str | None = None

    def _callable(self) -> Callable[..., Any]:
        module, _, name = (self.callable_path or "").partition(":")
        return getattr(importlib.import_module(module), name)

    def decide(self, structure: str, queue: str, elems: int) -> str:
        if self.callable_path:
            result = self._callable()(structure, queue, elems)
            if isinstance(result, bool):
                return "approve" if result else "reject"
            result = str(result).lower()
            if result not in ("approve", "reject"):
                raise ValueError(f"overflow exit {self.callable_path} returned {result!r}; expected approve or reject")
            return result
        for rule in self.rules:
            if fnmatch.fnmatchcase(queue, rule.queue):
                return rule.decision
        return "approve"
