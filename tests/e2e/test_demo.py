"""``qmon demo`` as a person runs it: on a terminal (a pseudo-terminal, read through a terminal emulator),
with the real broker, the real job and the simulator, its metrics served; stopped by Ctrl-C."""

from __future__ import annotations

import os
import re
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pexpect
import pyte
import pytest

from tests.conftest import ROOT, descendants, java_noise
from tests.servers import free_port

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

COLUMNS, LINES = 160, 45


class Terminal:
    """``qmon demo`` on a pseudo-terminal of 160 x 45: what it has printed, and the screen as shown."""

    def __init__(self, args: list[str]):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm"}
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "qmon", *args],
            env=env,
            dimensions=(LINES, COLUMNS),
            encoding="utf-8",
            codec_errors="replace",
        )
        self.screen = pyte.Screen(COLUMNS, LINES)
        self.stream = pyte.Stream(self.screen)
        self.text: list[str] = []
        self.seen: set[int] = set()  # every process below the demo, while it ran

    def display(self) -> str:
        return "\n".join(row.rstrip() for row in self.screen.display)

    def read(self, seconds: float) -> bool:
        """Read what comes for ``seconds``; False once the demo has closed its terminal."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                data = self.child.read_nonblocking(65536, timeout=0.5)
            except pexpect.TIMEOUT:
                continue
            except pexpect.EOF:
                return False
            self.text.append(data)
            self.stream.feed(data)
        self.seen |= descendants(self.child.pid)
        return True

    def wait_for(self, test: Callable[[str], bool], timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if test(self.display()):
                return self.display()
            if not self.read(1.0):
                break
        raise AssertionError(f"the screen never showed what was expected:\n{self.display()}\n{self.output()[-3000:]}")

    def finish(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.read(1.0):
            pass
        self.child.close()
        return int(self.child.exitstatus if self.child.exitstatus is not None else -1)

    def output(self) -> str:
        """Everything printed, colours and cursor movement removed."""
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", "".join(self.text)).replace("\r", "")


def left_running(pids: set[int], wait: float = 30.0) -> list[int]:
    deadline = time.monotonic() + wait
    while True:
        alive = []
        for p in pids:
            try:
                state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                alive.append(p)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.5)


def summary(out: str) -> dict[str, int]:
    text = out[out.index("qmon demo summary") :]
    return {line.split()[0]: int(line.split()[1]) for line in text.splitlines()[1:] if line.strip()}


def the_whole_view(screen: str) -> bool:
    """Both structures with a usage bar, one in overflow mode, a queue with a service-interval event, events."""
    bars = [r for r in screen.splitlines() if re.match(r"\s+MSGQ[12]\s+\[[#.|!]+\]\s+[\d.]+% of \d+ KB", r)]
    latest = screen.split("Latest events and alerts", 1)[-1]
    return (
        len(bars) == 2
        and any("OVERFLOW (" in r for r in bars)
        and re.search(r"QM1/\S+\s+depth\s+\d+\s+QSVCINT_(HIGH|OK)", screen) is not None
        and len([r for r in latest.splitlines() if r.strip()]) >= 3
    )


def test_the_live_view_on_a_terminal_its_metrics_and_ctrl_c_stops_it_cleanly(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    term = Terminal(["demo", "--dir", str(tmp_path / "demo"), "--metrics-port", str(port), "--duration", "900"])
    scraped: list[str] = []
    stop = threading.Event()
    scraper = threading.Thread(target=scrape_until, args=(url, "qmon_structure_usage_ratio{", scraped, stop))
    scraper.start()
    try:
        first = term.wait_for(lambda s: s.startswith("qmon demo"), timeout=30)
        assert "starting" in first.splitlines()[0]  # says what it waits for while the broker and Spark start
        screen = term.wait_for(the_whole_view, timeout=300)
        assert "Structures: usage of each (| OVFLWMAX, ! full threshold)" in screen
        deadline = time.monotonic() + 60
        while not scraped and time.monotonic() < deadline:
            term.read(1.0)
        term.child.sendcontrol("c")  # as a person does: the terminal signals the foreground process group
        status = term.finish(timeout=180)
    finally:
        stop.set()
        scraper.join()
        if term.child.isalive():
            term.child.terminate(force=True)
    out = term.output()
    assert status == 0, out[-3000:]
    assert "qmon demo summary" in out, out[-3000:]
    counts = summary(out)
    assert counts.get("QSVCINT_HIGH", 0) + counts.get("QSVCINT_OK", 0) >= 1, counts
    assert counts.get("STRUCTURE_ALTERED", 0) + counts.get("OVERFLOW_MODE_ENTERED", 0) >= 1, counts
    assert counts.get("DEAD_LETTER", 0) >= 1, counts
    for line in out[out.index("qmon demo summary") :].splitlines()[1:]:  # one FIRING per episode, never a repeat
        if m := re.search(r"\((\d+) FIRING, (\d+) episodes\)", line):
            assert int(m.group(1)) <= int(m.group(2)), line
    assert scraped, "the demo's exporter never served qmon_structure_usage_ratio"
    assert not java_noise(out), java_noise(out)
    # what the user sees: qmon's own messages, none of PySpark's workers' chatter or Spark's start-up noise
    for noise in (
        "Python worker",
        "Received UDF",
        ":: resolving dependencies",
        ":: problems summary",
        "Ivy Default Cache",
        "Setting default log level",
        "NativeCodeLoader",
    ):
        assert noise not in out, noise
    assert not left_running(term.seen), left_running(term.seen)  # the broker, Spark's JVM, its Python workers


def scrape_until(url: str, wanted: str, seen: list[str], stop: threading.Event) -> None:
    """Poll the demo's exporter until a line starting with ``wanted`` is served (or ``stop``)."""
    while not stop.wait(1.0):
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                text = resp.read().decode()
        except OSError:
            continue
        found = [line for line in text.splitlines() if line.startswith(wanted)]
        if found:
            seen.extend(found)
            return
