"""A real YARN cluster on this machine: Hadoop's MiniYARNCluster, one ResourceManager and N NodeManagers in one JVM
(a development server for the tests: the job never imports ``qmon.devservers``).

The cluster is Hadoop's own test cluster, as Spark's YARN tests run it: ``org.apache.hadoop:hadoop-client-minicluster``
from Maven Central, with the shaded client jars it runs on and what the ResourceManager loads besides (Bouncy Castle for
its web proxy's certificate authority, log4j 1's API through reload4j).  Maven resolves them into the local repository
(``~/.m2``) once and the class path is cached, as for the Kafka broker; a small launcher (``QmonMiniYarn.java``, beside
this module) is compiled against it with ``javac`` into the same cache.

The launcher starts the cluster on ``localhost`` with ports the kernel picks, waits, as Spark's BaseYarnClusterSuite
does, for the ResourceManager to have written the ports it bound into its configuration and for every NodeManager to
register, and prints the addresses; :class:`YarnCluster` writes them into ``yarn-site.xml`` (and ``core-site.xml``:
the local file system is the default one) in its ``conf_dir``, for ``HADOOP_CONF_DIR``.  Containers run as this user
with YARN's default container executor, in the NodeManagers' directories under ``workdir/target/<name>``; their logs
stay there (``container_logs``).

While it runs, :class:`YarnCluster` asks the launcher (on its standard input) for the nodes and their containers,
the applications and the node of each one's application master, and stops one NodeManager (its containers are killed and
its heartbeats end: the ResourceManager finds the node lost 10 s later, as when a host fails) or kills an application.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO
from xml.sax.saxutils import escape

from qmon.cache import cache_dir
from qmon.devservers.local import ServerError

logger = logging.getLogger(__name__)

#: the Hadoop release of PySpark 4.3's jars (hadoop-client-api and hadoop-client-runtime 3.5.0)
HADOOP_VERSION = os.environ.get("QMON_HADOOP_VERSION", "3.5.0")
#: the launcher's source, beside this module
LAUNCHER_SOURCE = Path(__file__).with_name("QmonMiniYarn.java")
LAUNCHER_CLASS = "QmonMiniYarn"
#: what each line of the launcher's own output starts with
PREFIX = "qmon-yarn "
#: the smallest container YARN hands out; Spark's requests (heap plus overhead) are rounded up to a multiple of it
MIN_ALLOCATION_MB = 256


class YarnError(ServerError):
    """The YARN cluster could not be resolved, built, started or asked something."""


_POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>qmon</groupId>
  <artifactId>qmon-yarn-cluster</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.hadoop</groupId>
      <artifactId>hadoop-client-minicluster</artifactId>
      <version>{hadoop}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.hadoop</groupId>
      <artifactId>hadoop-client-api</artifactId>
      <version>{hadoop}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.hadoop</groupId>
      <artifactId>hadoop-client-runtime</artifactId>
      <version>{hadoop}</version>
    </dependency>
    <!-- the ResourceManager's web proxy makes its certificate authority with Bouncy Castle, which the shaded
         minicluster jar leaves out (Hadoop 3.5.0 builds with 1.82) -->
    <dependency>
      <groupId>org.bouncycastle</groupId>
      <artifactId>bcprov-jdk18on</artifactId>
      <version>1.82</version>
    </dependency>
    <dependency>
      <groupId>org.bouncycastle</groupId>
      <artifactId>bcpkix-jdk18on</artifactId>
      <version>1.82</version>
    </dependency>
    <!-- MiniYARNCluster finds its test directory with Hadoop's GenericTestUtils, which asserts with JUnit 5's API -->
    <dependency>
      <groupId>org.junit.jupiter</groupId>
      <artifactId>junit-jupiter-api</artifactId>
      <version>5.14.1</version>
    </dependency>
    <!-- the scheduler calls log4j 1's API (org.apache.log4j.Logger); reload4j is what Hadoop 3.5.0 ships, and
         slf4j-reload4j sends Hadoop's slf4j logging to it -->
    <dependency>
      <groupId>ch.qos.reload4j</groupId>
      <artifactId>reload4j</artifactId>
      <version>1.2.22</version>
    </dependency>
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-reload4j</artifactId>
      <version>1.7.36</version>
    </dependency>
  </dependencies>
</project>
"""

_LOG4J = """log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=%d{{ISO8601}} %p %c{{1}}: %m%n
log4j.logger.org.apache.hadoop.metrics2=WARN
log4j.logger.org.apache.hadoop.ipc=WARN
log4j.logger.org.apache.hadoop.http=WARN
log4j.logger.org.apache.hadoop.yarn.webapp=WARN
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
"""


def _java_home() -> Path:
    """The Java home the cluster and its containers run with: ``JAVA_HOME``, else that of ``java`` on the PATH.
    YARN starts containers with ``$JAVA_HOME/bin/java``, from the NodeManager's environment."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return Path(home)
    java = shutil.which("java")
    if java is None:
        raise YarnError("java is not on PATH and JAVA_HOME is not set: the YARN cluster needs Java 17 or later")
    return Path(os.path.realpath(java)).parent.parent


def cluster_classpath(version: str = HADOOP_VERSION) -> str:
    """Resolve the cluster's class path with Maven (cached after the first call)."""
    work = cache_dir() / f"yarn-{version}"
    cp_file = work / "classpath.txt"
    if cp_file.exists():
        cp = cp_file.read_text().strip()
        if cp and all(Path(p).exists() for p in cp.split(os.pathsep)):
            return cp
    mvn = shutil.which("mvn")
    if mvn is None:
        raise YarnError("Maven (mvn) is not on PATH: qmon resolves Hadoop's MiniYARNCluster from Maven Central with it")
    work.mkdir(parents=True, exist_ok=True)
    (work / "pom.xml").write_text(_POM.format(hadoop=version))
    logger.info("resolving hadoop-client-minicluster %s from Maven Central (first run only)", version)
    proc = subprocess.run(
        [mvn, "-q", "-B", "dependency:build-classpath", f"-Dmdep.outputFile={cp_file}", "-DincludeScope=runtime"],
        cwd=work,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0 or not cp_file.exists():
        message = (
            f"Maven could not resolve org.apache.hadoop:hadoop-client-minicluster:{version}: "
            f"{(proc.stdout + proc.stderr)[-2000:]}"
        )
        raise YarnError(message)
    return cp_file.read_text().strip()


def launcher_classes(classpath: str, version: str = HADOOP_VERSION) -> Path:
    """The directory of the compiled launcher, compiled with ``javac`` when its source has changed."""
    source = LAUNCHER_SOURCE.read_bytes()
    out = cache_dir() / f"yarn-{version}" / f"launcher-{hashlib.sha256(source).hexdigest()[:12]}"
    if (out / f"{LAUNCHER_CLASS}.class").exists():
        return out
    javac = _java_home() / "bin" / "javac"
    if not javac.exists():
        found = shutil.which("javac")
        if found is None:
            raise YarnError(f"javac is not at {javac} nor on PATH: a JDK compiles the YARN cluster's launcher")
        javac = Path(found)
    building = out.with_name(out.name + f".{os.getpid()}")
    building.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [str(javac), "-nowarn", "-cp", classpath, "-d", str(building), str(LAUNCHER_SOURCE)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        raise YarnError(f"javac could not compile {LAUNCHER_SOURCE.name}:\n{proc.stdout}{proc.stderr}")
    try:
        building.rename(out)
    except OSError:  # another process compiled it meanwhile
        shutil.rmtree(building, ignore_errors=True)
    return out


def cluster_conf(memory_mb: int, vcores: int, tmp_dir: Path) -> dict[str, str]:
    """The cluster's Hadoop settings: each NodeManager offers ``memory_mb`` and ``vcores``; no memory checks on the
    containers; no disk-full verdict; the capacity scheduler's one queue (hadoop-client-minicluster has no
    capacity-scheduler.xml: Spark's YARN tests set the same)."""
    return {
        "hadoop.tmp.dir": str(tmp_dir),
        "yarn.resourcemanager.hostname": "localhost",
        # MiniYARNCluster sets each NodeManager's memory from this key (4096 unless set), its vcores from YARN's own
        "yarn.minicluster.yarn.nodemanager.resource.memory-mb": str(memory_mb),
        "yarn.nodemanager.resource.memory-mb": str(memory_mb),
        "yarn.nodemanager.resource.cpu-vcores": str(vcores),
        "yarn.scheduler.minimum-allocation-mb": str(MIN_ALLOCATION_MB),
        "yarn.scheduler.maximum-allocation-mb": str(memory_mb),
        "yarn.scheduler.maximum-allocation-vcores": str(vcores),
        "yarn.nodemanager.pmem-check-enabled": "false",
        "yarn.nodemanager.vmem-check-enabled": "false",
        "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "100.0",
        "yarn.timeline-service.enabled": "false",
        # a NodeManager that stops heartbeating is lost after 10 s (YARN's default: 10 minutes), and its containers
        # reported to their application masters as lost; MiniYARNCluster's NodeManagers leave without telling the
        # ResourceManager, as a host that fails does
        "yarn.nm.liveness-monitor.expiry-interval-ms": "10000",
        "yarn.scheduler.capacity.root.queues": "default",
        "yarn.scheduler.capacity.root.default.capacity": "100",
        "yarn.scheduler.capacity.root.default.user-limit-factor": "1",
        "yarn.scheduler.capacity.root.default.maximum-capacity": "100",
        "yarn.scheduler.capacity.root.default.state": "RUNNING",
        "yarn.scheduler.capacity.root.default.acl_submit_applications": "*",
        "yarn.scheduler.capacity.root.default.acl_administer_queue": "*",
        "yarn.scheduler.capacity.node-locality-delay": "-1",
    }


def site_xml(properties: Mapping[str, str]) -> str:
    """A Hadoop configuration file (``*-site.xml``) holding ``properties``, in their order."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', "<configuration>"]
    for name, value in properties.items():
        lines.append(f"  <property><name>{escape(name)}</name><value>{escape(value)}</value></property>")
    lines.append("</configuration>")
    return "\n".join(lines) + "\n"


def client_files(addresses: Mapping[str, str]) -> dict[str, str]:
    """The files of ``HADOOP_CONF_DIR`` for a client of the cluster (spark-submit, and the application master, to which
    spark-submit ships that directory): the ResourceManager's addresses in ``yarn-site.xml``, the local file system as
    the default one in ``core-site.xml``."""
    yarn = {"yarn.resourcemanager.hostname": "localhost", **addresses}
    return {"yarn-site.xml": site_xml(yarn), "core-site.xml": site_xml({"fs.defaultFS": "file:///"})}


def spark_submit_conf(spark_home: Path, staging_dir: Path) -> dict[str, str]:
    """spark-submit's settings for this cluster, beside those of the cluster guide's command: Spark's jars named where
    they already are on this machine (``local:``: every NodeManager is here), rather than zipped and uploaded by every
    submission (PySpark's jars are some 460 MB); the staging directory on the local file system (the cluster's
    default file system)."""
    return {
        "spark.yarn.jars": f"local:{spark_home / 'jars'}/*",
        "spark.yarn.stagingDir": staging_dir.resolve().as_uri(),
    }


def parse_line(line: str) -> tuple[str, list[str]] | None:
    """One line of the launcher's output as (word, the rest split on blanks); None for a line not its own."""
    if not line.startswith(PREFIX):
        return None
    words = line[len(PREFIX) :].split()
    return (words[0], words[1:]) if words else None


@dataclass(frozen=True)
class Node:
    """One NodeManager: its index, node id (``localhost:PORT``), service state and running containers."""

    index: int
    node_id: str
    state: str
    containers: tuple[str, ...]


@dataclass(frozen=True)
class App:
    """One application the ResourceManager knows: its id, state, final status and its master's node (or "")."""

    app_id: str
    state: str
    final_status: str
    am_node: str


@dataclass
class YarnCluster:
    """One ResourceManager and ``node_managers`` NodeManagers on localhost, in one JVM under ``workdir``."""

    workdir: Path
    node_managers: int = 2
    memory_mb: int = 4096
    vcores: int = 4
    heap: str = "512m"
    name: str = "qmon-yarn"
    #: the ResourceManager's addresses, as the launcher reported them once they were bound
    addresses: dict[str, str] = field(default_factory=dict)
    #: how long the cluster took to start, in seconds
    start_seconds: float = 0.0
    _proc: subprocess.Popen[str] | None = None
    _lines: queue.Queue[str | None] = field(default_factory=queue.Queue)
    _reader: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def conf_dir(self) -> Path:
        """``HADOOP_CONF_DIR`` for spark-submit: yarn-site.xml and core-site.xml."""
        return self.workdir / "conf"

    @property
    def rm_address(self) -> str:
        """The ResourceManager's client address (``localhost:PORT``)."""
        return self.addresses["yarn.resourcemanager.address"]

    @property
    def web_address(self) -> str:
        """The ResourceManager's web UI and REST API (``localhost:PORT``)."""
        return self.addresses.get("yarn.resourcemanager.webapp.address", "")

    @property
    def log_path(self) -> Path:
        return self.workdir / "yarn.log"

    @property
    def nm_root(self) -> Path:
        """Where MiniYARNCluster keeps its NodeManagers' local and log directories (Hadoop's test directory,
        ``target/test/data/<name>/yarn-<n>``, below it)."""
        return self.workdir / "target"

    def client_env(self) -> dict[str, str]:
        """The environment variables that point spark-submit at this cluster."""
        return {"HADOOP_CONF_DIR": str(self.conf_dir), "YARN_CONF_DIR": str(self.conf_dir)}

    def container_logs(self) -> list[Path]:
        """Every container's log files (stdout, stderr, ...) the NodeManagers have written so far."""
        return sorted(self.nm_root.glob("test/data/*/*/*-logDir-nm-*/application_*/container_*/*"))

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float = 180.0) -> YarnCluster:
        self.workdir.mkdir(parents=True, exist_ok=True)
        classpath = cluster_classpath()
        classes = launcher_classes(classpath)
        java_home = _java_home()
        (self.workdir / "logs").mkdir(exist_ok=True)
        log4j = self.workdir / "log4j.properties"
        log4j.write_text(_LOG4J.format(log=self.log_path))
        settings = cluster_conf(self.memory_mb, self.vcores, self.workdir / "tmp")
        command = [
            str(java_home / "bin" / "java"),
            f"-Xmx{self.heap}",
            "-Djava.awt.headless=true",
            f"-Dlog4j.configuration={log4j.as_uri()}",
            f"-Dhadoop.log.dir={self.workdir / 'logs'}",
            f"-Dyarn.log.dir={self.workdir / 'logs'}",
            "-cp",
            os.pathsep.join([str(classes), classpath]),
            LAUNCHER_CLASS,
            "--name",
            self.name,
            "--node-managers",
            str(self.node_managers),
            "--dump",
            str(self.workdir / "cluster-conf.xml"),
        ]
        for key, value in settings.items():
            command += ["--conf", f"{key}={value}"]
        # the NodeManagers hand JAVA_HOME (on YARN's env-whitelist) to the containers they start
        env = {**os.environ, "JAVA_HOME": str(java_home)}
        out = open(self.workdir / "launcher.out", "a")  # noqa: SIM115 - the reader thread writes it while it runs
        began = time.monotonic()
        self._proc = subprocess.Popen(
            command,
            cwd=self.workdir,  # MiniYARNCluster works in ./target/<name>
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=out,
            text=True,
            bufsize=1,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, args=(out,), name="yarn-launcher-out", daemon=True)
        self._reader.start()
        try:
            confs, _ = self._expect("ready", timeout, collect="conf")
        except BaseException:
            self.stop()
            raise
        for words in confs:
            self.addresses[words[0]] = " ".join(words[1:])
        self.start_seconds = time.monotonic() - began
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        for name, text in client_files(self.addresses).items():
            (self.conf_dir / name).write_text(text)
        logger.info(
            "YARN cluster ready in %.1f s: ResourceManager %s, %d NodeManagers (log: %s)",
            self.start_seconds,
            self.rm_address,
            self.node_managers,
            self.log_path,
        )
        return self

    def _read(self, out: TextIO) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        try:
            for line in self._proc.stdout:
                out.write(line)
                out.flush()
                self._lines.put(line.rstrip("\n"))
        finally:
            self._lines.put(None)
            out.close()

    def _expect(self, word: str, timeout: float, collect: str = "") -> tuple[list[list[str]], list[str]]:
        """Wait for the launcher's line ``word``: the words of the lines ``collect`` before it, and its own."""
        deadline = time.monotonic() + timeout
        collected: list[list[str]] = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise YarnError(f"the YARN cluster did not answer {word!r} within {timeout:.0f} s; see {self.log_path}")
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                tail = self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""
                code = self._proc.wait() if self._proc is not None else None
                raise YarnError(f"the YARN cluster's launcher exited ({code}) before {word!r}:\n{tail}")
            parsed = parse_line(line)
            if parsed is None:
                continue
            what, rest = parsed
            if what == word:
                return collected, rest
            if what == "error":
                raise YarnError(f"the YARN cluster refused: {' '.join(rest)}")
            if what == collect:
                collected.append(rest)

    def _ask(
        self, command: str, word: str, collect: str = "", timeout: float = 60.0
    ) -> tuple[list[list[str]], list[str]]:
        if not self.running or self._proc is None or self._proc.stdin is None:
            raise YarnError("the YARN cluster is not running")
        with self._lock:
            self._proc.stdin.write(command + "\n")
            self._proc.stdin.flush()
            return self._expect(word, timeout, collect)

    def nodes(self) -> list[Node]:
        """Every NodeManager, with its state (STARTED, STOPPED) and its running containers."""
        return [
            Node(int(w[0]), w[1], w[2], () if w[3] == "-" else tuple(w[3].split(",")))
            for w in self._ask("nodes", "end", collect="node")[0]
        ]

    def apps(self) -> list[App]:
        """Every application the ResourceManager knows, with the node of its current application master."""
        return [App(w[0], w[1], w[2], "" if w[3] == "-" else w[3]) for w in self._ask("apps", "end", collect="app")[0]]

    def stop_node_manager(self, index: int, timeout: float = 120.0) -> str:
        """Stop NodeManager ``index``: it kills its containers and its heartbeats end (the ResourceManager finds the
        node lost after ``yarn.nm.liveness-monitor.expiry-interval-ms``, and its containers with it). Returns
        its node id."""
        return self._ask(f"stop-nm {index}", "stopped-nm", timeout=timeout)[1][1]

    def kill_app(self, app_id: str) -> None:
        """Ask the ResourceManager to kill an application (``yarn application -kill``)."""
        self._ask(f"kill-app {app_id}", "killed-app")

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the cluster: end of input to the launcher (its NodeManagers kill their containers); after
        ``timeout`` seconds, SIGKILL to it (a test cluster keeps nothing worth a slower stop); then SIGKILL to any
        container process left in the NodeManagers' directories."""
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
                proc.wait(timeout=timeout)
            except (OSError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for pid in leftovers(self.nm_root):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def __enter__(self) -> YarnCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def leftovers(root: Path, proc_dir: Path = Path("/proc")) -> list[int]:
    """The processes (other than this one) working in ``root`` or naming it on their command line: containers a
    NodeManager started (each in a session of its own) and did not stop."""
    mine = os.getpid()
    prefix = str(root.resolve())
    found = []
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit() or int(entry.name) == mine:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if prefix in cmdline or cwd == prefix or cwd.startswith(prefix + os.sep):
            found.append(int(entry.name))
    return found


@contextmanager
def yarn_cluster(workdir: Path, **options: object) -> Iterator[YarnCluster]:
    """A started :class:`YarnCluster` under ``workdir`` (its ``conf_dir`` for ``HADOOP_CONF_DIR``), stopped at the
    end; ``options`` are YarnCluster's (``node_managers``, ``memory_mb``, ``vcores``, ``heap``)."""
    cluster = YarnCluster(Path(workdir), **options)  # type: ignore[arg-type]
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
