"""``qmon dlq-handler``: works ``qmon.dlq`` down with a rules table (SPEC §7, seed 002).

Delivery guarantee: **exactly once** for consumers that read committed records
(the default of librdkafka clients and of qmon's own job).  Each batch is one
Kafka transaction holding (a) every forwarded or retried record, (b) the ledger
entries of the records left on the DLQ (IGNORE), and (c) the handler's consumer
offsets.  Killed at any point, the transaction is aborted and the batch is done
again on restart: nothing is lost and nothing appears twice.  Consumers that read
uncommitted records may see an aborted attempt once; every record the handler
writes carries the header ``qmon.dlq.source`` (topic/partition/offset of the dead
letter) so they can drop such duplicates.

IGNORE leaves a record on the DLQ.  A Kafka topic cannot drop one record, so
"seen but not removed" is a compacted ledger topic ``<prefix>.dlq.ignored`` keyed
by the record's partition/offset; it is read at start and rescanned every
RETRYINT seconds: a record whose rules now succeed (a forward queue that exists
now, say) is handled and its ledger entry deleted.  DISCARD, FWD and RETRY remove
a record: the committed offset moves past it and no ledger entry is kept.

The handler never changes a record: RETRY puts the original key and value back on
the original topic, FWD HEADER(NO) forwards them, FWD HEADER(YES) forwards the
whole DeadLetter record (header and original bytes) as it is on the DLQ.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from connectors import avro
from connectors.kafka import client_config
from qmon import topics
from qmon.config import KafkaSecurity
from qmon.dlqrules import Outcome, Rule, RulesTable, decide

logger = logging.getLogger(__name__)

GROUP = "qmon-dlq-handler"
#: Seconds to pause between a batch's writes and its commit (crash tests only; 0 in use).
_PAUSE_BEFORE_COMMIT = float(os.environ.get("QMON_FAULT_PAUSE_BEFORE_COMMIT", "0"))


@dataclass
class Counts:
    processed: int = 0
    forwarded: int = 0
    retried: int = 0
    discarded: int = 0
    ignored: int = 0

    def add(self, outcome: Outcome) -> None:
        self.processed += 1
        if outcome.action == "FWD":
            self.forwarded += 1
        elif outcome.action == "RETRY":
            self.retried += 1
        elif outcome.action == "DISCARD":
            self.discarded += 1
        else:
            self.ignored += 1

    def line(self, scan: int, kind: str, on_dlq: int) -> str:
        return (f"dlq-handler {kind} {scan}: processed {self.processed}, forwarded {self.forwarded}, "
                f"retried {self.retried}, discarded {self.discarded}, ignored {self.ignored}; "
                f"{on_dlq} record(s) left on the DLQ (ignored)")


@dataclass
class Handler:
    bootstrap: str
    table: RulesTable
    prefix: str = "qmon"
    security: KafkaSecurity | None = None
    partitions: int = 1
    group: str = GROUP
    printer: Any = print
    scans: int = 0
    totals: Counts = field(default_factory=Counts)
    _exists: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        from confluent_kafka import Consumer, Producer
        from confluent_kafka.admin import AdminClient

        self.input = self.table.control.inputq or topics.physical(topics.DLQ, self.prefix)
        self.ledger_topic = f"{self.input}.ignored"
        self.admin = AdminClient(client_config(self.bootstrap, self.security))
        self._create_ledger()
        retryint = self.table.control.retryint
        self.producer = Producer(client_config(
            self.bootstrap, self.security, **{"transactional.id": f"{self.group}:{self.input}",
                                              "enable.idempotence": True, "linger.ms": 5,
                                              "transaction.timeout.ms": 120_000}))
        self.producer.init_transactions(60)
        self.consumer = Consumer(client_config(
            self.bootstrap, self.security, **{"group.id": self.group, "enable.auto.commit": False,
                                              "session.timeout.ms": 10_000,
                                              "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                                              "max.poll.interval.ms": max(300_000, retryint * 1000 * 10)}))
        self.consumer.subscribe([self.input])
        self.fetcher = Consumer(client_config(
            self.bootstrap, self.security, **{"group.id": f"{self.group}-rescan-{uuid.uuid4().hex[:8]}",
                                              "enable.auto.commit": False, "isolation.level": "read_committed"}))
        self.ledger = self._read_ledger()

    # ---------------------------------------------------------- the ledger of ignored records

    def _create_ledger(self) -> None:
        from confluent_kafka.admin import NewTopic

        if self.ledger_topic in self.admin.list_topics(timeout=30).topics:
            return
        fut = self.admin.create_topics([NewTopic(self.ledger_topic, num_partitions=1, replication_factor=1,
                                                 config={"cleanup.policy": "compact"})])[self.ledger_topic]
        try:
            fut.result()
        except Exception as exc:  # noqa: BLE001
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise

    def _read_ledger(self) -> dict[str, dict[str, Any]]:
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer(client_config(self.bootstrap, self.security, **{
            "group.id": f"{self.group}-ledger-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
            "isolation.level": "read_committed"}))
        try:
            low, high = c.get_watermark_offsets(TopicPartition(self.ledger_topic, 0), timeout=30)
            entries: dict[str, dict[str, Any]] = {}
            if high <= low:
                return entries
            c.assign([TopicPartition(self.ledger_topic, 0, low)])
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                msg = c.poll(1.0)
                if msg is None:
                    if c.position([TopicPartition(self.ledger_topic, 0)])[0].offset >= high:
                        break
                    continue
                if msg.error():
                    continue
                key = msg.key().decode()
                if msg.value() is None:
                    entries.pop(key, None)
                else:
                    entries[key] = json.loads(msg.value())
                if msg.offset() + 1 >= high:
                    break
            return entries
        finally:
            c.close()

    # ---------------------------------------------------------- attempts

    def _topic_exists(self, topic: str) -> bool:
        if topic in self._exists:
            return True
        md = self.admin.list_topics(timeout=10)  # all topics: asking for one may auto-create it
        t = md.topics.get(topic)
        ok = t is not None and t.error is None and len(t.partitions) > 0
        if ok:
            self._exists.add(topic)
        return ok

    def _attempt(self, dl: dict[str, Any]) -> Any:
        retryint = self.table.control.retryint

        def attempt(rule: Rule, topic: str | None, n: int) -> bool:
            if rule.action == "RETRY":
                put = dl["put_time"]
                put_s = put.timestamp() if hasattr(put, "timestamp") else int(put) / 1000
                due = put_s + retryint if n == 0 else time.time() + retryint
                wait = due - time.time()
                if wait > 0:
                    time.sleep(wait)
            elif n > 0:
                time.sleep(retryint)
            if not topic or not self._topic_exists(topic):
                logger.info("rule at line %d: %s to %s failed (attempt %d of %d): the topic does not exist",
                            rule.line, rule.action, topic, n + 1, rule.retry)
                return False
            return True

        return attempt

    def _apply(self, outcome: Outcome, dl: dict[str, Any], key: bytes | None, value: bytes, where: str) -> None:
        headers = [("qmon.dlq.source", where.encode()), ("qmon.dlq.reason", str(dl.get("reason_name")).encode())]
        if outcome.rule is not None:
            headers.append(("qmon.dlq.rule", f"line {outcome.rule.line}".encode()))
        if outcome.action == "RETRY":
            self.producer.produce(outcome.topic, key=dl.get("key"), value=dl.get("value"), headers=headers)
        elif outcome.action == "FWD":
            assert outcome.rule is not None
            if outcome.rule.header:
                self.producer.produce(outcome.topic, key=key, value=value, headers=headers)
            else:
                self.producer.produce(outcome.topic, key=dl.get("key"), value=dl.get("value"), headers=headers)

    def _handle(self, key: bytes | None, value: bytes, where: str) -> tuple[Outcome, dict[str, Any] | None]:
        try:
            dl = avro.decode("DeadLetter", value)
        except Exception:  # noqa: BLE001 - a record without qmon's header: left alone, as MQ does
            logger.info("%s is not a qmon DeadLetter record; it stays on the DLQ", where)
            return Outcome("IGNORE", None, 0), None
        return decide(self.table, dl, self._attempt(dl)), dl

    # ---------------------------------------------------------- passes

    def poll_batch(self, counts: Counts, max_records: int = 500, timeout: float = 1.0) -> int:
        """One batch from the DLQ, as one transaction; returns how many records it held."""
        from confluent_kafka import TopicPartition

        msgs = [m for m in self.consumer.consume(max_records, timeout) if not m.error()]
        if not msgs:
            return 0
        results = []
        for m in msgs:
            where = f"{m.topic()}/{m.partition()}/{m.offset()}"
            outcome, dl = self._handle(m.key(), m.value(), where)
            results.append((m, where, outcome, dl))
        self.producer.begin_transaction()
        try:
            for m, where, outcome, dl in results:
                if dl is not None:
                    self._apply(outcome, dl, m.key(), m.value(), where)
                if outcome.action == "IGNORE":
                    ledger_key = f"{m.partition()}/{m.offset()}"
                    entry = {"topic": m.topic(), "partition": m.partition(), "offset": m.offset(),
                             "reason": dl.get("reason_name") if dl else None, "seen": int(time.time() * 1000)}
                    self.producer.produce(self.ledger_topic, key=ledger_key.encode(), value=json.dumps(entry).encode())
                    self.ledger[ledger_key] = entry
                counts.add(outcome)
            if _PAUSE_BEFORE_COMMIT:  # fault injection for the crash tests: a kill lands mid-transaction
                self.producer.flush(30)
                time.sleep(_PAUSE_BEFORE_COMMIT)
            positions = self.consumer.position(self.consumer.assignment())
            self.producer.send_offsets_to_transaction(
                [TopicPartition(p.topic, p.partition, p.offset) for p in positions if p.offset >= 0],
                self.consumer.consumer_group_metadata(), 30)
            self.producer.commit_transaction(60)
        except Exception:
            self.producer.abort_transaction(60)
            raise
        return len(msgs)

    def rescan(self, counts: Counts) -> None:
        """Reconsider every record left on the DLQ (seed 002: the DLQ is periodically rescanned)."""
        from confluent_kafka import TopicPartition

        if not self.ledger:
            return
        done: list[tuple[str, Outcome, dict[str, Any], Any]] = []
        for ledger_key, entry in sorted(self.ledger.items()):
            tp = TopicPartition(entry["topic"], int(entry["partition"]), int(entry["offset"]))
            self.fetcher.assign([tp])
            msg = None
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                msg = self.fetcher.poll(1.0)
                if msg is not None and not msg.error():
                    break
            if msg is None or msg.error() or msg.offset() != tp.offset:
                continue  # deleted by retention: nothing left to do
            where = f"{msg.topic()}/{msg.partition()}/{msg.offset()}"
            outcome, dl = self._handle(msg.key(), msg.value(), where)
            if outcome.action != "IGNORE" and dl is not None:
                done.append((ledger_key, outcome, dl, msg))
        if not done:
            return
        self.producer.begin_transaction()
        try:
            for ledger_key, outcome, dl, msg in done:
                self._apply(outcome, dl, msg.key(), msg.value(), f"{msg.topic()}/{msg.partition()}/{msg.offset()}")
                self.producer.produce(self.ledger_topic, key=ledger_key.encode(), value=None)  # tombstone
                counts.add(outcome)
            self.producer.commit_transaction(60)
        except Exception:
            self.producer.abort_transaction(60)
            raise
        for ledger_key, *_ in done:
            self.ledger.pop(ledger_key, None)

    def run(self, stop: Any = None) -> Counts:
        """Process until WAIT says stop (or ``stop()`` is true); prints a summary line per scan."""
        wait = self.table.control.wait
        idle_since = time.monotonic()
        last_rescan = time.monotonic()
        counts = Counts()
        busy = False
        self.printer(f"dlq-handler: reading {self.input} with {len(self.table.rules)} rule(s); "
                     f"{len(self.ledger)} record(s) already left on the DLQ; RETRYINT {self.table.control.retryint} s")
        try:
            while not (stop and stop()):
                n = self.poll_batch(counts)
                now = time.monotonic()
                if n:
                    busy = True
                    idle_since = now
                    continue
                if busy or now - last_rescan >= self.table.control.retryint:
                    self.scans += 1
                    self.rescan(counts)
                    last_rescan = now
                    self.printer(counts.line(self.scans, "scan", len(self.ledger)))
                    self._total(counts)
                    counts = Counts()
                    busy = False
                if wait is False and self._caught_up():
                    break
                if wait is not True and wait is not False and now - idle_since >= int(wait):
                    break
        finally:
            self._total(counts)
            self.printer(self.totals.line(self.scans, "stopped after scan", len(self.ledger)))
            self.close()
        return self.totals

    def _total(self, c: Counts) -> None:
        for f in ("processed", "forwarded", "retried", "discarded", "ignored"):
            setattr(self.totals, f, getattr(self.totals, f) + getattr(c, f))

    def _caught_up(self) -> bool:
        from confluent_kafka import TopicPartition

        assignment = self.consumer.assignment()
        if not assignment:
            return False
        committed = {(c.topic, c.partition): c.offset for c in self.consumer.committed(assignment, timeout=10)}
        for tp in self.consumer.position(assignment):
            low, high = self.consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=10)
            pos = tp.offset if tp.offset >= 0 else committed.get((tp.topic, tp.partition), -1)
            if pos < 0:
                pos = low
            if pos < high:
                return False
        return True

    def close(self) -> None:
        for c in (self.consumer, self.fetcher):
            try:
                c.close()
            except Exception:  # noqa: BLE001
                pass
        self.producer.flush(10)
