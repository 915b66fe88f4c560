"""The same job on a Spark standalone cluster (a master and two workers on loopback, started from
the PySpark installation) gives exactly the local run's output."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from qmon.core.config import Config
from qmon.streaming.cluster import LocalSparkCluster
from tests.conftest import ROOT
from tests.streams import STRUCTURE_CONFIG, random_stream, random_structure_stream

pytestmark = pytest.mark.spark


def test_cluster_output_equals_local_output(replay_factory, tmp_path):
    rng = random.Random(99)
    records = []
    for i in range(6):
        records.extend(random_stream(rng, f"QM{i}", n=40))
    records.extend(random_structure_stream(rng, n=200))
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in records))
    cfg = tmp_path / "qmon.yaml"
    cfg.write_text(json.dumps({"job": {"queue_buckets": 3, "shuffle_partitions": 4}, **STRUCTURE_CONFIG}))
    local = replay_factory(
        [json.dumps(r) for r in records],
        Config.model_validate({"job": {"queue_buckets": 3, "shuffle_partitions": 4}, **STRUCTURE_CONFIG}),
    )
    out = tmp_path / "cluster.jsonl"
    with LocalSparkCluster(tmp_path / "cluster", workers=2) as cluster:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "qmon",
                "--log-level",
                "WARNING",
                "replay",
                str(inp),
                "--config",
                str(cfg),
                "--master",
                cluster.url,
                "--output",
                str(out),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    cluster_records = [json.loads(line) for line in out.read_text().splitlines()]

    def norm(recs):
        return sorted(json.dumps(r, sort_keys=True) for r in recs)

    assert len(local) > 50
    assert norm(cluster_records) == norm(local)
