"""qmon on YARN, deployed the way Spark users deploy it there: ``make dist``'s packed environment shipped with
``spark-submit --master yarn --deploy-mode cluster --archives qmon-env.tar.gz#environment``, the driver (in the application
master) and the executors running the archive's Python, through the real broker.

The cluster is a real one: Hadoop's MiniYARNCluster (one ResourceManager, two NodeManagers launching real containers,
as Spark's own YARN tests run it; ``qmon.devservers.yarn``).  Each NodeManager offers room for two containers of the
job's size, so the application master and the two executors are spread over both nodes.  While the job reads its
input a few records a batch, the NodeManager without the application master is lost: the job goes on with the
executor left, ends as YARN's application SUCCEEDED, and its outputs are replay's, nothing lost."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from qmon.app import submit
from qmon.connectors.clients import consume
from qmon.core import topics
from qmon.core.config import Config
from qmon.devservers.spark_cluster import spark_home
from qmon.devservers.yarn import YarnCluster, YarnError, leftovers, spark_submit_conf, yarn_cluster
from qmon.streaming.spark import packages
from tests.conftest import ROOT
from tests.streams import STRUCTURE_CONFIG, raised_by_the_clock_alone, random_stream, random_structure_stream

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

#: what spark-submit gives each container (heap); YARN adds Spark's 384 MB overhead and rounds up to 1,536 MB
CONTAINER_MEMORY = "1g"
#: each NodeManager's memory: room for two such containers (the application master and an executor, or two executors)
NODE_MEMORY_MB = 3072
OUTPUTS = [topics.PERFORMANCE, topics.ALERTS, topics.OVERFLOW, topics.REPLIES, topics.DLQ]


def _clean_env() -> dict[str, str]:
    """This process's environment without what would lead the containers to this checkout or this interpreter:
    spark-submit's YARN client passes its own PYTHONPATH on to the application master."""
    drop = ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_LOCAL_IP", "PYSPARK_GATEWAY_PORT")
    return {k: v for k, v in os.environ.items() if k not in drop}


@pytest.fixture(scope="module")
def packed_env(qmon_wheel: Path) -> Iterator[Path]:
    """``make dist``: the wheel, then ``deploy/pack_env.py`` packs it with its dependencies.  Written where every user
    may read it, as a cluster's shared archives are: YARN then localizes it once a node (a public resource), not once
    an application."""
    out = Path(tempfile.mkdtemp(prefix="qmon-dist-"))
    out.chmod(0o755)
    try:
        pack = subprocess.run(
            [sys.executable, str(ROOT / "deploy" / "pack_env.py"), str(qmon_wheel), str(out / "qmon-env.tar.gz")],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert pack.returncode == 0, pack.stdout + pack.stderr
        (out / "qmon-env.tar.gz").chmod(0o644)
        yield out / "qmon-env.tar.gz"
    finally:
        shutil.rmtree(out, ignore_errors=True)


@pytest.fixture(scope="module")
def yarn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[YarnCluster]:
    try:
        with yarn_cluster(tmp_path_factory.mktemp("yarn"), node_managers=2, memory_mb=NODE_MEMORY_MB) as cluster:
            yield cluster
    except YarnError as e:  # (raised while starting: a failure inside the tests is theirs)
        pytest.fail(f"the YARN cluster did not start: {e}")


def _records(seed: int, config: dict[str, Any]) -> list[dict[str, Any]]:
    """Three queue managers' activity and commands, and the structures', in ``ts`` order; an input whose outputs
    event time alone decides (the backlog's arrival clock is a moment: see ``raised_by_the_clock_alone``)."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    for i in range(3):
        records.extend(random_stream(rng, f"QM{i}", n=40))
    records.extend(random_structure_stream(rng, n=150))
    records.sort(key=lambda r: r["ts"])
    assert not raised_by_the_clock_alone(records, config), f"seed {seed}: outputs the arrival clock alone raises"
    return records


def _submit(
    yarn: YarnCluster,
    packed_env: Path,
    work: Path,
    config: dict[str, Any],
    bootstrap: str,
) -> subprocess.Popen[str]:
    """The cluster guide's command: ``spark-submit --master yarn --deploy-mode cluster --archives
    qmon-env.tar.gz#environment --conf spark.pyspark.python=./environment/bin/python --files qmon.yaml
    "$(python -m qmon.app.submit)" run --config qmon.yaml ...``, with this cluster's settings besides."""
    cfg = work / "qmon.yaml"
    cfg.write_text(json.dumps(config))
    conf = spark_submit_conf(spark_home(), work / "staging")
    conf |= {"spark.ui.enabled": "false", "spark.yarn.maxAppAttempts": "1"}
    command = [str(spark_home() / "bin" / "spark-submit"), "--master", "yarn", "--deploy-mode", "cluster"]
    command += ["--packages", packages(), "--archives", f"{packed_env}#environment"]
    command += ["--conf", "spark.pyspark.python=./environment/bin/python", "--files", str(cfg)]
    command += ["--driver-memory", CONTAINER_MEMORY, "--executor-memory", CONTAINER_MEMORY]
    command += ["--num-executors", "2", "--executor-cores", "1"]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    command += [str(Path(submit.__file__)), "run", "--config", "qmon.yaml", "--bootstrap", bootstrap]
    command += ["--checkpoint", str(work / "ckpt"), "--available-now"]
    env = {**_clean_env(), **yarn.client_env()}
    log = open(work / "spark-submit.log", "w")  # noqa: SIM115 - the child writes it until it ends
    return subprocess.Popen(command, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)


def _finished(proc: subprocess.Popen[str], work: Path, yarn: YarnCluster, timeout: float = 600) -> None:
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = None
    if code != 0:
        logs = "\n".join(
            f"== {p}\n{p.read_text(errors='replace')[-2500:]}" for p in yarn.container_logs() if p.name == "stderr"
        )
        raise AssertionError(
            f"spark-submit ended with {code}:\n{(work / 'spark-submit.log').read_text()[-3000:]}\n{logs}"
        )


def _produce(records: list[dict[str, Any]], config: dict[str, Any], bootstrap: str, work: Path) -> None:
    inp, cfg = work / "in.jsonl", work / "produce.yaml"
    inp.write_text("".join(json.dumps(r) + "\n" for r in records))
    cfg.write_text(json.dumps(config))
    sent = subprocess.run(
        [sys.executable, "-m", "qmon", "produce", "--config", str(cfg), "--bootstrap", bootstrap, str(inp)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert sent.returncode == 0, sent.stderr[-3000:]


def _outputs(bootstrap: str, prefix: str) -> set[tuple[str, str]]:
    return {(t, r["event_id"]) for t, r, _ in consume(bootstrap, OUTPUTS, prefix=prefix, to_end=True)}


def _expected(replay_factory: Any, records: list[dict[str, Any]], config: dict[str, Any]) -> set[tuple[str, str]]:
    replayed = replay_factory(records, Config.model_validate(config))
    return {(r["topic"], r["event_id"]) for r in replayed if r["topic"] in OUTPUTS}


def _python_of_containers(yarn: YarnCluster) -> set[str]:
    """The interpreter each Python process the containers started was started as (its argv[0])."""
    found = set()
    for pid in leftovers(yarn.nm_root):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"python" in argv[0]:
            found.add(argv[0].decode())
    return found


def test_spark_submit_to_yarn_with_the_packed_environment_gives_replays_answer_through_the_loss_of_a_node_manager(
    yarn, packed_env, kafka_bootstrap, replay_factory, tmp_path
):
    prefix = f"y{uuid.uuid4().hex[:8]}"
    job = {"queue_shards": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds"}
    job |= {"max_offsets_per_trigger": 20}
    config = {"kafka": {"topic_prefix": prefix, "partitions": 2}, "job": job, **STRUCTURE_CONFIG}
    records = _records(12, config)
    _produce(records, config, kafka_bootstrap, tmp_path)
    before = {a.app_id for a in yarn.apps()}
    proc = _submit(yarn, packed_env, tmp_path, config, kafka_bootstrap)

    def commits() -> int:
        return len(list((tmp_path / "ckpt" / "commits").glob("[0-9]*")))

    def busy_elsewhere() -> Any:
        """The node without the application master, once an executor of the job there has run a task."""
        apps = [a for a in yarn.apps() if a.app_id not in before and a.am_node]
        if not apps or commits() < 2:
            return None
        for node in yarn.nodes():
            if node.node_id != apps[0].am_node and node.containers:
                logs = [p for p in yarn.container_logs() if p.parent.name in node.containers and p.name == "stderr"]
                if any("Got assigned task" in p.read_text(errors="replace") for p in logs):
                    return node
        return None

    deadline = time.monotonic() + 300
    while (lost := busy_elsewhere()) is None:
        assert proc.poll() is None, (tmp_path / "spark-submit.log").read_text()[-3000:]
        assert time.monotonic() < deadline, "no executor ran a task on the other node within 300 s"
        time.sleep(0.5)
    # the driver and the executors' Python workers run the archive's interpreter, not this one
    pythons = _python_of_containers(yarn)
    assert pythons == {"./environment/bin/python"}, pythons
    done = commits()
    yarn.stop_node_manager(lost.index)

    _finished(proc, tmp_path, yarn)
    assert commits() > done  # it went on after the loss
    (app,) = [a for a in yarn.apps() if a.app_id not in before]
    assert app.final_status == "SUCCEEDED"
    expected = _expected(replay_factory, records, config)
    assert len(expected) > 20
    assert _outputs(kafka_bootstrap, prefix) == expected
