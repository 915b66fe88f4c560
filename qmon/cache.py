"""Where qmon keeps what it fetches and logs outside the checkout: resolved class paths, jars, logs."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Where qmon caches resolved class paths (never inside the checkout)."""
    base = os.environ.get("QMON_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "qmon"
    )
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path
