"""The exact cosine top-``limit`` on any server: every row's stored vector read and ranked in
numpy (:func:`exact_ranking`), what ``most_similar_vectors(..., exact=True)`` does where pgvector
does not rank (MySQL/MariaDB, PostgreSQL without the extension or without simsql's HNSW index).

A scan by design: the answer is checked against nothing else, so it is the reference the
approximate paths are measured against. Rows are read in batches of :data:`SCAN_BATCH` (one
statement, streamed), each batch ranked with one matrix product, and only the best ``limit``
kept; a row with a NULL vector is never a match.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy import Select
from sqlalchemy.orm import Session

from ..store.awaiting import off_loop
from ..store.storage import Binding
from ..text.vectors import VectorFingerprinter, vectors_of

SCAN_BATCH = 5000
"""Rows read and ranked at a time by the exact scan."""


def exact_ranking(
    session: Session, binding: Binding, stmt: Select[Any], query: np.ndarray, limit: int, skipped: set[tuple[Any, ...]]
) -> list[tuple[tuple[Any, ...], float]]:
    """``(key, cosine)`` of the ``limit`` rows of ``stmt`` whose stored vectors are nearest
    ``query`` by cosine, highest first (ties: the key order), leaving out the keys ``skipped``."""
    vector_column = getattr(binding.model, binding.source[0])
    width = len(binding.keys)
    scan = stmt.with_only_columns(*binding.keys, vector_column).where(vector_column.is_not(None)).order_by(None)
    best: list[tuple[tuple[Any, ...], float]] = []
    result = session.execute(scan.execution_options(yield_per=SCAN_BATCH))
    for batch in result.partitions():
        rows = [row for row in batch if tuple(row[:width]) not in skipped]
        if rows:
            best = off_loop(_kept, binding, rows, query, limit, best)
    return best


def _kept(
    binding: Binding, rows: list[Any], query: np.ndarray, limit: int, best: list[tuple[tuple[Any, ...], float]]
) -> list[tuple[tuple[Any, ...], float]]:
    """The best ``limit`` of ``best`` and the batch ``rows`` by cosine (then key)."""
    width = len(binding.keys)
    cosines = cosines_of(binding, [row[width] for row in rows], query)
    merged = best + [(tuple(row[:width]), float(c)) for row, c in zip(rows, cosines)]
    merged.sort(key=lambda pair: (-pair[1], pair[0]))
    return merged[:limit]


def cosines_of(binding: Binding, stored: list[Any], query: np.ndarray) -> np.ndarray:
    """The cosines of the stored vectors ``stored`` (as the driver returns them) to ``query``;
    a stored vector of another length, NaN or zeros raises ``ValueError`` naming the column."""
    fingerprinter = binding.fingerprinter
    assert isinstance(fingerprinter, VectorFingerprinter)
    what = f"{binding.model.__name__}.{binding.source[0]}"
    vectors = fingerprinter.check(vectors_of(stored, what))
    return (vectors @ query) / (np.linalg.norm(vectors, axis=1) * float(np.linalg.norm(query)))


__all__ = ["SCAN_BATCH", "cosines_of", "exact_ranking"]
