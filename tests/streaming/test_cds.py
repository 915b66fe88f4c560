"""Spark's JVM from a class data sharing archive (``qmon.streaming.cds``): when one is made, kept, used,
checked and removed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qmon.streaming import cds


@pytest.fixture(autouse=True)
def _no_choice_made(monkeypatch) -> None:  # noqa: ANN001 - (the developer's own settings do not count)
    for name in (cds.ENV, *cds.OPTION_VARIABLES):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def java(tmp_path: Path) -> str:
    fake = tmp_path / "java"  # (only hashed into the key: the real one is checked by ``usable``)
    fake.write_text("")
    return str(fake)


def _usable(result: bool):  # noqa: ANN202
    return lambda *a, **k: result


def test_off_when_the_user_says_so_or_chose_already(monkeypatch, tmp_path: Path, java: str) -> None:  # noqa: ANN001
    monkeypatch.setenv(cds.ENV, "off")
    assert cds.plan("", cache=tmp_path, java=java) is None
    monkeypatch.delenv(cds.ENV)
    for chosen in ("-Xshare:off", "-XX:SharedArchiveFile=/a.jsa", "-XX:ArchiveClassesAtExit=/b.jsa"):
        assert cds.plan(f"-Xmx2g {chosen}", cache=tmp_path, java=java) is None
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-Xshare:off")
    assert cds.plan("", cache=tmp_path, java=java) is None, "options from the environment count"
    monkeypatch.delenv("JAVA_TOOL_OPTIONS")
    monkeypatch.setattr(cds, "java_binary", lambda: None)
    assert cds.plan("", cache=tmp_path) is None


def test_a_value_of_the_switch_it_does_not_know_is_said_and_means_on(monkeypatch, caplog) -> None:  # noqa: ANN001
    for value, on in (("off", False), ("0", False), ("No", False), ("", True), ("on", True), ("1", True)):
        monkeypatch.setenv(cds.ENV, value)
        assert cds.wanted() is on, value
    assert not caplog.records
    monkeypatch.setenv(cds.ENV, "maybe")
    assert cds.wanted()
    assert any(cds.ENV in r.getMessage() and "'maybe'" in r.getMessage() for r in caplog.records)


def test_a_cache_it_cannot_use_means_no_archive_and_no_error(tmp_path: Path, java: str) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("")
    assert cds.plan("", cache=a_file, java=java) is None  # (cds/ cannot be made under a file)
    quoted = tmp_path / "o'neil cache"  # (Spark's launcher would split or unquote it)
    assert cds.plan("", cache=quoted, java=java) is None
    assert not quoted.exists()


def test_a_relative_cache_is_made_absolute(monkeypatch, tmp_path: Path, java: str) -> None:  # noqa: ANN001
    monkeypatch.chdir(tmp_path)
    making = cds.plan("", cache=Path("rel"), java=java)
    assert making is not None and making.part is not None and making.part.is_absolute()
    assert making.part.parent == (tmp_path / "rel" / "cds").resolve()


def test_only_a_caller_that_shuts_down_makes_one_and_a_failure_is_not_retried_for_days(
    monkeypatch,  # noqa: ANN001
    tmp_path: Path,
    java: str,
) -> None:
    assert cds.plan("", cache=tmp_path, java=java, make=False) is None
    making = cds.plan("", cache=tmp_path, java=java, heap="2g")
    assert making is not None and making.part is not None and making.heap == "2g"
    making.class_path = "/cp"

    making.part.write_bytes(b"x")
    assert not cds.finish(making, exit_code=None, java=java), "not seen to exit: no verdict"
    assert not making.part.exists() and not making.path.with_suffix(".failed").exists()

    making.part.write_bytes(b"x")
    assert not cds.finish(making, exit_code=1, java=java)
    failed = making.path.with_suffix(".failed")
    assert "exited with 1" in failed.read_text()
    assert cds.plan("", cache=tmp_path, java=java) is None, "no new try at once"
    old = time.time() - (cds.RETRY_DAYS + 1) * 86400
    os.utime(failed, (old, old))
    again = cds.plan("", cache=tmp_path, java=java)
    assert again is not None and again.making

    seen: list[str | None] = []

    def usable(java: str, archive: Path, cp: str, heap: str | None = None) -> bool:
        seen.append(heap)
        return True

    monkeypatch.setattr(cds, "usable", usable)
    again.class_path = "/cp"
    assert again.part is not None
    again.part.write_bytes(b"x")
    assert cds.finish(again, exit_code=0, java=java) and not failed.exists()
    assert seen == [None]  # (plan gave no heap this time)


def test_the_session_adds_the_archives_options_to_the_drivers(monkeypatch) -> None:  # noqa: ANN001
    from pyspark import SparkContext

    from qmon.streaming import spark

    monkeypatch.setattr(SparkContext, "_gateway", None)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    calls: list[tuple[str, bool, object]] = []

    def plan(given: str, make: bool = True, heap: object = None) -> cds.Archive:
        calls.append((given, make, heap))
        return cds.Archive(Path("/c/cds/spark-k.jsa"))

    monkeypatch.setattr(cds, "plan", plan)
    options = {"spark.driver.extraJavaOptions": "-Xss4m", "spark.driver.memory": "2g"}
    assert spark._class_data_sharing(options, make=False) is not None
    assert calls == [("-Xss4m ", False, "2g")]
    assert options["spark.driver.extraJavaOptions"] == "-Xss4m -XX:SharedArchiveFile=/c/cds/spark-k.jsa -Xlog:cds*=off"
    monkeypatch.setattr(SparkContext, "_gateway", object())
    assert spark._class_data_sharing(options, make=True) is None, "a JVM runs already: nothing to choose"


def test_the_first_jvm_makes_the_archive_which_is_kept_only_if_it_exited_cleanly_and_maps(
    monkeypatch,  # noqa: ANN001
    tmp_path: Path,
    java: str,
) -> None:
    making = cds.plan("", cache=tmp_path, java=java)
    assert making is not None and making.making and making.part is not None
    assert re.fullmatch(rf"spark-[0-9a-f]{{16}}\.{os.getpid()}-[0-9a-f]{{8}}\.part", making.part.name), making.part
    assert f"-XX:ArchiveClassesAtExit={making.part}" in making.java_options()
    assert "-Xlog:cds*=off" in making.java_options()
    making.class_path = "/spark/jars/a.jar"

    making.part.write_bytes(b"x" * 100)  # (what the JVM writes when it exits)
    monkeypatch.setattr(cds, "usable", _usable(True))
    assert not cds.finish(making, exit_code=1, java=java), "a JVM that failed: its part is not kept"
    assert not making.part.exists() and not making.path.exists()

    making.part.write_bytes(b"x" * 100)
    monkeypatch.setattr(cds, "usable", _usable(False))
    assert not cds.finish(making, exit_code=0, java=java), "an archive a JVM refuses is not kept"
    assert not making.part.exists() and not making.path.exists()

    making.part.write_bytes(b"x" * 100)
    monkeypatch.setattr(cds, "usable", _usable(True))
    assert cds.finish(making, exit_code=0, java=java)
    assert making.path.read_bytes() == b"x" * 100 and not making.part.exists()
    assert json.loads(making.path.with_suffix(".json").read_text()) == {"size": 100, "class_path": "/spark/jars/a.jar"}

    using = cds.plan("", cache=tmp_path, java=java)
    assert using is not None and not using.making and using.path == making.path
    assert f"-XX:SharedArchiveFile={making.path}" in using.java_options()


def test_an_archive_that_changed_or_that_a_jvm_refuses_is_made_again(
    monkeypatch,  # noqa: ANN001
    tmp_path: Path,
    java: str,
) -> None:
    monkeypatch.setattr(cds, "usable", _usable(True))
    first = cds.plan("", cache=tmp_path, java=java)
    assert first is not None and first.part is not None
    first.class_path = "/cp"
    first.part.write_bytes(b"x" * 100)
    assert cds.finish(first, exit_code=0, java=java)

    with first.path.open("r+b") as f:  # (truncated: mapping it would crash the JVM)
        f.truncate(50)
    again = cds.plan("", cache=tmp_path, java=java)
    assert again is not None and again.making and not first.path.exists()

    again.class_path = "/cp"
    assert again.part is not None
    again.part.write_bytes(b"y" * 10)
    assert cds.finish(again, exit_code=0, java=java)
    monkeypatch.setattr(cds, "usable", _usable(False))
    refused = cds.plan("", cache=tmp_path, java=java)
    assert refused is not None and refused.making and not again.path.exists()


def test_tidy_removes_dead_writers_parts_and_long_unused_archives(tmp_path: Path) -> None:
    folder = tmp_path / "cds"
    folder.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = folder / f"spark-aaaa.{dead.pid}-0a0b0c0d.part"
    busy = folder / f"spark-aaaa.{os.getppid()}-0a0b0c0d.part"  # (a live process: another qmon making it)
    old, recent, orphan = folder / "spark-old.jsa", folder / "spark-recent.jsa", folder / "spark-orphan.jsa"
    for p in (gone, busy, old, recent, orphan):
        p.write_bytes(b"x")
    now = time.time()
    for p, age_days in ((old, cds.UNUSED_DAYS + 1), (recent, 1)):
        p.with_suffix(".json").write_text("{}")
        os.utime(p.with_suffix(".json"), (now - age_days * 86400,) * 2)
    cds._tidy(folder, keep="aaaa", now=now)
    assert sorted(p.name for p in folder.iterdir()) == sorted([busy.name, "spark-recent.jsa", "spark-recent.json"])


@pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK")
def test_a_jvm_refuses_a_truncated_or_missing_archive_instead_of_crashing_on_it(tmp_path: Path) -> None:
    java = cds.java_binary()
    assert java is not None
    bad = tmp_path / "bad.jsa"
    bad.write_bytes(b"\xa8\xba\x0b\xf0" + b"\0" * 4096)  # (a dynamic archive's magic, then nothing)
    assert not cds.usable(java, bad, str(tmp_path))
    assert not cds.usable(java, tmp_path / "missing.jsa", str(tmp_path))


@pytest.mark.spark
def test_the_next_spark_jvm_maps_the_archive_the_first_one_made(tmp_path: Path) -> None:
    # in processes of their own (this test process has its JVM already), with a cache of their own
    code = (
        "import os, sys\n"
        "from qmon.streaming.spark import session, shutdown\n"
        "s = session('local[1]', 'qmon-cds-test', make_class_archive=True)\n"
        "pid = s._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getPid()\n"
        "maps = open(f'/proc/{pid}/maps').read()\n"
        "print('mapped:', any('/cds/spark-' in line and line.endswith('.jsa') for line in maps.splitlines()))\n"
        "shutdown(s)\n"
    )
    env = {**os.environ, "QMON_CACHE": str(tmp_path / "cache")}
    jars = Path(os.environ.get("QMON_CACHE") or Path.home() / ".cache" / "qmon") / "jars"
    if jars.is_dir():  # (the checkpoint jar qmon fetched already: not again from Maven Central)
        shutil.copytree(jars, tmp_path / "cache" / "jars")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)]
    assert runs[0].returncode == 0, runs[0].stderr[-3000:]
    archives = list((tmp_path / "cache" / "cds").glob("spark-*.jsa"))
    assert len(archives) == 1 and archives[0].with_suffix(".json").is_file()
    runs.append(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300))
    assert runs[1].returncode == 0, runs[1].stderr[-3000:]
    assert "mapped: False" in runs[0].stdout, "the first JVM makes the archive: it has none to map"
    assert "mapped: True" in runs[1].stdout, runs[1].stdout

    # cut short (a disk that filled up, a copy that stopped): a JVM would crash mapping it; the check refuses it
    meta = json.loads(archives[0].with_suffix(".json").read_text())
    java = cds.java_binary()
    assert java is not None and cds.usable(java, archives[0], meta["class_path"])
    cut = tmp_path / "cut.jsa"
    cut.write_bytes(archives[0].read_bytes()[: archives[0].stat().st_size // 3])
    assert not cds.usable(java, cut, meta["class_path"])
    assert not list(tmp_path.glob("hs_err*")) and not list(Path.cwd().glob("hs_err*"))
