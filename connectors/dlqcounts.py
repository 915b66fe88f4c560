"""What the DLQ handler has done, in a scan and since it started: the records it is done with, by what became of
them, and the FWD and RETRY attempts made and failed; and the summary line it prints every RETRYINT and when it
stops."""

from __future__ import annotations

from dataclasses import dataclass

from qmon.core.dlqretry import Outcome


@dataclass
class Counts:
    processed: int = 0  # records done with: forwarded, retried, discarded or ignored for good
    forwarded: int = 0
    retried: int = 0
    discarded: int = 0
    ignored: int = 0
    attempts: int = 0  # FWD and RETRY attempts made
    failed: int = 0  # of which failed

    def add(self, outcome: Outcome) -> None:
        self.processed += 1
        if outcome.action == "FWD":
            self.forwarded += 1
        elif outcome.action == "RETRY":
            self.retried += 1
        elif outcome.action == "DISCARD":
            self.discarded += 1
        else:
            self.ignored += 1

    def merge(self, other: Counts) -> None:
        for f in ("processed", "forwarded", "retried", "discarded", "ignored", "attempts", "failed"):
            setattr(self, f, getattr(self, f) + getattr(other, f))

    def line(self, scan: int, kind: str, on_dlq: int, waiting: int) -> str:
        return (
            f"dlq-handler {kind} {scan}: processed {self.processed}, forwarded {self.forwarded}, "
            f"retried {self.retried}, discarded {self.discarded}, ignored {self.ignored}; "
            f"{self.attempts} attempt(s), {self.failed} failed; "
            f"{on_dlq} record(s) left on the DLQ (ignored), {waiting} waiting for a retry"
        )
