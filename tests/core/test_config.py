"""Configuration: defaults, pattern defaults, and errors naming the file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from qmon.core.config import ConfigError, duration_ms, load_config

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "qmon.yaml"
    p.write_text(text)
    return p


def test_defaults_follow_mq():
    cfg = load_config(None)
    s = cfg.monitor_settings()
    assert s.perfmev == "DISABLED"
    assert s.attrs_for("ANY") == {
        "QSVCIEV": "NONE",
        "QSVCINT": 999_999_999,
        "MAXDEPTH": 5000,
        "QDEPTHHI": 80,
        "QDEPTHLO": 20,
        "QDPHIEV": False,
        "QDPLOEV": False,
        "QDPMAXEV": True,  # a new queue displays QDPHIEV(DISABLED) QDPLOEV(DISABLED) QDPMAXEV(ENABLED)
    }


def test_shipped_config_files_load():
    for name in ("qmon.example.yaml", "demo.yaml"):
        load_config(ROOT / "config" / name)


def test_pattern_defaults_first_match_wins(tmp_path):
    cfg = load_config(
        write(
            tmp_path,
            """
queues:
  - pattern: "PAYROLL.*"
    qsvciev: high
    qsvcint: 10000
  - pattern: "*"
    qsvcint: 5
""",
        )
    )
    s = cfg.monitor_settings()
    assert s.attrs_for("PAYROLL.IN")["QSVCIEV"] == "HIGH"
    assert s.attrs_for("PAYROLL.IN")["QSVCINT"] == 10000
    assert s.attrs_for("OTHER")["QSVCINT"] == 5


@pytest.mark.parametrize(
    "text,line,key,fragment",
    [
        ("job:\n  trigger: soon\n", 2, "job.trigger", "not a duration"),
        ("job:\n  queue_shards: 0\n", 2, "job.queue_shards", "greater than or equal to 1"),
        ("monitor:\n  perfmev: ENABLED\n  perfmv: ENABLED\n", 3, "monitor.perfmv", "unknown key"),
        ("queues:\n  - pattern: A*\n    qsvcint: -1\n", 3, "queues.0.qsvcint", "greater than or equal to 0"),
        ("queues:\n  - pattern: A*\n  - qsvciev: HIGH\n", 3, "queues.1.pattern", "required key is missing"),
        ("kafka:\n  security:\n    protocol: CARRIER_PIGEON\n", 3, "kafka.security.protocol", "PLAINTEXT"),
        ("mq_trace:\n  encoding: klingon\n", 2, "mq_trace.encoding", "not a character set"),
        ("mq_trace:\n  enabled: auto\n  timezone: Mars/Olympus\n", 3, "mq_trace.timezone", "not a time zone"),
        ("mq_trace:\n  enabled: sometimes\n", 2, "mq_trace.enabled", "'sometimes' is not auto, true or false"),
        ("monitor:\n  snapshot_interval: often\n", 2, "monitor.snapshot_interval", "not a duration"),
        ("job:\n  fetch_max_wait: soon\n", 2, "job.fetch_max_wait", "not a duration"),
        ("job:\n  fetch_max_wait: 11 seconds\n", 2, "job.fetch_max_wait", "is more than 10 seconds"),
        ("monitor:\n  perfmev: SOMETIMES\n", 2, "monitor.perfmev", "'ENABLED' or 'DISABLED'"),
    ],
)
def test_errors_name_file_line_and_key(tmp_path, text, line, key, fragment):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert f"{path}: line {line}: {key}:" in message
    assert fragment in message


def test_yaml_syntax_error_names_the_line(tmp_path):
    path = write(tmp_path, "job:\n  trigger: 1 second\n   bad: [\n")
    with pytest.raises(ConfigError, match=rf"{path}: line \d+: not valid YAML"):
        load_config(path)


def test_duplicate_key_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="line 3: key 'trigger' appears twice"):
        load_config(write(tmp_path, "job:\n  trigger: 1 s\n  trigger: 2 s\n"))
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.yaml")


def test_password_is_never_printed(tmp_path):
    cfg = load_config(
        write(
            tmp_path,
            "kafka:\n  security:\n    protocol: SASL_PLAINTEXT\n"
            "    sasl_mechanism: PLAIN\n    username: u\n    password: hunter2\n",
        )
    )
    assert "hunter2" not in repr(cfg) and "hunter2" not in str(cfg.model_dump())


def test_durations():
    assert duration_ms("15 minutes") == 900_000
    assert duration_ms("500 ms") == 500
    assert duration_ms(2) == 2000
    with pytest.raises(ValueError):
        duration_ms("fortnight")


def test_durations_are_converted_exactly():
    from qmon.core.config import duration_ms

    assert duration_ms("4.007 s") == 4007 and duration_ms(4.007) == 4007 and duration_ms("0.001 s") == 1
    assert duration_ms(7) == 7000 and duration_ms("1.5 minutes") == 90_000


def test_clear_margin_is_validated_with_its_line():
    import pytest

    from qmon.core.config import Config

    with pytest.raises(ValueError, match="clear_margin"):
        Config.model_validate({"structures": [{"strname": "S1", "size": 10, "clear_margin": 80}]})


def test_clear_margin_must_be_below_fullthreshold():
    import pytest

    from qmon.core.config import Config

    with pytest.raises(ValueError, match="clear_margin"):
        Config.model_validate({"structures": [{"strname": "S1", "size": 10, "fullthreshold": 5}]})


def test_a_schema_registry_is_given_by_its_base_url_and_optional_login(tmp_path):
    cfg = load_config(
        write(
            tmp_path,
            "kafka:\n  schema_registry_url: ' https://registry.example.com:8081/apis/ccompat/v7/ '\n"
            "  schema_registry_username: qmon\n  schema_registry_password: hunter2\n",
        )
    )
    assert cfg.kafka.schema_registry_url == "https://registry.example.com:8081/apis/ccompat/v7"
    assert cfg.kafka.schema_registry_username == "qmon"
    assert "hunter2" not in repr(cfg) and "hunter2" not in str(cfg.model_dump())
    assert load_config(None).kafka.schema_registry_url is None


@pytest.mark.parametrize(
    "text,line,key,fragment",
    [
        (
            "kafka:\n  schema_registry_url: registry:8081\n",
            2,
            "kafka.schema_registry_url",
            "not an http:// or https://",
        ),
        ("kafka:\n  schema_registry_url: ftp://registry/\n", 2, "kafka.schema_registry_url", "http://"),
        ("kafka:\n  schema_registry_url: http://:8081/\n", 2, "kafka.schema_registry_url", "with a host"),
        ("kafka:\n  schema_registry_url: http://r:port/\n", 2, "kafka.schema_registry_url", "is not a URL"),
        (
            "kafka:\n  schema_registry_url: https://qmon:hunter2@registry/\n",
            2,
            "kafka.schema_registry_url",
            "give them as kafka.schema_registry_username",
        ),
        ("kafka:\n  schema_registry_url: http://registry/?x=1\n", 2, "kafka.schema_registry_url", "query"),
        (
            "kafka:\n  schema_registry_url: http://registry/\n  schema_registry_username: qmon\n",
            1,
            "kafka",
            "give both or neither",
        ),
        (
            "kafka:\n  schema_registry_username: qmon\n  schema_registry_password: pw\n",
            1,
            "kafka",
            "kafka.schema_registry_url is not",
        ),
    ],
)
def test_schema_registry_errors_name_file_line_and_key(tmp_path, text, line, key, fragment):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert f"{path}: line {line}: {key}:" in message, message
    assert fragment in message
    assert "hunter2" not in message


# ---------------------------------------------------------------- queue-sharing groups

QSGS = """\
qsgs:
  - name: qsg1
    members: [QM1, QM2]
    shared_queues: [PAY.*, ORDERS]
  - name: QSG2
    members:
      - QM3
"""


def test_queue_sharing_groups_reach_the_rules(tmp_path):
    sharing = load_config(write(tmp_path, QSGS)).monitor_settings().sharing
    assert [g.name for g in sharing.groups] == ["QSG1", "QSG2"]  # a group's name in upper case, as on z/OS
    qsg1 = sharing.group_of("QM2")
    assert qsg1.name == "QSG1" and qsg1.shares("PAY.IN") and qsg1.shares("ORDERS") and not qsg1.shares("ORDERS.X")
    assert not sharing.group_of("QM3").shares("PAY.IN")  # QSG2 shares no queue from the start
    assert sharing.group_of("QM3").name == "QSG2" and sharing.group_of("QM9") is None


@pytest.mark.parametrize(
    "text,line,key,fragment",
    [
        (QSGS + "      - QM1\n", 8, "qsgs.1.members.1", "member of queue-sharing group QSG1 already"),
        (QSGS + "  - name: QSG1\n    members: [QM9]\n", 8, "qsgs.2.name", "declared twice"),
        (QSGS + "  - name: QM1\n    members: [QM9]\n", 8, "qsgs.2.name", "different from every queue manager's"),
        ("qsgs:\n  - name: GROUP1\n    members: [QM1]\n", 2, "qsgs.0.name", "1-4 characters"),
        ("qsgs:\n  - name: QSG1\n    members: []\n", 3, "qsgs.0.members", "at least 1"),
        ("qsgs:\n  - name: QSG1\n    members: [QM1, QM1]\n", 3, "qsgs.0.members", "QM1 is listed twice"),
        ("qsgs:\n  - name: QSG1\n    members: ['QM 1']\n", 3, "qsgs.0.members", "not a queue manager name"),
        (
            "qsgs:\n  - name: QSG1\n    members: [QM1]\n    shared_queues: ['PAY[AB]']\n",
            4,
            "qsgs.0.shared_queues",
            "not a queue-name pattern",
        ),
        ("qsgs:\n  - members: [QM1]\n", 2, "qsgs.0.name", "required key is missing"),
    ],
)
def test_queue_sharing_group_errors_name_file_line_and_key(tmp_path, text, line, key, fragment):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert f"{path}: line {line}: {key}:" in message, message
    assert fragment in message, message


def test_a_renamed_key_is_read_under_its_name_with_a_warning_naming_the_line(tmp_path, caplog):
    """``job.queue_buckets`` (qmon 0.4's name) is ``job.queue_shards``: a 0.4 file still starts."""
    path = tmp_path / "qmon.yaml"
    path.write_text("job:\n  trigger: 1 second\n  queue_buckets: 16\n")
    with caplog.at_level("WARNING", logger="qmon.core.config.loading"):
        assert load_config(path).job.queue_shards == 16
    assert f"{path}: line 3: job.queue_buckets is named job.queue_shards" in caplog.text


def test_a_key_given_under_both_names_stops_start_up(tmp_path):
    path = tmp_path / "qmon.yaml"
    path.write_text("job:\n  queue_shards: 8\n  queue_buckets: 16\n")
    with pytest.raises(ConfigError, match=r"qmon.yaml: line 3: job.queue_buckets: give job.queue_shards only"):
        load_config(path)
