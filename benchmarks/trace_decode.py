"""What the job pays to decode its input: MQ activity trace (PCF) beside QueueActivity (Avro), per record.

    python benchmarks/trace_decode.py [--records 200000] [--calls 50]

The same workload both ways: ``--records`` puts and gets over 1,000 queues of 4 queue managers, as
QueueActivity Avro records (what the job's ``from_avro`` reads; fastavro's decoder here, in one Python
process) and as activity trace messages of ``--calls`` MQI calls each (what ``qmon.core.pcf.decode`` reads,
in the job's pandas UDF; a connection's trace interval typically holds tens to hundreds of calls).
Prints records/s of each, side by side, and checks both give the same (qmgr, queue, op, ts, msg_bytes).
Asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import time

from qmon.connectors import avro
from qmon.core import pcf

T0 = 1_700_000_000_000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--calls", type=int, default=50, help="MQI calls per trace message")
    args = ap.parse_args()
    rng = random.Random(7)
    recs = []
    for i in range(args.records):
        q = rng.randrange(1000)
        recs.append(
            {
                "event_id": f"e{i}",
                "qmgr": f"QM{q % 4}",
                "queue": f"APP.Q{q:04d}",
                "op": "PUT" if rng.random() < 0.5 else "GET",
                "ts": T0 + i,
                "depth_after": None,
                "msg_bytes": 512 + q,
                "structure": None,
                "reason": None,
            }
        )
    values = [avro.encode("QueueActivity", r) for r in recs]
    enc = pcf.Encoder()
    messages = []
    by_qmgr: dict[str, list[dict]] = {}
    for r in recs:
        by_qmgr.setdefault(str(r["qmgr"]), []).append(r)
    for qmgr, rs in by_qmgr.items():
        for i in range(0, len(rs), args.calls):
            calls = [
                enc.call(
                    pcf.XF_PUT if r["op"] == "PUT" else pcf.XF_GET, r["queue"], ts_ms=r["ts"], msg_length=r["msg_bytes"]
                )
                for r in rs[i : i + args.calls]
            ]
            messages.append(enc.trace(qmgr, calls))

    t = time.perf_counter()
    decoded_avro = [avro.decode("QueueActivity", v) for v in values]
    avro_s = time.perf_counter() - t
    t = time.perf_counter()
    decoded_pcf = [c for n, m in enumerate(messages) for c in pcf.decode(m, offset=n).activity]
    pcf_s = time.perf_counter() - t

    def key(r: dict) -> tuple:
        ts = r["ts"] if isinstance(r["ts"], int) else round(r["ts"].timestamp() * 1000)
        return (r["qmgr"], r["queue"], r["op"], ts, r["msg_bytes"])

    same = sorted(map(key, decoded_avro)) == sorted(map(key, decoded_pcf))
    size_avro = sum(map(len, values)) / len(values)
    size_pcf = sum(map(len, messages)) / len(decoded_pcf)
    print(f"{args.records:,} puts and gets, one Python process:")
    print(
        f"  QueueActivity (Avro, fastavro):          {len(values) / avro_s:>10,.0f} records/s  {size_avro:6.0f} bytes a record"
    )
    print(
        f"  activity trace (PCF, {args.calls} calls a message): {len(decoded_pcf) / pcf_s:>10,.0f} records/s  "
        f"{size_pcf:6.0f} bytes a record ({len(messages):,} messages)"
    )
    print(f"  the same activity both ways: {'yes' if same else 'NO'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
