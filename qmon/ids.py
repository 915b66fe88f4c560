"""Deterministic event ids: derived from the inputs, so a replay yields the same ids."""

from __future__ import annotations

import hashlib


def event_id(*parts: object) -> str:
    """A 32-hex-digit id from the parts (order matters)."""
    text = "\x1f".join("" if p is None else str(p) for p in parts)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
