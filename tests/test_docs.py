"""The documentation stays true to the code: the generated reference pages are up to date, and every
subcommand and option, configuration key, Avro field, alert type and reason code is in the reference; the
README is the short front door, and nothing in the documentation sends readers where they cannot follow."""

from __future__ import annotations

import re
from pathlib import Path

from qmon.app import docgen
from qmon.app.cli import parser
from qmon.core.reasons import REASONS
from qmon.core.topics import RECORD_OF
from tests.conftest import ROOT

DOCS = ROOT / "docs"
REFERENCE = DOCS / "reference"


def test_the_generated_reference_pages_are_up_to_date():
    stale = docgen.stale(REFERENCE)
    assert not stale, f"out of date: {stale}; regenerate with `python -m qmon.app.docgen` (or `make docs`)"


def test_every_subcommand_and_option_is_in_the_cli_reference():
    page = (REFERENCE / "cli.md").read_text()
    for name, sp, _help in docgen._commands(parser()):
        assert f"## `{name}`" in page
        for action in sp._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}`" in page, (name, option)


def test_every_configuration_key_has_a_description_and_is_in_the_reference():
    page = (REFERENCE / "configuration.md").read_text()
    for key, _type, _default, description in docgen.config_keys():
        assert description, f"{key} has no description (pydantic Field(description=...))"
        assert f"| `{key}` |" in page, key


def test_every_avro_field_is_in_the_records_reference():
    page = (REFERENCE / "records.md").read_text()
    for record in RECORD_OF.values():
        assert f"## {record}" in page
        for field, _type, _doc in docgen._fields(docgen.schema(record)):
            assert f"| `{field}` |" in page, (record, field)


def test_every_reason_code_is_in_the_reference():
    page = (REFERENCE / "reason-codes.md").read_text()
    for name, (code, _text) in REASONS.items():
        assert f"| `{name}` | {code} |" in page


def alert_types() -> set[str]:
    """The alert types the rules write: the first upper-case name in each call that makes an alert."""
    found: set[str] = set()
    states = {"FIRING", "RESOLVED", "INFO", "WARNING", "CRITICAL"}
    core = ROOT / "qmon" / "core"
    for path in [*core.glob("structures/*.py"), *core.glob("queues/*.py"), core / "journals.py"]:
        text = path.read_text()
        for call in re.finditer(r"(?:_emit|_alert|\balert)\(", text):
            names = re.findall(r'"([A-Z][A-Z]*(?:_[A-Z]+)+)"', text[call.end() : call.end() + 200])
            names = [n for n in names if n not in states]
            if names:
                found.add(names[0])
    return found


def test_every_alert_type_has_a_section_in_the_alert_catalogue():
    types = alert_types()
    assert {"STRUCTURE_FULL", "QUEUE_STALLED", "OVERFLOW_MODE_ENTERED", "RECEIVER_NEAR_THRESHOLD"} <= types
    page = (REFERENCE / "alerts.md").read_text()
    missing = [t for t in sorted(types) if not re.search(rf"^#+ .*\b{t}\b", page, re.M)]
    assert not missing, f"no section in docs/reference/alerts.md for {missing}"


def test_the_readme_is_the_front_door():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    for command in ("make demo", "make test"):
        assert command in readme


def test_the_documentation_is_self_contained_and_has_no_development_history():
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *DOCS.rglob("*.md")]
    history = re.compile(r"\.\./shared|\bseed \d{3}\b|\bissue \d+|\bsession \d+|\bSPEC\.md|\bSPEC §|tried and not kept")
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in pages for m in history.finditer(p.read_text())]
    assert not found, found


def test_every_page_is_in_the_site_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in DOCS.rglob("*.md"):
        assert str(page.relative_to(DOCS)) in nav, page


def test_a_docs_page_names_only_commands_qmon_has():
    commands = {name.split()[1] for name, _sp, _h in docgen._commands(parser())}
    for page in [ROOT / "README.md", *DOCS.rglob("*.md")]:
        text = page.read_text()
        code = re.findall(r"```.*?```", text, re.S) + re.findall(
            r"`[^`\n]+`", re.sub(r"```.*?```", "", text, flags=re.S)
        )
        for block in code:
            for used in re.findall(r"(?m)(?:^|\$ |`|\|\s)qmon ([a-z][a-z-]+)", block):
                assert used in commands, f"{Path(page).name}: `qmon {used}`"


def test_the_example_configuration_names_every_key_and_defines_nothing_made_up():
    from qmon.core.config import Config, load_config

    path = ROOT / "config" / "qmon.example.yaml"
    text = path.read_text()
    for key, _type, _default, _description in docgen.config_keys():
        leaf = key.rsplit(".", 1)[-1].removesuffix("[]")
        assert re.search(rf"(?m)^[#\s-]*{leaf}:", text), f"{key} is not in config/qmon.example.yaml"
    assert "structures_from:" in text
    loaded = load_config(path)
    assert not loaded.structures and not loaded.queues and loaded.overflow_exit is None
    assert loaded.model_dump() == Config().model_dump()  # the values shown are the defaults
