"""``qmon`` whose Kafka transactions pause for a minute before they commit (their writes flushed, the consumer's
offsets not yet sent), so that a kill lands mid-transaction: the crash test's DLQ handler.  Run as ``python
tests/connectors/paused_dlq_handler.py dlq-handler ...`` with the checkout on ``PYTHONPATH``."""

from __future__ import annotations

import sys
import time
from typing import Any

import confluent_kafka

#: how long a transaction waits before its commit
PAUSE_S = 60


class PausedProducer(confluent_kafka.Producer):
    def send_offsets_to_transaction(self, *args: Any, **kwargs: Any) -> Any:
        self.flush(30)
        print(f"paused {PAUSE_S} s before the commit", file=sys.stderr, flush=True)
        time.sleep(PAUSE_S)
        return super().send_offsets_to_transaction(*args, **kwargs)


if __name__ == "__main__":
    confluent_kafka.Producer = PausedProducer  # type: ignore[misc]  # (the handler imports it when it starts)
    from qmon.app.cli import main

    raise SystemExit(main(sys.argv[1:]))
