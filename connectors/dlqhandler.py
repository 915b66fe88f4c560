"""``qmon dlq-handler``: works ``qmon.dlq`` down with a rules table (IBM MQ, *The DLQ handler rules table*).

The decisions are ``qmon.core.dlqretry``'s (pure), over the table ``qmon.core.dlqrules`` parses: which rule
and attempt come next for a record, when that attempt is due, when a record is ignored for good.  This
module only moves records.

**Never blocking.**  A record whose next attempt is not due yet (a RETRY waits RETRYINT after the
record's put time; a failed attempt is repeated RETRYINT later) waits in a schedule ordered by due
time, while the handler goes on polling the DLQ and handling other records.  The loop never sleeps:
it polls the DLQ for at most ``POLL_TIMEOUT`` seconds (less when an attempt falls due sooner), then
makes the attempts that are due, at most ``DUE_PER_PASS`` records a pass, so the consumer calls
poll well within its ``max.poll.interval.ms`` whatever RETRY and RETRYINT say.

**Delivery guarantee: exactly once** for consumers that read committed records (the default of
librdkafka clients and of qmon's own job).  Each batch read from the DLQ, and each pass of due
attempts, is one Kafka transaction holding (a) every forwarded or retried record, (b) the ledger
entries it writes or deletes, and (c) for a batch, the handler's consumer offsets.  Killed at any
point, the transaction is aborted and the work is done again on restart: nothing is lost and
nothing appears twice.  Consumers that read uncommitted records may see an aborted attempt once;
every record the handler writes carries the header ``qmon.dlq.source`` (topic/partition/offset of
the dead letter) so they can drop such duplicates.

**The ledger** ``<dlq>.ignored`` (``qmon.connectors.dlqledger``) holds the records left on the DLQ, waiting
for their next attempt or ignored for good; the handler reads it when it starts.

**The rescan** (IBM MQ's DLQ handler: "the DLQ is periodically rescanned") is this schedule: a waiting record is
re-attempted when its due time comes; a summary line is printed every RETRYINT.  A record ignored
for good is not attempted again while the handler runs (its rules cannot change: as with IBM MQ's
handler, the table is read only at start); at start, each ignored record is planned again against the table
just read, with the attempt counts it has, never reset -- it gets another attempt only if a rule
that matches it has attempts left (a new rule, or a larger RETRY).

The handler never changes a record: RETRY puts the original key and value back on the original
topic, FWD HEADER(NO) forwards them, FWD HEADER(YES) forwards the whole DeadLetter record (header
and original bytes) as it is on the DLQ.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from qmon.connectors import avro, dlqledger
from qmon.connectors.dlqcounts import Counts
from qmon.connectors.dlqledger import LedgerEntry
from qmon.connectors.dlqreader import read_ledger
from qmon.connectors.kafka import client_config
from qmon.core import topics
from qmon.core.config import KafkaSecurity
from qmon.core.dlqretry import Advance, Outcome, Progress, Schedule, advance
from qmon.core.dlqrules import Rule, RulesTable

logger = logging.getLogger(__name__)

GROUP = "qmon-dlq-handler"
#: The longest the loop waits in one poll of the DLQ (seconds); shorter when an attempt falls due sooner.
POLL_TIMEOUT = 1.0
#: At most this many records' due attempts in one pass, and at most this many seconds spent fetching
#: them, so the loop is back at poll() in good time.
DUE_PER_PASS = 100
PASS_BUDGET = 30.0
#: The consumer's max.poll.interval.ms: Kafka's default; the loop polls at least every few seconds.
MAX_POLL_INTERVAL_MS = 300_000


@dataclass
class Handler:
    bootstrap: str
    table: RulesTable
    prefix: str = "qmon"
    security: KafkaSecurity | None = None
    partitions: int = 1
    group: str = GROUP
    printer: Any = print
    #: epoch seconds; due times are kept in the ledger, so they are wall-clock times
    clock: Callable[[], float] = time.time
    scans: int = 0
    totals: Counts = field(default_factory=Counts)
    _exists: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        from confluent_kafka import Consumer, Producer
        from confluent_kafka.admin import AdminClient

        self.input = self.table.control.inputq or topics.physical(topics.DLQ, self.prefix)
        self.ledger_topic = f"{self.input}.ignored"
        self.admin = AdminClient(client_config(self.bootstrap, self.security))
        dlqledger.create_topic(self.admin, self.ledger_topic)
        self.producer = Producer(
            client_config(
                self.bootstrap,
                self.security,
                **{
                    "transactional.id": f"{self.group}:{self.input}",
                    "enable.idempotence": True,
                    "linger.ms": 5,
                    "transaction.timeout.ms": 120_000,
                },
            )
        )
        self.producer.init_transactions(60)  # fences a previous instance and aborts its open transaction
        self.consumer = Consumer(
            client_config(
                self.bootstrap,
                self.security,
                **{
                    "group.id": self.group,
                    "enable.auto.commit": False,
                    "session.timeout.ms": 10_000,
                    "auto.offset.reset": "earliest",
                    "isolation.level": "read_committed",
                    "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
                },
            )
        )
        self.consumer.subscribe([self.input])
        self.fetcher = Consumer(
            client_config(
                self.bootstrap,
                self.security,
                **{
                    "group.id": f"{self.group}-rescan-{uuid.uuid4().hex[:8]}",
                    "enable.auto.commit": False,
                    "isolation.level": "read_committed",
                },
            )
        )
        self.schedule = Schedule()
        self._held: dict[str, tuple[bytes | None, bytes]] = {}  # DLQ key and value of records waiting
        self._listed: set[str] | None = None  # the topics listed in the current pass
        self.ledger: dict[str, LedgerEntry] = self._read_ledger()
        dlqledger.plan(self.ledger, self.table, self.schedule)

    # ---------------------------------------------------------- the ledger of records left on the DLQ

    def _read_ledger(self) -> dict[str, LedgerEntry]:
        entries: dict[str, LedgerEntry] = read_ledger(
            self.bootstrap, self.ledger_topic, self.security, self.group, must_exist=True
        )
        return entries

    def _entry(
        self,
        topic: str,
        partition: int,
        offset: int,
        dl: dict[str, Any] | None,
        adv: Advance | None,
        seen: int | None = None,
    ) -> LedgerEntry:
        return dlqledger.entry_of(
            topic, partition, offset, dl, adv, seen if seen is not None else dlqledger.ms(self.clock()) or 0
        )

    # ---------------------------------------------------------- attempts

    def _topic_exists(self, topic: str) -> bool:
        if topic in self._exists:
            return True
        if self._listed is None:  # once a pass: all topics (asking for one may auto-create it)
            md = self.admin.list_topics(timeout=10)
            self._listed = {name for name, t in md.topics.items() if t.error is None and len(t.partitions) > 0}
        if topic in self._listed:
            self._exists.add(topic)
            return True
        return False

    def _attempt(self, rule: Rule, topic: str | None, n: int) -> bool:
        """One attempt, at once: it succeeds when the target topic exists (the record is written by the caller)."""
        if topic and self._topic_exists(topic):
            return True
        logger.info(
            "rule at line %d: %s to %s failed (attempt %d of %d): the topic does not exist",
            rule.line,
            rule.action,
            topic,
            n + 1,
            rule.retry,
        )
        return False

    def _apply(self, outcome: Outcome, dl: dict[str, Any], key: bytes | None, value: bytes, where: str) -> None:
        """Carry out a final ``outcome`` (not IGNORE) in the open transaction: RETRY and FWD produce the record to
        their topic; DISCARD produces nothing, and the offsets committed with the transaction remove it."""
        if outcome.action == "DISCARD":
            return
        assert outcome.topic is not None  # RETRY and FWD name their topic
        headers: list[tuple[str, str | bytes | None]] = [
            ("qmon.dlq.source", where.encode()),
            ("qmon.dlq.reason", str(dl.get("reason_name")).encode()),
        ]
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

    def _decode(self, value: bytes | None, where: str) -> dict[str, Any] | None:
        if value is None:
            logger.warning("%s has no value: not a DeadLetter record, left alone", where)
            return None
        try:
            return avro.decode("DeadLetter", value)
        except Exception:  # noqa: BLE001 - a record without qmon's header: left alone, as MQ does
            logger.info("%s is not a qmon DeadLetter record; it stays on the DLQ", where)
            return None

    # ---------------------------------------------------------- passes

    def poll_batch(self, counts: Counts, max_records: int = 500, timeout: float = POLL_TIMEOUT) -> int:
        """One batch from the DLQ, as one transaction; returns how many records it held.

        Each record's attempts that are due now are made now; a record that has to wait goes to the
        ledger (state waiting) in this transaction, with the offsets past it, and to the schedule.
        """
        from confluent_kafka import TopicPartition

        msgs = [m for m in self.consumer.consume(max_records, timeout) if not m.error()]
        if not msgs:
            return 0
        now = self.clock()
        self._listed = None
        work: list[tuple[Any, str, dict[str, Any] | None, Advance | None]] = []
        for m in msgs:
            where = f"{m.topic()}/{m.partition()}/{m.offset()}"
            lkey = f"{m.partition()}/{m.offset()}"
            if lkey in self.ledger:
                continue  # read again (offsets reset?): the ledger and the schedule already have it
            dl = self._decode(m.value(), where)
            adv = advance(self.table, dl, Progress(), now, self._attempt) if dl is not None else None
            work.append((m, lkey, dl, adv))
        entries: dict[str, LedgerEntry] = {}
        self.producer.begin_transaction()
        try:
            for m, lkey, dl, adv in work:
                if dl is not None and adv is not None and adv.outcome is not None and adv.outcome.action != "IGNORE":
                    self._apply(adv.outcome, dl, m.key(), m.value(), f"{m.topic()}/{m.partition()}/{m.offset()}")
                    continue
                entries[lkey] = self._entry(m.topic(), m.partition(), m.offset(), dl, adv)
                dlqledger.write(self.producer, self.ledger_topic, lkey, entries[lkey])
            positions = self.consumer.position(self.consumer.assignment())
            self.producer.send_offsets_to_transaction(
                [TopicPartition(p.topic, p.partition, p.offset) for p in positions if p.offset >= 0],
                self.consumer.consumer_group_metadata(),
                30,
            )
            self.producer.commit_transaction(60)
        except Exception:
            self.producer.abort_transaction(60)
            raise
        for m, lkey, _dl, adv in work:  # committed: now the in-memory state follows
            if adv is not None:
                counts.attempts += adv.made
                counts.failed += adv.failed
            if lkey in entries:
                self.ledger[lkey] = entries[lkey]
            if adv is not None and adv.outcome is None:
                self.schedule.put(lkey, adv.step.due)
                self._held[lkey] = (m.key(), m.value())
            else:
                counts.add(adv.outcome if adv is not None and adv.outcome is not None else Outcome("IGNORE", None, 0))
        return len(msgs)

    def attempt_due(self, counts: Counts, now: float | None = None, limit: int = DUE_PER_PASS) -> int:
        """Make the attempts due at ``now`` (at most ``limit`` records), as one transaction; returns
        how many records it took on."""
        now = self.clock() if now is None else now
        keys = self.schedule.pop_due(now, limit)
        if not keys:
            return 0
        self._listed = None
        work: list[tuple[str, LedgerEntry, Any, dict[str, Any] | None, Advance | None]] = []
        later: list[str] = []
        started = time.monotonic()
        for i, lkey in enumerate(keys):
            if time.monotonic() - started > PASS_BUDGET:  # fetching is slow: the rest at the next pass
                for rest in keys[i:]:
                    self.schedule.put(rest, now)
                break
            entry = self.ledger.get(lkey)
            if entry is None:
                continue
            held: Any = self._held.get(lkey) or dlqledger.fetch(self.fetcher, entry)
            if held == "unavailable":
                later.append(lkey)
                continue
            if held == "gone":
                logger.info(
                    "%s/%s was deleted from the DLQ (retention) while it waited; its ledger entry goes",
                    entry["topic"],
                    lkey,
                )
                work.append((lkey, entry, None, None, None))
                continue
            where = f"{entry['topic']}/{lkey}"
            dl = self._decode(held[1], where)
            if dl is None:
                continue
            adv: Advance | None = advance(self.table, dl, dlqledger.progress_of(entry), now, self._attempt)
            work.append((lkey, entry, held, dl, adv))
        for lkey in later:  # the broker did not answer: try again at the next interval
            self.schedule.put(lkey, now + self.table.control.retryint)
        if not work:
            return 0
        entries: dict[str, LedgerEntry | None] = {}
        self.producer.begin_transaction()
        try:
            for lkey, entry, held, dl, adv in work:
                if adv is None or dl is None:  # gone
                    entries[lkey] = None
                elif adv.outcome is not None and adv.outcome.action != "IGNORE":
                    self._apply(adv.outcome, dl, held[0], held[1], f"{entry['topic']}/{lkey}")
                    entries[lkey] = None
                elif adv.made or adv.outcome is not None or entry.get("state") != "waiting":
                    entries[lkey] = self._entry(
                        entry["topic"], int(entry["partition"]), int(entry["offset"]), dl, adv, seen=entry.get("seen")
                    )
                else:
                    continue  # nothing changed (not due after all)
                dlqledger.write(self.producer, self.ledger_topic, lkey, entries[lkey])
            self.producer.commit_transaction(60)
        except Exception:
            self.producer.abort_transaction(60)
            raise
        for lkey, _entry, _held, _dl, adv in work:
            if lkey in entries:
                new = entries[lkey]
                if new is None:
                    self.ledger.pop(lkey, None)
                else:
                    self.ledger[lkey] = new
            if adv is None:
                self._held.pop(lkey, None)
                continue
            counts.attempts += adv.made
            counts.failed += adv.failed
            if adv.outcome is None:
                self.schedule.put(lkey, adv.step.due)
            else:
                self._held.pop(lkey, None)
                counts.add(adv.outcome)
        return len(work)

    def waiting(self) -> int:
        return len(self.schedule)

    def ignored(self) -> int:
        return len(self.ledger) - len(self.schedule)

    def _poll_timeout(self, now: float) -> float:
        due = self.schedule.next_due()
        if due is None:
            return POLL_TIMEOUT
        return max(0.0, min(POLL_TIMEOUT, due - now))

    def run(self, stop: Any = None) -> Counts:
        """Process until WAIT says stop (or ``stop()`` is true); prints a summary line every RETRYINT.

        WAIT(NO) stops when the DLQ has been read to its end and no record waits for an attempt;
        WAIT(n) after n seconds in which no record arrived and no attempt was made (records still
        waiting stay in the ledger and are taken up at the next start).
        """
        wait = self.table.control.wait
        retryint = self.table.control.retryint
        counts = Counts()
        busy = False
        idle_since = last_scan = self.clock()
        self.printer(
            f"dlq-handler: reading {self.input} with {len(self.table.rules)} rule(s); "
            f"{self.ignored()} record(s) already left on the DLQ, {self.waiting()} to attempt; "
            f"RETRYINT {retryint} s"
        )
        try:
            while not (stop and stop()):
                n = self.poll_batch(counts, timeout=self._poll_timeout(self.clock()))
                m = self.attempt_due(counts)
                now = self.clock()
                if n or m:
                    busy = True
                    idle_since = now
                    if n:
                        continue
                if busy or now - last_scan >= retryint:
                    self.scans += 1
                    last_scan = now
                    self.printer(counts.line(self.scans, "scan", self.ignored(), self.waiting()))
                    self.totals.merge(counts)
                    counts = Counts()
                    busy = False
                if wait is False and not self.schedule and self._caught_up():
                    break
                if wait is not True and wait is not False and now - idle_since >= int(wait):
                    break
        finally:
            self.totals.merge(counts)
            self.printer(self.totals.line(self.scans, "stopped after scan", self.ignored(), self.waiting()))
            self.close()
        return self.totals

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
