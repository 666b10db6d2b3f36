"""Related articles that are not copies: :func:`related_vectors`.

A syndicated story (one text republished with a new headline, a wire story on ten sites) has
embeddings a few degrees apart, so the plain top-10 by cosine (:func:`most_similar_vectors`) can
be one story ten times, and the reader's own article's copies come first. Here the ranked rows
are grouped into stories: two rows are one story when their stored signatures are within the
near-copy bound of ``copy_cosine`` (:func:`~simsql.queries.vectors.near_copy_distance`: 256 bits
on a wide table, else 64) and their stored vectors are at cosine ``copy_cosine`` or more, the
rule :func:`near_copy_vectors` applies (the signature finds, the cosine confirms). Copies of the
target are left out; each story is listed once, at its member nearest the target, with its
other members as ``copies``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from sqlalchemy import Select, inspect
from sqlalchemy.orm import Session

from ..store.storage import Binding
from ..text.vectors import VectorFingerprinter, vectors_of
from .targets import check_limit
from .vectors import (
    DEFAULT_CANDIDATES,
    NEAR_COPY_COSINE,
    Ranker,
    VectorMatch,
    most_similar_vectors,
    near_copy_distance,
    target_vector,
    vector_binding,
)

POOL_FACTOR = 4
"""Rows ranked per story asked at first (``limit * POOL_FACTOR``); doubled while stories are short."""
MAX_POOL_FACTOR = 32
"""The pool stops growing at ``limit * MAX_POOL_FACTOR`` rows (a story copied more often than that fills it)."""


class RelatedMatch(NamedTuple):
    """One story of :func:`related_vectors`: its member nearest the target (``row``, ``cosine``,
    ``distance`` as in :class:`~simsql.VectorMatch`) and the other members found (``copies``,
    nearest first)."""

    row: Any
    cosine: float
    distance: int | None
    copies: tuple[VectorMatch, ...]


def related_vectors(
    session: Session,
    stmt: Select[Any],
    target: object,
    limit: int = 10,
    *,
    copy_cosine: float = NEAR_COPY_COSINE,
    candidates: int = DEFAULT_CANDIDATES,
    probes: int | None = None,
    ef_search: int | None = None,
    using: Ranker | None = None,
) -> list[RelatedMatch]:
    """The ``limit`` stories of ``stmt`` nearest ``target`` by cosine, each a group of near
    copies listed once (module docstring), copies of ``target`` left out.

    The rows come from :func:`most_similar_vectors` (``candidates``, ``probes``, ``ef_search``
    and ``using`` are its own), ``limit * 4`` of them at first, twice as many while fewer than
    ``limit`` stories are found and the pool was full (up to ``limit * 32``); so its recall is
    that of its ranker. Where pgvector ranks and ``ef_search`` is None, ``ef_search`` is twice the
    pool, at least 100 (an HNSW scan returns at most ``ef_search`` rows, the best of them first). ``target``: a vector, or a row of the
    model (excluded, and its copies with it). ``ValueError`` for ``copy_cosine`` outside
    (0, 1]; otherwise what :func:`most_similar_vectors` refuses.
    """
    check_limit(limit)
    if isinstance(copy_cosine, bool) or not isinstance(copy_cosine, (int, float)) or not 0.0 < float(copy_cosine) <= 1.0:
        raise ValueError(f"copy_cosine must be a number in (0, 1], got {copy_cosine!r}")
    binding = vector_binding(stmt, "related_vectors")
    query, _ = target_vector(binding, target)
    pool = limit * POOL_FACTOR
    while True:
        found = most_similar_vectors(
            session, stmt, target, limit=pool, candidates=max(candidates, pool), probes=probes, using=using,
            ef_search=ef_search if ef_search is not None or using in ("lists", "signatures") else min(max(2 * pool, 100), 1000),
        )  # fmt: skip
        stories = group_copies(binding, query, found, float(copy_cosine))
        if len(stories) >= limit or len(found) < pool or pool >= limit * MAX_POOL_FACTOR:
            return stories[:limit]
        pool = min(pool * 2, limit * MAX_POOL_FACTOR, 1000)


def group_copies(binding: Binding, query: np.ndarray, found: list[VectorMatch], copy_cosine: float) -> list[RelatedMatch]:
    """``found`` (ranked) grouped into stories, copies of ``query`` left out: a row joins the
    first story holding a row it is a near copy of (signature within the bound, then cosine)."""
    if not found:
        return []
    vectors = _unit(binding, [match.row for match in found])
    target = query / float(np.linalg.norm(query))
    words = _signatures(binding, [match.row for match in found], vectors)
    fingerprinter = binding.fingerprinter
    assert isinstance(fingerprinter, VectorFingerprinter)
    target_words = _words(fingerprinter, target, bool(binding.words))
    bound = near_copy_distance(copy_cosine, 64 * len(target_words))
    stories: list[list[int]] = []
    for i in range(len(found)):
        if _copies(words[i], target_words, bound) and float(vectors[i] @ target) >= copy_cosine:
            continue
        home = next((s for s in stories if any(_copies(words[i], words[j], bound) and float(vectors[i] @ vectors[j]) >= copy_cosine for j in s)), None)
        if home is None:
            stories.append([i])
        else:
            home.append(i)
    return [RelatedMatch(*found[s[0]], tuple(found[j] for j in s[1:])) for s in stories]


def _copies(a: tuple[int, ...], b: tuple[int, ...], bound: int) -> bool:
    return sum(bin(x ^ y).count("1") for x, y in zip(a, b)) <= bound


def _unit(binding: Binding, rows: list[Any]) -> np.ndarray:
    what = f"{binding.model.__name__}.{binding.source[0]}"
    fingerprinter = binding.fingerprinter
    assert isinstance(fingerprinter, VectorFingerprinter)
    stored = fingerprinter.check(vectors_of([getattr(row, binding.source[0]) for row in rows], what))
    return stored / np.linalg.norm(stored, axis=1, keepdims=True)


def _words(fingerprinter: VectorFingerprinter, vector: np.ndarray, wide: bool) -> tuple[int, ...]:
    if wide:
        return tuple(fingerprinter.signatures_many(vector[None, :])[0].words)
    return (fingerprinter.fingerprint(vector),)


def _signatures(binding: Binding, rows: list[Any], vectors: np.ndarray) -> list[tuple[int, ...]]:
    """Each row's stored signature (its 256 bits on a wide table), unsigned; computed from its
    vector where the row has none stored yet (written without the ORM, not yet backfilled)."""
    fingerprinter = binding.fingerprinter
    assert isinstance(fingerprinter, VectorFingerprinter)
    columns = list(binding.words or (binding.fingerprint,)) if binding.mode == "columns" else []  # words: all four, word 0 first
    found = []
    for row, vector in zip(rows, vectors):
        state = inspect(row).dict
        stored = [state.get(column.key) for column in columns]
        if columns and all(value is not None for value in stored):
            found.append(tuple(int(v) & 0xFFFFFFFFFFFFFFFF for v in stored))
        else:
            found.append(_words(fingerprinter, vector, bool(binding.words)))
    return found


__all__ = ["MAX_POOL_FACTOR", "POOL_FACTOR", "RelatedMatch", "group_copies", "related_vectors"]
