"""A real single-node Apache Kafka broker in KRaft mode, started on loopback (a development server: the job never
imports ``qmon.devservers``).

The broker is Apache Kafka's own server (``kafka.Kafka``) run from its Maven
Central artifacts: Maven resolves ``org.apache.kafka:kafka_2.13`` and its
runtime dependencies into the local repository (``~/.m2``) once, and the
class path is cached beside the broker's working files.  Nothing is committed
and no Docker engine is needed.

Used by the test fixtures, ``qmon kafka start`` and ``qmon demo``.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from qmon.cache import cache_dir
from qmon.devservers.local import ServerError, free_port, stop_group

logger = logging.getLogger(__name__)

KAFKA_VERSION = os.environ.get("QMON_KAFKA_VERSION", "4.1.1")
SCALA_BINARY = "2.13"


class BrokerError(ServerError):
    """The broker could not be resolved, formatted or started."""


_POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>qmon</groupId>
  <artifactId>qmon-kafka-broker</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_{scala}</artifactId>
      <version>{version}</version>
    </dependency>
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-api</artifactId>
      <version>2.0.17</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j2-impl</artifactId>
      <version>2.24.3</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
      <version>2.24.3</version>
    </dependency>
  </dependencies>
</project>
"""

_LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <Console name="STDOUT" target="SYSTEM_OUT">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Logger name="kafka" level="INFO"/>
    <Logger name="org.apache.kafka" level="WARN"/>
    <Logger name="kafka.server.KafkaServer" level="INFO"/>
    <Logger name="kafka.log" level="WARN"/>
    <Root level="WARN"><AppenderRef ref="STDOUT"/></Root>
  </Loggers>
</Configuration>
"""


def broker_classpath(version: str = KAFKA_VERSION) -> str:
    """Resolve the broker's class path with Maven (cached after the first call)."""
    work = cache_dir() / f"kafka-{version}"
    cp_file = work / "classpath.txt"
    if cp_file.exists():
        cp = cp_file.read_text().strip()
        if cp and all(Path(p).exists() for p in cp.split(os.pathsep)):
            return cp
    mvn = shutil.which("mvn")
    if mvn is None:
        message = (
            "Maven (mvn) is not on PATH: qmon resolves Apache Kafka's broker from "
            "Maven Central with it. Install Maven, or point QMON_TEST_BOOTSTRAP / "
            "--bootstrap at an existing Kafka cluster."
        )
        raise BrokerError(message)
    work.mkdir(parents=True, exist_ok=True)
    (work / "pom.xml").write_text(_POM.format(scala=SCALA_BINARY, version=version))
    logger.info("resolving Apache Kafka %s from Maven Central (first run only)", version)
    proc = subprocess.run(
        [mvn, "-q", "-B", "dependency:build-classpath", f"-Dmdep.outputFile={cp_file}", "-DincludeScope=runtime"],
        cwd=work,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0 or not cp_file.exists():
        message = (
            f"Maven could not resolve org.apache.kafka:kafka_{SCALA_BINARY}:{version}: "
            f"{(proc.stdout + proc.stderr)[-2000:]}"
        )
        raise BrokerError(message)
    return cp_file.read_text().strip()


def _random_cluster_id() -> str:
    """A KRaft cluster id (a URL-safe base64 UUID; one in 64 starts with "-", hence ``--cluster-id=``)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


@dataclass
class LocalKafka:
    """One KRaft broker+controller on 127.0.0.1.

    ``extra_properties`` are appended to server.properties (for SASL and ACL
    tests); ``listener_protocol`` names the security protocol of the client
    listener.
    """

    workdir: Path | None = None
    port: int = 0
    #: the address it listens on and gives clients: loopback by default (a development broker for this host)
    host: str = "127.0.0.1"
    heap: str = "512m"
    extra_properties: dict[str, str] = field(default_factory=dict)
    listener_protocol: str = "PLAINTEXT"
    jvm_options: list[str] = field(default_factory=list)
    _proc: subprocess.Popen | None = None
    _controller_port: int = 0
    _owns_workdir: bool = False

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def log_path(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "broker.log"

    def _java(self) -> str:
        java_home = os.environ.get("JAVA_HOME")
        if java_home and (Path(java_home) / "bin" / "java").exists():
            return str(Path(java_home) / "bin" / "java")
        java = shutil.which("java")
        if java is None:
            raise BrokerError("java is not on PATH: the Kafka broker needs Java 17 or later")
        return java

    def _write_config(self, controller_port: int) -> Path:
        assert self.workdir is not None
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
            "listeners": f"CLIENT://{self.host}:{self.port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"CLIENT://{self.host}:{self.port}",
            "inter.broker.listener.name": "CLIENT",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": f"CLIENT:{self.listener_protocol},CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.workdir / "data"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "true",
            "log.flush.interval.messages": "9223372036854775807",
        }
        props.update(self.extra_properties)
        path = self.workdir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (self.workdir / "log4j2.xml").write_text(_LOG4J2)
        return path

    def start(self, timeout: float = 90.0) -> LocalKafka:
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="qmon-kafka-"))
            self._owns_workdir = True
        self.workdir.mkdir(parents=True, exist_ok=True)
        classpath = broker_classpath()
        fresh = not (self.workdir / "data" / "meta.properties").exists()
        if not self.port:
            self.port = free_port()
        # a restart on the same directory keeps both ports (clients and the KRaft quorum see the same broker)
        controller_port = self._controller_port or free_port()
        self._controller_port = controller_port
        config = self._write_config(controller_port)
        java = self._java()
        base = [
            java,
            f"-Xmx{self.heap}",
            f"-Xms{self.heap}",
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.xml'}",
            "-Djava.awt.headless=true",
            *self.jvm_options,
            "-cp",
            classpath,
        ]
        if fresh:
            fmt = subprocess.run(
                [*base, "kafka.tools.StorageTool", "format", f"--cluster-id={_random_cluster_id()}", "-c", str(config)],
                capture_output=True,
                text=True,
            )
            if fmt.returncode != 0:
                raise BrokerError(f"formatting the KRaft log dir failed: {fmt.stdout}{fmt.stderr}")
        log = open(self.log_path, "ab")
        self._proc = subprocess.Popen(
            [*base, "kafka.Kafka", str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self._wait_ready(timeout)
        logger.info("Kafka %s broker ready on %s (log: %s)", KAFKA_VERSION, self.bootstrap, self.log_path)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-3000:]
                raise BrokerError(f"the Kafka broker exited with {self._proc.returncode}:\n{tail}")
            if self._answers():
                return
            time.sleep(0.3)
        self.stop()
        raise BrokerError(f"the Kafka broker did not start within {timeout:.0f}s; see {self.log_path}")

    def _answers(self) -> bool:
        if self.listener_protocol != "PLAINTEXT":
            try:
                with socket.create_connection((self.host, self.port), timeout=1):
                    return True
            except OSError:
                return False
        from confluent_kafka.admin import AdminClient

        try:
            with socket.create_connection((self.host, self.port), timeout=1):
                pass
            md = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0}).list_topics(timeout=5)
            return bool(md.brokers)
        except Exception:  # noqa: BLE001 - not ready yet
            return False

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the broker (SIGTERM, then SIGKILL); the log dir is kept."""
        if self._proc is not None:
            stop_group(self._proc, timeout)
        self._proc = None

    def remove(self) -> None:
        self.stop()
        if self._owns_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> LocalKafka:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
