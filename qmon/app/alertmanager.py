"""``qmon alertmanager --url http://HOST:9093``: qmon's alerts to Alertmanager (``POST /api/v2/alerts``).

What is sent is decided by the pure ``qmon.core.alertmanager.AlertBook``; this module reads the alerts
topic and talks HTTP.

* **Nothing lost.** The consumer group (``qmon-alertmanager`` by default) commits an offset only after
  Alertmanager accepted every alert up to it.  While Alertmanager is down or answers 5xx, the forwarder
  retries the same alerts with a backoff (1 s doubling to 30 s) and reads nothing further.
* **Episodes still firing survive a restart of the forwarder.** At start it reads the topic from its
  beginning: records before the committed offsets rebuild the firing episodes without sending, and the
  episodes still firing are sent again at once (same labels: Alertmanager deduplicates them).
* **Bad configuration stops it.** ``--url`` is probed first (``GET /api/v2/status``); an unreachable URL
  or a 4xx answer (a request Alertmanager refuses) ends the command with the reason, offsets uncommitted.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from typing import Any

from qmon.connectors import avro
from qmon.connectors.kafka import client_config
from qmon.core import topics
from qmon.core.alertmanager import AlertBook
from qmon.core.config import KafkaSecurity

logger = logging.getLogger(__name__)

GROUP = "qmon-alertmanager"


class AlertmanagerError(RuntimeError):
    """Alertmanager refused the request (4xx) or the URL is wrong: retrying will not help."""


class Unavailable(RuntimeError):
    """Alertmanager could not be reached or answered 5xx: retry."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Client:
    def __init__(self, url: str, timeout: float = 10.0):
        self.url = url.rstrip("/")
        self.timeout = timeout

    def status(self) -> dict[str, Any]:
        return self._call("GET", "/api/v2/status")

    def post(self, alerts: list[dict[str, Any]]) -> None:
        self._call("POST", "/api/v2/alerts", alerts)

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                text = resp.read().decode() or "null"
                return json.loads(text) if resp.headers.get_content_type() == "application/json" else text
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace").strip()[:500]
            if 400 <= exc.code < 500:
                raise AlertmanagerError(f"{method} {self.url}{path}: HTTP {exc.code}: {detail}") from exc
            raise Unavailable(f"{method} {self.url}{path}: HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise Unavailable(f"{method} {self.url}{path}: {reason}") from exc


class Forwarder:
    def __init__(
        self,
        bootstrap: str,
        url: str,
        *,
        prefix: str = "qmon",
        security: KafkaSecurity | None = None,
        group: str = GROUP,
        resend_ms: int = 60_000,
    ):
        self.bootstrap, self.prefix, self.security, self.group = bootstrap, prefix, security, group
        self.client = Client(url)
        self.book = AlertBook(resend_ms=resend_ms)
        self.topic = topics.physical(topics.ALERTS, prefix)
        self.sent = 0
        self.stopping = False

    def _send(self, alerts: list[dict[str, Any]]) -> None:
        """POST until Alertmanager accepts (retrying while it is unavailable); 4xx raises."""
        delay = 1.0
        while not self.stopping:
            try:
                self.client.post(alerts)
                self.book.sent(alerts, _now_ms())
                self.sent += len(alerts)
                return
            except Unavailable as exc:
                logger.warning("qmon alertmanager: %s; retrying in %.0f s (nothing committed)", exc, delay)
                time.sleep(delay)
                delay = min(30.0, delay * 2)
        raise KeyboardInterrupt

    def run(self, *, idle: float | None = None) -> int:
        """Forward until interrupted (or ``idle`` seconds without a record, for tests)."""
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        try:
            status = self.client.status()
        except (AlertmanagerError, Unavailable) as exc:
            logger.error("qmon alertmanager: %s: is --url an Alertmanager (v2 API)?", exc)
            return 2
        version = status.get("versionInfo", {}).get("version", "?") if isinstance(status, dict) else "?"
        conf = client_config(
            self.bootstrap,
            self.security,
            **{"group.id": self.group, "enable.auto.commit": False, "auto.offset.reset": "earliest"},
        )
        consumer = Consumer(conf)
        try:
            md = consumer.list_topics(self.topic, timeout=15).topics.get(self.topic)
            if md is None or md.error is not None:
                logger.error("qmon alertmanager: topic %s not found on %s", self.topic, self.bootstrap)
                return 2
            parts = [TopicPartition(self.topic, p) for p in sorted(md.partitions)]
            committed = {tp.partition: tp.offset for tp in consumer.committed(parts, timeout=15)}
            consumer.assign([TopicPartition(self.topic, p.partition, 0) for p in parts])  # the whole history
            logger.info(
                "qmon alertmanager: forwarding %s to %s (Alertmanager %s), group %s",
                self.topic,
                self.client.url,
                version,
                self.group,
            )
            caught_up = False
            last = time.monotonic()
            while not self.stopping:
                msgs = consumer.consume(500, 0.5)
                batch: list[dict[str, Any]] = []
                upto: dict[int, int] = {}
                for msg in msgs:
                    err = msg.error()
                    if err is not None:
                        if err.code() != KafkaError._PARTITION_EOF:
                            logger.warning("qmon alertmanager: reading %s: %s", self.topic, err)
                        continue
                    partition, offset = int(msg.partition() or 0), int(msg.offset() or 0)
                    last = time.monotonic()
                    try:
                        rec = avro.decode("Alert", msg.value() or b"")
                    except avro.AvroDecodeError as exc:
                        logger.warning("qmon alertmanager: skipping an undecodable record: %s", exc)
                        continue
                    history = offset < max(0, committed.get(partition, -1))
                    out = self.book.on_alert(rec, _now_ms())
                    if history:
                        continue  # accepted before: rebuilds the episodes only
                    batch.extend(out)
                    upto[partition] = offset + 1
                if not msgs and not caught_up:
                    caught_up = True  # history read: announce what still fires (deduplicated by Alertmanager)
                    logger.info("qmon alertmanager: %d alert episodes firing", len(self.book.firing))
                if batch:
                    self._send(batch)
                if upto:
                    consumer.commit(
                        offsets=[TopicPartition(self.topic, p, o) for p, o in upto.items()], asynchronous=False
                    )
                    committed.update(upto)
                if caught_up:
                    due = self.book.due(_now_ms())
                    if due:
                        self._send(due)
                if idle is not None and time.monotonic() - last > idle:
                    return 0
        except AlertmanagerError as exc:
            logger.error("qmon alertmanager: Alertmanager refused the alerts: %s (offsets not committed)", exc)
            return 2
        except KeyboardInterrupt:
            return 0
        finally:
            consumer.close()
        return 0
