"""Which Apicurio Registry release runs on which Java here, and how its distribution is started (without
starting it; the registry itself is started by the session fixture for test_registry.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qmon.devservers import schema_registry as registry_server
from qmon.devservers.schema_registry import RELEASES, LocalRegistry, RegistryServerError, choose


@pytest.fixture(autouse=True)
def fresh_choice(monkeypatch: pytest.MonkeyPatch):
    choose.cache_clear()
    monkeypatch.delenv("QMON_REGISTRY_VERSION", raising=False)
    yield
    choose.cache_clear()


def fake_java(path: Path, version_line: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    path.chmod(0o755)
    return str(path)


def javas(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **majors: str) -> dict[str, str]:
    paths = {name: fake_java(tmp_path / name / "bin" / "java", line) for name, line in majors.items()}
    monkeypatch.setattr(registry_server, "java_candidates", lambda: list(paths.values()))
    return paths


def test_java_versions_are_read_old_and_new(tmp_path: Path):
    assert registry_server.java_major(fake_java(tmp_path / "a", 'openjdk version "17.0.15" 2025-04-15')) == 17
    assert registry_server.java_major(fake_java(tmp_path / "b", 'openjdk version "25.0.3" 2026-04-21 LTS')) == 25
    assert registry_server.java_major(fake_java(tmp_path / "c", 'java version "1.8.0_402"')) == 8
    assert registry_server.java_major(fake_java(tmp_path / "d", "no version here")) is None
    assert registry_server.java_major(str(tmp_path / "missing")) is None


def test_the_newest_release_a_java_here_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    paths = javas(monkeypatch, tmp_path, j17='openjdk version "17.0.15"', j25='openjdk version "25.0.3"')
    assert choose() == (RELEASES[0], paths["j25"])
    choose.cache_clear()
    del paths["j25"]
    assert choose() == (RELEASES[-1], paths["j17"])
    assert RELEASES[-1].java == 17


def test_a_named_release_and_no_java_for_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    paths = javas(monkeypatch, tmp_path, j17='openjdk version "17.0.15"')
    monkeypatch.setenv("QMON_REGISTRY_VERSION", "3.0.9")
    assert choose() == (RELEASES[-1], paths["j17"])
    with pytest.raises(RegistryServerError, match=r"no Java here runs Apicurio Registry \(Java 21\+ for 3.3.3\)"):
        choose("3.3.3")
    with pytest.raises(RegistryServerError, match="not one qmon knows how to run"):
        choose("1.0.0")


def test_no_java_at_all(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(registry_server, "java_candidates", lambda: [])
    with pytest.raises(RegistryServerError, match="Javas found: none"):
        choose()


def test_the_launcher_of_either_layout(tmp_path: Path):
    assert registry_server._launcher(tmp_path) is None
    (tmp_path / "apicurio-registry-app-3.0.9-runner.jar").touch()
    assert registry_server._launcher(tmp_path) == tmp_path / "apicurio-registry-app-3.0.9-runner.jar"
    (tmp_path / "quarkus-run.jar").touch()
    assert registry_server._launcher(tmp_path) == tmp_path / "quarkus-run.jar"


def test_the_command_listens_on_loopback_and_keeps_off_the_default_ports():
    server = LocalRegistry(port=18081)
    command = server.command("/usr/bin/java", Path("/x/quarkus-run.jar"), 18091)
    assert "-Dquarkus.http.host=127.0.0.1" in command and "-Dquarkus.http.port=18081" in command
    assert "-Dquarkus.management.host=127.0.0.1" in command and "-Dquarkus.management.port=18091" in command
    assert command[-2:] == ["-jar", "/x/quarkus-run.jar"]
    assert server.url == "http://127.0.0.1:18081/apis/ccompat/v7"


def test_the_machines_javas_are_listed_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    java = fake_java(tmp_path / "jdk" / "bin" / "java", 'openjdk version "17"')
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.setenv("PATH", f"{tmp_path / 'jdk' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    found = registry_server.java_candidates()
    assert found[0] == java and found.count(java) == 1
