"""What ``qmon metrics`` exports, kept from qmon's output records: a pure model, no Prometheus, no Kafka.

``Metrics.on_record(topic, record)`` applies one decoded output record (logical topic name);
``Metrics.families()`` lists every metric as ``Family`` values (name, type, help, samples) that the
exporter turns into Prometheus metric families.  Series come and go with what they describe:

* a queue's series (depth, service time, event counts, its oldest message's age, its last put and get) appear
  with its first snapshot or event and go when a snapshot says its shard forgot it (idle past
  ``monitor.queue_ttl``); the oldest message's age, last put and last get have no sample while the latest
  snapshot has none to give (an empty queue, puts or gets qmon did not see);
* a structure's series come with its snapshots: usage, size, overflow mode, its OVFLWMAX and FULLTHRESHOLD, and
  the instants its trend reaches OVFLWMAX and full (``ovflwmax_eta``, ``full_eta``, ``overflow_full_eta``: qmon's
  forecast, no sample while it is not heading there); an overflow structure's under its own name;
* ``qmon_alerts_firing{type,subject}`` is 1 while an episode of that type on that subject is FIRING and
  is gone once every such episode is RESOLVED; a FIRING QUEUE_FILL_FORECAST's ``eta`` is its queue's
  ``qmon_queue_fill_eta_timestamp_seconds`` until it resolves;
* the job's health comes from ``QueryProgress`` records (one per micro-batch);
* dead letters are counted by reason, original topic and putting application (``qmon.core.deadletters``);
  the DLQ handler's ledger (``on_ledger``) says which of them it has left on the DLQ, and a series of
  ``qmon_dead_letters_left`` goes when its last record leaves the ledger.

Service time is MQ's: the ``service_time_ms`` of the latest QSVCINT_HIGH / QSVCINT_OK event, and QSVCINT its
``service_interval_ms``.  The oldest
message's age is measured at each scrape (``families(now=...)``) from its put time, as MQ's MSGAGE is when it
is displayed, so it grows while the queue does not change.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from qmon.core import topics
from qmon.core.deadletters import Labels, labels
from qmon.core.timeconv import to_ms

#: ``qmon_batch_duration_seconds`` buckets: fine around a micro-batch's usual duration, coarse for slow ones
BATCH_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)


@dataclass(frozen=True)
class Family:
    """One metric: ``kind`` is gauge, counter or histogram; samples are (labels, value) for gauges and
    counters, and for a histogram one sample whose value is (cumulative bucket counts, count, sum)."""

    name: str
    kind: str
    help: str
    labels: tuple[str, ...]
    samples: list[tuple[tuple[str, ...], Any]] = field(default_factory=list)


class Metrics:
    """The exporter's state, from output records in the order they are read."""

    def __init__(self) -> None:
        self.depth: dict[tuple[str, str], int] = {}
        self.oldest_put: dict[tuple[str, str], float] = {}  # (qmgr, queue) -> its oldest message's put, Unix s
        self.last_put: dict[tuple[str, str], float] = {}
        self.last_get: dict[tuple[str, str], float] = {}
        self.service_time: dict[tuple[str, str], float] = {}
        self.service_interval: dict[tuple[str, str], float] = {}  # (qmgr, queue) -> QSVCINT, seconds
        self.events: Counter[tuple[str, str, str]] = Counter()
        self.structures: dict[str, dict[str, float]] = {}  # name (primary or overflow) -> its gauges
        self.overflow_queues: dict[str, set[str]] = {}  # structure in overflow mode -> its queues in overflow
        self.firing: dict[tuple[str, str], set[str]] = {}  # (type, subject) -> alert_ids FIRING
        self.alert_key: dict[str, tuple[str, str]] = {}  # alert_id -> (type, subject)
        self.fill_eta: dict[str, tuple[str, str, float]] = {}  # FIRING QUEUE_FILL_FORECAST -> (qmgr, queue, eta)
        self.dead_letters: Counter[Labels] = Counter()
        self.ledger: dict[str, tuple[str, Labels]] = {}  # ledger key -> (state, labels) of a record left on the DLQ
        self.input_records: Counter[str] = Counter()
        self.late_records = 0
        self.lag: dict[tuple[str, str], int] = {}
        self.batches: list[int] = [0] * (len(BATCH_BUCKETS) + 1)  # per bucket (the last: +Inf)
        self.batch_sum = 0.0
        self.state_rows: float | None = None
        self.state_memory: float | None = None
        self.last_batch: float | None = None
        self.last_batch_id: dict[str, int] = {}  # query -> newest batch_id applied (a restart re-reads)

    # ------------------------------------------------------------ input

    def on_record(self, topic: str, rec: dict[str, Any]) -> None:
        handler = {
            topics.SNAPSHOT: self._snapshot,
            topics.PERFORMANCE: self._performance,
            topics.ALERTS: self._alert,
            topics.DLQ: self._dead_letter,
            topics.PROGRESS: self._progress,
            topics.OVERFLOW: self._overflow,
        }.get(topic)
        if handler is not None:
            handler(rec)

    def _snapshot(self, rec: dict[str, Any]) -> None:
        qmgr = rec.get("qmgr")
        if qmgr is not None:
            for q in rec.get("queues") or []:
                key = (qmgr, q["queue"])
                self.depth[key] = int(q["depth"])
                for times, attr in (
                    (self.oldest_put, "oldest_message_put"),
                    (self.last_put, "last_put"),
                    (self.last_get, "last_get"),
                ):
                    if q.get(attr) is None:
                        times.pop(key, None)
                    else:
                        times[key] = to_ms(q[attr]) / 1000.0
            for name in rec.get("forgotten") or []:
                self._forget(qmgr, name)
        name = rec.get("structure")
        if name is not None and rec.get("capacity_elements") is not None:
            gauges = self.structures[name] = {
                "usage": _ratio(rec.get("used_elements"), rec["capacity_elements"]),
                "size": float((rec.get("size_kb") or 0) * 1024),
                "mode": 1.0 if rec.get("overflow_mode") else 0.0,
                "in_overflow": float(rec.get("queues_in_overflow") or 0),
            }
            if not rec.get("overflow_mode"):  # out of overflow mode: no queue is in overflow any more
                self.overflow_queues.pop(name, None)
            for pct in ("ovflwmax", "fullthreshold"):  # % of the structure, as a ratio beside its usage
                if rec.get(pct) is not None:
                    gauges[pct] = rec[pct] / 100.0
            for eta in ("ovflwmax_eta", "full_eta"):
                if rec.get(eta) is not None:
                    gauges[eta] = to_ms(rec[eta]) / 1000.0
            ovf = rec.get("overflow_structure")
            if ovf is not None and rec.get("overflow_capacity_elements"):
                gauges = self.structures[ovf] = {
                    "usage": _ratio(rec.get("overflow_used_elements"), rec["overflow_capacity_elements"]),
                    "size": float((rec.get("overflow_size_kb") or 0) * 1024),
                }
                if rec.get("overflow_full_eta") is not None:
                    gauges["full_eta"] = to_ms(rec["overflow_full_eta"]) / 1000.0

    def _forget(self, qmgr: str, queue: str) -> None:
        self.depth.pop((qmgr, queue), None)
        for times in (self.oldest_put, self.last_put, self.last_get):
            times.pop((qmgr, queue), None)
        self.service_time.pop((qmgr, queue), None)
        self.service_interval.pop((qmgr, queue), None)
        for key in [k for k in self.events if k[0] == qmgr and k[1] == queue]:
            del self.events[key]

    def _performance(self, rec: dict[str, Any]) -> None:
        # a shared queue's under its queue-sharing group's name, as its snapshots give its depth
        key = (rec.get("qsg") or rec["qmgr"], rec["queue"])
        self.events[(*key, rec["type"])] += 1
        if rec["type"].startswith("QSVCINT") and rec.get("service_time_ms") is not None:
            self.service_time[key] = rec["service_time_ms"] / 1000.0
        if rec["type"].startswith("QSVCINT") and rec.get("service_interval_ms") is not None:
            self.service_interval[key] = rec["service_interval_ms"] / 1000.0

    def _alert(self, rec: dict[str, Any]) -> None:
        aid, state = rec["alert_id"], rec["state"]
        if state == "FIRING":
            key = (rec["type"], rec["subject"])
            self.alert_key[aid] = key
            self.firing.setdefault(key, set()).add(aid)
            if rec["type"] == "QUEUE_FILL_FORECAST" and rec.get("eta") is not None and rec.get("qmgr"):
                self.fill_eta[aid] = (rec["qmgr"], rec.get("queue") or rec["subject"], to_ms(rec["eta"]) / 1000.0)
        elif state == "RESOLVED" and aid in self.alert_key:
            self.fill_eta.pop(aid, None)
            key = self.alert_key.pop(aid)
            ids = self.firing.get(key, set())
            ids.discard(aid)
            if not ids:
                self.firing.pop(key, None)

    def _overflow(self, rec: dict[str, Any]) -> None:
        """An overflow selection: the queues in overflow are those already there and those the exit approved."""
        self.overflow_queues[rec["structure"]] = {
            c["queue"] for c in rec.get("candidates") or [] if c.get("in_overflow") or c.get("decision") == "approve"
        }

    def _dead_letter(self, rec: dict[str, Any]) -> None:
        self.dead_letters[labels(rec)] += 1

    def on_ledger(self, key: str, entry: dict[str, Any] | None) -> None:
        """One record of the DLQ handler's ledger (``<dlq>.ignored``): an entry, or None for a tombstone."""
        if entry is None:
            self.ledger.pop(key, None)
            return
        state = "waiting" if entry.get("state") == "waiting" else "ignored"
        self.ledger[key] = (state, labels(entry.get("header")))

    def _progress(self, rec: dict[str, Any]) -> None:
        query, batch = rec["query"], int(rec["batch_id"])
        if batch <= self.last_batch_id.get(query, -1):
            return  # a batch run again after a restart: counted once
        self.last_batch_id[query] = batch
        for t in rec.get("input_topics") or []:
            self.input_records[t["topic"]] += int(t["rows"])
        self.late_records += int(rec.get("late_records") or 0)
        for p in rec.get("inputs") or []:
            if p.get("latest_offset") is not None:
                self.lag[(p["topic"], str(p["partition"]))] = max(0, int(p["latest_offset"]) - int(p["end_offset"]))
        seconds = rec["duration_ms"] / 1000.0
        for i, bound in enumerate(BATCH_BUCKETS):
            if seconds <= bound:
                self.batches[i] += 1
                break
        else:
            self.batches[-1] += 1
        self.batch_sum += seconds
        if rec.get("state_rows") is not None:
            self.state_rows = float(rec["state_rows"])
        if rec.get("state_memory_bytes") is not None:
            self.state_memory = float(rec["state_memory_bytes"])
        self.last_batch = (to_ms(rec["ts"]) + rec["duration_ms"]) / 1000.0

    # ------------------------------------------------------------ output

    def families(self, *, now: float) -> list[Family]:
        """Every metric, the oldest messages' ages measured at ``now`` (Unix seconds: the scrape's time)."""

        def fam(name: str, kind: str, text: str, labels: tuple[str, ...], samples: Any) -> Family:
            return Family(name, kind, text, labels, sorted(samples))

        s = self.structures
        fill_eta: dict[tuple[str, str], float] = {}
        for qmgr, queue, eta in self.fill_eta.values():
            fill_eta[(qmgr, queue)] = min(eta, fill_eta.get((qmgr, queue), eta))
        out = [
            fam(
                "qmon_queue_depth",
                "gauge",
                "Messages on the queue, as qmon accounts them (latest snapshot).",
                ("qmgr", "queue"),
                ((k, float(v)) for k, v in self.depth.items()),
            ),
            fam(
                "qmon_queue_service_time_seconds",
                "gauge",
                "MQ's service time of the queue's latest service-interval event (QSVCINT_HIGH / QSVCINT_OK).",
                ("qmgr", "queue"),
                self.service_time.items(),
            ),
            fam(
                "qmon_queue_service_interval_seconds",
                "gauge",
                "The queue's QSVCINT (service interval), from its latest service-interval event.",
                ("qmgr", "queue"),
                self.service_interval.items(),
            ),
            fam(
                "qmon_queue_fill_eta_timestamp_seconds",
                "gauge",
                "When the queue's depth reaches MAXDEPTH, or QDEPTHHI where depth high events are enabled, as a "
                "firing QUEUE_FILL_FORECAST predicts (Unix time; the earliest while both fire).",
                ("qmgr", "queue"),
                fill_eta.items(),
            ),
            fam(
                "qmon_queue_oldest_message_age_seconds",
                "gauge",
                "Age of the oldest message on the queue at the scrape (MQ's MSGAGE), from its put time in the latest "
                "snapshot; none while the queue is empty or qmon did not see its oldest messages' puts.",
                ("qmgr", "queue"),
                ((k, max(0.0, now - put)) for k, put in self.oldest_put.items()),
            ),
            fam(
                "qmon_queue_last_put_timestamp_seconds",
                "gauge",
                "When the last put qmon saw on the queue happened (MQ's LPUTDATE and LPUTTIME), Unix time.",
                ("qmgr", "queue"),
                self.last_put.items(),
            ),
            fam(
                "qmon_queue_last_get_timestamp_seconds",
                "gauge",
                "When the last get qmon saw on the queue happened (MQ's LGETDATE and LGETTIME), Unix time.",
                ("qmgr", "queue"),
                self.last_get.items(),
            ),
            fam(
                "qmon_queue_events",
                "counter",
                "Performance events raised for the queue, by type (QSVCINT_HIGH, QDEPTH_HIGH, ...).",
                ("qmgr", "queue", "type"),
                ((k, float(v)) for k, v in self.events.items()),
            ),
            fam(
                "qmon_structure_usage_ratio",
                "gauge",
                "Data elements in use over the structure's capacity (0..1); an overflow structure under its own name.",
                ("structure",),
                (((n,), g["usage"]) for n, g in s.items()),
            ),
            fam(
                "qmon_structure_size_bytes",
                "gauge",
                "The structure's current size (SIZE after any alter).",
                ("structure",),
                (((n,), g["size"]) for n, g in s.items()),
            ),
            fam(
                "qmon_structure_overflow_mode",
                "gauge",
                "1 while the primary structure is in overflow mode.",
                ("structure",),
                (((n,), g["mode"]) for n, g in s.items() if "mode" in g),
            ),
            fam(
                "qmon_structure_queue_in_overflow",
                "gauge",
                "1 for each queue in overflow of a structure in overflow mode (from its latest overflow selection).",
                ("structure", "queue"),
                (((n, q), 1.0) for n, qs in sorted(self.overflow_queues.items()) for q in sorted(qs)),
            ),
            fam(
                "qmon_structure_queues_in_overflow",
                "gauge",
                "Queues the overflow exit approved (moved to the overflow structure, or puts rejected).",
                ("structure",),
                (((n,), g["in_overflow"]) for n, g in s.items() if "in_overflow" in g),
            ),
            fam(
                "qmon_structure_ovflwmax_ratio",
                "gauge",
                "The structure's OVFLWMAX over its capacity (0..1), where CQS alters it or puts it into overflow mode; "
                "primary structures only, none for a resource structure.",
                ("structure",),
                (((n,), g["ovflwmax"]) for n, g in s.items() if "ovflwmax" in g),
            ),
            fam(
                "qmon_structure_fullthreshold_ratio",
                "gauge",
                "The structure's FULLTHRESHOLD over its capacity (0..1), where STRUCTURE_NEAR_FULL fires; primary "
                "structures only.",
                ("structure",),
                (((n,), g["fullthreshold"]) for n, g in s.items() if "fullthreshold" in g),
            ),
            fam(
                "qmon_structure_ovflwmax_eta_timestamp_seconds",
                "gauge",
                "When the structure's usage reaches OVFLWMAX at its trend, as qmon forecasts it in its latest "
                "snapshot (Unix time); none while it is not heading there.",
                ("structure",),
                (((n,), g["ovflwmax_eta"]) for n, g in s.items() if "ovflwmax_eta" in g),
            ),
            fam(
                "qmon_structure_full_eta_timestamp_seconds",
                "gauge",
                "When the structure is full (100 %) at its trend, as qmon forecasts it in its latest snapshot (Unix "
                "time); an overflow structure under its own name; none while it is not heading there.",
                ("structure",),
                (((n,), g["full_eta"]) for n, g in s.items() if "full_eta" in g),
            ),
            fam(
                "qmon_alerts_firing",
                "gauge",
                "1 while an alert of this type on this subject is FIRING (gone once RESOLVED).",
                ("type", "subject"),
                ((k, 1.0) for k in self.firing),
            ),
            fam(
                "qmon_dead_letters",
                "counter",
                "Records on qmon's dead-letter topic, by reason, original topic and putting application.",
                ("reason", "origin", "appl"),
                ((tuple(k), float(v)) for k, v in self.dead_letters.items()),
            ),
            fam(
                "qmon_dead_letters_left",
                "gauge",
                "Dead letters the DLQ handler has left on the DLQ (its ledger), waiting for a retry or ignored.",
                ("state", "reason", "origin", "appl"),
                (((state, *k), float(v)) for (state, k), v in Counter(self.ledger.values()).items()),
            ),
            fam(
                "qmon_input_records",
                "counter",
                "Records the job read, by input topic (from the query's progress).",
                ("topic",),
                (((t,), float(v)) for t, v in self.input_records.items()),
            ),
            fam(
                "qmon_late_records",
                "counter",
                "Records the job applied out of event-time order: they came more than job.max_lateness behind "
                "the input partitions already read (applied at once, never dropped).",
                (),
                [((), float(self.late_records))],
            ),
            fam(
                "qmon_input_lag_records",
                "gauge",
                "Records in the partition the job had not read when its latest batch was planned.",
                ("topic", "partition"),
                ((k, float(v)) for k, v in self.lag.items()),
            ),
        ]
        cumulative, total = [], 0
        for n in self.batches:
            total += n
            cumulative.append(total)
        out.append(
            Family(
                "qmon_batch_duration_seconds",
                "histogram",
                "Micro-batch durations (the whole trigger), from the query's progress.",
                (),
                [((), (list(zip((*BATCH_BUCKETS, float("inf")), cumulative, strict=True)), total, self.batch_sum))]
                if total
                else [],
            )
        )
        for name, text, value in (
            (
                "qmon_state_rows",
                "Rows in the job's state stores, all stateful operators (the monitor's: one per unit).",
                self.state_rows,
            ),
            ("qmon_state_memory_bytes", "Memory the job's state store reports using.", self.state_memory),
            (
                "qmon_last_batch_timestamp_seconds",
                "When the job's latest micro-batch ended (Unix time).",
                self.last_batch,
            ),
        ):
            out.append(Family(name, "gauge", text, (), [((), value)] if value is not None else []))
        return out


def _ratio(used: Any, capacity: Any) -> float:
    return min(1.0, float(used or 0) / float(capacity)) if capacity else 0.0
