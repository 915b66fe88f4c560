"""A unit's per-queue states, decoded only when a queue is used and encoded again only if it was.

A queue shard or a structure holds thousands of queues, and a micro-batch touches a few of them.  The
operator stores each queue's state as its own encoded value inside the unit's value, so loading a unit
costs one cheap map of encoded values, and the rules decode (``decode``) the queues they use: a batch pays
the rules' (de)serialisation for the queues it touched, not for all of them.  Reading a queue decodes it;
testing a name (``in``), iterating names and ``len`` do not.

The rules see a ``MutableMapping`` either way: the pure reference and the tests give plain dicts, the
Spark operator a ``Lazy`` with the MessagePack decoder of ``qmon.streaming.state``, which encodes it back
when it stores the unit (``Lazy.encoded``).  Pure: no codec here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class Lazy(MutableMapping[str, V], Generic[V]):
    """``stored`` maps each name to its encoded state; ``live`` holds the states decoded since loading."""

    def __init__(self, stored: dict[str, Any], decode: Callable[[Any], V]):
        self.stored, self.decode = stored, decode
        self.live: dict[str, V] = {}

    def __getitem__(self, name: str) -> V:
        value = self.live.get(name)
        if value is None:
            value = self.live[name] = self.decode(self.stored[name])
        return value

    def get(self, name: str, default: Any = None) -> Any:
        if name in self.live:
            return self.live[name]
        return self[name] if name in self.stored else default

    def __setitem__(self, name: str, value: V) -> None:
        self.live[name] = value
        self.stored[name] = None  # encoded by ``encoded``

    def __delitem__(self, name: str) -> None:
        del self.stored[name]
        self.live.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self.stored

    def __iter__(self) -> Iterator[str]:
        return iter(self.stored)

    def __len__(self) -> int:
        return len(self.stored)

    def encoded(self, encode: Callable[[V], Any]) -> dict[str, Any]:
        """Every name -> its encoded state (the ones used encoded again), ready to store."""
        for name, value in self.live.items():
            self.stored[name] = encode(value)
        return self.stored


def live(queues: MutableMapping[str, V]) -> dict[str, V]:
    """The queue states the rules have used since loading: all of them when they are a plain dict."""
    return queues.live if isinstance(queues, Lazy) else queues  # type: ignore[return-value]
