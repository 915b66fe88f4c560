"""``qmon run``'s stop request: SIGTERM (a service manager, Kubernetes) and SIGINT (Ctrl-C) each ask the job to
stop between two micro-batches instead of ending the process, and the handlers in place before are put back.
The whole stop, through the real broker and Spark, is in ``tests/e2e/test_reliability.py``."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from qmon.streaming.job import stop_signals


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_sets_the_stop_request_and_the_process_goes_on(sig, caplog):
    before = signal.getsignal(sig)
    stopping = threading.Event()
    with caplog.at_level("INFO", logger="qmon.streaming.job"), stop_signals(stopping):
        os.kill(os.getpid(), sig)
        assert stopping.wait(5)
        os.kill(os.getpid(), sig)  # a second one changes nothing, and is not logged again
    assert signal.getsignal(sig) is before
    said = [r.getMessage() for r in caplog.records if "received" in r.getMessage()]
    assert said == [f"qmon job: {signal.Signals(sig).name} received; stopping between two micro-batches"]


def test_outside_the_main_thread_nothing_is_changed():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    seen: dict[int, object] = {}

    def body() -> None:
        with stop_signals(threading.Event()):
            seen.update({sig: signal.getsignal(sig) for sig in before})

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert seen == before


class _Failing:
    """A query that fails at once, after finishing a batch or not."""

    def __init__(self, progressed: bool):
        self.lastProgress = {"batchId": 3} if progressed else None

    def awaitTermination(self, _timeout: float) -> bool:
        raise RuntimeError("the broker went away")


def test_restarts_give_up_after_max_restarts_failures_in_a_row_only(monkeypatch):
    """A query that fails before finishing a batch counts towards ``max_restarts``; one that finished a batch
    first starts the count again, so a job that fails now and then over months is never given up on."""
    from qmon.streaming import job

    waits: list[float] = []

    class Stopping(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            waits.append(float(timeout or 0))
            return False

    def run_with(pattern: list[bool]) -> int:
        queries = iter(_Failing(p) for p in pattern)
        monkeypatch.setattr(job, "start_query", lambda *a, **k: next(queries))
        waits.clear()
        try:
            return job._run(None, None, "b", "c", available_now=False, max_restarts=3, stopping=Stopping())  # type: ignore[arg-type]
        except StopIteration:
            return -1  # (ran out of queries: it did not give up)

    monkeypatch.setattr(job.topics, "INPUTS", ())
    assert run_with([False] * 4) == 1  # four failures in a row: given up
    assert waits == [2.0, 4.0, 8.0]
    assert run_with([False, False, True, False, False, True, False, False]) == -1  # never 4 in a row
