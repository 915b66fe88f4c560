"""``qmon dlq-handler --report`` and ``--dry-run`` through the real broker: the report counts the dead letters
of a time range by reason, original topic and application with what the handler did with each; the dry run
says what the handler then does, record by record, and changes nothing on the way (no record written, no
offset committed, no topic created)."""

from __future__ import annotations

import time
import uuid

import pytest

from qmon.app import cli
from qmon.connectors import avro, dlqreader
from qmon.connectors.clients import produce_rows
from qmon.connectors.dlqhandler import GROUP, Handler
from qmon.core.dlqrules import parse_rules
from qmon.core.records import iso
from tests.connectors.test_dlq_handler_kafka import create, dead_letter, ledger_entries, read_raw

pytestmark = [pytest.mark.kafka]


def config_file(tmp_path, prefix: str):
    cfg = tmp_path / "qmon.yaml"
    cfg.write_text(f"kafka:\n  topic_prefix: {prefix}\n")
    return str(cfg)


def rows_of(text: str) -> dict[str, list[str]]:
    """The report's table: first column -> the other columns (split on runs of two blanks and more)."""
    import re

    out = {}
    for line in text.splitlines()[3:]:
        cells = re.split(r"\s{2,}", line.strip())
        out[cells[0]] = cells[1:]
    return out


def test_the_report_counts_a_time_range_by_reason_origin_and_application_with_the_handlers_status(
    kafka_bootstrap, tmp_path, capsys
):
    prefix = f"p{uuid.uuid4().hex[:8]}"
    dlq, fwd = f"{prefix}.dlq", f"{prefix}.fwd"
    create(kafka_bootstrap, dlq, fwd)
    now_ms = int(time.time() * 1000)
    activity, control = f"{prefix}.activity", f"{prefix}.control"
    produce_rows(
        kafka_bootstrap,
        [
            (dlq, b"a", dead_letter("QMON_UNDECODABLE", activity, now_ms, b"1")),
            (dlq, b"b", dead_letter("QMON_INVALID_COMMAND", control, now_ms, b"2")),
            (dlq, b"c", dead_letter("QMON_UNDECODABLE", activity, now_ms, b"3")),
            (dlq, b"d", b"not a DeadLetter"),
        ],
    )
    table = parse_rules(
        f"INPUTQ({dlq}) WAIT(NO)\nREASON(QMON_INVALID_COMMAND) ACTION(FWD) FWDQ({fwd})\nREASON(QMON_UNDECODABLE) ACTION(IGNORE)\n"
    )
    totals = Handler(kafka_bootstrap, table, prefix=prefix, printer=lambda _l: None).run()
    assert (totals.forwarded, totals.ignored) == (1, 3)
    time.sleep(1.5)
    mid_ms = int(time.time() * 1000)
    time.sleep(1.5)
    produce_rows(
        kafka_bootstrap, [(dlq, b"e", dead_letter("QMON_UNDECODABLE", activity, mid_ms, b"4"))]
    )  # not read yet

    cfg = config_file(tmp_path, prefix)
    assert cli.main(["dlq-handler", "--report", "--config", cfg, "--bootstrap", kafka_bootstrap, "--since", "1h"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"{dlq}: 5 dead letter(s) put on the DLQ from "), text
    rows = rows_of(text)
    # RECORDS, DONE, WAITING, IGNORED, UNREAD after the reason, original topic and application
    assert rows["QMON_UNDECODABLE"][:7] == [activity, "qmon", "3", "0", "0", "2", "1"], text
    assert rows["QMON_INVALID_COMMAND"][:7] == [control, "qmon", "1", "1", "0", "0", "0"], text
    assert rows["(not a DeadLetter)"][:6] == ["-", "-", "1", "0", "0", "1"], text
    assert rows["total"][:5] == ["5", "1", "0", "3", "1"], text

    # a range that holds only the record put after mid_ms
    assert (
        cli.main(["dlq-handler", "--report", "--config", cfg, "--bootstrap", kafka_bootstrap, "--since", iso(mid_ms)])
        == 0
    )
    later = capsys.readouterr().out
    assert later.startswith(f"{dlq}: 1 dead letter(s)") and rows_of(later)["QMON_UNDECODABLE"][:7] == [
        activity,
        "qmon",
        "1",
        "0",
        "0",
        "0",
        "1",
    ], later
    assert dlqreader.report(kafka_bootstrap, dlq, None, since_ms=None, until_ms=mid_ms).startswith(
        f"{dlq}: 4 dead letter(s) put on the DLQ from the beginning to "
    )
    # the report reads the handler's committed offsets and ledger; it changes neither
    assert dlqreader.committed(kafka_bootstrap, dlq, GROUP) == {0: 4}
    assert len(ledger_entries(kafka_bootstrap, dlq)) == 3


def test_a_dry_run_says_what_the_handler_then_does_and_changes_nothing(kafka_bootstrap, tmp_path, capsys):
    prefix = f"y{uuid.uuid4().hex[:8]}"
    dlq, fwd, missing = f"{prefix}.dlq", f"{prefix}.fwd", f"{prefix}.missing"
    create(kafka_bootstrap, dlq, fwd)
    now_ms = int(time.time() * 1000)
    produce_rows(
        kafka_bootstrap,
        [
            (dlq, b"a", dead_letter("QMON_INVALID_COMMAND", f"{prefix}.control", now_ms, b"cmd")),
            (dlq, b"b", dead_letter("QMON_UNDECODABLE", f"{prefix}.activity", now_ms, b"bytes")),
            (dlq, b"c", b"not a DeadLetter"),
        ],
    )
    rules = tmp_path / "dry.rules"
    rules.write_text(
        f"INPUTQ({dlq}) RETRYINT(1) WAIT(NO)\n"
        f"REASON(QMON_INVALID_COMMAND) ACTION(FWD) FWDQ({fwd})\n"
        f"REASON(QMON_UNDECODABLE) ACTION(FWD) FWDQ({missing}) RETRY(2)\n"
        f"ACTION(FWD) FWDQ({fwd}) HEADER(YES)\n"
    )
    argv = ["dlq-handler", "--dry-run", str(rules), "--bootstrap", kafka_bootstrap]
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].startswith(f"dry run of {rules} on {dlq}: 3 record(s) after the handler's committed offsets, 0 ")
    by_record = {line.split()[0]: line for line in lines if line.startswith(f"{dlq}/")}
    assert list(by_record) == [f"{dlq}/0/0", f"{dlq}/0/1", f"{dlq}/0/2"], text
    assert "rule 1 (line 2)  FWD" in by_record[f"{dlq}/0/0"] and fwd in by_record[f"{dlq}/0/0"]
    assert "rule 3 (line 4)  FWD" in by_record[f"{dlq}/0/1"], text
    assert f"rule 2 (line 3): {missing} does not exist (2 attempt(s) fail)" in by_record[f"{dlq}/0/1"]
    assert "no rule" in by_record[f"{dlq}/0/2"] and "not a qmon DeadLetter" in by_record[f"{dlq}/0/2"]
    assert lines[-6:] == [
        "RULE             ACTION  RECORDS",
        "rule 1 (line 2)  FWD           1",
        "rule 3 (line 4)  FWD           1",
        "no rule          IGNORE        1",
        "",
        "would forward 2, retry 0, discard 0, leave on the DLQ (IGNORE) 1",
    ], text

    # nothing changed: no record forwarded, no offset committed, neither the ledger nor the missing topic created
    assert read_raw(kafka_bootstrap, fwd) == []
    assert dlqreader.committed(kafka_bootstrap, dlq, GROUP) == {}
    assert not {f"{dlq}.ignored", missing} & dlqreader.existing_topics(kafka_bootstrap)

    # the handler then does what the dry run said
    totals = Handler(kafka_bootstrap, parse_rules(rules.read_text()), prefix=prefix, printer=lambda _l: None).run()
    assert (totals.forwarded, totals.ignored, totals.failed) == (2, 1, 2)
    forwarded = read_raw(kafka_bootstrap, fwd)
    assert sorted(avro.decode("DeadLetter", v)["reason_name"] for _k, v, _h in forwarded) == [
        "QMON_INVALID_COMMAND",
        "QMON_UNDECODABLE",
    ]
    # and a dry run now has only the record the handler left on the DLQ
    assert cli.main(argv) == 0
    again = capsys.readouterr().out
    assert again.splitlines()[0].startswith(
        f"dry run of {rules} on {dlq}: 0 record(s) after the handler's committed offsets, 1 in its ledger"
    )
    assert again.splitlines()[-1] == "would forward 0, retry 0, discard 0, leave on the DLQ (IGNORE) 1", again
