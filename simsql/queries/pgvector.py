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

import threading
import time
import weakref
from collections.abc import Hashable
from typing import Any, cast

import numpy as np
from sqlalchemy import Select, bindparam
from sqlalchemy.engine import Connection, Engine, Row
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import instance_dict
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
_RANKED: weakref.WeakKeyDictionary[Binding, dict[Hashable, Select[Any]]] = weakref.WeakKeyDictionary()
_RANKED_LOCK = threading.Lock()

RANKED_KEPT = 64
"""Ranked statements :func:`pgvector_ranked` keeps per table (the oldest goes first)."""

SKIPPED_KEYS = "simsql_skipped_keys"
"""The expanding parameter a kept ranked statement takes the keys it leaves out in."""


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
    facts: VectorIndexFacts, *, exact: bool, ef_search: int | None, columns: bool = False,
) -> list[tuple[Any, float, int | None]]:  # fmt: skip
    """``(row, cosine, distance)`` of the top ``limit`` rows of ``stmt`` by pgvector's ``<=>``.

    Through the HNSW index (approximate; ``ef_search`` set for the transaction), the cosine is
    pgvector's own (``1 - <=>``, computed in float32), so the stored vectors are not decoded in
    Python and a deferred vector column stays deferred. With ``exact``, a scan the index cannot
    serve (``<=> + 0``), then the float64 cosines of the stored vectors, re-ranked. The
    distance is the row's stored 64-bit signature's to the target's (None while it has none).

    ``columns``: ``stmt`` selects columns (``select(Doc.id, Doc.title)``), and each row is a
    plain ``Row`` of those columns, executed on the session's connection without the ORM
    (:func:`_column_rows`); its distance is None (no signature is read)."""
    connection = connection_of(session)
    server = backend(connection).vector_index
    if exact:
        found = _exact_ranked(session, binding, server, facts, stmt, query, limit, skipped, columns)
    else:
        ranked, params = _ranked_statement(binding, server, facts, stmt, limit, skipped)
        if ef_search is not None:
            _set_ef_search(connection, server, ef_search)
        params[QUERY_VECTOR] = query
        if columns:
            rows, hidden = _column_rows(session, ranked, params, 1)
            return [(row, 1.0 - float(extra[-1]), None) for row, extra in zip(rows, hidden)]
        found = [(row[0], 1.0 - float(row[-1])) for row in session.execute(ranked, params).all()]
    found = found[:limit]
    if columns:
        return [(row, cosine, None) for row, cosine in found]
    stored = [_stored_signature(binding, row) for row, _ in found]
    if not any(s is not None for s in stored):  # not signed when unused
        return [(row, cosine, None) for row, cosine in found]
    fingerprinter = binding.fingerprinter
    assert isinstance(fingerprinter, VectorFingerprinter)
    target = fingerprinter.fingerprint(query)
    return [(row, cosine, None if s is None else hamming(target, s)) for (row, cosine), s in zip(found, stored)]


def _exact_ranked(
    session: Session, binding: Binding, server: Any, facts: VectorIndexFacts, stmt: Select[Any], query: np.ndarray,
    limit: int, skipped: list[tuple[Any, ...]], columns: bool,
) -> list[tuple[Any, float]]:  # fmt: skip
    """Every row of ``stmt`` by ``<=> + 0`` (a scan), the first ``limit + EXACT_MARGIN``
    re-ranked by their float64 cosines: the exact top-``limit``. A statement of ``columns``
    also selects the keys and the vector (left out of the rows returned)."""
    fingerprinter = binding.fingerprinter
    assert isinstance(fingerprinter, VectorFingerprinter)
    vector_column = getattr(binding.model, binding.source[0])
    distance = _distance(binding, server, facts, vector_column, fingerprinter.dimensions)
    hidden = [*binding.keys, vector_column] if columns else []
    ranked = stmt.add_columns(*hidden, distance.label("simsql_cosine_distance")).where(vector_column.is_not(None)).order_by(None)
    leave_out = exclusion(binding, skipped)
    if leave_out is not None:
        ranked = ranked.where(leave_out)
    ranked = ranked.order_by(distance + 0, *binding.keys).limit(limit + EXACT_MARGIN)
    if columns:
        rows, extras = _column_rows(session, ranked, {QUERY_VECTOR: query}, len(hidden) + 1)
        width = len(binding.keys)
        found = [(row, tuple(extra[:width]), extra[width]) for row, extra in zip(rows, extras)]
    else:
        found = [(row[0], binding.key_of(row[0]), getattr(row[0], binding.source[0])) for row in session.execute(ranked, {QUERY_VECTOR: query}).all()]
    if not found:
        return []
    cosines = cosines_of(binding, [vector for _, _, vector in found], query)
    ranking = sorted(zip(found, cosines), key=lambda pair: (-float(pair[1]), pair[0][1]))
    return [(row, float(c)) for (row, _, _), c in ranking]


def _column_rows(session: Session, ranked: Select[Any], params: dict[str, Any], hidden: int) -> tuple[list[Row[Any]], list[tuple[Any, ...]]]:
    """The rows of ``ranked``, a statement of columns whose last ``hidden`` columns are simsql's:
    (each row without them, as plain ``Row`` objects; each row's ``hidden`` values). Executed on the session's
    connection, in its transaction, without the ORM (no instances, no identity map: what a
    statement of columns asks); pending changes are flushed first when the session autoflushes,
    as its own execution of the statement would."""
    if session.autoflush:
        session.flush()
    frozen = connection_of(session).execute(ranked, params).freeze()
    width = len(ranked.selected_columns) - hidden
    return cast("list[Row[Any]]", frozen().columns(*range(width)).all()), [row[width:] for row in frozen.data]


def _ranked_statement(
    binding: Binding, server: Any, facts: VectorIndexFacts, stmt: Select[Any], limit: int, skipped: list[tuple[Any, ...]]
) -> tuple[Select[Any], dict[str, Any]]:
    """``stmt`` ordered by ``<=>`` through the index, ``limit`` rows, the keys ``skipped`` left
    out, and the parameters it takes besides the target.

    Built once per table, server, statement, limit and whether keys are left out, and then
    reused (at most :data:`RANKED_KEPT` a table): SQLAlchemy keeps the cache key of a statement
    it has seen, so a reused one is neither built nor keyed again. ``stmt`` is known by its
    cache key *and the values it binds*, so two filters that differ only in a value are two
    statements; one SQLAlchemy cannot key (or whose values cannot be hashed, or are computed
    at execution) is built afresh each call. The keys left out are one expanding parameter."""
    single = len(binding.keys) == 1
    shape = _statement_shape(stmt) if single or not skipped else None
    kept = _RANKED.setdefault(binding, {})
    key = None if shape is None else (server.name, facts, shape, limit, bool(skipped))
    ranked = None if key is None else kept.get(key)
    if ranked is None:
        fingerprinter = binding.fingerprinter
        assert isinstance(fingerprinter, VectorFingerprinter)
        vector_column = getattr(binding.model, binding.source[0])
        distance = _distance(binding, server, facts, vector_column, fingerprinter.dimensions)
        ranked = stmt.add_columns(distance.label("simsql_cosine_distance")).where(vector_column.is_not(None)).order_by(None)
        if skipped and single:
            keys = binding.keys[0]
            ranked = ranked.where(keys.not_in(bindparam(SKIPPED_KEYS, expanding=True, type_=keys.type)))
        elif skipped:
            ranked = ranked.where(exclusion(binding, skipped))  # type: ignore[arg-type]
        ranked = ranked.order_by(distance).limit(limit)
        if key is not None:
            with _RANKED_LOCK:  # threads sharing a binding: the eviction sees a dict no other thread changes
                if len(kept) >= RANKED_KEPT:
                    kept.pop(next(iter(kept)))
                kept[key] = ranked
    return ranked, ({SKIPPED_KEYS: [k[0] for k in skipped]} if skipped and single else {})


def _statement_shape(stmt: Select[Any]) -> Hashable | None:
    """What tells ``stmt`` from another for :func:`_ranked_statement`: SQLAlchemy's cache key,
    the values of its parameters and its execution options, which the key leaves out (None:
    not keyed, values not hashable or computed)."""
    found = stmt._generate_cache_key()
    if found is None:
        return None
    values = []
    for parameter in found.bindparams:
        if parameter.callable is not None:
            return None
        values.append((type(parameter.value), parameter.value))
    shape = (found.key, tuple(values), tuple(sorted(stmt._execution_options.items())))
    try:
        hash(shape)
    except TypeError:
        return None
    return shape


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
    stored = instance_dict(row).get(binding.fingerprint.key) if binding.mode == "columns" else None
    return None if stored is None else int(stored) & 0xFFFFFFFFFFFFFFFF


__all__ = ["EXACT_MARGIN", "FACTS_SECONDS", "RANKED_KEPT", "SKIPPED_KEYS", "forget_vector_index", "pgvector_ranked", "vector_index_facts"]
