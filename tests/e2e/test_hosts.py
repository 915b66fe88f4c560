"""qmon on a real Spark cluster across hosts: Kafka on one host, a Spark standalone master and a worker on a
second, another worker on a third, and ``qmon run`` on a fourth — four Linux network namespaces joined by a
bridge, each with its own address (198.18.0.0/15, a range set aside for tests), nothing shared on loopback.
The namespaces are made and removed by the test; without the rights to make them it is skipped."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from qmon.core import topics
from qmon.core.config import Config
from qmon.devservers.spark_cluster import spark_home
from tests.conftest import ROOT
from tests.streams import STRUCTURE_CONFIG, raised_by_the_clock_alone, random_stream, random_structure_stream

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

KAFKA, MASTER, WORKER, DRIVER = "198.18.0.1", "198.18.0.2", "198.18.0.3", "198.18.0.4"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


class Hosts:
    """Network namespaces on one bridge, one per host, and the processes started in them."""

    def __init__(self, addresses: list[str]):
        tag = uuid.uuid4().hex[:5]
        self.bridge = f"qb{tag}"
        self.names = {addr: f"q{tag}{i}" for i, addr in enumerate(addresses)}
        self.procs: list[subprocess.Popen[Any]] = []

    def __enter__(self) -> Hosts:
        _ip("netns", "add", self.bridge)
        _ip("-n", self.bridge, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.bridge, "link", "set", "br0", "up")
        for addr, ns in self.names.items():
            host_end, bridge_end = f"{ns}h", f"{ns}b"
            _ip("netns", "add", ns)
            _ip("link", "add", host_end, "type", "veth", "peer", "name", bridge_end)
            _ip("link", "set", host_end, "netns", ns)
            _ip("link", "set", bridge_end, "netns", self.bridge)
            _ip("-n", self.bridge, "link", "set", bridge_end, "master", "br0", "up")
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", host_end)
            _ip("-n", ns, "link", "set", host_end, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for ns in self.names.values():  # and what they started in sessions of their own (the broker's JVM)
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
        for ns in [*self.names.values(), self.bridge]:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def run(self, addr: str, cmd: list[str], env: dict[str, str], log: Path | None = None, **kw: Any) -> Any:
        """``cmd`` on host ``addr``, in the background with ``log``, else to its end."""
        full = ["ip", "netns", "exec", self.names[addr], *cmd]
        if log is None:
            return subprocess.run(full, env=env, capture_output=True, text=True, **kw)
        out = open(log, "w")
        proc = subprocess.Popen(full, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc


@pytest.fixture
def hosts() -> Iterator[Hosts]:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("making network namespaces needs root and iproute2 (ip netns)")
    probe = f"qprobe{uuid.uuid4().hex[:4]}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"network namespaces cannot be made here: {made.stderr.strip()}")
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    with Hosts([KAFKA, MASTER, WORKER, DRIVER]) as h:
        yield h


def _wait_for(path: Path, text: str, proc: subprocess.Popen[Any], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        assert proc.poll() is None, path.read_text(errors="replace")[-3000:]
        time.sleep(0.5)
    raise AssertionError(f"{text!r} not in {path} within {timeout:.0f} s:\n{path.read_text(errors='replace')[-3000:]}")


def test_the_job_across_four_hosts_gives_replays_answer_and_outlives_a_worker_host(
    hosts, kafka_bootstrap, replay_factory, tmp_path
):
    """The job reads its input a few records a batch; once two batches are done, every process of one worker
    host is killed.  The job goes on with the other worker, and its outputs are replay's, nothing lost."""
    rng = random.Random(7)
    records: list[dict[str, Any]] = []
    for i in range(4):
        records.extend(random_stream(rng, f"QM{i}", n=40))
    records.extend(random_structure_stream(rng, n=150))
    records.sort(key=lambda r: r["ts"])  # as they happen: each partition in ts order, as producers keep it
    job = {"queue_shards": 2, "shuffle_partitions": 4, "watermark_delay": "0 seconds"}
    job |= {"max_offsets_per_trigger": 50, "trigger": "200 ms"}
    config = {"kafka": {"partitions": 2}, "job": job, **STRUCTURE_CONFIG}
    # outputs event time alone decides: a backlog produced in a moment has an arrival clock of a moment
    assert not raised_by_the_clock_alone(records, config)
    cfg = tmp_path / "qmon.yaml"
    cfg.write_text(json.dumps(config))
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in records))

    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_LOCAL_IP", "PYSPARK_GATEWAY_PORT")}
    env.update(PYTHONPATH=str(ROOT), PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    qmon = [sys.executable, "-m", "qmon"]
    bootstrap = f"{KAFKA}:9092"

    kafka_log = tmp_path / "kafka.log"
    broker = hosts.run(KAFKA, [*qmon, "kafka", "start", "--host", KAFKA, "--dir", str(tmp_path / "kafka"),
                               "--partitions", "2"], env, kafka_log)  # fmt: skip
    _wait_for(kafka_log, "Kafka broker ready", broker, 120)

    spark_class = str(spark_home() / "bin" / "spark-class")
    nodes: dict[str, subprocess.Popen[Any]] = {}
    for addr, role in ((MASTER, "master"), (MASTER, "worker-1"), (WORKER, "worker-2")):
        node_env = {**env, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": addr,
                    "SPARK_WORKER_DIR": str(tmp_path / role), "SPARK_LOG_DIR": str(tmp_path)}  # fmt: skip
        if role == "master":
            cmd = [spark_class, "org.apache.spark.deploy.master.Master", "--host", MASTER, "--port", "7077",
                   "--webui-port", "8080"]  # fmt: skip
        else:
            cmd = [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", addr, "--cores", "1",
                   "--memory", "1g", "--webui-port", "8081", f"spark://{MASTER}:7077"]  # fmt: skip
        proc = nodes[role] = hosts.run(addr, cmd, node_env, tmp_path / f"{role}.log")
        _wait_for(tmp_path / f"{role}.log", "Successfully registered" if role != "master" else "I have been elected",
                  proc, 120)  # fmt: skip

    sent = hosts.run(DRIVER, [*qmon, "produce", "--bootstrap", bootstrap, str(inp)], env, timeout=120)
    assert sent.returncode == 0, sent.stderr[-3000:]
    ckpt = tmp_path / "ckpt"
    job_log = tmp_path / "job.log"
    run = [*qmon, "run", "--config", str(cfg), "--master", f"spark://{MASTER}:7077", "--bootstrap", bootstrap,
           "--checkpoint", str(ckpt), "--available-now"]  # fmt: skip
    running = hosts.run(DRIVER, run, env, job_log)
    deadline = time.monotonic() + 300
    while len(list((ckpt / "commits").glob("[0-9]*"))) < 2 and time.monotonic() < deadline:
        assert running.poll() is None, job_log.read_text(errors="replace")[-3000:]
        time.sleep(0.3)
    # both workers ran the job's executors, connecting back to the driver's own address
    for role in ("worker-1", "worker-2"):
        executors = list((tmp_path / role).glob("app-*/*/stderr"))
        assert executors, f"{role} ran no executor"
        assert any(f"{DRIVER}:" in p.read_text(errors="replace") for p in executors), role
    os.killpg(nodes["worker-2"].pid, signal.SIGKILL)  # the worker, its executor and their Python workers
    assert running.wait(timeout=600) == 0, job_log.read_text(errors="replace")[-3000:]
    assert len(list((ckpt / "commits").glob("[0-9]*"))) >= 4  # it went on after the loss
    wanted = [topics.PERFORMANCE, topics.ALERTS, topics.REPLIES, topics.DLQ]
    tail = hosts.run(
        DRIVER,
        [*qmon, "tail", "--bootstrap", bootstrap, "--json", "--from-beginning", "--idle", "3", *wanted],
        env,
        timeout=120,
    )
    live = {(r["topic"], r["event_id"]) for r in map(json.loads, tail.stdout.splitlines())}
    replayed = replay_factory(records, Config.model_validate(config))
    expected = {(r["topic"], r["event_id"]) for r in replayed if r["topic"] in wanted}
    assert len(expected) > 20
    assert live == expected
