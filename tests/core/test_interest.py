"""Registration of interest and WorkAvailable (pure logic)."""

from __future__ import annotations

import itertools
import random
import zlib

import pytest

from qmon.core import topics
from qmon.core.interest import NO_INTEREST_TYPES, Registry, covers_lterm_ready, matches, overlap, refused
from qmon.core.mqsc import MqscError, parse_command, part_command_id
from qmon.core.queues import MonitorSettings, QueueMonitor
from qmon.core.records import Activity
from qmon.core.reference import run_reference
from tests.streams import random_stream

_n = itertools.count(1)


def mon() -> QueueMonitor:
    return QueueMonitor("IMSPLEX", MonitorSettings())


def cmd(m: QueueMonitor, text: str, ts: int = 0):
    return m.on_command(parse_command(text), ts, f"c{next(_n)}", reply=True)


def op(m: QueueMonitor, o: str, queue: str, ts: int = 1000, **kw):
    return m.on_activity(Activity(f"e{next(_n)}", "IMSPLEX", queue, o, ts, **kw))


def notes(emits):
    return [(e.record["client"], e.record["queue"], e.record["depth"]) for e in emits if e.topic == topics.NOTIFY]


def replies(emits):
    return [(e.record["ok"], e.record["message"]) for e in emits if e.topic == topics.REPLIES]


def test_empty_to_non_empty_notifies_every_registered_client_once():
    m = mon()
    cmd(m, "REGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSA)")
    cmd(m, "REGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSB)")
    assert notes(op(m, "PUT", "1PAYTRAN")) == [("IMSA", "1PAYTRAN", 1), ("IMSB", "1PAYTRAN", 1)]
    assert notes(op(m, "PUT", "1PAYTRAN")) == []  # non-empty to non-empty: nothing
    assert notes(op(m, "GET", "1PAYTRAN")) == []
    assert notes(op(m, "GET", "1PAYTRAN")) == []  # non-empty to empty: never
    assert len(notes(op(m, "PUT", "1PAYTRAN"))) == 2  # empty again, then work


def test_registration_notifies_once_if_the_queue_already_holds_work():
    m = mon()
    op(m, "PUT", "1PAYTRAN")
    out = cmd(m, "REGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSA)")
    assert notes(out) == [("IMSA", "1PAYTRAN", 1)]
    assert replies(out)[0][0] is True
    again = cmd(m, "REGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSA)")
    assert notes(again) == [] and "already registered" in replies(again)[0][1]


def test_no_notification_after_deregister_and_deregistering_twice_is_an_error():
    m = mon()
    cmd(m, "REGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSA)")
    assert replies(cmd(m, "DEREGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSA)"))[0][0] is True
    assert notes(op(m, "PUT", "1PAYTRAN")) == []
    ok, message = replies(cmd(m, "DEREGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSA)"))[0]
    assert ok is False and "no interest registered" in message


def test_generic_names_cover_queues_first_seen_later():
    m = mon()
    cmd(m, "REGISTER INTEREST QUEUE(1TRAN*) CLIENT(IMSA)")
    assert notes(op(m, "PUT", "1TRANX01")) == [("IMSA", "1TRANX01", 1)]
    assert notes(op(m, "PUT", "1OTHER")) == []


def test_a_client_registered_twice_by_exact_and_generic_name_gets_one_record():
    m = mon()
    cmd(m, "REGISTER INTEREST QUEUE(1TRAN*) CLIENT(IMSA)")
    cmd(m, "REGISTER INTEREST QUEUE(1TRANX01) CLIENT(IMSA)")
    assert notes(op(m, "PUT", "1TRANX01")) == [("IMSA", "1TRANX01", 1)]


def test_start_with_messages_on_an_empty_queue_is_work():
    m = mon()
    cmd(m, "REGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSA)")
    assert notes(op(m, "START", "1PAYTRAN", depth_after=5)) == [("IMSA", "1PAYTRAN", 5)]


def test_a_failed_put_is_no_work():
    m = mon()
    cmd(m, "REGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSA)")
    assert notes(op(m, "PUT", "1PAYTRAN", reason=2053)) == []


@pytest.mark.parametrize(
    "queue,kind",
    [
        ("2PAYTRAN", "transaction staging"),
        ("3SUSPEND", "suspend"),
        ("6LTERM", "LTERM staging"),
        ("7APPC", "APPC ready"),
        ("9OTMA", "OTMA ready"),
    ],
)
def test_staging_suspend_appc_and_otma_queues_are_refused(queue, kind):
    with pytest.raises(MqscError) as err:
        parse_command(f"REGISTER INTEREST QUEUE({queue}) CLIENT(IMSA)")
    assert err.value.keyword == "QUEUE" and kind in str(err.value)


def test_event_ids_are_deterministic_and_distinct_per_client():
    def run():
        m = mon()
        m.on_command(parse_command("REGISTER INTEREST QUEUE(1Q) CLIENT(A)"), 0, "r1", reply=False)
        m.on_command(parse_command("REGISTER INTEREST QUEUE(1Q) CLIENT(B)"), 0, "r2", reply=False)
        return [e.record["event_id"] for e in m.on_activity(Activity("p1", "IMSPLEX", "1Q", "PUT", 5))]

    assert run() == run() and len(set(run())) == 2


def test_registry_and_matching():
    r = Registry({})
    assert r.register("1A*", "X") and not r.register("1A*", "X")
    assert matches("1A*", "1ABC") and not matches("1A*", "2ABC") and matches("1ABC", "1ABC")
    assert r.clients_for("1AZ") == ["X"] and r.deregister("1A*", "X") and r.state == {}


# ---------------------------------------------------------------- sharded, as the job routes commands


class Shards:
    """A queue manager split over ``n`` shards, commands delivered as ``streaming.route.route``
    delivers them (by ``Command.scope``); ``zlib.crc32`` stands in for Spark's xxhash64."""

    def __init__(self, n: int = 3, place: dict[str, int] | None = None):
        self.monitors = [QueueMonitor("IMSPLEX", MonitorSettings()) for _ in range(n)]
        self.place = place or {}

    def shard(self, queue: str) -> int:
        return self.place.get(queue, zlib.crc32(queue.encode()) % len(self.monitors))

    def cmd(self, text: str, ts: int = 0):
        return self.deliver(parse_command(text), ts, f"c{next(_n)}")

    def deliver(self, c, ts: int, cid: str):
        out = []
        if c.scope == "queue":
            return self.monitors[self.shard(c.name or "")].on_command(c, ts, cid, reply=True)
        for b, m in enumerate(self.monitors):
            if c.scope == "definition":  # every shard keeps it, the queue's applies it and replies
                own = b == self.shard(c.name or "")
                out += m.on_command(c, ts, cid, reply=own, own=own)
            elif c.scope == "parts":
                out += m.on_command(c, ts, part_command_id(cid, b + 1, len(self.monitors)), reply=True)
            else:
                out += m.on_command(c, ts, cid, reply=b == 0)
        return out

    def op(self, o: str, queue: str, ts: int = 1000, **kw):
        return self.monitors[self.shard(queue)].on_activity(Activity(f"e{next(_n)}", "IMSPLEX", queue, o, ts, **kw))


# ---------------------------------------------------------------- A: refused queue types never notified

REFUSED = ["2PAYTRAN", "3SUSPEND", "6LTERMZ", "7APPC01", "9OTMA01"]


def test_a_generic_registration_never_notifies_for_staging_suspend_appc_or_otma_queues():
    m = mon()
    cmd(m, "REGISTER INTEREST QUEUE(*) CLIENT(IMSA)")
    for queue in REFUSED:
        assert notes(op(m, "PUT", queue)) == [], queue
        assert notes(op(m, "START", queue, depth_after=0)) == []
    assert notes(op(m, "START", "3SUSPEND", depth_after=4)) == []
    assert notes(op(m, "PUT", "1PAYTRAN")) == [("IMSA", "1PAYTRAN", 1)]
    assert notes(op(m, "PUT", "5LTERMZ")) == [("IMSA", "5LTERMZ", 1)]


def test_a_generic_registration_is_not_told_of_work_already_on_refused_queues():
    m = mon()
    for queue in [*REFUSED, "1PAYTRAN", "4SERIAL"]:
        op(m, "PUT", queue)
    out = cmd(m, "REGISTER INTEREST QUEUE(*) CLIENT(IMSA)")
    assert notes(out) == [("IMSA", "1PAYTRAN", 1), ("IMSA", "4SERIAL", 1)]
    assert replies(out)[0][0] is True


@pytest.mark.parametrize(
    "name,kind",
    [
        ("2*", "transaction staging"),
        ("3SUS*", "suspend"),
        ("6*", "LTERM staging"),
        ("7*", "APPC ready"),
        ("9OTMA*", "OTMA ready"),
    ],
)
def test_a_generic_name_matching_only_refused_queues_is_refused_with_the_reason(name, kind):
    with pytest.raises(MqscError) as err:
        parse_command(f"REGISTER INTEREST QUEUE({name}) CLIENT(IMSA)")
    assert err.value.keyword == "QUEUE"
    assert f"generic name matches only {kind} queues" in err.value.message


def test_a_the_pure_rule():
    assert [refused(q) for q in ("2X", "2*", "*", "1*", "5L")] == [
        "transaction staging",
        "transaction staging",
        None,
        None,
        None,
    ]
    assert set(NO_INTEREST_TYPES) == {"2", "3", "6", "7", "9"}
    assert not matches("*", "2PAYTRAN") and not matches("*", "9OTMA") and matches("*", "1PAYTRAN")
    assert matches("1PAY*", "1PAYTRAN") and not matches("1PAY*", "1PA") and not matches("1PAY", "1PAYTRAN")
    r = Registry({"*": ["IMSA"], "9*": ["OLD"]})  # whatever a state holds, refused queues have no clients
    assert r.clients_for("9OTMA") == [] and r.clients_for("1X") == ["IMSA"]


def test_a_many_registrations_are_looked_up_not_scanned_with_the_same_answer():
    state = {f"1T{i:03d}": ["A"] for i in range(200)}
    state.update({"1T0*": ["G"], "*": ["S"], "1T05*": ["H"], "5*": ["L"]})
    big = Registry(state)
    for queue in ["1T050", "1T1", "1T0", "5LTERM", "2T050", "X"]:
        want = sorted({c for p, cs in state.items() if matches(p, queue) for c in cs})
        assert big.clients_for(queue) == want, queue


# ---------------------------------------------------------------- B: a second client on an LTERM ready queue


def test_b_a_second_client_registering_an_lterm_ready_queue_is_warned_and_accepted():
    m = mon()
    assert "Warning" not in replies(cmd(m, "REGISTER INTEREST QUEUE(5LTERMZ) CLIENT(IMSA)"))[0][1]
    ok, message = replies(cmd(m, "REGISTER INTEREST QUEUE(5LTERMZ) CLIENT(IMSB)"))[0]
    assert ok is True
    assert "Warning: 5LTERMZ is an LTERM ready queue" in message and "IMSA (5LTERMZ)" in message
    assert "Only one IMS of a shared-queues group" in message
    # both registrations stand: both are told of the work
    assert notes(op(m, "PUT", "5LTERMZ")) == [("IMSA", "5LTERMZ", 1), ("IMSB", "5LTERMZ", 1)]
    # the same client again, or a second client of a transaction: no warning
    assert "Warning" not in replies(cmd(m, "REGISTER INTEREST QUEUE(5LTERMZ) CLIENT(IMSA)"))[0][1]
    cmd(m, "REGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSA)")
    assert "Warning" not in replies(cmd(m, "REGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSB)"))[0][1]


def test_b_generic_names_that_overlap_on_lterm_ready_queues_are_warned():
    m = mon()
    cmd(m, "REGISTER INTEREST QUEUE(5LTERMZ) CLIENT(IMSA)")
    cmd(m, "REGISTER INTEREST QUEUE(1*) CLIENT(IMSC)")
    ok, message = replies(cmd(m, "REGISTER INTEREST QUEUE(5LT*) CLIENT(IMSB)"))[0]
    assert ok and "5LT* covers LTERM ready queues" in message and "IMSA (5LTERMZ)" in message
    assert "IMSC" not in message  # 1* overlaps 5LT* on nothing
    message = replies(cmd(m, "REGISTER INTEREST QUEUE(*) CLIENT(IMSD)"))[0][1]
    assert "IMSA (5LTERMZ), IMSB (5LT*)" in message and "IMSC" not in message
    # an exact name under another client's generic registration
    message = replies(cmd(m, "REGISTER INTEREST QUEUE(5LTERMY) CLIENT(IMSE)"))[0][1]
    assert "IMSB (5LT*), IMSD (*)" in message and "IMSA" not in message
    # generic names that cover no LTERM ready queue in common: no warning
    cmd(m, "DEREGISTER INTEREST QUEUE(*) CLIENT(IMSD)")
    assert "Warning" not in replies(cmd(m, "REGISTER INTEREST QUEUE(5LX*) CLIENT(IMSF)"))[0][1]


def test_b_overlap_rule():
    assert overlap("5A*", "5*") == "5A*" and overlap("5*", "5AB") == "5AB" and overlap("5A*", "5B*") is None
    assert overlap("*", "1X") == "1X" and overlap("5A", "5A") == "5A" and overlap("5A", "5B") is None
    assert covers_lterm_ready("*") and covers_lterm_ready("5*") and not covers_lterm_ready("1*")


# ---------------------------------------------------------------- C: a client's interest dropped as a whole


def test_c_deregister_queue_star_drops_every_registration_of_the_client():
    m = mon()
    for text in [
        "QUEUE(1PAY*) CLIENT(IMSA)",
        "QUEUE(1PAYTRAN) CLIENT(IMSA)",
        "QUEUE(5LTERMZ) CLIENT(IMSA)",
        "QUEUE(*) CLIENT(IMSA)",
        "QUEUE(1PAYTRAN) CLIENT(IMSB)",
    ]:
        cmd(m, f"REGISTER INTEREST {text}")
    ok, message = replies(cmd(m, "DEREGISTER INTEREST QUEUE(*) CLIENT(IMSA)"))[0]
    assert ok is True and "(4): *, 1PAY*, 1PAYTRAN, 5LTERMZ." in message
    assert notes(op(m, "PUT", "1PAYTRAN")) == [("IMSB", "1PAYTRAN", 1)]
    assert notes(op(m, "PUT", "5LTERMZ")) == []
    ok, message = replies(cmd(m, "DEREGISTER INTEREST QUEUE(*) CLIENT(IMSA)"))[0]
    assert ok is False and "no interest registered in any queue" in message


def test_c_deregister_needs_a_queue_and_says_how_to_drop_everything():
    with pytest.raises(MqscError) as err:
        parse_command("DEREGISTER INTEREST CLIENT(IMSA)")
    assert err.value.keyword == "QUEUE" and "QUEUE(*)" in err.value.message


def test_c_every_interest_command_reaches_every_shard():
    assert parse_command("REGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSA)").scope == "qmgr"
    assert parse_command("DEREGISTER INTEREST QUEUE(5LTERMZ) CLIENT(IMSA)").scope == "qmgr"


def test_bc_replies_are_right_whichever_shard_holds_the_queue():
    # 1PAYTRAN and 5LTERMZ live in shards 1 and 2; shard 0 replies
    s = Shards(3, place={"1PAYTRAN": 1, "5LTERMZ": 2, "1PAYNEW": 2})
    s.op("PUT", "1PAYTRAN")
    out = s.cmd("REGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSA)")
    assert notes(out) == [("IMSA", "1PAYTRAN", 1)] and len(replies(out)) == 1
    s.cmd("REGISTER INTEREST QUEUE(5LTERMZ) CLIENT(IMSA)")
    s.cmd("REGISTER INTEREST QUEUE(1PAY*) CLIENT(IMSA)")
    [(ok, message)] = replies(s.cmd("REGISTER INTEREST QUEUE(5*) CLIENT(IMSB)"))
    assert ok and "IMSA (5LTERMZ)" in message
    [(ok, message)] = replies(s.cmd("REGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSA)"))
    assert "already registered" in message
    [(ok, message)] = replies(s.cmd("DEREGISTER INTEREST QUEUE(*) CLIENT(IMSA)"))
    assert ok and "(3): 1PAY*, 1PAYTRAN, 5LTERMZ." in message
    assert notes(s.op("PUT", "1PAYNEW")) == [] and notes(s.op("PUT", "5LTERMZ")) == [("IMSB", "5LTERMZ", 1)]
    assert all(m.state["interest"] == {"5*": ["IMSB"]} for m in s.monitors)


def test_a_client_already_told_by_another_registration_is_not_told_again_at_registration():
    m = mon()
    op(m, "PUT", "1PAYTRAN")
    assert notes(cmd(m, "REGISTER INTEREST QUEUE(*) CLIENT(IMSA)")) == [("IMSA", "1PAYTRAN", 1)]
    assert notes(cmd(m, "REGISTER INTEREST QUEUE(1PAYTRAN) CLIENT(IMSA)")) == []
    assert notes(cmd(m, "REGISTER INTEREST QUEUE(1PAY*) CLIENT(IMSB)")) == [("IMSB", "1PAYTRAN", 1)]


def _run_sharded(records, buckets: int):
    """``records`` (replay-format dicts) through ``buckets`` shards routed as the job routes them, after the
    job's duplicate check."""
    from qmon.core.dedup import SliceIds, slice_of

    s = Shards(buckets)
    slices: dict[int, SliceIds] = {}
    keyed = sorted(((r["ts"], 0 if "command" in r else 1, i, r) for i, r in enumerate(records)), key=lambda k: k[:3])
    out = []
    for ts, _rank, _i, r in keyed:
        if "command" in r:
            out += s.deliver(parse_command(r["command"]), ts, r["command_id"])
        elif not slices.setdefault(slice_of(ts), SliceIds()).seen((r["qmgr"], r["queue"], r["event_id"])):
            out += s.monitors[s.shard(r["queue"])].on_activity(
                Activity(
                    r["event_id"], r["qmgr"], r["queue"], r["op"], ts, r.get("depth_after"), None, None, r.get("reason")
                )
            )
    return out


@pytest.mark.parametrize("buckets", [2, 3, 5])
def test_replies_and_notifications_do_not_depend_on_how_queues_are_sharded(buckets):
    rng = random.Random(buckets)
    records = random_stream(rng, "IMSPLEX", n=400, queues=6)
    want = sorted(repr((e.topic, sorted(e.record.items()))) for e in run_reference(records, MonitorSettings()))
    got = sorted(repr((e.topic, sorted(e.record.items()))) for e in _run_sharded(records, buckets))
    assert got == want
    assert sum("every name it had registered" in w for w in want) > 0  # DEREGISTER QUEUE(*) was exercised


def test_like_copies_the_named_queues_definition_whichever_shard_holds_it():
    """DEFINE ... LIKE(name) in shards, as the job delivers DEFINE and ALTER QLOCAL (a copy to every shard, the
    queue's own applying it): the new queue takes the named one's attributes though another shard holds it,
    the DEFINE's own on top, as the pure rules' one monitor gives it; a name nothing defines is refused."""
    place = {"MODEL.Q": 0, "NEW.Q": 1, "NEW.R": 2}
    texts = [
        "DEFINE QLOCAL(MODEL.Q) QSVCINT(700) QSVCIEV(HIGH) MAXDEPTH(50)",
        "ALTER QLOCAL(MODEL.Q) QDEPTHHI(60)",
        "DEFINE QLOCAL(NEW.Q) LIKE(MODEL.Q) MAXDEPTH(60)",
        "DEFINE QLOCAL(NEW.R) LIKE(NOT.DEFINED)",
    ]
    s = Shards(3, place=place)
    replies_sharded = [r for t in texts for r in replies(s.deliver(parse_command(t), 0, t))]
    one = QueueMonitor("IMSPLEX", MonitorSettings())
    replies_one = [r for t in texts for r in replies(one.on_command(parse_command(t), 0, t, reply=True))]
    assert replies_sharded == replies_one
    assert replies_sharded[3] == (
        False,
        "DEFINE QLOCAL('NEW.R') LIKE(NOT.DEFINED): AMQ8147E: IBM MQ object NOT.DEFINED not found (qmon holds no "
        "definition of it: no DEFINE or ALTER QLOCAL of it, and no queues[] entry matches its name).",
    )
    attrs = s.monitors[1].queues["NEW.Q"]["attrs"]
    assert (attrs["QSVCINT"], attrs["QSVCIEV"], attrs["QDEPTHHI"], attrs["MAXDEPTH"]) == (700, "HIGH", 60, 60)
    assert attrs == one.queues["NEW.Q"]["attrs"]
    assert "NEW.R" not in s.monitors[2].queues  # (refused: not created)
