"""Rows near a target: :func:`similar_to` (a filter) and :func:`most_similar` (a ranking).

Both take the caller's model or ``select()`` and give back SQLAlchemy constructs to compose with
the caller's own filters; they check their arguments and resolve the target here, and leave the
choice of which rows to read to :mod:`simsql.queries.planner`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Select, select
from sqlalchemy.sql import ColumnElement

from ..store import statement_checks
from ..store.storage import binding_for
from ..text.lists import check_probes, recall_percent
from .lists import Chosen, text_statement
from .plan_size import ListedPlan, sized, stepping_aside
from .planner import DEFAULT_PROBE_RADIUS, MAX_PROBE_RADIUS, has_bands, nearest_keys_statement, nearest_statement
from .targets import check_distance, check_limit, exclude_keys, exclusion, resolve_target
from .within import Within


class Match(NamedTuple):
    """A row found by a similarity query, with its distance (bits) and similarity (1 - d/64)."""

    row: Any
    distance: int
    similarity: float


def similar_to(model: type, target: object, max_distance: int = 3) -> ColumnElement[bool]:
    """Boolean expression for ``.where()``: rows within ``max_distance`` bits of ``target``.

    Exact for every ``max_distance`` (no false negatives): up to 3 bits the candidates are rows
    sharing a block; beyond, blocks are probed within the matching radius. A row target does
    not exclude itself here (use :func:`most_similar` for that). NULL fingerprints never match.

    It compiles to ``key IN (<one index-only scan per block, distance filtered inside it>)``:
    the block indexes cover the fingerprint, so candidates are checked without touching the
    table, and only matches are joined back. (An ``OR`` of the four blocks would read every
    candidate's heap row through a bitmap.) The values are bound parameters of a statement
    SQLAlchemy compiles once per model and ``max_distance`` (see
    :class:`simsql.queries.within.Within`).
    """
    check_distance(max_distance)
    binding = binding_for(model)
    fingerprint, _ = resolve_target(binding, target)
    return binding.guard(Within(binding, fingerprint, max_distance))  # type: ignore[no-any-return]


def most_similar(
    stmt: Select[Any],
    target: object,
    limit: int = 10,
    max_distance: int | None = None,
    exclude: object = None,
    *,
    probe_radius: int = DEFAULT_PROBE_RADIUS,
    exact: bool = True,
    scan: bool = True,
    probes: int | None = None,
    recall: float | None = None,
) -> Select[Any]:
    """The top-``limit`` rows of ``stmt`` by Hamming distance to ``target``: exact by default.

    ``stmt`` is your ``select(Model)`` with any ``where``/``join`` you like (no ``order_by`` or
    ``limit``); the result selects ``(Model, distance, similarity)`` ordered by distance, then
    primary key. ``target`` is text, a fingerprint, or a model instance (which is excluded).
    ``exclude`` adds rows or primary keys to leave out. Rows with a NULL fingerprint never appear.

    Exact (the default): bands of radius ``0..probe_radius`` come from the block indexes,
    anything farther from a scan that runs only if the bands did not fill ``limit`` rows. The
    bands past the first run only when the statistics of the target's buckets expect a row
    within their reach or a row lies within 3 bits (:mod:`simsql.queries.plan_choice`), and a
    band that would read more index entries than the scan would save is left to the scan, so a
    query whose neighbours are far costs band 0 and the scan. On MySQL and
    MariaDB the bands past the first are left out (they would run whatever the answer): band 0,
    then the scan only when band 0 did not fill ``limit``.

    ``exact=False`` never scans: it ranks a bounded set of candidates, the rows sharing a block
    with the target, then rows whose blocks are 1 .. ``probe_radius`` bits from the target's,
    nearest first, until about 1% of the table's index entries have been read (a quarter of
    that per block). What it gives
    up: only rows within 3 bits are guaranteed; farther rows are found when one of their blocks
    is close enough and within the budget, so the answer is the best of the candidates, not
    necessarily the true nearest (BENCHMARKS.md measures its recall). Filters on ``stmt`` apply
    after the candidates are chosen, so a selective filter can leave fewer than ``limit`` rows.

    ``scan=False`` (exact search only) answers from the block probes alone and never scans: every
    row within ``4 * probe_radius + 3`` bits, and rows farther out (up to ``max_distance``) only
    where one of their blocks is within ``probe_radius`` bits of the target's. That is the
    originality check's search (:func:`simsql.queries.find_original`): disguised copies 12-14
    bits away mostly keep one block that close, and the scan would cost every original
    submission a pass over the table. How the statement is planned: :mod:`simsql.queries.planner`.

    ``probes=N`` (a table with partition lists, :mod:`simsql.lists`): the rows of the ``N``
    lists nearest the target and every row not yet placed (approximate); ``recall=0.95``: the
    fewest lists whose recall@10, as the fit measured it, reaches it (docs/lists.md).
    """
    percent = _check_most_similar(stmt, limit, max_distance, probe_radius, scan, probes, recall, exact)
    binding = binding_for(model := _selected_model(stmt))
    fingerprint, own_key = resolve_target(binding, target)
    excluded = exclusion(binding, exclude_keys(binding, exclude) + ([own_key] if own_key is not None else []))
    check = {statement_checks.CHECK_OPTION: binding.statement_check}
    if probes is not None or percent is not None:
        listed = text_statement(stmt, binding, fingerprint, limit, max_distance, excluded, probes, percent)
        ranked = _or_exact(listed, stmt, model, fingerprint, limit, max_distance, excluded, probes, percent)
    else:
        ranked = _exact_by_size(stmt, model, fingerprint, limit, max_distance, excluded, probe_radius, exact, scan)
    return ranked.execution_options(**check)


def _or_exact(
    listed: Select[Any], stmt: Select[Any], model: type, fingerprint: int, limit: int, max_distance: int | None,
    excluded: Any, probes: int | None, percent: int | None,
) -> Select[Any]:  # fmt: skip
    """``listed``, with the exact statement it steps aside for when it would probe most lists,
    and the statement with its lists chosen when it is sent."""
    binding = binding_for(model)

    def exact() -> Select[Any]:
        return _exact_by_size(stmt, model, fingerprint, limit, max_distance, excluded, DEFAULT_PROBE_RADIUS, True, True)

    def chosen(lists: Sequence[int], bounds: Sequence[int]) -> Select[Any]:
        return text_statement(stmt, binding, fingerprint, limit, max_distance, excluded, probes, percent, Chosen(lists, bounds))

    return stepping_aside(listed, ListedPlan(binding, fingerprint, probes, percent, exact, chosen))


def _exact_by_size(
    stmt: Select[Any], model: type, fingerprint: int, limit: int, max_distance: int | None, excluded: Any,
    probe_radius: int, exact: bool, scan: bool,
) -> Select[Any]:  # fmt: skip
    """:func:`nearest_statement`; when its plan has bands past the first, with the plan without
    them for a small table attached (:mod:`simsql.queries.plan_size`)."""
    ranked = nearest_statement(stmt, model, fingerprint, limit, max_distance, excluded, probe_radius=probe_radius, exact=exact, scan=scan)
    if not (exact and scan and probe_radius > 0 and has_bands(max_distance, probe_radius)):
        return ranked
    def small() -> Select[Any]:
        return nearest_statement(stmt, model, fingerprint, limit, max_distance, excluded, probe_radius=0, exact=True, scan=True)

    return sized(ranked, binding_for(model), small)


def most_similar_keys(
    model: type, target: object, limit: int = 10, max_distance: int | None = None, *,
    probe_radius: int = DEFAULT_PROBE_RADIUS, scan: bool = True,
) -> Select[Any]:  # fmt: skip
    """:func:`most_similar` of a plain ``select(model)`` (exact, nothing excluded) as ``(key...,
    distance)`` rows, nearest first (ties by key), without the rows themselves: read from the
    fingerprint table alone, for a caller that reads the rows by key in a statement of its own
    (:attr:`simsql.dialects.Backend.rows_by_key`)."""
    _check_most_similar(select(model), limit, max_distance, probe_radius, scan)
    binding = binding_for(model)
    fingerprint, _ = resolve_target(binding, target)
    check = {statement_checks.CHECK_OPTION: binding.statement_check}
    ranked = nearest_keys_statement(model, fingerprint, limit, max_distance, probe_radius=probe_radius, scan=scan)
    return ranked.execution_options(**check)


def _check_most_similar(
    stmt: object, limit: object, max_distance: int | None, probe_radius: int, scan: object, probes: int | None = None,
    recall: float | None = None, exact: object = True,
) -> int | None:  # fmt: skip
    """The arguments checked; the recall asked, as a whole percent (None: no recall asked)."""
    percent = None if recall is None else recall_percent(recall)
    if percent is not None and probes is not None:
        raise ValueError("pass probes or recall, not both: recall chooses the probes from the curve the fit measured")
    check_limit(limit)
    if probes is not None:
        check_probes(probes)
    check_distance(max_distance)
    if not isinstance(stmt, Select):
        raise TypeError(f"most_similar() takes a select(), got {type(stmt).__name__}")
    if stmt._order_by_clauses or stmt._limit_clause is not None or stmt._offset_clause is not None:
        raise ValueError("pass a select() without order_by/limit/offset: most_similar() orders and limits it")
    if isinstance(probe_radius, bool) or not isinstance(probe_radius, int) or not 0 <= probe_radius <= MAX_PROBE_RADIUS:
        raise ValueError(f"probe_radius must be an int in 0..{MAX_PROBE_RADIUS}, got {probe_radius!r}")
    for name, flag in (("exact", exact), ("scan", scan)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be True or False, got {flag!r}")
    return percent


def _selected_model(stmt: Select[Any]) -> type:
    descriptions = stmt.column_descriptions
    entity = descriptions[0].get("entity") if descriptions else None
    if entity is None:
        raise TypeError("most_similar() needs a select() of a mapped class, e.g. select(Article)")
    return entity
