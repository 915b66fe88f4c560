"""Shared fixtures: one Spark session and one real Kafka broker per test session.

The broker is, in order of preference: the cluster named by ``QMON_TEST_BOOTSTRAP``;
testcontainers' Kafka when a Docker engine answers; otherwise qmon's own
``LocalKafka`` (Apache Kafka from Maven Central, KRaft, loopback).  Each test that
runs the job gets its own topic prefix, so tests never see each other's records.

The schema registry is the one named by ``QMON_TEST_SCHEMA_REGISTRY`` (the base URL of a Confluent-compatible
API), else qmon's own ``LocalRegistry`` (Apicurio Registry from Maven Central, in memory, loopback).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

logger = logging.getLogger(__name__)

#: What Spark's JVM prints when something goes wrong or a query is cut short: a stack trace's frames, an
#: exception's first line, a log4j ERROR line, a Python traceback.
JAVA_NOISE = re.compile(
    r"^\s+at [\w$.<>]+\(.*\)\s*$|^\S*(Exception|Error)(: |$)|Exception in thread|^\S+ \S+ ERROR \w+:|^Traceback ",
    re.MULTILINE,
)


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (its children, theirs, ...), from /proc."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        for child, ppid in parent.items():
            if ppid == p and child not in found:
                found.add(child)
                todo.append(child)
    return found


def java_noise(text: str) -> list[str]:
    """The lines of ``text`` that a clean run never prints on the terminal (stack traces, ERROR lines)."""
    return [m.group(0) for m in JAVA_NOISE.finditer(text)]


def _docker_engine() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="session")
def qmon_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """qmon's wheel, built once a session from this checkout (``make wheel``)."""
    import sys

    out = tmp_path_factory.mktemp("wheel")
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--disable-pip-version-check"]
    done = subprocess.run([*build, str(ROOT), "-w", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    (whl,) = out.glob("qmon-*.whl")
    return whl


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if os.environ.get("QMON_TEST_BOOTSTRAP"):
        yield os.environ["QMON_TEST_BOOTSTRAP"]
        return
    if _docker_engine():
        from testcontainers.kafka import KafkaContainer

        with KafkaContainer().with_kraft() as container:
            yield container.get_bootstrap_server()
        return
    from qmon.devservers.kafka import LocalKafka

    broker = LocalKafka(workdir=tmp_path_factory.mktemp("kafka"))
    broker.start()
    try:
        yield broker.bootstrap
    finally:
        broker.stop()
        if os.environ.get("CI"):
            tail = broker.log_path.read_text(errors="replace")[-4000:] if broker.log_path.exists() else ""
            if "ERROR" in tail:
                print(f"\n--- Kafka broker log (tail) ---\n{tail}")


@pytest.fixture(scope="session")
def schema_registry_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a real schema registry's Confluent-compatible API, empty at the start of the session
    (unless ``QMON_TEST_SCHEMA_REGISTRY`` names one); skipped with the reason when no Java or Maven here can
    run one."""
    if os.environ.get("QMON_TEST_SCHEMA_REGISTRY"):
        yield os.environ["QMON_TEST_SCHEMA_REGISTRY"].rstrip("/")
        return
    from qmon.devservers import schema_registry as registry_server

    if shutil.which("mvn") is None:
        pytest.skip("Maven (mvn) is not on PATH: it fetches Apicurio Registry from Maven Central")
    try:
        registry_server.choose()
    except registry_server.RegistryServerError as exc:
        pytest.skip(str(exc))
    server = registry_server.LocalRegistry(workdir=tmp_path_factory.mktemp("registry"))
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from qmon.streaming.spark import session, shutdown

    # PySpark records the Python call site of every DataFrame function (five JVM round trips each) for its
    # error messages: the tests build a query per test, each of some thousand functions
    s = session(
        "local[2]", "qmon-tests", shuffle_partitions=2, extra={"spark.python.sql.dataFrameDebugging.enabled": "false"}
    )
    yield s
    shutdown(s)


@pytest.fixture
def prefix() -> str:
    """A topic prefix of this test's own."""
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def replay_factory(spark: Any) -> Callable[..., list[dict[str, Any]]]:
    """Run ``qmon replay``'s pipeline over JSON-able records (or raw lines)."""
    import json

    from qmon.core.config import Config
    from qmon.streaming.replay import replay

    def run(records: list[Any], config: Config | None = None) -> list[dict[str, Any]]:
        lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
        return replay(spark, lines, config or Config(), source="test")

    return run


def assert_eventually(
    check: Callable[[], Any], timeout: float = 120.0, interval: float = 0.5, query: Any = None
) -> Any:
    """Poll ``check`` until it returns a truthy value; re-raise the query's failure if it died."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        if query is not None and query.exception() is not None:
            raise AssertionError(f"the streaming query failed: {query.exception()}")
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout:.0f} s (last value: {last!r})")
