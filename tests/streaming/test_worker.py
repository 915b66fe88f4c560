"""What each PySpark Python worker does once (``qmon.streaming.worker``)."""

from __future__ import annotations

import subprocess
import sys


def test_freeze_imports_freezes_once_so_the_daemons_collections_skip_the_modules():
    # in a process of its own: freezing is for good, and this test process should not be changed by it
    code = (
        "import gc\n"
        "import pandas, pyarrow\n"
        "from qmon.streaming import operators\n"
        "from qmon.streaming.worker import freeze_imports\n"
        "assert gc.get_freeze_count() == 0\n"
        "freeze_imports()\n"
        "frozen = gc.get_freeze_count()\n"
        "assert frozen > 10_000, frozen\n"
        "junk = [[i] for i in range(1000)]\n"
        "freeze_imports()\n"
        "assert gc.get_freeze_count() == frozen, 'a second call freezes nothing more'\n"
        "assert gc.collect() == 0\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
