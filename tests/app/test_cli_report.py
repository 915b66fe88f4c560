"""``qmon report``'s options without a broker: the range and the patterns it reads with, each output, and the
mistakes that stop it, with the reason and exit status 2, before Kafka is contacted."""

from __future__ import annotations

import json

import pytest

from qmon.app import cli
from qmon.app import report as render
from qmon.app.commands import report as report_command
from qmon.connectors import reportreader
from tests.core.test_service_report import report as recorded


@pytest.fixture
def reads(monkeypatch):
    """The reader, recorded instead of reading Kafka: it returns the recorded run's report."""
    made: list[dict] = []

    def read(bootstrap, security, **kw):
        made.append({"bootstrap": bootstrap, **kw})
        return recorded()

    monkeypatch.setattr(reportreader, "read", read)
    return made


def test_the_range_patterns_and_topic_prefix_reach_the_reader(reads, tmp_path, capsys):
    cfg = tmp_path / "qmon.yaml"
    cfg.write_text("kafka:\n  topic_prefix: east\n")
    argv = ["report", "--config", str(cfg), "--bootstrap", "b:9092", "--since", "2025-01-10", "--until", "2025-01-11"]
    assert cli.main([*argv, "--queue", "PAY*", "--queue", "QM2/*", "--structure", "MSGQ1"]) == 0
    assert reads == [
        {
            "bootstrap": "b:9092",
            "prefix": "east",
            "since_ms": 1_736_467_200_000,
            "until_ms": 1_736_553_600_000,
            "queues": ["PAY*", "QM2/*"],
            "structures": ["MSGQ1"],
        }
    ]
    assert capsys.readouterr().out == render.text(recorded())


def test_json_csv_and_html(reads, tmp_path, capsys):
    base = ["report", "--bootstrap", "b:9092", "--since", "7d"]
    assert cli.main([*base, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["range_ms"] == 8 * 3_600_000
    assert cli.main([*base, "--csv"]) == 0
    assert capsys.readouterr().out.startswith("kind,qmgr,queue,structure,alert_type,")
    page = tmp_path / "report.html"
    assert cli.main([*base, "--html", str(page)]) == 0
    assert page.read_text().count("<svg") == 4
    assert f"wrote {page}" in capsys.readouterr().err
    assert reads[0]["queues"] == [] and reads[0]["structures"] == []


def test_an_until_after_now_is_now(reads, monkeypatch):
    monkeypatch.setattr(report_command.time, "time", lambda: 1_736_500_000.0)  # 2025-01-10T09:06:40Z
    assert cli.main(["report", "--bootstrap", "b:9092", "--since", "1h", "--until", "2030-01-01"]) == 0
    assert (reads[0]["since_ms"], reads[0]["until_ms"]) == (1_736_496_400_000, 1_736_500_000_000)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--since", "yesterday"], "qmon report: --since: 'yesterday' is not a time: write a duration back from now"),
        (["--since", "7d", "--until", "soon"], "qmon report: --until: 'soon' is not a time"),
        (["--since", "1h", "--until", "2h"], "qmon report: --since 1h is not before --until 2h"),
    ],
)
def test_a_time_that_is_not_one_stops_it_with_the_reason_and_status_2(reads, argv, said, capsys):
    assert cli.main(["report", "--bootstrap", "localhost:1", *argv]) == 2
    assert said in capsys.readouterr().err
    assert reads == []


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--since", "7d", "--json", "--csv"], "argument --csv: not allowed with argument --json"),
        ([], "the following arguments are required: --since"),
    ],
)
def test_options_that_do_not_go_together_stop_it_with_status_2(reads, argv, said, capsys):
    with pytest.raises(SystemExit) as stopped:
        cli.main(["report", "--bootstrap", "localhost:1", *argv])
    assert stopped.value.code == 2
    assert said in capsys.readouterr().err
    assert reads == []


def test_html_without_matplotlib_says_how_to_install_it(reads, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(report_command, "_has_matplotlib", lambda: False)
    page = tmp_path / "r.html"
    assert cli.main(["report", "--bootstrap", "localhost:1", "--since", "7d", "--html", str(page)]) == 2
    err = capsys.readouterr().err
    assert "--html needs matplotlib" in err and "pip install 'qmon[report]'" in err
    assert reads == [] and not page.exists()


def test_an_output_topic_missing_is_an_error_of_its_own(monkeypatch, capsys):
    def read(*a, **kw):
        raise reportreader.ReportReadError("the topic qmon.events.alerts does not exist: check ...")

    monkeypatch.setattr(reportreader, "read", read)
    assert cli.main(["report", "--bootstrap", "localhost:1", "--since", "7d"]) == 1
    assert capsys.readouterr().err == "qmon report: the topic qmon.events.alerts does not exist: check ...\n"
