"""The shipped Grafana dashboard (config/grafana/dashboards/qmon.json) as the tests read it: its panels, their
queries, and each query with the template variables put in as Grafana would for "All"."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.conftest import ROOT

DASHBOARD = ROOT / "config" / "grafana" / "dashboards" / "qmon.json"
#: Grafana's own variables a query may use, and what the tests put in for them.
BUILTIN = {"__rate_interval": "1m", "__range": "10m", "__interval": "15s"}
VARIABLE = re.compile(r"\$(?:\{(\w+)(?::\w+)?\}|(\w+))")


def load() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel that shows data (rows left out), collapsed rows' panels included."""
    out: list[dict[str, Any]] = []
    for p in dashboard["panels"]:
        if p["type"] == "row":
            out.extend(p.get("panels") or [])
        else:
            out.append(p)
    return out


def queries(dashboard: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(panel title, refId, PromQL as written) of every panel's queries."""
    return [(p["title"], t["refId"], t["expr"]) for p in panels(dashboard) for t in p["targets"]]


def template_variables(dashboard: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in dashboard["templating"]["list"]}


def used_variables(expr: str) -> set[str]:
    return {a or b for a, b in VARIABLE.findall(expr)}


def substituted(expr: str, dashboard: dict[str, Any], builtin: dict[str, str] | None = None) -> str:
    """``expr`` as Grafana sends it with every query variable on "All" (its ``allValue``) and Grafana's own
    variables as given (``BUILTIN`` by default)."""
    values = {name: v.get("allValue", "") for name, v in template_variables(dashboard).items() if v["type"] == "query"}
    values.update(builtin or BUILTIN)

    def put(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name not in values:
            msg = f"{expr!r} uses ${name}, which is neither a template variable of the dashboard nor Grafana's own"
            raise KeyError(msg)
        return values[name]

    return VARIABLE.sub(put, expr)


def label_values(query: str) -> tuple[str, str]:
    """A query variable's ``label_values(selector, label)`` -> (selector, label)."""
    m = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", query.strip())
    assert m, f"not label_values(selector, label): {query!r}"
    return m.group(1), m.group(2)
