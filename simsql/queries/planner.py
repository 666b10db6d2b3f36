"""The candidate planner: the statements that find a target's nearest rows through the block
indexes. Public functions (:mod:`simsql.queries.nearest`) check their arguments and resolve the
target; this module decides which rows are read, and in what order.

Candidates come from the 16-bit block indexes; the Hamming distance is computed only for them.
Every plan is exact (it returns what a full scan ordered by distance would return) except
``most_similar(..., exact=False)``'s, which says what it gives up.

How ``most_similar`` stays exact without a distance bound (multi-index hashing): probing each
block with every value within ``r`` bits finds every row within ``4r + 3`` bits. The statement
is a ``UNION ALL`` of *bands*: band ``k`` probes radius ``k`` and keeps rows at distance
``4k .. 4k+3``, sorted; a last branch scans for anything farther. PostgreSQL runs the branches of
an ``Append`` in order and stops pulling rows once ``LIMIT`` is satisfied, so a query whose
neighbours are near never executes the wider probes or the scan.

The plan adapts to the data when it runs: real text skews SimHash bits, so some 16-bit buckets
hold hundreds of times their share of rows, and a wide band over crowded buckets can cost a good
part of a scan. Before a band past the first runs, a bounded count of the index entries its
probes would read is compared with a budget (a share of the table's estimated rows); a band over
budget is skipped and the scan starts where the last band that ran stopped. Before any band
past the first, the plan also asks whether it can be expected to fill at all
(:mod:`simsql.queries.plan_choice`: the statistics of the target's own buckets, or a row within
3 bits); when not, band 0 is followed by the scan alone. A query with no near row thus pays four
exact probes, one pass over the same four buckets, and the scan.

On MySQL/MariaDB, which materialise every branch of a ``UNION`` (and plan every branch, with
one index dive per ``IN``-list value), the exact plan is band 0 and the scan alone: the wider
bands compile to ``false`` (:class:`simsql.dialects.EagerChoice`) and the scan runs only when
band 0 found fewer than ``limit`` rows (:class:`simsql.dialects.EagerGuard`, a count evaluated
once), so exact top-k costs the scan plus a few probes of band 0's buckets. Their top-N sort
builds a key for every row it reads, so the scan of a plain ``select(Model)`` first keeps only
the rows within a bound of the answer's farthest distance (:func:`_answer_bound`,
:class:`simsql.dialects.SortBound`). ``LIMIT`` takes
constants only there, so ``exact=False``'s budgeted candidate share reads all it reaches
(:class:`simsql.dialects.RunTimeLimit`): a superset of candidates, at a higher cost.

Statements are built when SQLAlchemy compiles them (:class:`Within`, :class:`_KeyRanking`):
a call computes only the target's bound values, and repeated queries reuse the compiled SQL.

With a bound the probes cover (``max_distance < 4 * (probe_radius + 1)``, e.g. ``find_original``)
there is no scan and no band split: one probe of every block within ``radius_for(max_distance)``
bits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    Float,
    Integer,
    Select,
    and_,
    case,
    false,
    func,
    literal,
    literal_column,
    not_,
    select,
    union,
    union_all,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import aliased
from sqlalchemy.sql import ColumnElement, TableClause, column
from sqlalchemy.sql.visitors import InternalTraversal

from .. import dialects
from ..dialects import BLOCK_COUNT, equals_any, hamming_expression, probe_parameter, probe_values, radius_for
from ..store.storage import Binding, binding_for
from ..text.bits import FINGERPRINT_BITS, blocks
from .approximate import approximate_branch
from .plan_choice import band_budget, bands_worth_running
from .targets import fingerprint_literal, keys_equal

DEFAULT_PROBE_RADIUS = 2
"""Bands probed through the index before falling back to a scan: radius 2 covers distance
<= 11 with 137 values per block, about 0.8% of a uniformly filled table."""

MAX_PROBE_RADIUS = 4
"""The widest probes accepted: radius 4 covers distance <= 19 with 2,517 values per block."""

class _Target:
    """The values a ranking statement compares rows with, as bound parameters made once per
    call: the fingerprint, and per block the probe values of every radius up to
    ``max_radius``. Every part of the statement uses these same parameters, so its shape
    (and so its compiled form) does not depend on the values."""

    def __init__(self, fingerprint: ColumnElement[Any], probes: Sequence[Any], max_radius: int) -> None:
        self.fingerprint = fingerprint
        self.probes = list(probes)
        self.max_radius = max_radius

    @classmethod
    def of(cls, fingerprint: int, max_radius: int) -> _Target:
        probes = [probe_parameter(probe_values(value, r)) for value in blocks(fingerprint) for r in range(max_radius + 1)]
        return cls(fingerprint_literal(fingerprint), probes, max_radius)

    def probe(self, block: int, radius: int) -> Any:
        """Block ``block``'s values within ``radius`` bits of the target's."""
        return self.probes[block * (self.max_radius + 1) + radius]


def _band_filter(distance: ColumnElement[Any], low: int, high: int | None) -> ColumnElement[bool] | None:
    """``low <= distance <= high`` with the distance computed once per candidate: a whole band
    (``4k .. 4k+3``) is ``distance / 4 = k``."""
    if low == 0:
        return distance <= high if high is not None else None
    if high is not None and high - low == BLOCK_COUNT - 1 and low % BLOCK_COUNT == 0:
        whole_band = dialects.whole_quotient(distance, BLOCK_COUNT)
        return whole_band == low // BLOCK_COUNT
    condition = distance >= low
    return and_(condition, distance <= high) if high is not None else condition


def _band_candidates(binding: Binding, target: _Target, radius: int, low: int, high: int | None, exclusion: ColumnElement[bool] | None = None, lazy: bool = False) -> Any:
    """Rows at ``low..high`` bits sharing a block within ``radius`` bits, as (key..., distance).

    One index-only scan per block (the block indexes cover key and fingerprint) with the
    distance filter evaluated inside the scan, merged with UNION so a row matched through
    several blocks is counted once. A ``lazy`` band exists only where branches run lazily
    (:class:`simsql.dialects.EagerChoice`): elsewhere its probes compile to ``false``, so the
    optimizer neither reads nor estimates them (MariaDB dives into the index once per value
    of an ``IN`` list while planning, even for a branch it will never run).
    """
    distance = hamming_expression(binding.fingerprint, target.fingerprint).label("distance")
    condition = _band_filter(distance, low, high)
    per_block = []
    for j, column in enumerate(binding.blocks):
        probe = equals_any(column, target.probe(j, radius))
        part = select(*binding.table_keys, distance).where(dialects.eager_choice(probe, false()) if lazy else probe)
        for extra in (condition, exclusion):
            if extra is not None:
                part = part.where(extra)
        per_block.append(part)
    return union(*per_block).subquery()


def _band_affordable(binding: Binding, target: _Target, radius: int) -> Any:
    """A one-row CTE whose ``ok`` is true when the radius-``radius`` probes meet fewer index
    entries than the budget.

    Counted with ``LIMIT budget`` over the covering block indexes (index-only, no distance
    computed), so the check costs at most one budget of entries; PostgreSQL evaluates it once,
    when the band's branch is first pulled, and never for a query whose nearer bands already
    filled ``limit``.
    """
    budget = band_budget(binding)
    entries: Any = union_all(
        *(
            select(literal_column("1").label("hit")).select_from(binding.table).where(equals_any(column, target.probe(j, radius)))
            for j, column in enumerate(binding.blocks)
        )
    ).limit(dialects.run_time_limit(budget))
    counted = select(func.count()).select_from(entries.subquery()).scalar_subquery()
    return select((counted < budget).label("ok")).cte(f"simsql_band_{radius}")


def _scan_branch(
    binding: Binding, base: Select[Any], target: _Target, low: ColumnElement[Any] | int, high: int | None, limit: int, guard: ColumnElement[bool]
) -> Select[Any]:
    """The last resort: the plain top-``limit`` scan, minus the rows the bands already gave.

    This branch runs only when the bands produced fewer than ``limit`` rows, i.e. the bands
    returned *every* row closer than ``low`` bits. The inner query is the plain
    ``ORDER BY distance LIMIT limit`` scan over the caller's filters, projecting only keys and
    distance (parallel, ``bit_count`` once per row, narrow sort tuples); keeping its rows at
    ``low`` bits or more completes the answer without duplicates, and only those rows are
    joined back to fetch whole entities. ``guard`` sits inside the scan, so where it is false
    (MySQL/MariaDB: the bands filled the answer) the optimizer reads no row.
    """
    if binding.mode == "columns":
        scan = base
    else:
        scan = base.join(binding.table, keys_equal(binding.keys, binding.table_keys))
    distance = hamming_expression(binding.fingerprint, target.fingerprint)
    top = (
        scan.with_only_columns(*binding.keys, distance.label("distance"), maintain_column_froms=True)
        .where(binding.fingerprint.is_not(None), guard)
        .order_by(distance, *binding.keys)
        .limit(limit)
        .subquery()
    )
    top_keys = [top.c[key.name] for key in binding.keys]
    branch = base.join(top, keys_equal(binding.keys, top_keys)).add_columns(top.c.distance)
    branch = branch.where(top.c.distance >= low)
    if high is not None:
        branch = branch.where(top.c.distance <= high)
    # LIMIT although the join yields at most ``limit`` rows: MySQL and MariaDB drop an ORDER BY
    # from a UNION branch that has no LIMIT, and the answer's order is the branches' order.
    return branch.order_by(top.c.distance, *binding.keys).limit(limit)


def _band_branch(binding: Binding, base: Select[Any], target: _Target, radius: int, low: int, high: int | None, limit: int, lazy: bool = False) -> Select[Any]:
    candidates = _band_candidates(binding, target, radius, low, high, lazy=lazy)
    return (
        base.join(candidates, keys_equal(binding.keys, [candidates.c[k.name] for k in binding.table_keys]))
        .add_columns(candidates.c.distance)
        .order_by(candidates.c.distance, *binding.keys)
        .limit(limit)
    )


def _guarded_bands(
    binding: Binding, target: _Target, probe_radius: int, branch_for: Any, fewer_within: Any, exclusion: ColumnElement[bool] | None = None,
) -> tuple[list[Select[Any]], ColumnElement[Any] | int, ColumnElement[bool]]:  # fmt: skip
    """Bands ``0..probe_radius`` and the scan's start and guard, per database.

    PostgreSQL (lazy ``Append``, see :class:`simsql.dialects.EagerChoice`): the bands past the
    first run only if they are worth it (:func:`simsql.queries.plan_choice.bands_worth_running`:
    the statistics expect a row within their reach, or one lies within 3 bits) and then only while affordable
    (:func:`_band_affordable`); the ``LIMIT`` stops the branches once the answer is full, so the
    scan needs no guard and starts where the last band that ran stopped (4 bits when none did).

    MySQL/MariaDB (every branch and every check it reaches is materialised): only band 0 runs,
    and the scan runs only when band 0 found fewer than ``limit`` rows (``fewer_within(0)``,
    evaluated once). Wider bands and their checks re-read crowded buckets several times, so
    there they cost more than the scan they might spare; with band 0 alone a query answered
    by its close neighbours costs one probe, and any other the scan plus one probe and count.
    ``fewer_within(k)`` is true when fewer than ``limit`` rows lie within ``4k + 3`` bits.
    """
    branches = [branch_for(0, 0, 3, False)]
    if probe_radius == 0:
        return branches, 4, dialects.eager_guard(fewer_within(0))
    guards: list[Any] = []
    exact = [target.probe(j, 0) for j in range(BLOCK_COUNT)]
    worth = select(bands_worth_running(binding, target.fingerprint, exact, probe_radius, exclusion).c.ok).scalar_subquery()

    def ran(band: int) -> list[Any]:  # band ``band`` ran: worth it, and it and all before it affordable
        return [worth, *(select(g.c.ok).scalar_subquery() for g in guards[:band])]

    for band in range(1, probe_radius + 1):
        guards.append(_band_affordable(binding, target, band))
        branches.append(branch_for(band, 4 * band, 4 * band + 3, True).where(dialects.eager_choice(and_(*ran(band)), false())))
    whens = [(not_(worth), literal(4))] + [(not_(select(g.c.ok).scalar_subquery()), literal(4 * (i + 1))) for i, g in enumerate(guards)]
    scan_from = dialects.eager_choice(case(*whens, else_=literal(4 * (probe_radius + 1))), literal(4))
    return branches, scan_from, dialects.eager_guard(fewer_within(0))


def _fewer_within(binding: Binding, base: Select[Any] | None, target: _Target, limit: int, exclusion: ColumnElement[bool] | None = None) -> Any:
    """``fewer_within(radius)`` for :func:`_guarded_bands`: whether ``base`` (or, for the key
    ranking, the whole table minus ``exclusion``) has fewer than ``limit`` rows within
    ``4 * radius + 3`` bits; one probe of the block indexes, counted."""

    def fewer_within(radius: int) -> ColumnElement[bool]:
        candidates = _band_candidates(binding, target, radius, 0, 4 * radius + 3, exclusion)
        if base is None:
            within_rows: Any = select(candidates.c.distance)
        else:
            within = base.join(candidates, keys_equal(binding.keys, [candidates.c[k.name] for k in binding.table_keys]))
            within_rows = within.with_only_columns(*binding.keys)
        return select(func.count()).select_from(within_rows.subquery()).scalar_subquery() < limit

    return fewer_within


def _probe_reach(max_distance: int | None, probe_radius: int, scan: bool = True) -> int | None:
    """The one radius that answers alone when the bound is within the probes' reach
    (``max_distance < 4 * (probe_radius + 1)``), else None: bands, then the scan. Without the
    scan, the probes answer alone whatever the bound (farther rows only where a block is close)."""
    if max_distance is not None and max_distance < 4 * (probe_radius + 1):
        return radius_for(max_distance)
    return None if scan else probe_radius


def has_bands(max_distance: int | None, probe_radius: int) -> bool:
    """Whether the exact plan of this bound and radius runs bands and a scan (not one probe)."""
    return _probe_reach(max_distance, probe_radius) is None


def _exact_branches(
    binding: Binding, base: Select[Any], target: _Target, limit: int, max_distance: int | None, probe_radius: int,
    scan: bool = True, exclusion: ColumnElement[bool] | None = None,
) -> list[Select[Any]]:  # fmt: skip
    """A bound the probes cover (or a search without the scan) needs one branch (every block
    within its radius); otherwise guarded bands, then the scan (:func:`_guarded_bands`)."""
    reach = _probe_reach(max_distance, probe_radius, scan)
    if reach is not None:
        return [_band_branch(binding, base, target, reach, 0, max_distance, limit)]
    branches, scan_from, scan_guard = _guarded_bands(
        binding,
        target,
        probe_radius,
        lambda band, low, high, lazy: _band_branch(binding, base, target, band, low, high, limit, lazy),
        _fewer_within(binding, base, target, limit),
        exclusion if binding.mode == "columns" else None,  # on a side table it names the model's rows
    )
    branches.append(_scan_branch(binding, base, target, scan_from, max_distance, limit, scan_guard))
    return branches


def is_plain(stmt: Select[Any], binding: Binding) -> bool:
    """``select(Model)`` with nothing that filters or multiplies rows: ranking can then run on
    keys and distances alone and fetch the entities once, at the end."""
    return (
        binding.mode == "columns"
        and len(stmt._raw_columns) == 1
        and stmt.whereclause is None
        and not stmt._from_obj
        and not stmt._setup_joins
        and not stmt._group_by_clauses
        and not stmt._having_criteria
        and not stmt._distinct
    )


def _answer_bound(binding: Binding, target: _Target, limit: int, exclusion: ColumnElement[bool] | None) -> ColumnElement[Any]:
    """A distance no row of the exact top-``limit`` lies beyond: the ``limit``-th smallest distance
    among the rows sharing a block value with the target (any ``limit`` rows bound the answer's
    farthest), or 64 when fewer rows share one. Read as band 0 reads the block indexes, without
    its distance filter; the scan keeps only the rows within it before sorting where that spares
    the sort (:class:`simsql.dialects.SortBound`). Rows without a fingerprint share no block.
    Only where the whole table is ranked (:func:`_key_ranking`): the candidates of a filtered
    select would have to pass its filters too."""
    candidates = _band_candidates(binding, target, 0, 0, None, exclusion)
    nearest = select(candidates.c.distance).order_by(candidates.c.distance).limit(limit).subquery()
    farthest = case((func.count() >= limit, func.max(nearest.c.distance)), else_=literal(FINGERPRINT_BITS))
    return select(farthest).select_from(nearest).scalar_subquery()


def _key_ranking(
    binding: Binding, target: _Target, limit: int, max_distance: int | None, probe_radius: int,
    exclusion: ColumnElement[bool] | None, scan: bool = True, lazy: bool = True,
) -> Any:  # fmt: skip
    """The exact top-``limit`` (key, distance) of the whole table: the plan of
    :func:`_exact_branches` without a join per branch (smaller to build and to plan). Where
    branches are not ``lazy`` (a backend's ``lazy_branches``, Citus) the bands past the first,
    which would compile to ``false`` there, are left out: Citus plans even those as subplans."""
    table_keys = list(binding.table_keys)

    def keys_of(candidates: Any) -> list[Any]:
        return [candidates.c[k.name] for k in table_keys]

    def band(radius: int, low: int, high: int | None, lazy: bool = False) -> Select[Any]:
        candidates = _band_candidates(binding, target, radius, low, high, exclusion, lazy)
        return select(candidates).order_by(candidates.c.distance, *keys_of(candidates)).limit(limit)

    reach = _probe_reach(max_distance, probe_radius, scan)
    if reach is not None:
        return band(reach, 0, max_distance).subquery("simsql_ranked")
    branches, scan_from, scan_guard = _guarded_bands(
        binding, target, probe_radius if lazy else 0, band, _fewer_within(binding, None, target, limit, exclusion), exclusion
    )
    distance = hamming_expression(binding.fingerprint, target.fingerprint)
    within = distance <= _answer_bound(binding, target, limit, exclusion)
    scanned = select(*table_keys, distance.label("distance")).where(dialects.sort_bound(binding.fingerprint.is_not(None), within), scan_guard)
    if exclusion is not None:
        scanned = scanned.where(exclusion)
    top = scanned.order_by(scanned.selected_columns.distance, *table_keys).limit(limit).subquery()
    tail = select(top).where(top.c.distance >= scan_from)
    if max_distance is not None:
        tail = tail.where(top.c.distance <= max_distance)
    branches.append(tail.order_by(top.c.distance, *keys_of(top)).limit(limit))
    # The answer's order is the branches' order: kept by PostgreSQL's Append, made explicit
    # where a derived UNION has none (see :class:`simsql.dialects.EagerOrder`).
    merged = union_all(*branches).subquery()
    order = (merged.c.distance, *keys_of(merged))
    return select(merged).order_by(*(dialects.eager_order(c) for c in order)).limit(limit).subquery("simsql_ranked")


class _KeyRanking(TableClause):
    """:func:`_key_ranking` as a derived table built when the statement is compiled.

    Its cache key is the model, the plan's parameters (limit, bound, probe radius, the shape
    of the exclusion) and the bound values, so a repeated top-k query computes that short key
    and reuses the compiled SQL: the expression tree of the bands, checks and scan (milliseconds of
    Python work) is built once per shape and dialect, not once per call.
    """

    inherit_cache = True
    _traverse_internals = TableClause._traverse_internals + [
        ("model", InternalTraversal.dp_plain_obj),
        ("limit", InternalTraversal.dp_plain_obj),
        ("max_distance", InternalTraversal.dp_plain_obj),
        ("probe_radius", InternalTraversal.dp_plain_obj),
        ("scan", InternalTraversal.dp_plain_obj),
        ("fingerprint", InternalTraversal.dp_clauseelement),
        ("probes", InternalTraversal.dp_clauseelement_list),
        ("exclusion", InternalTraversal.dp_clauseelement),
    ]

    def __init__(
        self, binding: Binding, target: _Target, limit: int, max_distance: int | None, probe_radius: int,
        exclusion: ColumnElement[bool] | None, scan: bool = True,
    ) -> None:  # fmt: skip
        keys = [column(k.name, k.type) for k in binding.table_keys]
        super().__init__("simsql_ranked", *keys, column("distance", Integer()))
        self.model = binding.model
        self.limit = limit
        self.max_distance = max_distance
        self.probe_radius = probe_radius
        self.scan = scan
        self.fingerprint = target.fingerprint
        self.probes = target.probes
        self.max_radius = target.max_radius
        self.exclusion = exclusion

    def ranking(self, lazy: bool = True) -> Any:
        """The derived table this stands for, from this element's own bound values."""
        target = _Target(self.fingerprint, self.probes, self.max_radius)
        return _key_ranking(binding_for(self.model), target, self.limit, self.max_distance, self.probe_radius, self.exclusion, self.scan, lazy)


def render_in_place(element: TableClause, derived: Any, compiler: Any, **kw: Any) -> str:
    """``derived`` (a subquery built at compile time) rendered where ``element`` stands: the
    outer query joins ``element``, so the FROM linter is told it is this element's name."""
    linter = kw.pop("from_linter", None)
    if linter is not None:
        linter.froms[element] = element.name
    return str(compiler.process(derived, **kw))


@compiles(_KeyRanking)
def _compile_key_ranking(element: _KeyRanking, compiler: Any, **kw: Any) -> str:
    return render_in_place(element, element.ranking(dialects.backend(compiler.dialect).lazy_branches), compiler, **kw)


def nearest_statement(
    stmt: Select[Any], model: type, fingerprint: int, limit: int, max_distance: int | None,
    exclusion: ColumnElement[bool] | None, *, probe_radius: int, exact: bool, scan: bool,
) -> Select[Any]:  # fmt: skip
    """``stmt``'s top-``limit`` rows by distance to ``fingerprint`` as ``(entity, distance,
    similarity)``, ordered by distance then key: the plan :func:`simsql.queries.most_similar`
    documents, for arguments it has already checked.

    A plain ``select(Model)`` is ranked on keys and distances alone (:class:`_KeyRanking`, built
    at compile time) and joined to the entities once; any other select is filtered and joined in
    every branch. ``exact=False`` ranks the budgeted candidates of :func:`simsql.queries.approximate.approximate_branch`.
    """
    binding = binding_for(model)
    reach = _probe_reach(max_distance, probe_radius, scan)
    target = _Target.of(fingerprint, probe_radius if reach is None else reach) if exact else None
    if target is not None and is_plain(stmt, binding):
        ranked: Any = _KeyRanking(binding, target, limit, max_distance, probe_radius, exclusion, scan)
        return (
            as_select(stmt)
            .add_columns(ranked.c.distance, similarity_of(ranked.c.distance))
            .join(ranked, keys_equal(binding.keys, [ranked.c[k.name] for k in binding.table_keys]))
            .order_by(ranked.c.distance, *binding.keys)
        )
    base = stmt.where(exclusion) if exclusion is not None else stmt
    if target is not None:
        branches = _exact_branches(binding, base, target, limit, max_distance, probe_radius, scan, exclusion)
    else:
        branches = [approximate_branch(binding, base, fingerprint, probe_radius, max_distance, limit)]
    ranked = (union_all(*branches) if len(branches) > 1 else branches[0]).subquery("simsql_ranked")
    entity: Any = aliased(model, ranked)
    return (
        select(entity, ranked.c.distance, similarity_of(ranked.c.distance))
        .order_by(*(dialects.eager_order(c) for c in (ranked.c.distance, *(ranked.c[k.name] for k in binding.keys))))
        .limit(limit)
    )


def nearest_keys_statement(
    model: type, fingerprint: int, limit: int, max_distance: int | None, *, probe_radius: int, scan: bool,
) -> Select[Any]:  # fmt: skip
    """``(key..., distance)`` of the exact top-``limit`` rows of the whole table, nearest first
    (ties by key), read from the fingerprint table alone (the model's own, or its side table):
    :func:`nearest_statement`'s ranking of a plain ``select(Model)`` without the join to the
    entities, for a caller that reads the rows by key itself (:attr:`simsql.dialects.Backend.rows_by_key`)."""
    binding = binding_for(model)
    reach = _probe_reach(max_distance, probe_radius, scan)
    target = _Target.of(fingerprint, probe_radius if reach is None else reach)
    if reach is not None:  # one band, its ORDER BY ... LIMIT outermost: Citus runs it on each shard, no subplan
        return _key_ranking(binding, target, limit, max_distance, probe_radius, None, scan).element  # type: ignore[no-any-return]
    ranked: Any = _KeyRanking(binding, target, limit, max_distance, probe_radius, None, scan)
    return select(ranked).order_by(ranked.c.distance, *(ranked.c[k.name] for k in binding.table_keys))


def as_select(stmt: Select[Any]) -> Select[Any]:
    """``stmt`` as SQLAlchemy's own :class:`Select`, everything else kept (a copy, as its
    generative methods make). A subclass keeps its class through ``add_columns``, and SQLModel's
    ``session.exec`` reads a ``select(Model)`` (its ``SelectOfScalar``) as scalars: the
    distance and similarity added here would be dropped, leaving only the model."""
    if type(stmt) is Select:
        return stmt
    plain = Select.__new__(Select)
    plain.__dict__ = {k: v for k, v in stmt.__dict__.copy().items() if k not in stmt._memoized_keys}
    return plain


def similarity_of(distance: ColumnElement[Any]) -> ColumnElement[float]:
    return (literal(1.0, Float()) - distance / literal(64.0, Float())).label("similarity")
