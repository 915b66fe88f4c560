"""A Spark standalone cluster on loopback, from the PySpark installation (``spark-class``).

Used by the benchmarks' cluster mode and the cluster-equality test: one master and
``workers`` workers, each a child JVM, stopped cleanly.  The same job then runs with
``--master spark://127.0.0.1:PORT``, unchanged.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from qmon.devservers.local import free_port


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


class LocalSparkCluster:
    def __init__(self, workdir: Path, workers: int = 2, cores: int = 1, memory: str = "2g"):
        self.workdir = Path(workdir)
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.procs: list[subprocess.Popen] = []
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"

    def _spawn(self, name: str, *args: str) -> subprocess.Popen:
        home = spark_home()
        env = {
            **os.environ,
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_WORKER_DIR": str(self.workdir / "work"),
            "SPARK_LOG_DIR": str(self.workdir),
        }
        log = open(self.workdir / f"{name}.log", "w")
        return subprocess.Popen(
            [str(home / "bin" / "spark-class"), *args],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )

    def start(self, timeout: float = 60.0) -> LocalSparkCluster:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.procs.append(
            self._spawn(
                "master",
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--webui-port",
                str(free_port()),
            )
        )
        for i in range(self.workers):
            self.procs.append(
                self._spawn(
                    f"worker{i}",
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    str(self.cores),
                    "--memory",
                    self.memory,
                    "--webui-port",
                    str(free_port()),
                    self.url,
                )
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            registered = sum(
                1
                for i in range(self.workers)
                if "Successfully registered with master"
                in (self.workdir / f"worker{i}.log").read_text(errors="replace")
            )
            if registered == self.workers:
                return self
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the Spark standalone cluster did not start; see the logs in {self.workdir}")

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        self.procs.clear()

    def __enter__(self) -> LocalSparkCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
