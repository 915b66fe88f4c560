"""Hypothesis strategies for activity streams: IMS queue types, long messages, overflow structures,
generic registrations.  Used by the pure property tests (many examples, milliseconds each) and by
the Spark property tests (a few examples: each is a replay)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

T0 = 1_700_000_000_000

#: ready queues (1 transaction, 5 LTERM: long messages spill to 2/6), serial, remote, OTMA, a staging
#: queue named directly, and a non-IMS name
STRUCTURE_QUEUES = [
    "1PAYROLL",
    "1KEEPME",
    "1ORDERS",
    "5LTERM01",
    "4SERIAL",
    "8REMOTE",
    "9OTMA01",
    "2PAYROLL",
    "PAYROLL.IN",
]
SIZES = [None, 1, 100, 512, 513, 900, 1024, 1025, 3000, 4096, 4097, 5000, 9000]


@st.composite
def structure_streams(
    draw: Any, structures: tuple[str, ...] = ("MSGQ1", "MSGQ2", "RSRC1", "NOTCONF"), max_size: int = 400
) -> list[dict[str, Any]]:
    """Puts and gets on small structures, in phases that fill and drain them."""
    n = draw(st.integers(min_value=1, max_value=max_size))
    fill_bias = draw(st.floats(min_value=0.3, max_value=0.9))
    out: list[dict[str, Any]] = []
    t = T0
    for i in range(n):
        t += draw(st.sampled_from([0, 10, 200, 1500, 8000]))
        phase_fill = (i // 50) % 2 == 0
        op = "PUT" if draw(st.floats(0, 1)) < (fill_bias if phase_fill else 1 - fill_bias) else "GET"
        nbytes = draw(st.sampled_from(SIZES)) if op == "PUT" or draw(st.booleans()) else None
        rec: dict[str, Any] = {
            "event_id": f"s-{i}",
            "qmgr": draw(st.sampled_from(["IMSA", "IMSB"])),
            "queue": draw(st.sampled_from(STRUCTURE_QUEUES)),
            "op": op,
            "ts": t,
            "msg_bytes": nbytes,
            "structure": draw(st.sampled_from(structures)),
        }
        if draw(st.integers(0, 49)) == 0:
            rec["reason"] = 2053
        if i and draw(st.integers(0, 49)) == 0:
            rec["event_id"] = f"s-{i - 1}"  # a redelivered record
        out.append(rec)
    return out


#: IMS queue types 1-9 (interest is refused or never given for 2, 3, 6, 7, 9) and an MQ name
INTEREST_QUEUES = [
    "1PAYTRAN",
    "1ORDERS",
    "2PAYTRAN",
    "3SUSPEND",
    "4SERIAL",
    "5LTERMZ",
    "5LTERMY",
    "6LTERMZ",
    "7APPC01",
    "8REMOTE",
    "9OTMA01",
    "PAYROLL.IN",
]
INTEREST_NAMES = INTEREST_QUEUES + ["*", "1*", "5*", "5LT*", "2*", "9*", "PAY*"]


@st.composite
def interest_streams(draw: Any, qmgr: str = "IMSPLEX", max_size: int = 120) -> list[dict[str, Any]]:
    """Activity on IMS-named queues with exact and generic registrations of several clients, whole-client
    deregistration (``QUEUE(*)``), service-interval settings, and generic RESET QSTATS."""
    out: list[dict[str, Any]] = [
        {"ts": T0, "qmgr": qmgr, "command": "ALTER QMGR PERFMEV(ENABLED)", "command_id": f"{qmgr}-c"}
    ]
    t = T0
    n = draw(st.integers(min_value=1, max_value=max_size))
    for i in range(n):
        t += draw(st.sampled_from([0, 1, 50, 400, 1000, 2500, 6000]))
        roll = draw(st.integers(0, 99))
        if roll < 20:
            client = draw(st.sampled_from(["IMSA", "IMSB", "IMSC"]))
            name = draw(st.sampled_from(INTEREST_NAMES))
            text = draw(
                st.sampled_from(
                    [
                        f"REGISTER INTEREST QUEUE({name}) CLIENT({client})",
                        f"REGISTER INTEREST QUEUE({name}) CLIENT({client})",
                        f"DEREGISTER INTEREST QUEUE({name}) CLIENT({client})",
                        f"DEREGISTER INTEREST QUEUE(*) CLIENT({client})",
                        f"ALTER QLOCAL({draw(st.sampled_from(INTEREST_QUEUES))}) QSVCIEV(HIGH) QSVCINT(1000)",
                        "RESET QSTATS(1*)",
                    ]
                )
            )
            out.append({"ts": t, "qmgr": qmgr, "command": text, "command_id": f"{qmgr}-c{i}"})
            continue
        op = "PUT" if roll < 65 else ("GET" if roll < 98 else "START")
        rec: dict[str, Any] = {
            "event_id": f"{qmgr}-{i}",
            "qmgr": qmgr,
            "queue": draw(st.sampled_from(INTEREST_QUEUES)),
            "op": op,
            "ts": t,
        }
        if op == "START":
            rec["depth_after"] = draw(st.sampled_from([0, 2]))
        elif op == "PUT" and draw(st.integers(0, 9)) == 0:
            rec["depth_after"] = draw(st.integers(1, 4))  # a queue qmon first sees non-empty
        out.append(rec)
    return out
