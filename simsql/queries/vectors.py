"""Rows by cosine to a vector: :func:`most_similar_vectors` (related by meaning) and
:func:`near_copy_vectors` (near copies, through the 256-bit probes).

One call, three rankers. Where the table has simsql's HNSW index, pgvector ranks
(:mod:`simsql.queries.pgvector`). Otherwise simsql's own two stages: candidates by signature (the
``candidates`` nearest by Hamming distance, :func:`~simsql.queries.most_similar`, or among the
probed partition lists), then those rows ordered by the exact cosine of their stored vectors, in
numpy. A 64-bit signature ranks an embedding's neighbours coarsely (one bit is about three
degrees, and the spread of the estimate is wider than the gap between a query's tenth neighbour
and its hundredth), so recall grows with ``candidates`` (BENCHMARKS.md). ``exact=True`` is a
scan (:mod:`simsql.queries.vectors_exact`, or ``<=>`` in the server).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Real
from typing import Any, Literal, NamedTuple

import numpy as np
from sqlalchemy import Select, select, tuple_
from sqlalchemy.orm import Session
from sqlalchemy.sql import ColumnElement

from ..dialects.vector_index import VectorIndexFacts
from ..store.awaiting import connection_of, off_loop
from ..store.lists import live_centres
from ..store.registry import current_schema
from ..store.storage import Binding, binding_for
from ..text.bits import hamming
from ..text.errors import UnsupportedDatabase
from ..text.lists import check_probes
from ..text.signature import WIDE_BITS
from ..text.vectors import VectorFingerprinter, vector_of, vectors_of
from .lists import list_column, vector_candidates
from .nearest import most_similar
from .pgvector import pgvector_ranked, vector_index_facts
from .targets import check_limit, exclude_keys, exclusion
from .vectors_exact import exact_ranking
from .wide import WIDE_BUDGET, wide_binding, wide_search

DEFAULT_CANDIDATES = 200
"""Rows fetched by signature and re-ranked by exact cosine when the caller does not say."""

NEAR_COPY_COSINE = 0.95
"""Default cosine from which :func:`near_copy_vectors` calls a row a near copy."""

NEAR_COPY_CANDIDATES = 50
"""Rows :func:`near_copy_vectors` takes from the 256-bit probes, nearest first, to check by cosine."""


class VectorMatch(NamedTuple):
    """A row found by :func:`most_similar_vectors` or :func:`near_copy_vectors`: its cosine to
    the target vector, and the Hamming distance of its signature (of 64 bits for the first, of
    the 256-bit signature for the second and for lists on a wide table). Where pgvector ranks,
    the cosine is pgvector's (float32) and the distance that of the row's stored signature, None
    while the row has none (pgvector finds rows no backfill signed yet)."""

    row: Any
    cosine: float
    distance: int | None


Ranker = Literal["pgvector", "lists", "signatures"]
"""What ranks a :func:`most_similar_vectors` query (``using``; None: chosen from the table)."""

RANKERS = ("pgvector", "lists", "signatures")


def most_similar_vectors(
    session: Session,
    stmt: Select[Any],
    target: object,
    limit: int = 10,
    candidates: int = DEFAULT_CANDIDATES,
    exclude: object = None,
    *,
    probe_radius: int = 0,
    exact: bool = False,
    probes: int | None = None,
    exact_candidates: bool = True,
    ef_search: int | None = None,
    using: Ranker | None = None,
) -> list[VectorMatch]:
    """The top-``limit`` rows of ``stmt`` by cosine to ``target``, highest first, as :class:`VectorMatch` (the cosine,
    float64; pgvector's float32 where it ranks; and the signatures' Hamming distance). One call on every server; what
    ranks depends on the table:

    - **pgvector** (``using="pgvector"``, chosen when ``using`` is None and the table has simsql's
      HNSW index, :func:`simsql.lifecycle.add_vector_index`): one statement, built once, ordered by
      ``<=>`` through the index; ``ef_search``: ``hnsw.ef_search`` for the rest of the session's
      transaction (``SET LOCAL``; None: as it is). Approximate as HNSW is; rows need no
      signature; ``candidates``, ``probes``, ``probe_radius``, ``exact_candidates`` unused.
    - **lists** (``probes=N`` on a table with partition lists, :mod:`simsql.lists`): the
      ``candidates`` rows nearest by signature (256 bits on a wide table, else 64) among the
      ``N`` lists whose centres are nearest ``target`` and the rows not yet placed, re-ranked
      by exact cosine. A neighbour in a list not probed is missed.
    - **signatures** (otherwise): the ``candidates`` rows nearest by 64-bit Hamming distance
      (:func:`~simsql.most_similar` with ``probe_radius`` and ``exact=exact_candidates``: whether
      those candidates are the exact Hamming top-``candidates``), re-ranked by exact cosine. A
      row outside the candidates is never returned, however close its vector.

    ``exact=True``: the exact cosine top-``limit`` whatever the table has: a scan of every row's vector (by ``<=>`` on
    the server where pgvector ranks, else read in batches and ranked in numpy). What is guaranteed otherwise: the rows
    returned are in exact cosine order among those the ranker considered; recall against the true top-``limit`` is
    measured in BENCHMARKS.md. Round trips: docs/vectors.md counts them per ranker.

    ``stmt``: ``select(Model)`` of a vector model, with any filters (no ``order_by``/``limit``); where pgvector ranks,
    also a statement of its columns (``select(Model.id, Model.title)``): each ``row`` a plain ``Row`` of them, read
    without the ORM, ``distance`` None. ``target``: a vector, or a row of the model (excluded; its stored vector is the
    target). ``TypeError`` for a text model or target, and for a statement of columns where simsql's lists or
    signatures rank; ``ValueError`` for ``candidates < limit``, a bad ``ef_search`` or ``using``, and a vector of
    another length, with NaN or infinity, or of zeros; ``UnsupportedDatabase`` for ``using="pgvector"`` where
    pgvector cannot rank the table (saying why)."""
    _check_counts(limit, candidates)
    _check_choices(exact, exact_candidates, ef_search, using, probes)
    binding, columns = vector_statement(stmt)
    query, skip = target_vector(binding, target)
    ranker = _ranker(session, binding, using, columns)
    if ranker is not None:
        skipped = exclude_keys(binding, exclude) + ([skip] if skip is not None else [])
        found = pgvector_ranked(session, binding, stmt, query, limit, skipped, ranker, exact=exact, ef_search=ef_search, columns=columns)
        return [VectorMatch(*m) for m in found]
    if exact:
        return _exactly(session, binding, stmt, query, limit, exclude, skip)
    if probes is not None:
        return _listed(session, binding, stmt, query, skip, exclude, limit, candidates, check_probes(probes))
    ranked = most_similar(stmt, target, limit=candidates, exclude=exclude, probe_radius=probe_radius, exact=exact_candidates)
    return _reranked(session, binding, stmt, ranked, query, limit, -math.inf, None)


def _check_choices(exact: object, exact_candidates: object, ef_search: object, using: object, probes: object) -> None:
    for name, value in (("exact", exact), ("exact_candidates", exact_candidates)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, got {value!r}")
    if ef_search is not None and (isinstance(ef_search, bool) or not isinstance(ef_search, int) or not 1 <= ef_search <= 1000):
        raise ValueError(f"ef_search must be an integer in [1, 1000] (pgvector's hnsw.ef_search) or None, got {ef_search!r}")
    if using is not None and using not in RANKERS:
        raise ValueError(f"using must be one of {', '.join(RANKERS)} or None, got {using!r}")
    if using == "lists" and probes is None:
        raise ValueError("using='lists' needs probes (the number of lists to read)")
    if probes is not None:
        check_probes(probes)  # before any statement: a bad value is refused without a round trip


def _ranker(session: Session, binding: Binding, using: Ranker | None, columns: bool) -> VectorIndexFacts | None:
    """pgvector's facts when pgvector ranks this query, else None (simsql's own paths, which
    refuse a statement of ``columns``: ``TypeError``, before any statement when ``using`` names them)."""
    if using in ("lists", "signatures"):
        facts = None
    else:
        facts = vector_index_facts(connection_of(session), binding)
        if not facts.ranks and using == "pgvector":  # read again before refusing: the index may be newer than what was kept
            facts = vector_index_facts(connection_of(session), binding, fresh=True)
            if not facts.ranks:
                raise UnsupportedDatabase(_why_not(binding, facts))
    if facts is not None and facts.ranks:
        return facts
    if columns:
        raise TypeError(_columns_refused(binding))
    return None


def _why_not(binding: Binding, facts: VectorIndexFacts) -> str:
    table = binding.registry_key[1]
    if facts.extension == "missing":
        return f"pgvector cannot rank {table}: the server has no pgvector (pass using=None for simsql's own ranking)"
    if facts.extension == "available":
        return f"pgvector cannot rank {table}: the extension is not created in this database (CREATE EXTENSION vector)"
    if facts.index_valid is None:
        return f"pgvector cannot rank {table}: it has no HNSW index of simsql's (simsql.lifecycle.add_vector_index)"
    return f"pgvector cannot rank {table}: its HNSW index {binding.names.vector_index} is invalid (an interrupted build: add it again)"


def _exactly(
    session: Session, binding: Binding, stmt: Select[Any], query: np.ndarray, limit: int, exclude: object,
    skip: tuple[Any, ...] | None,
) -> list[VectorMatch]:  # fmt: skip
    """The exact cosine top-``limit`` by a scan in numpy (:mod:`simsql.queries.vectors_exact`)."""
    skipped = {tuple(k) for k in exclude_keys(binding, exclude)} | ({skip} if skip is not None else set())
    best = exact_ranking(session, binding, stmt, query, limit, skipped)
    if not best:
        return []
    rows = {binding.key_of(row[0]): row[0] for row in session.execute(stmt.where(_key_in(binding.keys, [k for k, _ in best]))).all()}
    fingerprinter = binding.fingerprinter
    assert isinstance(fingerprinter, VectorFingerprinter)
    target = fingerprinter.fingerprint(query)
    what = f"{binding.model.__name__}.{binding.source[0]}"
    kept = [(rows[key], cosine) for key, cosine in best if key in rows]
    signed = fingerprinter.fingerprint_many(vectors_of([getattr(r, binding.source[0]) for r, _ in kept], what))
    return [VectorMatch(row, cosine, hamming(target, s)) for (row, cosine), s in zip(kept, signed)]


def _listed(
    session: Session, binding: Binding, stmt: Select[Any], query: np.ndarray, skip: tuple[Any, ...] | None, exclude: object,
    limit: int, candidates: int, probes: int,
) -> list[VectorMatch]:  # fmt: skip
    """The partition lists' candidates (:func:`simsql.queries.lists.vector_candidates`),
    re-ranked by exact cosine."""
    list_column(binding)
    schema, table = binding.registry_key
    connection = connection_of(session)
    centres = live_centres(connection, schema or current_schema(connection), table)
    lists = [value for generation in centres for value in generation.nearest(query, probes)]
    fingerprinter = binding.fingerprinter
    assert isinstance(fingerprinter, VectorFingerprinter)
    if binding.words:
        signature: list[int] = list(fingerprinter.signatures_many(query[None, :])[0].words)
    else:
        signature = [fingerprinter.fingerprint(query)]
    excluded = exclude_keys(binding, exclude)
    if excluded:
        stmt = stmt.where(exclusion(binding, excluded))  # type: ignore[arg-type]
    extra = (skip is not None) + len(excluded)
    ranked = vector_candidates(stmt, binding, signature, lists, candidates + extra, [g.generation for g in centres])
    excluded_keys = {tuple(k) for k in excluded}
    found = _reranked(session, binding, stmt, ranked, query, limit + extra, -math.inf, skip)
    return [m for m in found if binding.key_of(m.row) not in excluded_keys][:limit]


def near_copy_vectors(
    session: Session,
    stmt: Select[Any],
    target: object,
    limit: int = 10,
    min_cosine: float = NEAR_COPY_COSINE,
    *,
    candidates: int = NEAR_COPY_CANDIDATES,
    budget: int = WIDE_BUDGET,
    max_distance: int | None = None,
) -> list[VectorMatch]:
    """Near copies of ``target``: rows of ``stmt`` whose stored vector is at cosine
    ``min_cosine`` or more, highest cosine first (then 256-bit distance, then key), ``limit`` at
    most. The model must have the 256-bit signature (:class:`~simsql.WideSimHashMixin` with a
    :class:`~simsql.VectorFingerprinter`: the ORM writes its words).

    No scan: the ``candidates`` rows nearest by 256-bit distance (within ``max_distance`` bits)
    that the ``budget`` cheapest probes of the wide block indexes reach
    (:func:`simsql.queries.wide.wide_search`), then their exact cosines on the stored vectors.
    ``max_distance`` defaults to the distance a vector at ``min_cosine`` shows at most but once
    in tens of thousands (its expected distance ``256 * angle / pi`` plus four standard
    deviations, plus 4). ``target`` is a vector, or a row of the model (excluded, its stored
    vector the target). The filters of ``stmt`` apply to the candidates: a row filtered out does
    not make room for another.

    What is guaranteed: every row returned is at cosine >= ``min_cosine`` (exact); a row within
    7 of the 160 bits the blocks cover is always a candidate; farther ones are found when the
    probes flip the bits that differ (BENCHMARKS.md measures recall at cosine 0.95: 1.0 with
    512 probes at 1M rows). ``NotAttached`` without the wide signature; ``TypeError`` for a text
    model or target; ``ValueError`` for a bad vector (another length, NaN or infinity, zeros),
    ``min_cosine`` outside [-1, 1] or ``candidates < limit``.
    """
    _check_counts(limit, candidates)
    if isinstance(min_cosine, bool) or not isinstance(min_cosine, Real) or not -1.0 <= float(min_cosine) <= 1.0:
        raise ValueError(f"min_cosine must be a number in [-1, 1], got {min_cosine!r}")
    binding = vector_binding(stmt, "near_copy_vectors")
    wide_binding(binding.model)
    query, skip = target_vector(binding, target)
    fingerprinter = binding.fingerprinter
    assert isinstance(fingerprinter, VectorFingerprinter)
    signature = fingerprinter.signatures_many(query[None, :])[0]
    bound = near_copy_distance(float(min_cosine)) if max_distance is None else max_distance
    ranked = wide_search(binding.model, signature, bound, budget=budget, limit=candidates + (skip is not None))
    return _reranked(session, binding, stmt, ranked, query, limit, float(min_cosine), skip)


def near_copy_distance(min_cosine: float, bits: int = WIDE_BITS) -> int:
    """The bound on the ``bits``-bit distance of a vector at ``min_cosine``: the expected
    distance ``bits * angle / pi``, plus four standard deviations, plus 4 (at most ``bits``)."""
    share = math.acos(max(-1.0, min(1.0, min_cosine))) / math.pi
    return min(bits, math.ceil(bits * share + 4.0 * math.sqrt(bits * share * (1.0 - share)) + 4.0))


def _check_counts(limit: int, candidates: int) -> None:
    check_limit(limit)
    check_limit(candidates)
    if candidates < limit:
        raise ValueError(f"candidates must be at least limit ({limit}), got {candidates}")


def vector_binding(stmt: Select[Any], operation: str) -> Binding:
    """The vector model ``stmt`` selects from, for ``operation``, a query that needs rows of the
    model (it reads each row's vector): a statement of columns is refused."""
    binding, columns = vector_statement(stmt)
    if columns:
        model = binding.model.__name__
        raise TypeError(f"{operation} needs rows of the model (it reads each row's vector): pass select({model}), not a statement of columns")
    return binding


def vector_statement(stmt: Select[Any]) -> tuple[Binding, bool]:
    """The vector model ``stmt`` selects from, and whether it selects columns
    (``select(Doc.id, Doc.title)``: plain rows) rather than the model (``select(Doc)``)."""
    first = stmt.column_descriptions[0]
    binding = binding_for(first["entity"])
    if not isinstance(binding.fingerprinter, VectorFingerprinter):
        raise TypeError(f"{binding.model.__name__} is fingerprinted from text: it needs a vector model")
    return binding, first["expr"] is not first["entity"]


def _columns_refused(binding: Binding) -> str:
    model, table = binding.model.__name__, binding.registry_key[1]
    return (
        f"most_similar_vectors takes a statement of columns (select({model}.id, ...)) only where pgvector ranks {table} "
        f"(simsql.lifecycle.add_vector_index); simsql's lists and signatures return rows of the model: pass select({model}) "
        "(with .options(load_only(...)) to read fewer columns)"
    )


def target_vector(binding: Binding, target: object) -> tuple[np.ndarray, tuple[Any, ...] | None]:
    """The target as one checked float64 vector, and the key of the row it is (else None)."""
    fingerprinter = binding.fingerprinter
    assert isinstance(fingerprinter, VectorFingerprinter)
    skip = None
    if isinstance(target, binding.model):
        skip = binding.key_of(target)
        target = vector_of(getattr(target, binding.source[0]), f"{binding.model.__name__}.{binding.source[0]}")
    elif isinstance(target, str):
        raise TypeError(f"{binding.model.__name__} is fingerprinted from vectors: the target must be a vector or a row, not text")
    return fingerprinter.check(target)[0], skip


def _reranked(
    session: Session, binding: Binding, stmt: Select[Any], ranked: Select[Any], query: np.ndarray, limit: int,
    min_cosine: float, skip: tuple[Any, ...] | None,
) -> list[VectorMatch]:  # fmt: skip
    """The candidates of ``ranked`` (rows with a ``distance``) re-ranked by exact cosine: their
    keys, vectors and distances (no ORM rows: fetching is most of the cost), the best ``limit``
    at ``min_cosine`` or more (``skip`` left out), then those rows read through ``stmt``."""
    vector_column = getattr(binding.model, binding.source[0]).property.columns[0]
    candidate = ranked.subquery("simsql_candidates")
    keys = [candidate.c[key.key] for key in binding.keys]
    found = session.execute(
        select(*keys, candidate.c[vector_column.key], candidate.c.distance).order_by(candidate.c.distance, *keys)
    ).all()
    found = [row for row in found if skip is None or tuple(row[: len(keys)]) != skip]
    if not found:
        return []
    order, cosines = off_loop(lambda: _cosine_order(binding, found, query, limit, min_cosine))
    if not order:
        return []
    width = len(binding.keys)
    best = [tuple(found[i][:width]) for i in order]
    rows = {binding.key_of(row[0]): row[0] for row in session.execute(stmt.where(_key_in(binding.keys, best))).all()}
    return [VectorMatch(rows[key], float(cosines[i]), int(found[i][width + 1])) for key, i in zip(best, order) if key in rows]


def _cosine_order(
    binding: Binding, found: list[Any], query: np.ndarray, limit: int, min_cosine: float
) -> tuple[list[int], np.ndarray]:
    """Indexes of the best ``limit`` candidates by cosine (then distance, then their order), at
    ``min_cosine`` or more, and every candidate's cosine."""
    fingerprinter = binding.fingerprinter
    assert isinstance(fingerprinter, VectorFingerprinter)
    width = len(binding.keys)
    what = f"{binding.model.__name__}.{binding.source[0]}"
    stored = fingerprinter.check(vectors_of([row[width] for row in found], what))
    cosines = (stored @ query) / (np.linalg.norm(stored, axis=1) * float(np.linalg.norm(query)))
    order = np.lexsort((np.array([row[width + 1] for row in found]), -cosines))
    return [int(i) for i in order if cosines[i] >= min_cosine][:limit], cosines


def _key_in(keys: Sequence[Any], values: list[tuple[Any, ...]]) -> ColumnElement[bool]:
    """``key IN (values)``, a row value comparison for a composite key."""
    if len(keys) == 1:
        return keys[0].in_([value[0] for value in values])
    return tuple_(*keys).in_(values)
