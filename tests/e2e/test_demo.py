"""``qmon demo --duration`` end to end in a subprocess: real broker, real job, the simulator."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from tests.conftest import ROOT
from tests.servers import free_port

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def processes_left(pgid: int, wait: float = 20.0) -> list[str]:
    """Live (non-zombie) processes of a process group, after giving exited ones time to be reaped."""
    deadline = time.monotonic() + wait
    while True:
        out = subprocess.run(
            ["ps", "-o", "pid=,stat=,args=", "-g", str(pgid)], capture_output=True, text=True
        ).stdout.strip()
        live = [p for p in out.splitlines() if " Z" not in p[:12]]
        if not live or time.monotonic() > deadline:
            return live
        time.sleep(0.5)


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


def test_demo_runs_prints_a_summary_and_leaves_nothing_behind(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "qmon",
            "--log-level",
            "WARNING",
            "demo",
            "--duration",
            "45",
            "--dir",
            str(tmp_path / "demo"),
            "--metrics-port",
            str(port),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    seen: list[str] = []
    stop = threading.Event()
    url = f"http://127.0.0.1:{port}/metrics"
    scraper = threading.Thread(target=scrape_until, args=(url, "qmon_structure_usage_ratio{", seen, stop))
    scraper.start()
    try:
        out, err = proc.communicate(timeout=600)
    finally:
        stop.set()
        scraper.join()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, err[-3000:]
    summary = out[out.index("qmon demo summary") :]
    counts = {line.split()[0]: int(line.split()[1]) for line in summary.splitlines()[1:] if line.strip()}
    assert counts.get("QSVCINT_HIGH", 0) >= 1 and counts.get("QSVCINT_OK", 0) >= 1, summary
    assert counts.get("STRUCTURE_ALTERED", 0) + counts.get("OVERFLOW_MODE_ENTERED", 0) >= 1, summary
    assert counts.get("DEAD_LETTER", 0) >= 1, summary
    for line in summary.splitlines()[1:]:  # alert kinds: one FIRING per episode, never a repeat
        if m := re.search(r"\((\d+) FIRING, (\d+) episodes\)", line):
            assert int(m.group(1)) <= int(m.group(2)), line
    assert "mqsc> ALTER QMGR PERFMEV(ENABLED)" in out
    assert f"Prometheus metrics on {url}" in out
    assert seen, "the demo's exporter never served qmon_structure_usage_ratio"  # --metrics-port
    # nothing left running: the broker JVM, Spark's JVM and Python workers were all in the demo's session
    assert not processes_left(proc.pid), processes_left(proc.pid)


def test_ctrl_c_stops_the_demo_cleanly(tmp_path):
    """Ctrl-C at a terminal sends SIGINT to the whole foreground process group: the demo stops the
    simulator, the job, Spark and the broker, prints its summary, and leaves nothing running."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "qmon", "--log-level", "WARNING", "demo", "--dir", str(tmp_path / "demo")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    lines = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 300
        for line in proc.stdout:
            lines.append(line)
            if "simulator running" in line or time.monotonic() > deadline:
                break
        time.sleep(5)
        os.killpg(proc.pid, signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    out = "".join(lines) + rest
    assert "qmon demo summary" in out, out[-2000:]
    assert not processes_left(proc.pid), processes_left(proc.pid)
    # the broker runs in its own session (so a Ctrl-C cannot kill it before the demo stops it): gone too
    broker = subprocess.run(["pgrep", "-f", str(tmp_path / "demo" / "kafka")], capture_output=True, text=True)
    assert broker.stdout.strip() == "", broker.stdout
