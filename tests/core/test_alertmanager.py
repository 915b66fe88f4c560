"""What qmon alertmanager sends (qmon.core.alertmanager): labels, annotations, re-sends, one page per episode."""

from qmon.connectors import avro
from qmon.core.alertmanager import AlertBook
from qmon.core.queues import MonitorSettings
from qmon.core.reference import run_reference
from qmon.core.structures import StructureDef, StructureSettings

T = 1_700_000_000_000


def structure_full(state, ts, aid="f1", severity="CRITICAL"):
    return {
        "alert_id": aid,
        "state": state,
        "type": "STRUCTURE_FULL" if state == "FIRING" else "STRUCTURE_FULL_RELIEVED",
        "severity": severity,
        "structure": "MSGQ1",
        "queue": "APP.Q1",
        "qmgr": "IMSA",
        "ts": ts,
        "message": "CQS0205E STRUCTURE MSGQ1 IS FULL" if state == "FIRING" else None,
        "summary": "Structure MSGQ1 is full",
        "action": "Drain the queues of MSGQ1",
    }


def test_firing_is_sent_at_once_with_labels_annotations_and_an_end_ahead():
    book = AlertBook(resend_ms=60_000)
    (a,) = book.on_alert(structure_full("FIRING", T), T + 5)
    assert a["labels"] == {
        "alertname": "STRUCTURE_FULL",
        "severity": "critical",
        "alert_id": "f1",
        "qmgr": "IMSA",
        "queue": "APP.Q1",
        "structure": "MSGQ1",
    }
    assert a["annotations"] == {
        "summary": "Structure MSGQ1 is full",
        "description": "CQS0205E STRUCTURE MSGQ1 IS FULL",
        "runbook": "Drain the queues of MSGQ1",
    }
    assert a["startsAt"] == "2023-11-14T22:13:20.000Z"
    assert a["endsAt"] == "2023-11-14T22:17:20.005Z"  # now + 4 x resend


def test_resent_while_firing_then_resolved_with_the_same_labels_and_its_end():
    book = AlertBook(resend_ms=60_000)
    (first,) = book.on_alert(structure_full("FIRING", T), T)
    assert book.due(T) == [first]  # not yet accepted
    book.sent([first], T)
    assert book.due(T + 59_999) == []
    (again,) = book.due(T + 60_000)
    assert again["labels"] == first["labels"] and again["endsAt"] > first["endsAt"]
    book.sent([again], T + 60_000)
    (resolved,) = book.on_alert(structure_full("RESOLVED", T + 90_000, severity="INFO"), T + 90_001)
    assert resolved["labels"] == first["labels"]  # the FIRING's labels, severity included
    assert resolved["endsAt"] == "2023-11-14T22:14:50.000Z"
    assert book.due(T + 500_000) == []


def test_one_episode_never_pages_twice():
    book = AlertBook()
    assert len(book.on_alert(structure_full("FIRING", T), T)) == 1
    assert book.on_alert(structure_full("FIRING", T), T + 1) == []  # redelivered
    book.on_alert(structure_full("RESOLVED", T + 10), T + 10)
    assert book.on_alert(structure_full("FIRING", T), T + 20) == []  # replayed after it ended
    assert book.on_alert(structure_full("RESOLVED", T + 10), T + 30) == []
    assert len(book.on_alert(structure_full("FIRING", T + 40, aid="f2"), T + 40)) == 1  # a new episode pages


def test_a_resolved_episode_never_seen_firing_and_info_alerts_send_nothing():
    book = AlertBook()
    assert book.on_alert(structure_full("RESOLVED", T, aid="x"), T) == []
    info = structure_full("FIRING", T, aid="u") | {"state": "INFO", "type": "STRUCTURE_UNKNOWN"}
    assert book.on_alert(info, T) == []


def test_a_structure_fill_forecast_pages_with_its_eta_and_runbook_and_its_resolved_ends_it():
    """A steady fill of MSGQ1 (2,000 data elements, OVFLWMAX 70 %) through the rules, the records as the forwarder
    reads them (Avro-decoded): the FIRING forecast is an alert with the predicted instant as its ``eta``
    annotation and the forecast's action as its runbook; the RESOLVED (CQS reached OVFLWMAX) ends it."""
    t0 = 1_700_000_010_000  # a multiple of the 30-second sample step
    puts = [
        {"event_id": f"p{i}", "qmgr": "IMSA", "queue": "1PAYROLL", "op": "PUT", "ts": t0 + i * 3000,
         "msg_bytes": 500, "structure": "MSGQ1"}
        for i in range(1500)
    ]  # fmt: skip
    out = run_reference(puts, MonitorSettings(), structure_settings=StructureSettings((StructureDef("MSGQ1", 1000),)))
    fired, resolved = (
        avro.decode("Alert", avro.encode("Alert", e.record))
        for e in out
        if e.record.get("type") == "STRUCTURE_FILL_FORECAST"
    )
    book = AlertBook(resend_ms=60_000)
    now = t0 + 55 * 60_000 + 100
    (a,) = book.on_alert(fired, now)
    assert a["labels"] == {
        "alertname": "STRUCTURE_FILL_FORECAST",
        "severity": "warning",
        "alert_id": fired["alert_id"],
        "structure": "MSGQ1",
    }
    assert a["annotations"] == {
        "summary": fired["summary"],
        "description": "MSGQ1 reaches OVFLWMAX 70 % in about 15 min at 1.0 % a minute",
        "runbook": fired["action"],
        "eta": "2023-11-14T23:23:30.000Z",  # t0 + 70 min, as the record says
    }
    assert fired["action"].startswith("Find the queues of MSGQ1 that are growing")
    assert (a["startsAt"], a["endsAt"]) == ("2023-11-14T23:08:30.000Z", "2023-11-14T23:12:30.100Z")
    book.sent([a], now)
    (end,) = book.on_alert(resolved, now + 900_000)
    assert end["labels"] == a["labels"] and end["annotations"] == a["annotations"]
    assert end["endsAt"] == "2023-11-14T23:23:27.000Z"  # the put that reached OVFLWMAX
    assert book.due(now + 3_600_000) == []


def test_only_a_forecast_has_an_eta():
    (a,) = AlertBook().on_alert(structure_full("FIRING", T) | {"eta": None}, T)
    assert "eta" not in a["annotations"]


def test_a_shared_queue_s_alert_carries_its_group_and_resolves_with_its_firing_labels():
    """A shared queue's alert names its queue-sharing group (label qsg) beside the member; the RESOLVED, naming
    another member, is sent with the FIRING's labels, so Alertmanager ends the same alert."""
    stalled = {
        "alert_id": "s1",
        "state": "FIRING",
        "type": "QUEUE_STALLED",
        "severity": "WARNING",
        "queue": "PAY.IN",
        "qmgr": "QM1",
        "qsg": "QSG1",
        "ts": T,
        "summary": "Shared queue PAY.IN of queue-sharing group QSG1 has not been served",
        "action": "Check its consumers",
    }
    book = AlertBook()
    (firing,) = book.on_alert(stalled, T)
    assert firing["labels"] == {
        "alertname": "QUEUE_STALLED",
        "severity": "warning",
        "alert_id": "s1",
        "qmgr": "QM1",
        "qsg": "QSG1",
        "queue": "PAY.IN",
    }
    (resolved,) = book.on_alert({**stalled, "state": "RESOLVED", "severity": "INFO", "qmgr": "QM2"}, T + 1)
    assert resolved["labels"] == firing["labels"]
