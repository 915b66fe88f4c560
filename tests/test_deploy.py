"""What users deploy on their own Spark cluster, checked without one: the packed Python environment of
``make dist``; the Kubernetes manifest, against the Spark operator's schema and against the image and entry point
it runs; the image's entry point."""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

import qmon
from qmon.app import submit
from qmon.app.cli import parser
from qmon.core.config import load_config
from qmon.streaming.spark import DEFAULT_PACKAGES
from tests.conftest import ROOT

MANIFEST = ROOT / "deploy" / "kubernetes" / "qmon.yaml"
#: the operator's schema of a SparkApplication (source and release in the file's opening comment)
SCHEMA = ROOT / "tests" / "fixtures" / "sparkapplication-v1beta2.schema.yaml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"


@pytest.mark.timeout(180)
def test_make_dist_packs_an_environment_whose_python_runs_qmon_from_its_own_files(tmp_path, qmon_wheel):
    """``make dist``'s script, on the wheel alone (``--no-deps``: installing and packing the dependencies takes a
    minute or more, too long for the suite), writes an archive with ``bin/python`` and qmon's package, installed from
    the wheel; unpacked elsewhere, as Spark unpacks ``--archives …#environment``, its python finds qmon in its own
    files and prints the application a driver runs."""
    dist = tmp_path / "dist"
    archive = dist / "qmon-env.tar.gz"
    subprocess.run(
        [sys.executable, str(ROOT / "deploy" / "pack_env.py"), str(qmon_wheel), str(archive), "--no-deps"], check=True
    )

    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
        python = tar.getmember("bin/python")
    assert python.issym() or python.isfile()
    site = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
    assert {f"{site}/qmon/app/submit.py", f"{site}/qmon/avro/QueueActivity.avsc", "pyvenv.cfg"} <= names
    assert not [n for n in names if n.endswith(".pth") or "__editable__" in n]  # not an editable install

    unpacked = tmp_path / "executor" / "environment"
    unpacked.mkdir(parents=True)
    subprocess.run(["tar", "-xzf", str(archive), "-C", str(unpacked)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    ran = subprocess.run(
        ["./environment/bin/python", "-m", "qmon.app.submit"],
        cwd=unpacked.parent,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(ran.stdout.strip()) == unpacked / site / "qmon" / "app" / "submit.py"
    assert f"--packages {','.join(DEFAULT_PACKAGES)}" in ran.stderr


# ---------------------------------------------------------------- Kubernetes


def _manifest() -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(MANIFEST.read_text()) if doc}


def _strict(schema: Any) -> Any:
    """``schema`` with every object that names its properties closed to others: the API server drops a field its
    schema does not name (a misspelt one silently), so here an unknown field is an error."""
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: ({n: _strict(p) for n, p in v.items()} if k == "properties" else _strict(v)) for k, v in schema.items()}
    if "properties" in out and "additionalProperties" not in out:
        if not out.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    return out


def _errors(app: dict[str, Any]) -> list[str]:
    from jsonschema import Draft4Validator

    schema = yaml.load(SCHEMA.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    validator = Draft4Validator(_strict(schema))
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(app)]


def test_the_spark_application_is_valid_against_the_operators_schema():
    app = _manifest()["SparkApplication"]
    assert app["apiVersion"] == "sparkoperator.k8s.io/v1beta2"
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", app["metadata"]["name"])
    assert not _errors(app), _errors(app)
    misspelt = copy.deepcopy(app)
    misspelt["spec"]["driver"]["memroy"] = misspelt["spec"]["driver"].pop("memory")
    assert any("memroy" in e for e in _errors(misspelt))  # (the check sees what the API server would drop)


def _dockerfile_env() -> dict[str, str]:
    return dict(re.findall(r"\b([A-Z_]+)=(\S+)", DOCKERFILE.read_text()))


def test_the_spark_application_runs_the_image_and_the_application_of_docker_dockerfile():
    dockerfile, env = DOCKERFILE.read_text(), _dockerfile_env()
    (python,) = set(re.findall(r"(?m)^FROM python:(\d+\.\d+)-", dockerfile))
    site = f"/usr/local/lib/python{python}/site-packages"
    inside = Path(submit.__file__).resolve().relative_to(Path(qmon.__file__).resolve().parents[1])
    assert env["QMON_SUBMIT"] == f"{site}/{inside.as_posix()}" and env["SPARK_HOME"] == f"{site}/pyspark"
    assert 'test "$(python -m qmon.app.submit 2>/dev/null)" = "$QMON_SUBMIT"' in dockerfile  # checked at build
    assert "COPY docker/entrypoint.sh /usr/local/bin/qmon-entrypoint" in dockerfile
    assert 'ENTRYPOINT ["qmon-entrypoint"]' in dockerfile

    spec = _manifest()["SparkApplication"]["spec"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (pyspark,) = [d.split("==")[1] for d in project["dependencies"] if d.startswith("pyspark")]
    assert (spec["type"], spec["mode"]) == ("Python", "cluster")
    assert spec["mainApplicationFile"] == f"local://{env['QMON_SUBMIT']}"
    repository, tag = spec["image"].rsplit(":", 1)
    assert repository.rsplit("/", 1)[-1] == "qmon" and tag == project["version"]
    assert spec["sparkVersion"] == pyspark
    assert spec["deps"]["packages"] == list(DEFAULT_PACKAGES)


def test_the_spark_application_runs_qmon_run_on_the_shared_checkpoint_with_its_configuration(tmp_path):
    docs = _manifest()
    spec = docs["SparkApplication"]["spec"]
    args = parser().parse_args(spec["arguments"])
    assert args.func.__name__ == "cmd_run"
    assert args.master is None  # spark-submit's (the operator's) master applies

    volumes = {v["name"]: v for v in spec["volumes"]}
    driver = {m["name"]: m["mountPath"] for m in spec["driver"]["volumeMounts"]}
    executor = {m["name"]: m["mountPath"] for m in spec["executor"]["volumeMounts"]}
    (shared,) = [n for n, v in volumes.items() if "persistentVolumeClaim" in v]
    assert driver[shared] == executor[shared] and args.checkpoint.startswith(driver[shared] + "/")
    claim = docs["PersistentVolumeClaim"]
    assert volumes[shared]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert "ReadWriteMany" in claim["spec"]["accessModes"]  # pods on any node write it

    (config,) = [n for n, v in volumes.items() if "configMap" in v]
    configmap = docs["ConfigMap"]
    assert volumes[config]["configMap"]["name"] == configmap["metadata"]["name"]
    directory, name = args.config.rsplit("/", 1)
    assert driver[config] == directory and name in configmap["data"]
    (tmp_path / name).write_text(configmap["data"][name])
    loaded = load_config(tmp_path / name)
    assert loaded.mq_trace.enabled in (True, False)  # auto reads only a local checkpoint
    assert loaded.job.master is None
    assert spec["driver"]["serviceAccount"]


def test_the_cluster_guide_gives_the_image_application_and_packages_of_the_manifest():
    guide = (ROOT / "docs" / "guides" / "cluster.md").read_text()
    spec = _manifest()["SparkApplication"]["spec"]
    assert spec["mainApplicationFile"] in guide and spec["image"] in guide
    commands = "".join(re.findall(r"```bash\n(.*?)```", guide, re.S))
    given = re.findall(r"--packages (\S+)", commands)
    assert len(given) >= 3 and all(p.split(",") == list(DEFAULT_PACKAGES) for p in given), given


# ---------------------------------------------------------------- the image's entry point


def _fake(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def _entrypoint(tmp_path: Path, *args: str, **env: str) -> list[str]:
    """What the entry point ends up running, each argument a line: the programs it may run print themselves."""
    bin_ = tmp_path / "bin"
    _fake(bin_ / "tini", 'while [ "$1" != -- ]; do shift; done; shift; exec "$@"\n')  # (tini -s -- COMMAND)
    for program in (bin_ / "qmon", tmp_path / "spark" / "bin" / "spark-submit", tmp_path / "jdk" / "bin" / "java"):
        _fake(program, 'printf "%s\\n" "$0" "$@"\n')
    base = {"PATH": f"{bin_}:/usr/bin:/bin", "SPARK_HOME": str(tmp_path / "spark"), "JAVA_HOME": str(tmp_path / "jdk")}
    ran = subprocess.run(
        ["bash", str(ENTRYPOINT), *args], env={**base, **env}, cwd=tmp_path, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.splitlines()


def test_the_image_runs_qmon_and_spark_on_kubernetes_driver_and_executor_containers(tmp_path):
    assert _entrypoint(tmp_path, "run", "--bootstrap", "kafka:9092") == [
        str(tmp_path / "bin" / "qmon"),
        "run",
        "--bootstrap",
        "kafka:9092",
    ]

    spark_args = ["--properties-file", "/opt/spark/conf/spark.properties", "local:///app.py", "run"]
    driver = _entrypoint(tmp_path, "driver", *spark_args, SPARK_DRIVER_BIND_ADDRESS="192.0.2.7")
    assert driver[0] == str(tmp_path / "spark" / "bin" / "spark-submit")
    assert driver[1:5] == [
        "--conf",
        "spark.driver.bindAddress=192.0.2.7",
        "--conf",
        "spark.executorEnv.SPARK_DRIVER_POD_IP=192.0.2.7",
    ]
    assert driver[5:] == ["--deploy-mode", "client", *spark_args]

    executor = _entrypoint(
        tmp_path,
        "executor",
        SPARK_JAVA_OPT_10="-Dten",
        SPARK_JAVA_OPT_2="-Dtwo=a b",
        SPARK_JAVA_OPT_0="-Dzero",
        SPARK_EXECUTOR_MEMORY="2g",
        SPARK_CONF_DIR="/opt/spark/conf",
        SPARK_DRIVER_URL="spark://CoarseGrainedScheduler@driver-svc:7078",
        SPARK_EXECUTOR_ID="3",
        SPARK_EXECUTOR_CORES="1",
        SPARK_APPLICATION_ID="spark-1",
        SPARK_EXECUTOR_POD_IP="192.0.2.8",
        SPARK_RESOURCE_PROFILE_ID="0",
        SPARK_EXECUTOR_POD_NAME="qmon-exec-3",
    )
    assert executor[0] == str(tmp_path / "jdk" / "bin" / "java")
    assert executor[1:6] == ["-Dzero", "-Dtwo=a b", "-Dten", "-Xms2g", "-Xmx2g"]
    assert executor[6:8] == ["-cp", f"/opt/spark/conf:{tmp_path}/spark/jars/*:{tmp_path}"]
    backend = executor[8:]
    assert backend[0] == "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend"
    assert dict(zip(backend[1::2], backend[2::2], strict=True)) == {
        "--driver-url": "spark://CoarseGrainedScheduler@driver-svc:7078",
        "--executor-id": "3",
        "--cores": "1",
        "--app-id": "spark-1",
        "--hostname": "192.0.2.8",
        "--resourceProfileId": "0",
        "--podName": "qmon-exec-3",
    }


def test_the_packed_environment_leaves_out_pysparks_copy_of_sparks_jars_and_nothing_else(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("pack_env", ROOT / "deploy" / "pack_env.py")
    assert spec is not None and spec.loader is not None
    pack_env = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pack_env)
    site = tmp_path / "env" / "lib" / "python3.11" / "site-packages"
    for name, size in (("pyspark/jars/spark-core.jar", 300), ("pyspark/jars/sub/x.jar", 20), ("pyspark/sql/a.py", 7)):
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_bytes(b"x" * size)
    (site / "pyarrow").mkdir()
    (site / "pyarrow" / "jars").mkdir()
    assert pack_env.drop_spark_jars(tmp_path / "env") == 320
    assert not (site / "pyspark" / "jars").exists()
    assert (site / "pyspark" / "sql" / "a.py").exists() and (site / "pyarrow" / "jars").is_dir()
    assert pack_env.drop_spark_jars(tmp_path / "env") == 0
