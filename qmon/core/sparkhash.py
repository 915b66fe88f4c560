"""Spark's shuffle partition of a key, computed in Python: ``pmod(hash(col, …), partitions)``.

Spark places a row of a hash-partitioned shuffle on ``pmod(Murmur3 hash of the key's columns, seed 42,
partitions)`` (``HashPartitioning``; since Spark 4.1 its ``CollationAwareMurmur3Hash``, which for strings of
the default, binary collation, as all of qmon's routed columns are, hashes exactly as SQL's ``hash`` does).
The columns are hashed in order, each with the previous column's hash as its seed: a null leaves the seed as
it is, an int is hashed with ``Murmur3_x86_32.hashInt``, a string's UTF-8 bytes with
``Murmur3_x86_32.hashUnsafeBytes``, four at a time as little-endian ints and then each remaining byte on its
own, as a signed int (not the reference MurmurHash3's tail; Spark keeps it for compatibility).  The job's
units' placement (``qmon.streaming.units``) uses it to choose the keys' buckets without a SQL statement;
``tests/streaming/test_units.py`` checks it against Spark's own ``hash``.
"""

from __future__ import annotations

from collections.abc import Iterable

SEED = 42
_MASK = 0xFFFFFFFF
_C1 = 0xCC9E2D51
_C2 = 0x1B873593


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _mix_k1(k1: int) -> int:
    k1 = (k1 * _C1) & _MASK
    k1 = _rotl(k1, 15)
    return (k1 * _C2) & _MASK


def _mix_h1(h1: int, k1: int) -> int:
    h1 ^= k1
    h1 = _rotl(h1, 13)
    return (h1 * 5 + 0xE6546B64) & _MASK


def _fmix(h1: int, length: int) -> int:
    h1 ^= length
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _MASK
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _MASK
    h1 ^= h1 >> 16
    return h1


def hash_int(value: int, seed: int) -> int:
    """``Murmur3_x86_32.hashInt`` (unsigned 32 bits in, out)."""
    return _fmix(_mix_h1(seed, _mix_k1(value & _MASK)), 4)


def hash_bytes(data: bytes, seed: int) -> int:
    """``Murmur3_x86_32.hashUnsafeBytes`` (unsigned 32 bits in, out)."""
    h1 = seed
    aligned = len(data) - len(data) % 4
    for i in range(0, aligned, 4):
        h1 = _mix_h1(h1, _mix_k1(int.from_bytes(data[i : i + 4], "little")))
    for b in data[aligned:]:
        h1 = _mix_h1(h1, _mix_k1((b - 256 if b > 127 else b) & _MASK))
    return _fmix(h1, len(data))


def spark_hash(values: Iterable[str | int | None]) -> int:
    """SQL ``hash(v1, v2, …)`` of strings, ints (Spark's ``IntegerType``: -2**31 .. 2**31-1) and nulls, as
    Spark's signed 32-bit int.  Any other type is refused (``TypeError``)."""
    h = SEED
    for v in values:
        if v is None:
            continue
        if isinstance(v, str):
            h = hash_bytes(v.encode("utf-8"), h)
        elif isinstance(v, int) and not isinstance(v, bool) and -(2**31) <= v < 2**31:
            h = hash_int(v, h)
        else:
            raise TypeError(f"spark_hash: {v!r} is neither a str, a 32-bit int nor None")
    return h - 2**32 if h >= 2**31 else h


def partition(values: Iterable[str | int | None], partitions: int) -> int:
    """The shuffle partition Spark puts the key ``values`` on: ``pmod(hash(values), partitions)``."""
    return spark_hash(values) % partitions
