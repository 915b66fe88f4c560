"""Deterministic event ids: derived from the inputs, so a replay yields the same ids."""

from __future__ import annotations

import hashlib


def event_id(*parts: object) -> str:
    """A 32-hex-digit id from the parts (order matters)."""
    text = "\x1f".join("" if p is None else str(p) for p in parts)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def dlq_event_id(topic: str, partition: int, offset: int) -> str:
    """The DeadLetter event_id, the same formula as the query's (sha256 of topic/partition/offset)."""
    text = "\x1f".join(("dlq", topic, str(partition), str(offset)))
    return hashlib.sha256(text.encode()).hexdigest()[:32]
