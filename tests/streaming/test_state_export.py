"""``qmon state export`` and ``import`` without Spark: a unit's stored value as lines, and lines as the records
that give a new job the same depths, attributes, PERFMEV and registrations."""

from __future__ import annotations

from typing import Any

from qmon.core.queues import MonitorSettings, QueueDefaults
from qmon.core.reference import run_reference
from qmon.core.sharing import QueueSharingGroup, Sharing
from qmon.streaming.state_export import QUEUE, QUEUE_MANAGER, import_records, unit_lines
from tests.streaming.routed import command, frame, put, row
from tests.streaming.test_operator_units import KEY, Groups

T0 = 1_700_000_000_000
SETTINGS = MonitorSettings(queue_defaults=(QueueDefaults("PAY.*", {"QSVCINT": 5_000, "QSVCIEV": "HIGH"}),))


def _exported() -> list[dict[str, Any]]:
    g = Groups(settings=SETTINGS)
    g.rows(
        KEY,
        frame(
            command(T0, "ALTER QMGR PERFMEV(ENABLED)", 1),
            command(T0, "ALTER QLOCAL(ORDERS) MAXDEPTH(10) QDPHIEV(ENABLED)", 2),
            command(T0, "REGISTER INTEREST QUEUE(PAY*) CLIENT(IMS1)", 3),
            put(T0 + 1_000, "ORDERS", 4),
            put(T0 + 2_000, "ORDERS", 5),
            put(T0 + 3_000, "PAY.IN", 6),
            row("A", T0 + 4_000, seq=7, event_id="g1", queue="PAY.IN", op="GET"),
        ),
    )
    return list(unit_lines(*KEY[:2], g.values[KEY][0]))


def test_a_units_value_is_a_line_per_shard_and_per_queue_with_its_fields_by_name():
    lines = _exported()
    [qmgr] = [x for x in lines if x["kind"] == QUEUE_MANAGER]
    assert (qmgr["name"], qmgr["shard"], qmgr["perfmev"]) == ("QM1", 0, "ENABLED")
    assert qmgr["interest"] == {"PAY*": ["IMS1"]}
    queues = {x["queue"]: x for x in lines if x["kind"] == QUEUE}
    assert set(queues) == {"ORDERS", "PAY.IN"}
    assert queues["ORDERS"]["owner"] == "QM1" and queues["ORDERS"]["depth"] == 2
    assert queues["ORDERS"]["attrs"]["MAXDEPTH"] == 10 and queues["ORDERS"]["last_put"] == T0 + 2_000
    assert queues["PAY.IN"]["depth"] == 0 and queues["PAY.IN"]["last_get"] == T0 + 4_000


def test_imported_lines_give_a_new_monitor_the_depths_attributes_perfmev_and_registrations():
    now = T0 + 60_000
    commands, activity = import_records(_exported(), SETTINGS, now)
    texts = [c["text"] for c in commands]
    assert texts == [
        "ALTER QMGR PERFMEV(ENABLED)",
        "REGISTER INTEREST QUEUE(PAY*) CLIENT(IMS1)",
        "DEFINE QLOCAL('ORDERS') REPLACE QSVCIEV(NONE) QSVCINT(999999999) MAXDEPTH(10) QDEPTHHI(80) QDEPTHLO(20) "
        "QDPHIEV(ENABLED) QDPLOEV(DISABLED) QDPMAXEV(ENABLED)",
    ]  # (PAY.IN has the configuration's attributes and no messages: nothing to say)
    assert [(a["queue"], a["op"], a["depth_after"], a["ts"]) for a in activity] == [("ORDERS", "START", 2, now)]
    # a new monitor given them holds what the old one did: ORDERS' sixth put reaches 8 of MAXDEPTH(10), 80 %
    records = [{**c, "command": c["text"]} for c in commands] + activity
    for i in range(6):
        records.append({"event_id": f"n{i}", "qmgr": "QM1", "queue": "ORDERS", "op": "PUT", "ts": now + 1_000 + i})
    records.append({"event_id": "p1", "qmgr": "QM1", "queue": "PAY.IN", "op": "PUT", "ts": now + 1_000})
    out = run_reference(records, SETTINGS)
    high = [(e.record["type"], e.record["ts"]) for e in out if e.topic == "qmon.events.performance"]
    assert high == [("QDEPTH_HIGH", now + 1_005)]
    notify = [e.record for e in out if e.topic == "qmon.events.notify"]
    assert [(n["client"], n["queue"]) for n in notify] == [("IMS1", "PAY.IN")]


def test_a_shared_queue_is_defined_shared_on_the_member_of_its_latest_record():
    sharing = Sharing((QueueSharingGroup("QSG1", ("QM1", "QM2"), ()),))
    settings = MonitorSettings(sharing=sharing)
    lines = [
        {"kind": QUEUE_MANAGER, "name": "QSG1", "shard": 0, "v": 6, "perfmev": None,
         "member_perfmev": {"QM2": "ENABLED"}},
        {"kind": QUEUE, "owner": "QSG1", "queue": "PAY.IN", "depth": 4, "defined": True, "member": "QM2",
         "attrs": settings.attrs_for("PAY.IN")},
    ]  # fmt: skip
    commands, activity = import_records(lines, settings, T0)
    assert [(c["qmgr"], c["text"].split(" QSVCIEV")[0]) for c in commands] == [
        ("QM2", "ALTER QMGR PERFMEV(ENABLED)"),
        ("QM2", "DEFINE QLOCAL('PAY.IN') REPLACE QSGDISP(SHARED)"),
    ]
    assert [(a["qmgr"], a["queue"], a["depth_after"]) for a in activity] == [("QM2", "PAY.IN", 4)]


def test_a_file_that_is_not_an_export_is_refused_naming_the_line_and_nothing_is_sent(tmp_path, capsys):
    import argparse

    import pytest

    from qmon.app.commands.state import cmd_state_import
    from qmon.core.config import Config
    from qmon.streaming.state_export import ExportError, read_lines

    with pytest.raises(ExportError, match="line 2: not JSON"):
        read_lines('{"kind": "queue", "owner": "QM1", "queue": "Q"}\n{oops\n')
    with pytest.raises(ExportError, match="line 1: a queue line without queue"):
        read_lines('{"kind": "queue", "owner": "QM1"}\n')
    with pytest.raises(ExportError, match="line 1: no kind qmon state export writes"):
        read_lines("[1, 2]\n")
    bad = tmp_path / "queues.jsonl"
    bad.write_text('{"kind": "queue", "owner": "QM1", "queue": "Q"}\n{"kind": "table"}\n')
    args = argparse.Namespace(file=str(bad))
    assert cmd_state_import(args, Config(), "127.0.0.1:1", framing=None) == 2  # (no broker is asked)
    assert f"qmon state import: {bad}, line 2: no kind" in capsys.readouterr().err
