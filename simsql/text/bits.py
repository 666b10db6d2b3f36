"""Arithmetic on 64-bit fingerprints: distances, the signed mapping, and blocks.

Fingerprints are unsigned Python ints in ``[0, 2**64)``. PostgreSQL has no unsigned 64-bit
type, so storage uses ``bigint`` with the two's-complement mapping of :func:`to_signed`; that
mapping preserves XOR and therefore every Hamming distance.
"""

from __future__ import annotations

import math

FINGERPRINT_BITS = 64
_MASK64 = (1 << 64) - 1
_SIGN64 = 1 << 63


def check_fingerprint(value: object, name: str = "fingerprint") -> int:
    """Return ``value`` if it is a valid unsigned 64-bit fingerprint, else raise.

    ``bool`` is refused even though it is an ``int``: ``True`` as a fingerprint is always a bug.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int in [0, 2**64), got {type(value).__name__}")
    if not 0 <= value <= _MASK64:
        raise ValueError(
            f"{name} must be an unsigned 64-bit int in [0, 2**64), got {value}; "
            "use simsql.text.bits.to_unsigned() for a signed bigint read from the database"
        )
    return value


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two fingerprints (0..64)."""
    return (check_fingerprint(a, "a") ^ check_fingerprint(b, "b")).bit_count()


def similarity(a: int, b: int) -> float:
    """``1 - hamming(a, b) / 64``: 1.0 for identical fingerprints, about 0.5 for unrelated text."""
    return 1.0 - hamming(a, b) / FINGERPRINT_BITS


def cosine_estimate(a: int, b: int) -> float:
    """Charikar's estimate of the cosine between the two weighted feature vectors.

    For random-hyperplane hashing, ``P[bit differs] = angle / pi``, so the angle is estimated
    by ``pi * d / 64`` and the cosine by its cosine.
    """
    return math.cos(math.pi * hamming(a, b) / FINGERPRINT_BITS)


def to_signed(value: int) -> int:
    """Map an unsigned fingerprint to the int64 stored in a PostgreSQL ``bigint``."""
    check_fingerprint(value, "value")
    return value - (1 << 64) if value & _SIGN64 else value


def to_unsigned(value: int) -> int:
    """Inverse of :func:`to_signed`: map a signed int64 back to the unsigned fingerprint."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"value must be an int in [-2**63, 2**63), got {type(value).__name__}")
    if not -_SIGN64 <= value < _SIGN64:
        raise ValueError(f"value must be a signed 64-bit int in [-2**63, 2**63), got {value}")
    return value & _MASK64


def blocks(fp: int, n: int = 4) -> tuple[int, ...]:
    """Split a fingerprint into ``n`` equal blocks, most significant first.

    With ``n`` blocks, two fingerprints within ``n - 1`` bits share at least one equal block
    (pigeonhole); the database index relies on this for ``n = 4`` (16-bit blocks, distance <= 3).
    """
    check_fingerprint(fp, "fp")
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0 or FINGERPRINT_BITS % n:
        raise ValueError(f"n must be a positive divisor of 64, got {n!r}")
    width = FINGERPRINT_BITS // n
    mask = (1 << width) - 1
    return tuple((fp >> (width * (n - 1 - i))) & mask for i in range(n))
