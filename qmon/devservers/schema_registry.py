"""A real schema registry on loopback: Apicurio Registry, which serves Confluent's Schema Registry REST API.

The registry is Apicurio Registry's own distribution from Maven Central
(``io.apicurio:apicurio-registry-app:<version>:tar.gz:all``, a Quarkus application ready to run): Maven
fetches it into the local repository (``~/.m2``) once, checking Maven Central's SHA-1 (``-C``); qmon checks
the SHA-256 it pins below and unpacks it into its cache (``~/.cache/qmon``).  It keeps its schemas in an
in-memory H2 database, so each start is an empty registry and nothing else (no Kafka, no database server)
is needed.  Confluent's API is served under ``/apis/ccompat/v7``: that is the URL clients are given.

Apicurio 3.3 is built for Java 21; 3.0.9 runs on Java 17.  The newest release that a Java on this machine
can run is taken (``JAVA_HOME``, ``java`` on the PATH, then the JDKs in ``/usr/lib/jvm``);
``QMON_REGISTRY_VERSION`` names one.

Used by the test fixtures and ``qmon registry start``.
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from qmon.cache import cache_dir
from qmon.devservers.local import free_port, stop_group

logger = logging.getLogger(__name__)

GROUP = "io.apicurio"
ARTIFACT = "apicurio-registry-app"
#: where Apicurio serves Confluent's Schema Registry API (its "ccompat" API, version 7)
CCOMPAT_PATH = "/apis/ccompat/v7"


@dataclass(frozen=True)
class Release:
    """One Apicurio Registry release qmon knows how to run."""

    version: str
    #: the lowest Java major version it runs on
    java: int
    #: SHA-256 of ``apicurio-registry-app-<version>-all.tar.gz`` as Maven Central serves it
    sha256: str


#: newest first
RELEASES = (
    Release("3.3.3", 21, "8bc6751c76d963734224b01d5e7f84ccb3cb61c87d3bd77c36c35f10a5cbed63"),
    Release("3.0.9", 17, "2b28181501a20cbf6efcd77f9b7153908fc01f3d3a7c32024c0bd9e1b04c8a43"),
)


class RegistryServerError(RuntimeError):
    """The registry could not be fetched, unpacked or started."""


# ---------------------------------------------------------------- Java


def java_major(java: str) -> int | None:
    """The major version of the ``java`` executable at that path (``java -version``), or None."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if match is None:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major  # "1.8.0_402" is Java 8


def java_candidates() -> list[str]:
    """The Java executables to consider, in order: JAVA_HOME's, the PATH's, then /usr/lib/jvm's."""
    found: list[str] = []
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        found.append(str(Path(java_home) / "bin" / "java"))
    on_path = shutil.which("java")
    if on_path:
        found.append(on_path)
    found.extend(sorted(glob.glob("/usr/lib/jvm/*/bin/java")))
    unique: list[str] = []
    for path in found:
        if (
            Path(path).is_file()
            and os.access(path, os.X_OK)
            and os.path.realpath(path) not in map(os.path.realpath, unique)
        ):
            unique.append(path)
    return unique


@cache
def choose(version: str | None = None) -> tuple[Release, str]:
    """The release to run and the Java to run it with: ``version`` (else ``QMON_REGISTRY_VERSION``) or the
    newest release that a Java here can run."""
    version = version or os.environ.get("QMON_REGISTRY_VERSION")
    releases = [r for r in RELEASES if r.version == version] if version else list(RELEASES)
    if not releases:
        known = ", ".join(r.version for r in RELEASES)
        raise RegistryServerError(f"Apicurio Registry {version} is not one qmon knows how to run ({known})")
    javas = [(path, java_major(path)) for path in java_candidates()]
    for release in releases:
        for path, major in javas:
            if major is not None and major >= release.java:
                return release, path
    seen = ", ".join(f"{path} ({major or '?'})" for path, major in javas) or "none"
    need = " or ".join(f"Java {r.java}+ for {r.version}" for r in releases)
    raise RegistryServerError(f"no Java here runs Apicurio Registry ({need}); Javas found: {seen}")


# ---------------------------------------------------------------- the distribution


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _launcher(home: Path) -> Path | None:
    """The jar that starts the application: Quarkus' fast-jar ``quarkus-run.jar`` (3.1 and later) or the
    legacy ``*-runner.jar`` (3.0)."""
    fast = home / "quarkus-run.jar"
    if fast.is_file():
        return fast
    runners = sorted(home.glob("*-runner.jar"))
    return runners[0] if runners else None


def distribution(release: Release) -> Path:
    """The unpacked distribution's launcher jar (fetched with Maven and unpacked on the first call)."""
    home = cache_dir() / f"apicurio-registry-{release.version}"
    launcher = _launcher(home)
    if launcher is not None and (home / ".complete").exists():
        return launcher
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RegistryServerError(
            "Maven (mvn) is not on PATH: qmon fetches Apicurio Registry from Maven Central with it. "
            "Install Maven, or give an existing registry's URL."
        )
    coordinates = f"{GROUP}:{ARTIFACT}:{release.version}:tar.gz:all"
    with tempfile.TemporaryDirectory(prefix="qmon-apicurio-", dir=cache_dir()) as tmp:
        logger.info("fetching Apicurio Registry %s from Maven Central (first run only)", release.version)
        proc = subprocess.run(
            [mvn, "-q", "-B", "-C", "dependency:copy", f"-Dartifact={coordinates}", f"-DoutputDirectory={tmp}"],
            cwd=tmp,
            capture_output=True,
            text=True,
        )
        archives = list(Path(tmp).glob("*.tar.gz"))
        if proc.returncode != 0 or len(archives) != 1:
            raise RegistryServerError(f"Maven could not fetch {coordinates}: {(proc.stdout + proc.stderr)[-2000:]}")
        digest = _sha256(archives[0])
        if digest != release.sha256:
            raise RegistryServerError(
                f"{coordinates} has SHA-256 {digest}, not the {release.sha256} qmon expects: not unpacked"
            )
        unpacked = Path(tmp) / "unpacked"
        with tarfile.open(archives[0]) as archive:
            archive.extractall(unpacked, filter="data")
        if _launcher(unpacked) is None:
            raise RegistryServerError(f"{coordinates} holds neither quarkus-run.jar nor a *-runner.jar")
        shutil.rmtree(home, ignore_errors=True)
        unpacked.rename(home)
    (home / ".complete").touch()
    launcher = _launcher(home)
    assert launcher is not None
    return launcher


# ---------------------------------------------------------------- the server


@dataclass
class LocalRegistry:
    """One Apicurio Registry on loopback, its schemas in memory (each start is an empty registry)."""

    workdir: Path | None = None
    port: int = 0
    host: str = "127.0.0.1"
    heap: str = "256m"
    #: an Apicurio release from ``RELEASES``; default: the newest a Java here runs (see ``choose``)
    version: str | None = None
    _proc: subprocess.Popen[bytes] | None = None
    _owns_workdir: bool = False

    @property
    def url(self) -> str:
        """The base URL of Confluent's Schema Registry API (what clients and ``kafka.schema_registry_url``
        take)."""
        return f"http://{self.host}:{self.port}{CCOMPAT_PATH}"

    @property
    def log_path(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "registry.log"

    def command(self, java: str, launcher: Path, management_port: int) -> list[str]:
        return [
            java,
            f"-Xmx{self.heap}",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            f"-Dquarkus.http.host={self.host}",
            f"-Dquarkus.http.port={self.port}",
            # health and metrics: a port of their own (9000 by default), on loopback
            "-Dquarkus.management.host=127.0.0.1",
            f"-Dquarkus.management.port={management_port}",
            "-Dquarkus.otel.sdk.disabled=true",
            '-Dquarkus.log.category."io.quarkus.http.access-log".level=WARN',
            "-jar",
            str(launcher),
        ]

    def start(self, timeout: float = 120.0) -> LocalRegistry:
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="qmon-registry-"))
            self._owns_workdir = True
        self.workdir.mkdir(parents=True, exist_ok=True)
        release, java = choose(self.version)
        self.version = release.version
        launcher = distribution(release)
        if not self.port:
            self.port = free_port()
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the process
        self._proc = subprocess.Popen(
            self.command(java, launcher, free_port()),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.workdir,
            start_new_session=True,
        )
        log.close()
        self._wait_ready(timeout)
        logger.info("Apicurio Registry %s ready on %s (log: %s)", release.version, self.url, self.log_path)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-3000:]
                raise RegistryServerError(f"the schema registry exited with {self._proc.returncode}:\n{tail}")
            if self._answers():
                return
            time.sleep(0.3)
        self.stop()
        raise RegistryServerError(f"the schema registry did not start within {timeout:.0f}s; see {self.log_path}")

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/subjects", timeout=2) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the registry (SIGTERM, then SIGKILL); its schemas go with it."""
        if self._proc is not None:
            stop_group(self._proc, timeout)
        self._proc = None

    def remove(self) -> None:
        self.stop()
        if self._owns_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> LocalRegistry:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
