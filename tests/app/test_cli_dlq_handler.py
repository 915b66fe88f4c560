"""``qmon dlq-handler``'s options without a broker: which table, topic and time range ``--report`` and
``--dry-run`` are given, and the mistakes that stop them before Kafka is contacted."""

from __future__ import annotations

import pytest

from qmon.app import cli
from qmon.connectors import dlqreader

RULES = "INPUTQ(other.dlq) RETRYINT(5)\nACTION(FWD) FWDQ(&DESTQ.manual)\n"


@pytest.fixture
def calls(monkeypatch):
    """The reader's two commands, recorded instead of reading Kafka."""
    made: list[tuple[str, dict]] = []

    def report(bootstrap, topic, security, **kw):
        made.append(("report", {"bootstrap": bootstrap, "topic": topic, **kw}))
        return "the report\n"

    def dry_run(bootstrap, table, topic, security, **kw):
        made.append(("dry-run", {"bootstrap": bootstrap, "topic": topic, "rules": len(table.rules), **kw}))
        return "the dry run\n"

    monkeypatch.setattr(dlqreader, "report", report)
    monkeypatch.setattr(dlqreader, "dry_run", dry_run)
    return made


def test_report_reads_the_configured_dlq_or_the_tables_inputq_over_the_range_given(calls, tmp_path, capsys):
    assert (
        cli.main(["dlq-handler", "--report", "--bootstrap", "b:9092", "--since", "2025-01-10", "--until", "2025-01-11"])
        == 0
    )
    assert capsys.readouterr().out == "the report\n"
    ((kind, got),) = calls
    assert kind == "report" and got == {
        "bootstrap": "b:9092",
        "topic": "qmon.dlq",
        "since_ms": 1_736_467_200_000,
        "until_ms": 1_736_553_600_000,
    }
    rules = tmp_path / "t.rules"
    rules.write_text(RULES)
    assert cli.main(["dlq-handler", "--report", "--rules", str(rules), "--bootstrap", "b:9092"]) == 0
    assert calls[1][1]["topic"] == "other.dlq" and calls[1][1]["since_ms"] is None


def test_dry_run_takes_the_table_as_its_value_or_from_rules(calls, tmp_path, capsys):
    rules = tmp_path / "t.rules"
    rules.write_text(RULES)
    assert cli.main(["dlq-handler", "--dry-run", str(rules), "--bootstrap", "b:9092"]) == 0
    assert cli.main(["dlq-handler", "--rules", str(rules), "--dry-run", "--bootstrap", "b:9092"]) == 0
    assert [(k, c["topic"], c["rules"], c["source"]) for k, c in calls] == [("dry-run", "other.dlq", 1, str(rules))] * 2
    assert capsys.readouterr().out == "the dry run\n" * 2


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--since", "7d"], "--since and --until go with --report"),
        (["--report", "--since", "yesterday"], "'yesterday' is not a time: write a duration back from now"),
        (["--report", "--since", "1h", "--until", "2h"], "--since 1h is not before --until"),
        (["--report", "--dry-run", "x.rules"], "--report reads the DLQ alone"),
        (["--dry-run"], "no rules table: give --rules FILE"),
        ([], "no rules table: give --rules FILE"),
        (["--rules", "a.rules", "--dry-run", "b.rules"], "two rules tables: --rules a.rules and --dry-run b.rules"),
        (["--dry-run", "/nonexistent.rules"], "cannot read the rules table /nonexistent.rules"),
    ],
)
def test_a_mistake_stops_it_with_the_reason_before_kafka(calls, argv, said, capsys):
    assert cli.main(["dlq-handler", "--bootstrap", "localhost:1", *argv]) == 2
    assert said in capsys.readouterr().err
    assert calls == []


def test_an_invalid_table_is_never_dry_run(calls, tmp_path, capsys):
    rules = tmp_path / "bad.rules"
    rules.write_text("ACTION(FWD)\n")
    assert cli.main(["dlq-handler", "--dry-run", str(rules), "--bootstrap", "localhost:1"]) == 1
    assert "ACTION(FWD) needs FWDQ(topic)" in capsys.readouterr().err and calls == []
