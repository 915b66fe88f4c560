"""The shipped Prometheus rules, evaluated by Prometheus' own rule tester (``promtool test rules``) over
series written here: each alert fires on the input it is for, and not on the input just short of it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import promql_parser
import yaml

from tests.servers import ROOT, binary

RULES = ROOT / "config" / "prometheus" / "qmon.rules.yml"


def _batches(seconds: float, per_minute: int = 30) -> dict[str, str]:
    """Histogram series of ``qmon_batch_duration_seconds``: ``per_minute`` batches a minute, each taking
    ``seconds``, for 30 minutes (one sample a minute)."""
    buckets = ("0.1", "0.25", "0.5", "1", "2", "5", "10", "30", "60", "+Inf")
    series = {}
    for le in buckets:
        counted = per_minute if le == "+Inf" or float(le) >= seconds else 0
        series[f'qmon_batch_duration_seconds_bucket{{le="{le}"}}'] = f"0+{counted}x30"
    return series


def _test_file(tmp_path: Path, name: str, seconds: float, alerts: list[dict]) -> Path:
    lines = [f"rule_files:\n  - {RULES}\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:"]
    for series, values in _batches(seconds).items():
        lines.append(f"      - series: '{series}'\n        values: '{values}'")
    lines.append("    alert_rule_test:\n      - eval_time: 25m\n        alertname: QmonEventsLate")
    if alerts:
        lines.append("        exp_alerts:")
        for a in alerts:
            lines.append(f"          - exp_labels:\n              severity: {a['severity']}")
            lines.append("            exp_annotations:")
            lines.extend(f"              {k}: {json.dumps(v)}" for k, v in a["annotations"].items())
    else:
        lines.append("        exp_alerts: []")
    path = tmp_path / f"{name}.yml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _annotations(alert: str, value: str) -> dict[str, str]:
    """The alert's annotations as the rules file writes them, with ``{{ $value | humanize }}`` filled in."""
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        for rule in group["rules"]:
            if rule.get("alert") == alert:
                return {k: v.replace("{{ $value | humanize }}", value) for k, v in rule["annotations"].items()}
    raise KeyError(alert)


def _promtool(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary("promtool"), "test", "rules", str(path)], capture_output=True, text=True)


def test_the_shipped_rules_are_valid():
    out = subprocess.run([binary("promtool"), "check", "rules", str(RULES)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_no_rule_extrapolates_a_depth_or_a_usage_and_every_alert_has_a_runbook():
    """qmon's fill forecasts (STRUCTURE_FILL_FORECAST, QUEUE_FILL_FORECAST) do that, as the file's header says."""
    extrapolating = {"deriv", "delta", "idelta", "predict_linear", "holt_winters", "double_exponential_smoothing"}
    rules = [r for group in yaml.safe_load(RULES.read_text())["groups"] for r in group["rules"]]
    for rule in rules:
        calls: set[str] = set()

        def visit(node: object, calls: set[str] = calls) -> None:
            if isinstance(node, promql_parser.Call):
                calls.add(node.func.name)

        promql_parser.walk(promql_parser.parse(rule["expr"]), visit)
        assert not calls & extrapolating, (rule.get("alert") or rule.get("record"), sorted(calls & extrapolating))
        if "alert" in rule:
            assert rule["annotations"].get("runbook") and rule["labels"]["severity"], rule["alert"]
    assert "no rule here extrapolates a depth or a usage" in " ".join(RULES.read_text().split())


def test_events_late_fires_when_batches_take_seconds(tmp_path):
    # batches of 4 s (a busy job on a small machine): p90 above 2.5 s
    # (p90 of a histogram: interpolated within the 2-5 s bucket, 2 + 0.9 x 3 = 4.7 s)
    expected = {"severity": "warning", "annotations": _annotations("QmonEventsLate", "4.7")}
    result = _promtool(_test_file(tmp_path, "late", 4.0, [expected]))
    assert result.returncode == 0, result.stdout + result.stderr


def test_events_late_stays_quiet_for_batches_of_a_second(tmp_path):
    result = _promtool(_test_file(tmp_path, "on_time", 0.9, []))
    assert result.returncode == 0, result.stdout + result.stderr


def test_records_out_of_order_fires_on_late_records_and_not_without(tmp_path):
    annotations = {
        k: v.replace("{{ $value }}", "10") for k, v in _annotations("QmonRecordsOutOfOrder", "").items()
    }  # (one a minute: 10 in 10 minutes)
    for name, values, fires in (("late", "0+1x30", True), ("none", "0+0x30", False)):
        lines = [
            f"rule_files:\n  - {RULES}\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:",
            f"      - series: 'qmon_late_records_total'\n        values: '{values}'",
            "    alert_rule_test:\n      - eval_time: 20m\n        alertname: QmonRecordsOutOfOrder",
        ]
        if fires:
            lines.append("        exp_alerts:\n          - exp_labels:\n              severity: warning")
            lines.append("            exp_annotations:")
            lines.extend(f"              {k}: {json.dumps(v)}" for k, v in annotations.items())
        else:
            lines.append("        exp_alerts: []")
        path = tmp_path / f"{name}.yml"
        path.write_text("\n".join(lines) + "\n")
        result = _promtool(path)
        assert result.returncode == 0, result.stdout + result.stderr
