"""The answers of whole-table deduplication: pairs of rows (:class:`DuplicatePair` for the 64-bit
rule, :class:`ConfirmedPair` for the wide signature confirmed by text) and their connected
groups (:func:`groups_of`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple


class DuplicatePair(NamedTuple):
    """Two rows whose fingerprints are within the threshold; keys are primary-key values
    (a tuple for composite keys), ``a < b``."""

    a: Any
    b: Any
    distance: int


class ConfirmedPair(DuplicatePair):
    """Two rows of a wide table whose texts are near-duplicates: keys (a tuple for composite
    keys, ``a < b``), the Hamming distance of their 256-bit signatures, and ``containment``, the
    larger share of one text's words lying in word 5-shingles of the other (``>= min_containment``).

    A :class:`~simsql.queries.DuplicatePair` (``a, b, distance = pair`` unpacks it, and it
    compares as that triple) with ``containment`` beside, so code written for the 64-bit rule
    reads it unchanged."""

    containment: float

    def __new__(cls, a: Any, b: Any, distance: int, containment: float) -> ConfirmedPair:
        pair = super().__new__(cls, a, b, distance)
        pair.containment = containment
        return pair

    def __getnewargs__(self) -> tuple[Any, Any, int, float]:  # type: ignore[override]
        return (self.a, self.b, self.distance, self.containment)

    def __repr__(self) -> str:
        return f"ConfirmedPair(a={self.a!r}, b={self.b!r}, distance={self.distance!r}, containment={self.containment!r})"


def groups_of(pairs: Sequence[DuplicatePair]) -> list[list[Any]]:
    """The connected clusters of ``pairs`` (union-find), each sorted, largest first."""
    parent: dict[Any, Any] = {}

    def find(x: Any) -> Any:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for pair in pairs:
        ra, rb = find(pair.a), find(pair.b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[Any, list[Any]] = {}
    for key in parent:
        groups.setdefault(find(key), []).append(key)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: (-len(g), g[0]))
