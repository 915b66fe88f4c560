"""qmon's Grafana dashboard, as code: ``python -m qmon.app.dashboard`` writes ``config/grafana/dashboards/qmon.json``.

The panels are listed as plain data in ``qmon.app.dashboard_panels`` (``SECTIONS``: a row title and its panels,
each with its PromQL, and the template variables they use), and ``build`` turns them into a dashboard with
Grafana's Foundation SDK (``grafana-foundation-sdk``, the builders generated from Grafana's own schemas for
Grafana 11.6), so the JSON is never edited by hand and a panel cannot reference a field Grafana does not have.
``--check`` says whether the JSON in the repository is what the code gives (a test checks it too).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders import stat, statetimeline, table, timeseries
from grafana_foundation_sdk.builders.common import ReduceDataOptions
from grafana_foundation_sdk.builders.dashboard import Dashboard as DashboardBuilder
from grafana_foundation_sdk.builders.dashboard import (
    DatasourceVariable,
    QueryVariable,
    Row,
    ThresholdsConfig,
)
from grafana_foundation_sdk.builders.prometheus import Dataquery
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.common import GraphDrawStyle, LineInterpolation, LineStyle
from grafana_foundation_sdk.models.dashboard import (
    DataSourceRef,
    DynamicConfigValue,
    Threshold,
    ThresholdsMode,
    ValueMap,
    ValueMappingResult,
    VariableOption,
    VariableRefresh,
    VariableSort,
)

from qmon.app.dashboard_panels import ALL, SECTIONS, VARIABLES, Panel, Query

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "config" / "grafana" / "dashboards" / "qmon.json"
UID = "qmon"
#: The data source every panel and query uses: the template variable ``datasource`` (Prometheus).
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
#: How a threshold's line is drawn: dashed, beside the solid line of what it bounds.
DASHED = LineStyle(fill="dash", dash=[10, 10])


def _query(q: Query, ref: str) -> Dataquery:
    builder = Dataquery().expr(q.expr).ref_id(ref).datasource(DATASOURCE)
    if q.legend:
        builder = builder.legend_format(q.legend)
    return builder.instant() if q.instant else builder.range()


def _panel(p: Panel, panel_id: int) -> Any:
    builder: Any
    if p.kind in ("timeseries", "bars"):
        builder = timeseries.Panel()
        if p.kind == "bars":
            builder = builder.draw_style(GraphDrawStyle.BARS).fill_opacity(80)
        elif p.step:
            builder = builder.line_interpolation(LineInterpolation.STEP_AFTER)
    elif p.kind == "stat":
        builder = stat.Panel().reduce_options(ReduceDataOptions().calcs(["lastNotNull"]))
    elif p.kind == "state":
        builder = statetimeline.Panel()
    elif p.kind == "table":
        builder = table.Panel()
    else:
        msg = f"panel {p.title!r}: unknown kind {p.kind!r}; use timeseries, bars, stat, state or table"
        raise ValueError(msg)
    builder = (
        builder.id(panel_id)
        .title(p.title)
        .description(p.description)
        .datasource(DATASOURCE)
        .unit(p.unit)
        .span(p.width)
        .height(p.height)
        .targets([_query(q, chr(ord("A") + i)) for i, q in enumerate(p.queries)])
    )
    for i, q in enumerate(p.queries):
        if q.threshold:
            line = DynamicConfigValue(id_val="custom.lineStyle", value=DASHED)
            builder = builder.override_by_query(chr(ord("A") + i), [line])
    if p.max is not None:
        builder = builder.min(0).max(p.max)
    if p.mappings:
        builder = builder.mappings(
            [ValueMap({v: ValueMappingResult(text=t, index=i) for i, (v, t) in enumerate(p.mappings.items())})]
        )
    if p.kind == "state":
        builder = builder.thresholds(
            ThresholdsConfig()
            .mode(ThresholdsMode.ABSOLUTE)
            .steps([Threshold(value=None, color="green"), Threshold(value=1, color="red")])
        )
    return builder


def build() -> DashboardBuilder:
    """The dashboard: the variables, then each section as a row and its panels."""
    dash = (
        DashboardBuilder("qmon")
        .uid(UID)
        .description("IBM MQ queues, IMS CQS structures, dead letters and the qmon job, from qmon metrics")
        .tags(["qmon", "ibm-mq", "ims"])
        .time("now-6h", "now")
        .refresh("30s")
        .timezone("browser")
        .editable()
        .with_variable(DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
    )
    for name, (label, query) in VARIABLES.items():
        dash = dash.with_variable(
            QueryVariable(name)
            .label(label)
            .datasource(DATASOURCE)
            .query(query)
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(VariableSort.ALPHABETICAL_ASC)
            .multi(True)
            .include_all(True)
            .all_value(ALL)
            .current(VariableOption(selected=True, text="All", value="$__all"))
        )
    panel_id = 0
    for title, panels in SECTIONS:
        panel_id += 1
        dash = dash.with_row(Row(title).id(panel_id))
        for p in panels:
            panel_id += 1
            dash = dash.with_panel(_panel(p, panel_id))
    return dash


def render() -> str:
    """The dashboard's JSON as it is kept in the repository."""
    return JSONEncoder(sort_keys=True, indent=2).encode(build().build()) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m qmon.app.dashboard", description=__doc__.split("\n")[0])
    ap.add_argument("--output", default=str(OUTPUT), help="where the dashboard's JSON goes")
    ap.add_argument("--check", action="store_true", help="say whether the JSON is out of date; write nothing")
    args = ap.parse_args(argv)
    out = Path(args.output)
    text = render()
    if args.check:
        if not out.exists() or out.read_text() != text:
            print(f"{out} is out of date: run `python -m qmon.app.dashboard`", file=sys.stderr)
            return 1
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
