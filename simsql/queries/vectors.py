"""The top rows by exact cosine, found through the vector signature: :func:`most_similar_vectors`.

A 64-bit signature ranks an embedding's neighbours coarsely (one bit of Hamming distance is
about three degrees of angle, and the spread of the estimate is wider than the gap between a
query's tenth neighbour and its hundredth), so "related by meaning" takes two stages: the
``candidates`` nearest rows by Hamming distance (:func:`~simsql.queries.most_similar`, the
block indexes then the scan), then those rows ordered by the exact cosine of their stored
vectors, in numpy. More candidates, more recall, more rows read: BENCHMARKS.md measures recall@10
against ``candidates``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from sqlalchemy import Select, select, tuple_
from sqlalchemy.sql import ColumnElement
from sqlalchemy.orm import Session

from ..storage import binding_for
from ..vectors import VectorFingerprinter, vector_of
from .nearest import most_similar
from .targets import check_limit

DEFAULT_CANDIDATES = 200
"""Rows fetched by signature and re-ranked by exact cosine when the caller does not say."""


class VectorMatch(NamedTuple):
    """A row found by :func:`most_similar_vectors`: its exact cosine to the target vector, and
    the Hamming distance of its signature (bits) that made it a candidate."""

    row: Any
    cosine: float
    distance: int


def most_similar_vectors(
    session: Session,
    stmt: Select[Any],
    target: object,
    limit: int = 10,
    candidates: int = DEFAULT_CANDIDATES,
    exclude: object = None,
    *,
    probe_radius: int = 0,
    exact: bool = True,
) -> list[VectorMatch]:
    """The top-``limit`` rows of ``stmt`` by exact cosine to ``target``, among the ``candidates``
    nearest by signature; ordered by cosine (highest first), then distance, then the order of the
    candidates (primary key on ties).

    ``stmt`` is ``select(Model)`` of a model signed by a :class:`~simsql.VectorFingerprinter`,
    with any filters (no ``order_by``/``limit``). ``target`` is a vector (list or numpy array)
    or a row of the model (excluded, and its stored vector is the target). ``exclude``,
    ``probe_radius`` and ``exact`` are :func:`~simsql.most_similar`'s; ``probe_radius=0`` (band 0,
    then the scan) suits embeddings, whose neighbours are rarely within a few bits.

    Two round trips: the candidates' keys, vectors and distances, then the ``limit`` rows
    chosen, read through ``stmt`` (its options apply). What is guaranteed: the answer is the
    exact cosine order of the candidates; a row outside the ``candidates`` nearest by signature
    is never returned, however close its vector, so recall against the true cosine
    top-``limit`` grows with ``candidates`` (BENCHMARKS.md).
    ``TypeError`` for a text model or target; ``ValueError`` for ``candidates < limit``.
    """
    check_limit(limit)
    check_limit(candidates)
    if candidates < limit:
        raise ValueError(f"candidates must be at least limit ({limit}), got {candidates}")
    ranked = most_similar(stmt, target, limit=candidates, exclude=exclude, probe_radius=probe_radius, exact=exact)
    binding = binding_for(stmt.column_descriptions[0]["entity"])
    fingerprinter = binding.fingerprinter
    if not isinstance(fingerprinter, VectorFingerprinter):
        raise TypeError(f"{binding.model.__name__} is fingerprinted from text: most_similar_vectors() needs a vector model")
    what = f"{binding.model.__name__}.{binding.source[0]}"
    vector_column = getattr(binding.model, binding.source[0]).property.columns[0]
    if isinstance(target, binding.model):
        target = vector_of(getattr(target, binding.source[0]), what)
    query = fingerprinter.check(target)[0]
    # the candidates' keys, vectors and distances only (no ORM rows): fetching is most of the cost
    candidate = ranked.subquery("simsql_candidates")
    keys = [candidate.c[key.key] for key in binding.keys]
    found = session.execute(
        select(*keys, candidate.c[vector_column.key], candidate.c.distance).order_by(candidate.c.distance, *keys)
    ).all()
    if not found:
        return []
    width = len(binding.keys)
    stored = fingerprinter.check(np.stack([np.asarray(vector_of(row[width], what), dtype=np.float64) for row in found]))
    cosines = (stored @ query) / (np.linalg.norm(stored, axis=1) * float(np.linalg.norm(query)))
    order = np.lexsort((np.array([row[width + 1] for row in found]), -cosines))[:limit]
    best = [tuple(found[i][:width]) for i in order]
    rows = {binding.key_of(row): row for row in session.scalars(stmt.where(_key_in(binding.keys, best)))}
    return [VectorMatch(rows[key], float(cosines[i]), int(found[i][width + 1])) for key, i in zip(best, order) if key in rows]


def _key_in(keys: Sequence[Any], values: list[tuple[Any, ...]]) -> ColumnElement[bool]:
    """``key IN (values)``, a row value comparison for a composite key."""
    if len(keys) == 1:
        return keys[0].in_([value[0] for value in values])
    return tuple_(*keys).in_(values)
