"""A realistic, deterministic workload for qmon (``qmon simulate``, ``qmon demo``).  Pure.

For a given seed and rate the sequence of records is always the same; only ``t0``
(the event time of the first record) anchors it to a clock.  What it contains:

* two IBM MQ queue managers (QM1, QM2) with ~80 application queues each, steady
  puts, each message got by its queue's consumer 20-1,500 ms later, and now and
  then a burst of 20 puts that the consumer drains one every 200 ms;
* QM1's ``APP.Q006``: its consumer hangs for 15 s in every minute, so messages wait
  on a quiet queue (QUEUE_STALLED, then QSVCINT_HIGH when it comes back);
* QM1's ``PAYROLL.REQUEST``: a consumer that keeps up, stops for ``slow`` seconds
  in every cycle while puts continue (QSVCINT_HIGH, QUEUE_STALLED), then catches up
  (QSVCINT_OK);
* two IMS systems (IMSA, IMSB) sharing the CF list structures MSGQ1 and MSGQ2,
  with IMS queue-type names (1 transaction ready, 5 LTERM ready): in the first 36 s
  of each minute-long cycle puts outpace gets, so MSGQ1 fills steadily (at 100 records/s,
  for about half a minute: time enough for a fill forecast to see it coming) until it is
  altered and goes into overflow, and MSGQ2 fills up faster; then both drain, and stay
  nearly empty until the next cycle; ~3% of IMS messages are long (split to staging queues);
* now and then a malformed record (random bytes) that qmon must dead-letter.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from qmon.core import topics
from qmon.core.records import Activity

MQ_QMGRS = ("QM1", "QM2")
IMS_SYSTEMS = ("IMSA", "IMSB")
PAYROLL = ("QM1", "PAYROLL.REQUEST")
HUNG = ("QM1", "APP.Q006")  # its consumer hangs from HUNG_FROM_S to HUNG_TO_S of every minute
HUNG_FROM_S, HUNG_TO_S = 15.0, 30.0


class Item(NamedTuple):
    ts: int  # event time, epoch ms
    topic: str  # logical topic
    key: bytes
    value: dict[str, Any] | bytes  # a record, or raw bytes (malformed)


@dataclass
class Simulator:
    seed: int = 1
    rate: float = 200.0  # records per second of event time
    t0: int = 1_700_000_000_000
    cycle_s: float = 60.0  # one fill/drain and slow/recover cycle
    slow_from_s: float = 8.0  # PAYROLL.REQUEST's consumer stops ...
    slow_s: float = 6.0  # ... for this long
    fill_s: float = 36.0  # IMS puts outpace gets in the first part of each cycle ...
    fill_puts: tuple[float, float] = (0.6, 0.78)  # ... this share of MSGQ1's, MSGQ2's IMS calls being puts
    malformed_every: int = 700
    mq_queues: int = 80
    ims_queues: int = 120
    stats: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.depth: dict[tuple[str, str], int] = {}
        self.sizes: dict[tuple[str, str], list[int]] = {}
        self.seq = 0
        self.gets: list[tuple[int, int, str, str]] = []  # MQ consumers' gets to come: (due ts, seq, qmgr, queue)
        self.mq = [(qm, f"APP.Q{i:03d}") for qm in MQ_QMGRS for i in range(self.mq_queues)]
        self.mq += [(qm, "ORDERS.IN") for qm in MQ_QMGRS]
        self.ims1 = [f"1TRAN{i:03d}" for i in range(self.ims_queues)] + [f"5LTERM{i:03d}" for i in range(40)]
        self.ims2 = [f"1BATCH{i:02d}" for i in range(30)]

    # ---------------------------------------------------------- records

    def _act(
        self, ts: int, qmgr: str, queue: str, op: str, nbytes: int | None = None, structure: str | None = None
    ) -> Item:
        self.seq += 1
        key = (qmgr if structure is None else structure, queue)
        if op == "PUT":
            self.depth[key] = self.depth.get(key, 0) + 1
            self.sizes.setdefault(key, []).append(nbytes or 0)
        else:
            self.depth[key] -= 1
            sizes = self.sizes[key]
            nbytes = sizes.pop(0)
        self.stats[op] = self.stats.get(op, 0) + 1
        rec = Activity(
            event_id=f"sim{self.seed}-{self.seq}",
            qmgr=qmgr,
            queue=queue,
            op=op,
            ts=ts,
            msg_bytes=nbytes,
            structure=structure,
        ).record()
        return Item(ts, topics.ACTIVITY, f"{qmgr}/{queue}".encode(), rec)

    def _size(self, long_ok: bool) -> int:
        if long_ok and self.rng.random() < 0.03:
            return self.rng.randint(5_000, 12_000)
        return self.rng.choice([200, 400, 700, 1_000, 1_500, 2_500])

    def _ims(self, ts: int, filling: bool) -> Item:
        msgq1 = self.rng.random() < 0.8
        structure, names = ("MSGQ1", self.ims1) if msgq1 else ("MSGQ2", self.ims2)
        system = self.rng.choice(IMS_SYSTEMS)
        put_p = self.fill_puts[0 if msgq1 else 1] if filling else 0.2
        if self.rng.random() < put_p:
            # the busiest queues get most of the work, so overflow has clear candidates
            if self.rng.random() < 0.7:
                queue = names[min(len(names) - 1, int(self.rng.expovariate(1 / 12)))]
            else:
                queue = self.rng.choice(names)
            return self._act(ts, system, queue, "PUT", self._size(queue.startswith("1")), structure)
        full = [q for q in names if self.depth.get((structure, q), 0) > 0]
        if not full:
            queue = self.rng.choice(names)
            return self._act(ts, system, queue, "PUT", self._size(False), structure)
        return self._act(ts, system, self.rng.choice(full[:20]), "GET", None, structure)

    def _consume_at(self, due: int, qmgr: str, queue: str) -> None:
        """The queue's consumer gets a message at ``due`` (later while a hung consumer hangs)."""
        if (qmgr, queue) == HUNG:
            phase = ((due - self.t0) / 1000.0) % 60.0
            if HUNG_FROM_S <= phase < HUNG_TO_S:
                due += int((HUNG_TO_S - phase) * 1000)
        self.seq += 1
        heapq.heappush(self.gets, (due, self.seq, qmgr, queue))

    def _mq(self, ts: int) -> list[Item]:
        if self.gets and self.gets[0][0] <= ts:  # a consumer's get is due: it takes this slot
            _, _, qmgr, queue = heapq.heappop(self.gets)
            return [self._act(ts, qmgr, queue, "GET")]
        qmgr, queue = self.rng.choice(self.mq)
        if self.rng.random() < 0.02:
            self.stats["bursts"] = self.stats.get("bursts", 0) + 1
            first = ts + self.rng.randint(20, 1_500)
            for k in range(20):
                self._consume_at(first + 200 * k, qmgr, queue)
            return [self._act(ts, qmgr, queue, "PUT", 300) for _ in range(20)]
        self._consume_at(ts + self.rng.randint(20, 1_500), qmgr, queue)
        return [self._act(ts, qmgr, queue, "PUT", self._size(False))]

    def _payroll(self, ts: int, phase: float) -> list[Item]:
        qmgr, queue = PAYROLL
        out = [self._act(ts, qmgr, queue, "PUT", 800)]
        slow = self.slow_from_s <= phase < self.slow_from_s + self.slow_s
        if not slow:
            while self.depth.get(PAYROLL, 0) > 0:
                out.append(self._act(ts, qmgr, queue, "GET"))
        return out

    def items(self) -> Iterator[Item]:
        """The endless stream, in event-time order."""
        step = 1000.0 / self.rate
        i = 0
        next_payroll = 0.0
        while True:
            t_ms = i * step
            ts = self.t0 + int(t_ms)
            phase = (t_ms / 1000.0) % self.cycle_s
            i += 1
            if t_ms >= next_payroll:
                next_payroll += 500.0
                yield from self._payroll(ts, phase)
            if self.malformed_every and i % self.malformed_every == 0:
                self.stats["malformed"] = self.stats.get("malformed", 0) + 1
                yield Item(ts, topics.ACTIVITY, b"sim/malformed", bytes(self.rng.getrandbits(8) for _ in range(24)))
                continue
            if self.rng.random() < 0.5:
                yield self._ims(ts, phase < self.fill_s)
            else:
                yield from self._mq(ts)

    def take(self, n: int) -> list[Item]:
        out = []
        for item in self.items():
            out.append(item)
            if len(out) >= n:
                break
        return out


#: The MQSC a demo or simulation applies first (also in config/demo.mqsc).
SETUP_MQSC = {
    "QM1": ["ALTER QMGR PERFMEV(ENABLED)", "ALTER QLOCAL('PAYROLL.REQUEST') QSVCINT(2000) QSVCIEV(HIGH)"],
}


def as_mq_trace(items: Iterator[Item], interval_ms: int = 1000, order: str = "<") -> Iterator[Item]:
    """The same workload as IBM MQ application activity trace: each queue manager's MQ puts and gets
    (records without a structure) grouped into one PCF message per ``interval_ms`` of event time, on
    ``qmon.mq.trace`` as raw bytes (what the Kafka Connect MQ source copies); IMS activity stays QueueActivity
    on ``qmon.activity``, and a malformed record becomes a malformed trace message."""
    from qmon.core import pcf

    enc = pcf.Encoder(order=order)
    calls: dict[str, list[bytes]] = {}
    started: dict[str, int] = {}

    def flush(qmgr: str, ts: int) -> Item:
        body = enc.trace(qmgr, calls.pop(qmgr), appl="qmon simulate")
        started.pop(qmgr, None)
        return Item(ts, topics.MQ_TRACE, qmgr.encode(), body)

    for item in items:
        for qmgr in [q for q, t in started.items() if item.ts - t >= interval_ms]:
            yield flush(qmgr, item.ts)
        rec = item.value
        if isinstance(rec, bytes):
            yield Item(item.ts, topics.MQ_TRACE, item.key, rec)
            continue
        if item.topic != topics.ACTIVITY or rec.get("structure") is not None or rec["op"] not in ("PUT", "GET"):
            yield item
            continue
        op = pcf.XF_PUT if rec["op"] == "PUT" else pcf.XF_GET
        failed = rec.get("reason") is not None
        calls.setdefault(rec["qmgr"], []).append(
            enc.call(
                op,
                rec["queue"],
                ts_ms=rec["ts"],
                msg_length=rec.get("msg_bytes"),
                comp_code=2 if failed else 0,
                reason=rec.get("reason") or 0,
                options=0x4,  # MQPMO_NO_SYNCPOINT / MQGMO_NO_SYNCPOINT
            )
        )
        started.setdefault(rec["qmgr"], rec["ts"])
