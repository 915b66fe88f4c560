"""Random activity and command streams for property tests and benchmarks (seeded, deterministic)."""

from __future__ import annotations

import random
from typing import Any

_COMMANDS = [
    "ALTER QMGR PERFMEV(ENABLED)",
    "ALTER QMGR PERFMEV(DISABLED)",
    "ALTER QLOCAL({q}) QSVCIEV(HIGH) QSVCINT({n})",
    "ALTER QLOCAL({q}) QSVCIEV(OK)",
    "ALTER QLOCAL({q}) QSVCIEV(NONE)",
    "ALTER QLOCAL({q}) MAXDEPTH(10) QDEPTHHI(60) QDEPTHLO(20) QDPHIEV(ENABLED) QDPLOEV(ENABLED) QDPMAXEV(ENABLED)",
    "RESET QSTATS({q})",
    "DEFINE QLOCAL({q}) REPLACE QSVCINT({n}) QSVCIEV(HIGH)",
    "REGISTER INTEREST QUEUE({q}) CLIENT(C1)",
    "REGISTER INTEREST QUEUE(Q*) CLIENT(C2)",
    "DEREGISTER INTEREST QUEUE({q}) CLIENT(C1)",
    # every shard holds every registration: the reply lists what shard 0 removed, which must be all
    "DEREGISTER INTEREST QUEUE(*) CLIENT(C1)",
]


def random_stream(
    rng: random.Random, qmgr: str, n: int = 60, queues: int = 3, t0: int = 1_700_000_000_000
) -> list[dict[str, Any]]:
    names = [f"Q{i}" for i in range(queues)]
    out: list[dict[str, Any]] = [
        {"ts": t0, "qmgr": qmgr, "command": "ALTER QMGR PERFMEV(ENABLED)", "command_id": f"{qmgr}-c"}
    ]
    t = t0
    for i in range(n):
        t += rng.choice([0, 1, 50, 400, 1000, 2500, 6000])
        q = rng.choice(names)
        roll = rng.random()
        if roll < 0.12:
            text = rng.choice(_COMMANDS).format(q=q, n=rng.choice([0, 500, 1000, 3000]))
            out.append({"ts": t, "qmgr": qmgr, "command": text, "command_id": f"{qmgr}-c{i}"})
            continue
        op = "PUT" if roll < 0.6 else ("GET" if roll < 0.97 else "START")
        rec: dict[str, Any] = {"event_id": f"{qmgr}-{i}", "qmgr": qmgr, "queue": q, "op": op, "ts": t}
        if op == "START":
            rec["depth_after"] = rng.choice([0, 2])
        if op == "PUT" and rng.random() < 0.05:
            rec["reason"] = 2053
        if rng.random() < 0.03 and i > 0:
            rec["event_id"] = f"{qmgr}-{i - 1}"  # a replayed duplicate
        out.append(rec)
    return out


def streams(rng: random.Random, qmgrs: int, grain_ms: int = 1, n: tuple[int, int] = (10, 60)) -> list[dict[str, Any]]:
    """Random streams of ``qmgrs`` queue managers from one instant (each starts with its commands at t0, and
    about one step in seven is 0 ms: equal timestamps across them all), in ``ts`` order; with ``grain_ms``,
    each ts rounded down to it (a clock that ticks coarsely: many records, commands among them, at one ts);
    ``n``: the bounds of each queue manager's number of records."""
    records: list[dict[str, Any]] = []
    for i in range(qmgrs):
        records.extend(random_stream(rng, f"QM{i}", n=rng.randint(*n)))
    for r in records:
        r["ts"] -= r["ts"] % grain_ms
    records.sort(key=lambda r: r["ts"])
    return records


STRUCTURE_CONFIG = {
    "structures": [
        {"strname": "MSGQ1", "size": 40, "initsize": 20, "ovflwmax": 70, "fullthreshold": 85, "lgmsgsz": 1024},
        {"strname": "MSGQ2", "size": 30, "ovflwstr": "OVFQ2", "ovflwsize": 10, "overflow_scan_interval": "20 s"},
        {"strname": "RSRC1", "size": 8, "type": "resource"},
    ],
    "overflow_exit": [{"queue": "1KEEP*", "decision": "reject"}],
}


def random_structure_stream(rng: random.Random, n: int = 400, t0: int = 1_700_000_000_000) -> list[dict[str, Any]]:
    """IMS-style activity on small structures: fills, alters, overflows, drains, fills up."""
    queues = ["1PAYROLL", "1KEEPME", "1ORDERS", "5LTERM01", "4SERIAL", "1SMALL", "8REMOTE", "9OTMA01"]
    structures = ["MSGQ1", "MSGQ2", "RSRC1", "NOTCONF"]
    out: list[dict[str, Any]] = []
    t = t0
    drain = False
    for i in range(n):
        t += rng.choice([0, 10, 200, 1500, 8000])
        if i % 60 == 0:
            drain = not drain if i else False
        op = "GET" if rng.random() < (0.75 if drain else 0.3) else "PUT"
        s = rng.choices(structures, weights=[5, 5, 1, 0.2])[0]
        q = rng.choice(queues)
        nbytes = rng.choice([None, 100, 512, 513, 900, 3000, 5000]) if op == "PUT" or rng.random() < 0.5 else None
        rec: dict[str, Any] = {
            "event_id": f"s-{i}",
            "qmgr": rng.choice(["IMSA", "IMSB"]),
            "queue": q,
            "op": op,
            "ts": t,
            "msg_bytes": nbytes,
            "structure": s,
        }
        if rng.random() < 0.02:
            rec["reason"] = 2053
        out.append(rec)
    return out


def activity(r: dict[str, Any], seq: int) -> Any:
    """A stream's record as the rules take it (``Activity``), the arrival clock following event time."""
    from qmon.core.records import Activity

    return Activity.of(r, clock=r["ts"], seq=seq)


def raised_by_the_clock_alone(records: list[dict[str, Any]], config: dict[str, Any]) -> set[str]:
    """The event ids of the outputs the pure rules raise over ``records`` only once the arrival clock passes the
    end of the input (a queue that stalls, a hold that ends, a scan that falls due after its last record).

    ``qmon replay``'s clock is ``ts``, so it raises them; a backlog produced in a moment and then read by the live
    job has an arrival clock that spans that moment, not the records' ``ts``, so the job does not.  A test that
    compares such a run with replay takes an input where this is empty."""
    from qmon.core.config import Config
    from qmon.core.reference import run_reference

    cfg = Config.model_validate(config)
    end = max(r["ts"] for r in records)

    def ids(final_clock: int | None) -> set[str]:
        out = run_reference(records, cfg.monitor_settings(), final_clock, cfg.structure_settings())
        return {e.record["event_id"] for e in out}

    return ids(end) - ids(None)
