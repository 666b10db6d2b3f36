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
from sqlalchemy import Select, inspect
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session
from sqlalchemy.sql import ColumnElement

from ..dialects import backend
from ..dialects.vector_index import QUERY_VECTOR, VectorIndexFacts
from ..store.awaiting import connection_of
from ..store.registry import current_schema
from ..store.storage import Binding
from ..text.bits import hamming
from ..text.vectors import VectorFingerprinter
from .targets import exclusion
from .vectors_exact import cosines_of

FACTS_SECONDS = 30.0
"""How long a query trusts what it read of a table's pgvector index before reading it again."""

EXACT_MARGIN = 10
"""Rows past ``limit`` the exact ``<=>`` scan returns, re-ranked in float64 (pgvector computes in
float32, so two rows a rounding apart may trade places at the cut)."""

_FACTS: weakref.WeakKeyDictionary[Engine, dict[tuple[str | None, str], tuple[float, VectorIndexFacts]]] = weakref.WeakKeyDictionary()
_DISTANCES: weakref.WeakKeyDictionary[Binding, dict[tuple[str, VectorIndexFacts], ColumnElement[float]]] = weakref.WeakKeyDictionary()


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
) -> list[tuple[Any, float, int | None]]:  # fmt: skip
    """``(row, cosine, distance)`` of the top ``limit`` rows of ``stmt`` by pgvector's ``<=>``.

    Through the HNSW index (approximate; ``ef_search`` set for the transaction), the cosine is
    pgvector's own (``1 - <=>``, computed in float32), so the stored vectors are not decoded in
    Python and a deferred vector column stays deferred. With ``exact``, a scan the index cannot
    serve (``<=> + 0``), then the float64 cosines of the stored vectors, re-ranked. The
    distance is the row's stored 64-bit signature's to the target's (None while it has none)."""
    connection = connection_of(session)
    server = backend(connection).vector_index
    fingerprinter = binding.fingerprinter
    assert isinstance(fingerprinter, VectorFingerprinter)
    vector_column = getattr(binding.model, binding.source[0])
    distance = _distance(binding, server, facts, vector_column, fingerprinter.dimensions)
    ranked = stmt.add_columns(distance.label("simsql_cosine_distance")).where(vector_column.is_not(None)).order_by(None)
    leave_out = exclusion(binding, skipped)
    if leave_out is not None:
        ranked = ranked.where(leave_out)
    if exact:
        ranked = ranked.order_by(distance + 0, *binding.keys).limit(limit + EXACT_MARGIN)
    else:
        ranked = ranked.order_by(distance).limit(limit)
        if ef_search is not None:
            _set_ef_search(connection, server, ef_search)
    found = [(row[0], 1.0 - float(row[-1])) for row in session.execute(ranked, {QUERY_VECTOR: query}).all()]
    if exact and found:
        cosines = cosines_of(binding, [getattr(row, binding.source[0]) for row, _ in found], query)
        found = sorted(((row, float(c)) for (row, _), c in zip(found, cosines)), key=lambda pair: (-pair[1], binding.key_of(pair[0])))
    stored = [_stored_signature(binding, row) for row, _ in found[:limit]]
    target = fingerprinter.fingerprint(query) if any(s is not None for s in stored) else 0  # not signed when unused
    return [(row, cosine, None if s is None else hamming(target, s)) for (row, cosine), s in zip(found, stored)]


def _distance(binding: Binding, server: Any, facts: VectorIndexFacts, vector_column: Any, dimensions: int) -> ColumnElement[float]:
    """pgvector's ``<=>`` of ``binding``'s indexed vector to the target (bound per execution as
    :data:`~simsql.dialects.vector_index.QUERY_VECTOR`), built once per table, server and facts:
    a query then only adds it to the caller's statement."""
    kept = _DISTANCES.setdefault(binding, {})
    found = kept.get((server.name, facts))
    if found is None:
        found = kept[(server.name, facts)] = server.distance(facts, server.indexed(facts, vector_column, dimensions), dimensions)
    return found


def _set_ef_search(connection: Connection, server: Any, ef_search: int) -> None:
    """``hnsw.ef_search`` for the current transaction (``SET LOCAL``), sent once per transaction
    (and savepoint) and value: the next query of the same transaction with the same setting
    skips the round trip."""
    transaction = connection.get_nested_transaction() or connection.get_transaction()
    done = connection.info.get("simsql_ef_search")
    if done is not None and done[0]() is transaction and transaction is not None and done[1] == ef_search:
        return
    server.set_ef_search(connection, ef_search)
    if transaction is not None:
        connection.info["simsql_ef_search"] = (weakref.ref(transaction), ef_search)


def _stored_signature(binding: Binding, row: Any) -> int | None:
    """``row``'s stored 64-bit signature, unsigned (None: not stored, or not loaded)."""
    stored = inspect(row).dict.get(binding.fingerprint.key) if binding.mode == "columns" else None
    return None if stored is None else int(stored) & 0xFFFFFFFFFFFFFFFF


__all__ = ["EXACT_MARGIN", "FACTS_SECONDS", "forget_vector_index", "pgvector_ranked", "vector_index_facts"]
