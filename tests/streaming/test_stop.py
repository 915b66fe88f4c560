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
