"""The error and log texts the operator guides quote are texts qmon prints.

``QUOTED`` lists, for each guide, the product texts it quotes (the troubleshooting guide's every one, and those of
the production and cluster guides). Each entry is written as the guide shows it, with a placeholder wherever the
text has a variable part: ``<name>`` (any word in angle brackets) or ``…`` stands for anything. An entry must
be in its guide (whitespace and line breaks aside, a placeholder matching the example value the guide shows,
or the guide's own ``<name>`` or ``…``), and its fixed fragments must appear, in order, in one string of qmon's
source (``qmon/``, ``streaming/``, ``connectors/``; an f-string's or a %-format's variable parts may stand where
the entry has a placeholder). So a quoted text that stops appearing in the code, or an entry the guide no
longer quotes, fails here: change the guide to what the code prints, then the entry.

Texts of other programs the troubleshooting guide quotes are not checked: Spark's launcher (``JAVA_HOME is not
set``), PySpark (the Java gateway process), the JVM (``UnsupportedClassVersionError``), Kafka
(``TOPIC_AUTHORIZATION_FAILED``), pydantic (``Value error``).
"""

from __future__ import annotations

import ast
import os
import re
from functools import cache
from pathlib import Path

import pytest

from qmon.core.state_version import STATE_VERSION
from tests.conftest import ROOT

TROUBLESHOOTING = "docs/guides/troubleshooting.md"
PRODUCTION = "docs/guides/production.md"
ACTIVITY_TRACE = "docs/guides/activity-trace.md"
CLUSTER = "docs/guides/cluster.md"

QUOTED: list[tuple[str, str]] = [
    (TROUBLESHOOTING, "reading MQ activity trace from <topic>"),
    (TROUBLESHOOTING, "qmon: no reply within <seconds> s (is `qmon run` running against <bootstrap>?)"),
    (TROUBLESHOOTING, "qmon: checkpoint error: "),
    (
        TROUBLESHOOTING,
        "this checkpoint holds qmon state of <what>; <why>. Start the job "
        "with a new checkpoint directory (job.checkpoint or --checkpoint; job.starting_offsets: latest skips the "
        "input already read)",
    ),
    (TROUBLESHOOTING, "qmon 0.4 (none recorded)"),
    (TROUBLESHOOTING, "state of version <v>; this qmon reads state version <n> only"),
    (TROUBLESHOOTING, "job.queue_shards is <n> but checkpoint <dir> was started with <m>: kept"),
    (TROUBLESHOOTING, "Maven (mvn) is not on PATH: "),
    (TROUBLESHOOTING, "could not fetch <jar> from <url> (<error>): a local checkpoint uses Hadoop's local file system"),
    (TROUBLESHOOTING, "com.globalmentor:hadoop-bare-naked-local-fs:0.1.0"),
    (TROUBLESHOOTING, "DEAD_LETTER <reason> (<code>) from <topic> partition <partition> offset <offset>: "),
    (TROUBLESHOOTING, "depth_after is negative ("),
    (TROUBLESHOOTING, "at byte <offset>: "),
    (TROUBLESHOOTING, "MQI call <n> (<op>): no "),
    (
        TROUBLESHOOTING,
        "queue name (3195, 3141, 3046: activity trace detail LOW leaves them out; set ActivityTrace detail MEDIUM)",
    ),
    (TROUBLESHOOTING, "qmon demo: the job failed: <error> (log: <file>)"),
    (TROUBLESHOOTING, "qmon: configuration error:"),
    (TROUBLESHOOTING, "<value> is not a duration; write e.g. '15 minutes', '30 s' or '500 ms'"),
    (TROUBLESHOOTING, "unknown key (check its spelling"),
    (PRODUCTION, "the qmon query failed (<error>); restarting on the same checkpoint in <seconds> s"),
    (PRODUCTION, "the qmon query failed <n> times in a row; giving up: "),
    (PRODUCTION, "qmon: checkpoint error: "),
    (
        PRODUCTION,
        "this checkpoint holds qmon state of <what>; <why>. Start the job "
        "with a new checkpoint directory (job.checkpoint or --checkpoint; job.starting_offsets: latest skips the "
        "input already read)",
    ),
    (ACTIVITY_TRACE, "MQI call <n> (<op>): no "),
    (
        ACTIVITY_TRACE,
        "queue name (3195, 3141, 3046: activity trace detail LOW leaves them out; set ActivityTrace detail MEDIUM)",
    ),
    (CLUSTER, "Spark's web UI on <url>"),
]

#: a variable part: a name in angle brackets, or an ellipsis
PLACEHOLDER = re.compile(r"<[A-Za-z][^<>]*>|…")
#: what a placeholder stands for in a guide: an example value, a placeholder, never a whole paragraph
ANYTHING = r".{0,100}?"
#: an f-string's variable part, in the source strings
VARIABLE = "\x00"


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _fragments(quoted: str) -> list[str]:
    return [f for f in PLACEHOLDER.split(_normal(quoted)) if f.strip()]


def _string(node: ast.AST) -> str | None:
    """A string literal's text (implicit concatenation already joined by the parser); an f-string's with each
    variable part as ``VARIABLE``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_string(v) or "" if isinstance(v, ast.Constant) else VARIABLE for v in node.values)
    return None


@cache
def source_strings() -> tuple[str, ...]:
    """Every string literal of the product's source, whitespace normalised."""
    seen: set[Path] = set()
    found: list[str] = []
    for top in ("qmon", "streaming", "connectors"):
        for folder, _dirs, files in os.walk(ROOT / top):  # (qmon/ links the other two: each file read once)
            for name in files:
                path = (Path(folder) / name).resolve()
                if not name.endswith(".py") or path in seen:
                    continue
                seen.add(path)
                for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                    text = _string(node)
                    if text:
                        found.append(_normal(text))
    return tuple(found)


def in_order(fragments: list[str], text: str) -> bool:
    at = 0
    for fragment in fragments:
        at = text.find(fragment, at)
        if at < 0:
            return False
        at += len(fragment)
    return True


def test_the_source_is_read():
    strings = source_strings()
    assert len(strings) > 1000
    assert any(VARIABLE in s for s in strings)  # f-strings, their variable parts marked


@pytest.mark.parametrize(("doc", "quoted"), QUOTED, ids=[f"{Path(d).stem}: {q[:50]}" for d, q in QUOTED])
def test_a_text_a_guide_quotes_is_one_qmon_prints(doc: str, quoted: str):
    page = _normal((ROOT / doc).read_text())
    parts = PLACEHOLDER.split(_normal(quoted))
    pattern = ANYTHING.join(re.escape(p) for p in parts)
    assert re.search(pattern, page), f"{doc} no longer quotes {quoted!r}: update QUOTED in {Path(__file__).name}"
    fragments = _fragments(quoted)
    assert any(in_order(fragments, s) for s in source_strings()), (
        f"{doc} quotes {quoted!r}, which qmon's source does not print: make the guide say what the code prints"
    )


def test_a_quoted_text_missing_from_the_code_is_caught():
    assert not any(in_order(_fragments("no reply within <seconds> s (is the job up?)"), s) for s in source_strings())
    assert not any(in_order(_fragments("queue state has version <n>"), s) for s in source_strings())


def test_the_state_version_the_documentation_shows_is_the_code_s():
    pages = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    shown = {
        f"{page.relative_to(ROOT)}: {m.group(0)}"
        for page in pages
        for m in re.finditer(r"state version (\d+)", _normal(page.read_text()))
        if int(m.group(1)) != STATE_VERSION
    }
    assert not shown, f"the state version is {STATE_VERSION}; the documentation shows {sorted(shown)}"
