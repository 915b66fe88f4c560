"""The scripts users run as ``python benchmarks/NAME.py``.  Python puts ``benchmarks/`` first on the import
path, so a script named after a module is imported in that module's place: a ``benchmarks/operator.py``
would be what the standard library's own imports get instead of ``operator``, and ``argparse`` would fail
on an interpreter whose start-up had not imported ``operator`` already (a virtualenv without the editable
install's ``.pth``)."""

from __future__ import annotations

import importlib.machinery
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_no_script_is_named_after_a_module_it_would_hide() -> None:
    """Neither a standard module nor one installed in this interpreter (``numpy.py`` would hide numpy)."""
    here = ROOT / "benchmarks"
    elsewhere = [p for p in sys.path if not p or Path(p).resolve() != here]  # (not the scripts themselves)
    scripts = {
        p.name
        for p in here.glob("*.py")
        if p.stem in sys.stdlib_module_names or importlib.machinery.PathFinder.find_spec(p.stem, elsewhere)
    }
    assert not scripts, f"rename {sorted(scripts)}: each hides the module of its name"
