"""The scripts users run as ``python benchmarks/NAME.py``: Python puts ``benchmarks/`` first on the import
path, so a script named after a standard module is imported in its place by the standard library itself
(``benchmarks/operator.py`` broke ``argparse`` on an interpreter whose start-up had not already imported
``operator``, a virtualenv without the editable install's ``.pth``, for one)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_no_script_is_named_after_a_standard_module() -> None:
    scripts = {p.name for p in (ROOT / "benchmarks").glob("*.py") if p.stem in sys.stdlib_module_names}
    assert not scripts, f"rename {sorted(scripts)}: each hides the standard module of its name"
