"""``qmon metrics``: a Prometheus exporter that follows qmon's output topics.

A consumer thread reads the snapshot, performance, alert, dead-letter and progress topics from their
beginning (its own consumer group, nothing committed: each start rebuilds the same figures) into the pure
model ``qmon.core.metrics.Metrics``, and the DLQ handler's ledger ``<dlq>.ignored`` (JSON entries, tombstones
when a record leaves it) for the dead letters the handler has left on the DLQ; ``prometheus_client`` serves it on ``/metrics`` through a custom
collector, so a series disappears when what it describes does (a forgotten queue, a resolved alert).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from qmon.connectors import avro
from qmon.connectors.kafka import client_config
from qmon.core import topics
from qmon.core.config import KafkaSecurity
from qmon.core.metrics import Metrics

logger = logging.getLogger(__name__)

DEFAULT_PORT = 9464
FOLLOWED = (topics.SNAPSHOT, topics.PERFORMANCE, topics.ALERTS, topics.DLQ, topics.PROGRESS, topics.OVERFLOW)
#: The DLQ handler's ledger of the dead letters it left on the DLQ (``connectors/dlqledger.py``)
LEDGER = topics.DLQ + ".ignored"


class MetricsCollector(Collector):
    """The model's families as Prometheus metric families, built at each scrape (``clock``: the scrape's time,
    Unix seconds, which the oldest messages' ages are measured at)."""

    def __init__(
        self,
        metrics: Metrics,
        lock: threading.Lock,
        records: dict[str, int],
        clock: Callable[[], float] = time.time,
    ):
        self.metrics, self.lock, self.records, self.clock = metrics, lock, records, clock

    def collect(self) -> Any:
        now = self.clock()
        with self.lock:
            families = self.metrics.families(now=now)
            read = dict(self.records)
        for f in families:
            if f.kind == "histogram":
                h = HistogramMetricFamily(f.name, f.help, labels=list(f.labels))
                for labels, (buckets, _count, total) in f.samples:
                    h.add_metric(list(labels), [(_bound(b), float(n)) for b, n in buckets], total)
                yield h
                continue
            cls = CounterMetricFamily if f.kind == "counter" else GaugeMetricFamily
            fam = cls(f.name, f.help, labels=list(f.labels))
            for labels, value in f.samples:
                fam.add_metric(list(labels), value)
            yield fam
        own = CounterMetricFamily(
            "qmon_exporter_records", "Output records this exporter has read, by topic.", labels=["topic"]
        )
        for topic, n in sorted(read.items()):
            own.add_metric([topic], float(n))
        yield own


def _bound(b: float) -> str:
    return "+Inf" if b == float("inf") else repr(b)


class Exporter:
    """The consumer thread and the HTTP server."""

    def __init__(self, bootstrap: str, *, prefix: str = "qmon", security: KafkaSecurity | None = None):
        self.bootstrap, self.prefix, self.security = bootstrap, prefix, security
        self.metrics = Metrics()
        self.lock = threading.Lock()
        self.records: dict[str, int] = {}
        self.registry = CollectorRegistry()
        self.registry.register(MetricsCollector(self.metrics, self.lock, self.records))
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None
        self.server: Any = None
        self.error: str | None = None

    def serve(self, port: int = DEFAULT_PORT, bind: str = "0.0.0.0") -> int:
        """Start the HTTP server (``port`` 0: a free one); returns the port."""
        try:
            self.server, _ = start_http_server(port, addr=bind, registry=self.registry)
        except OSError as exc:
            raise SystemExit(f"qmon metrics: cannot serve on {bind}:{port}: {exc.strerror or exc}") from exc
        return int(self.server.server_address[1])

    def start(self) -> None:
        self.thread = threading.Thread(target=self._follow, name="qmon-metrics", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(10)
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def _follow(self) -> None:
        from confluent_kafka import Consumer, KafkaError

        conf = client_config(
            self.bootstrap,
            self.security,
            **{
                "group.id": f"qmon-metrics-{uuid.uuid4()}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            },
        )
        consumer = Consumer(conf)
        logical_of = {topics.physical(t, self.prefix): t for t in FOLLOWED}
        ledger = topics.physical(LEDGER, self.prefix)
        consumer.subscribe([*logical_of, ledger])
        try:
            while not self.stopping.is_set():
                msgs = consumer.consume(500, 0.5)
                for msg in msgs:
                    err = msg.error()
                    if err is not None:
                        if err.code() not in (KafkaError._PARTITION_EOF, KafkaError.UNKNOWN_TOPIC_OR_PART):
                            logger.warning("qmon metrics: reading %s: %s", msg.topic(), err)
                        continue
                    if msg.topic() == ledger:
                        self._ledger(msg)
                        continue
                    logical = logical_of.get(msg.topic() or "")
                    if logical is None:
                        continue
                    try:
                        record = avro.decode(topics.RECORD_OF[logical], msg.value() or b"")
                    except avro.AvroDecodeError as exc:
                        logger.warning("qmon metrics: an undecodable record on %s: %s", msg.topic(), exc)
                        continue
                    with self.lock:
                        self.metrics.on_record(logical, record)
                        self.records[logical] = self.records.get(logical, 0) + 1
        except Exception as exc:  # noqa: BLE001 - reported, and the scrape shows the figures so far
            self.error = str(exc)
            logger.error("qmon metrics: the consumer stopped: %s", exc)
        finally:
            consumer.close()

    def _ledger(self, msg: Any) -> None:
        key = (msg.key() or b"").decode(errors="replace")
        value = msg.value()
        try:
            entry = None if value is None else json.loads(value)
        except ValueError as exc:
            entry = exc
        if entry is not None and not isinstance(entry, dict):
            logger.warning("qmon metrics: an unreadable ledger entry on %s (key %s): %s", msg.topic(), key, entry)
            return
        with self.lock:
            self.metrics.on_ledger(key, entry)
            self.records[LEDGER] = self.records.get(LEDGER, 0) + 1


def run(bootstrap: str, *, port: int, bind: str, prefix: str, security: KafkaSecurity | None) -> int:
    exporter = Exporter(bootstrap, prefix=prefix, security=security)
    port = exporter.serve(port, bind)
    exporter.start()
    host = "localhost" if bind in ("0.0.0.0", "::", "") else bind
    logger.info("qmon metrics: serving http://%s:%d/metrics, following %s on %s", host, port, prefix, bootstrap)
    try:
        while exporter.thread is not None and exporter.thread.is_alive():
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        exporter.stop()
    return 1 if exporter.error else 0
