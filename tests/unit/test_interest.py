"""SPEC §6: registration of interest and WorkAvailable (pure logic)."""

from __future__ import annotations

import itertools

import pytest

from qmon import topics
from qmon.interest import Registry, matches
from qmon.mqsc import MqscError, parse_command
from qmon.queues import Activity, MonitorSettings, QueueMonitor

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


@pytest.mark.parametrize("queue,kind", [("2PAYTRAN", "transaction staging"), ("3SUSPEND", "suspend"),
                                        ("6LTERM", "LTERM staging"), ("7APPC", "APPC ready"),
                                        ("9OTMA", "OTMA ready")])
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
