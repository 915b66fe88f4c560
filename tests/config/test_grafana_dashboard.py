"""The shipped Grafana dashboard, without servers: the JSON is what ``qmon.app.dashboard`` generates, every panel
queries the Prometheus data source variable with only the dashboard's template variables, every query parses
(Prometheus' own parser, promtool) and names only metrics the exporter serves, and the provisioning files and
the Compose service fit together.  The same queries are evaluated against a real Prometheus scraping the
exporter in tests/e2e/test_grafana_dashboard_prometheus.py."""

from __future__ import annotations

import subprocess
import threading

import promql_parser
import pytest
import yaml

from qmon.app import dashboard
from qmon.app.exporter import MetricsCollector
from qmon.core.metrics import Metrics
from tests import dashboards
from tests.conftest import ROOT
from tests.servers import binary

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
GRAFANA = ROOT / "config" / "grafana"


def served_metrics() -> dict[str, str]:
    """Every series name the exporter serves -> the metric family it belongs to (as the reference names it)."""
    out = {}
    for family in MetricsCollector(Metrics(), threading.Lock(), {}).collect():
        if family.type == "counter":
            out[family.name + "_total"] = family.name + "_total"
        elif family.type == "histogram":
            out.update({family.name + s: family.name for s in ("_bucket", "_count", "_sum")})
        else:
            out[family.name] = family.name
    return out


def metric_names(expr: str) -> set[str]:
    names: set[str] = set()

    def visit(node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            names.add(node.name or "(a selector without a metric name)")

    promql_parser.walk(promql_parser.parse(expr), visit)
    return names


def all_expressions() -> list[tuple[str, str]]:
    """(where, PromQL with the variables put in) of every panel query and every query variable's selector."""
    d = dashboards.load()
    out = [(f"panel {title!r} query {ref}", dashboards.substituted(e, d)) for title, ref, e in dashboards.queries(d)]
    for name, v in dashboards.template_variables(d).items():
        if v["type"] == "query":
            selector, _label = dashboards.label_values(v["query"])
            out.append((f"variable {name}", dashboards.substituted(selector, d)))
    return out


def test_the_json_in_the_repository_is_what_the_generator_gives():
    assert dashboards.DASHBOARD.read_text() == dashboard.render(), (
        "config/grafana/dashboards/qmon.json is out of date: run `python -m qmon.app.dashboard`"
    )
    assert dashboard.main(["--check", "--output", str(dashboards.DASHBOARD)]) == 0


def test_check_says_when_the_json_is_out_of_date(tmp_path, capsys):
    stale = tmp_path / "qmon.json"
    stale.write_text("{}\n")
    assert dashboard.main(["--check", "--output", str(stale)]) == 1
    assert "is out of date: run `python -m qmon.app.dashboard`" in capsys.readouterr().err
    assert dashboard.main(["--output", str(stale)]) == 0 and stale.read_text() == dashboard.render()


def test_the_variables_are_the_datasource_queue_manager_queue_and_structure_all_as_a_regex():
    variables = dashboards.template_variables(dashboards.load())
    assert list(variables) == ["datasource", "qmgr", "queue", "structure"]
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    for name in ("qmgr", "queue", "structure"):
        v = variables[name]
        assert v["type"] == "query" and v["datasource"] == DATASOURCE, name
        assert v["includeAll"] and v["multi"] and v["allValue"] == ".*", name
        dashboards.label_values(v["query"])


def test_every_panel_and_query_uses_the_datasource_variable_and_only_the_dashboards_variables():
    d = dashboards.load()
    variables = dashboards.template_variables(d)
    panels = dashboards.panels(d)
    assert len(panels) >= 20
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    for p in panels:
        assert p["datasource"] == DATASOURCE, p["title"]
        assert p["title"] and p.get("description"), p
        assert p["targets"], p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)) and all(refs), p["title"]
        for t in p["targets"]:
            assert t["datasource"] == DATASOURCE, (p["title"], t["refId"])
            used = dashboards.used_variables(t["expr"])
            unknown = used - set(variables) - set(dashboards.BUILTIN)
            assert not unknown, (p["title"], t["expr"], unknown)
            assert "datasource" not in used
            for name in used & set(variables):
                # "All" is a regular expression: a variable stands only where one is matched
                assert t["expr"].count(f"${name}") == t["expr"].count(f'=~"${name}"'), (p["title"], t["expr"])
    for name, v in variables.items():
        if v["type"] == "query":
            assert dashboards.used_variables(v["query"]) <= set(variables) - {name}, name


def test_every_query_parses_and_names_only_metrics_the_exporter_serves():
    served = served_metrics()
    used: set[str] = set()
    for where, expr in all_expressions():
        names = metric_names(expr)
        assert names, f"{where}: no metric in {expr!r}"
        assert names <= served.keys(), f"{where}: {sorted(names - served.keys())} not served by qmon metrics"
        used |= names
    # the dashboard shows every metric the exporter serves but the exporter's own bookkeeping
    assert set(served.values()) - {served[n] for n in used} == {"qmon_exporter_records_total"}


def test_promtool_parses_every_query(tmp_path):
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:q{i}", "expr": expr} for i, (_w, expr) in enumerate(all_expressions())
                ],
            }
        ]
    }
    path = tmp_path / "dashboard.rules.yml"
    path.write_text(yaml.safe_dump(rules))
    out = subprocess.run([binary("promtool"), "check", "rules", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_metric_the_dashboard_uses_is_in_the_metrics_reference_and_the_grafana_guide():
    served = served_metrics()
    reference = (ROOT / "docs" / "reference" / "metrics.md").read_text()
    guide = (ROOT / "docs" / "guides" / "grafana.md").read_text()
    for _where, expr in all_expressions():
        for name in metric_names(expr):
            assert f"| `{served[name]}` |" in reference, name
            assert f"`{served[name]}`" in guide, name
    for title, _ref, _expr in dashboards.queries(dashboards.load()):
        assert f"**{title}**" in guide, f"panel {title!r} is not described in docs/guides/grafana.md"


def test_the_provisioning_files_and_the_compose_service_fit_together():
    source = yaml.safe_load((GRAFANA / "provisioning" / "datasources" / "prometheus.yml").read_text())
    (ds,) = source["datasources"]
    assert ds["type"] == "prometheus" and ds["isDefault"] and ds["url"] == "http://localhost:9090"
    scrape = yaml.safe_load((ROOT / "config" / "prometheus" / "prometheus.yml").read_text())["global"]
    assert ds["jsonData"]["timeInterval"] == scrape["scrape_interval"]  # $__rate_interval is 4 scrapes
    providers = yaml.safe_load((GRAFANA / "provisioning" / "dashboards" / "qmon.yml").read_text())["providers"]
    (provider,) = providers
    assert provider["type"] == "file" and provider["options"]["path"] == "/var/lib/grafana/dashboards/qmon"
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())["services"]
    grafana = compose["grafana"]
    assert grafana["volumes"] == ["../config/grafana:/etc/qmon:ro"]
    script = grafana["entrypoint"][-1]
    # the Compose file rewrites the shipped files' URL and path: both must be there to rewrite
    assert "s#http://localhost:9090#http://prometheus:9090#" in script and "prometheus" in compose
    assert "s#/var/lib/grafana/dashboards/qmon#/etc/qmon/dashboards#" in script
    assert grafana["environment"]["GF_PATHS_PROVISIONING"] == "/tmp/provisioning" and script.endswith("exec /run.sh")


@pytest.mark.parametrize("kind", ["pie", ""])
def test_an_unknown_panel_kind_is_an_error_naming_the_panel(kind):
    with pytest.raises(ValueError, match=f"panel 'x': unknown kind '{kind}'"):
        dashboard._panel(dashboard.Panel(kind, "x", "", ()), 1)
