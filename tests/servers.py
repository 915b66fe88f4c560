"""Real Prometheus and Alertmanager for the tests: the Debian packages' binaries (``make servers`` installs
them), each started on a free loopback port with its own data directory and the configuration qmon ships."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from qmon.devservers.local import free_port  # (outside the ephemeral ports: see there)

ROOT = Path(__file__).resolve().parents[1]


def binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed: `make servers` installs it (Debian package, needs root and apt-get)")
    return path


def http_json(url: str, body: Any = None, timeout: float = 5.0) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read().decode() or "null")


class Server:
    def __init__(self, name: str, args: list[str], port: int, workdir: Path):
        self.name, self.args, self.port, self.workdir = name, args, port, workdir
        self.url = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> Server:
        log = open(self.workdir / f"{self.name}.log", "ab")  # noqa: SIM115 - kept open while it runs
        self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.name} exited: {(self.workdir / f'{self.name}.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as resp:
                    if resp.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise AssertionError(f"{self.name} not ready on {self.url} within {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def alertmanager(workdir: Path, port: int | None = None) -> Server:
    """Alertmanager with config/alertmanager/alertmanager.yml (clustering off)."""
    exe = binary("prometheus-alertmanager")
    port = port or free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    return Server(
        "alertmanager",
        [
            exe,
            f"--config.file={ROOT / 'config' / 'alertmanager' / 'alertmanager.yml'}",
            f"--storage.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        port,
        workdir,
    )


def prometheus(workdir: Path, exporter_port: int, scrape_interval: str = "1s") -> Server:
    """Prometheus with config/prometheus/ (its rules file included), scraping the exporter's port."""
    exe = binary("prometheus")
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    shipped = ROOT / "config" / "prometheus"
    text = (shipped / "prometheus.yml").read_text()
    text = text.replace("localhost:9464", f"127.0.0.1:{exporter_port}").replace("15s", scrape_interval)
    (workdir / "prometheus.yml").write_text(text)
    shutil.copy(shipped / "qmon.rules.yml", workdir / "qmon.rules.yml")
    return Server(
        "prometheus",
        [
            exe,
            f"--config.file={workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        port,
        workdir,
    )
