"""Ranking by pgvector where it runs: ``most_similar_vectors`` on a table with simsql's HNSW
index (:func:`simsql.lifecycle.add_vector_index`) orders ``stmt`` by pgvector's cosine distance
``<=>`` in one statement, so the rows come back ranked by the server and no signature is read.

Whether a table is ranked this way is read from the catalog (:func:`vector_index_facts`: the
extension, the column's type, simsql's index and whether it is valid) and kept per engine for
:data:`FACTS_SECONDS`; simsql's own add and drop forget it at once. An index dropped by another
process meanwhile leaves a query correct (the same ``<=>`` order, by a scan) until the facts are
read again.
"""

from __future__ import annotations

import time
import weakref
from typing import Any

import numpy as np
from sqlalchemy import Select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session

from ..dialects import backend
from ..dialects.vector_index import VectorIndexFacts
from ..store.awaiting import connection_of
from ..store.registry import current_schema
from ..store.storage import Binding
from ..text.bits import hamming
from ..text.vectors import VectorFingerprinter, vector_of
from .targets import exclusion

FACTS_SECONDS = 30.0
"""How long a query trusts what it read of a table's pgvector index before reading it again."""

EXACT_MARGIN = 10
"""Rows past ``limit`` the exact ``<=>`` scan returns, re-ranked in float64 (pgvector computes in
float32, so two rows a rounding apart may trade places at the cut)."""

_FACTS: weakref.WeakKeyDictionary[Engine, dict[tuple[str | None, str], tuple[float, VectorIndexFacts]]] = weakref.WeakKeyDictionary()


def vector_index_facts(connection: Connection, binding: Binding, *, fresh: bool = False) -> VectorIndexFacts:
    """What the server says about pgvector for ``binding``'s table (cached per engine for
    :data:`FACTS_SECONDS`; ``fresh``: read now)."""
    schema, table = binding.registry_key
    cached = _FACTS.setdefault(connection.engine, {})
    found = cached.get((schema, table))
    if found is not None and not fresh and time.monotonic() - found[0] < FACTS_SECONDS:
        return found[1]
    facts = backend(connection).vector_index.facts(
        connection, schema or current_schema(connection), table, binding.source[0], binding.names.vector_index
    )
    cached[(schema, table)] = (time.monotonic(), facts)
    return facts


def forget_vector_index(schema: str | None, table: str) -> None:
    """Forget what every engine read of ``table``'s pgvector index (after simsql adds or drops it)."""
    for cached in list(_FACTS.values()):
        for key in [k for k in cached if k[1] == table and (schema is None or k[0] in (None, schema))]:
            cached.pop(key, None)


def pgvector_ranked(
    session: Session, binding: Binding, stmt: Select[Any], query: np.ndarray, limit: int, skipped: list[tuple[Any, ...]],
    facts: VectorIndexFacts, *, exact: bool, ef_search: int | None,
) -> list[tuple[Any, float, int]]:  # fmt: skip
    """``(row, cosine, distance)`` of the top ``limit`` rows of ``stmt`` by pgvector's ``<=>``:
    through the HNSW index (approximate, ``ef_search`` set for the transaction), or with
    ``exact`` by a scan the index cannot serve (``<=> + 0``, then re-ranked in float64). The
    cosine is numpy's of the stored vector, the distance the 64-bit signatures'."""
    connection = connection_of(session)
    server = backend(connection).vector_index
    fingerprinter = binding.fingerprinter
    assert isinstance(fingerprinter, VectorFingerprinter)
    vector_column = getattr(binding.model, binding.source[0])
    distance = server.distance(facts, server.indexed(facts, vector_column, fingerprinter.dimensions), query.tolist(), fingerprinter.dimensions)
    ranked = stmt.add_columns(distance.label("simsql_cosine_distance")).where(vector_column.is_not(None)).order_by(None)
    leave_out = exclusion(binding, skipped)
    if leave_out is not None:
        ranked = ranked.where(leave_out)
    if exact:
        ranked = ranked.order_by(distance + 0, *binding.keys).limit(limit + EXACT_MARGIN)
    else:
        ranked = ranked.order_by(distance).limit(limit)
        if ef_search is not None:
            server.set_ef_search(connection, ef_search)
    rows = [row[0] for row in session.execute(ranked).all()]
    if not rows:
        return []
    what = f"{binding.model.__name__}.{binding.source[0]}"
    stored = fingerprinter.check(np.stack([np.asarray(vector_of(getattr(row, binding.source[0]), what), dtype=np.float64) for row in rows]))
    cosines = (stored @ query) / (np.linalg.norm(stored, axis=1) * float(np.linalg.norm(query)))
    order = list(range(len(rows)))
    if exact:  # float64 cosines, ties by key: the same order as the portable scan
        order.sort(key=lambda i: (-float(cosines[i]), binding.key_of(rows[i])))
    order = order[:limit]
    target = fingerprinter.fingerprint(query)
    signed = fingerprinter.fingerprint_many(stored[order])
    return [(rows[i], float(cosines[i]), hamming(target, s)) for i, s in zip(order, signed)]


__all__ = ["EXACT_MARGIN", "FACTS_SECONDS", "forget_vector_index", "pgvector_ranked", "vector_index_facts"]
