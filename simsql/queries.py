"""Similarity queries: a Select in, a Select out, composable with the caller's own filters.

Candidates come from the 16-bit block indexes; the Hamming distance is computed only for them.
Every function is exact (it returns what a full scan ordered by distance would return) except
``most_similar(..., exact=False)``, which says what it gives up.

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
budget is skipped and the scan starts where the last band that ran stopped. A query whose only
close neighbour is its copy thus pays four exact probes, a bounded count, and the scan.

On MySQL/MariaDB, which materialise every branch of a ``UNION`` (and plan every branch, with
one index dive per ``IN``-list value), the exact plan is band 0 and the scan alone: the wider
bands compile to ``false`` (:class:`simsql.dialects.EagerChoice`) and the scan runs only when
band 0 found fewer than ``limit`` rows (:class:`simsql.dialects.EagerGuard`, a count evaluated
once), so exact top-k costs the scan plus one probe at most. ``LIMIT`` takes constants only
there, so ``exact=False``'s budgeted candidate share reads all it reaches
(:class:`simsql.dialects.RunTimeLimit`): a superset of candidates, at a higher cost.

Statements are built when SQLAlchemy compiles them (:class:`_Within`, :class:`_KeyRanking`):
a call computes only the target's bound values, and repeated queries reuse the compiled SQL.

With a bound the probes cover (``max_distance < 4 * (probe_radius + 1)``, e.g. ``find_original``)
there is no scan and no band split: one probe of every block within ``radius_for(max_distance)``
bits.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from sqlalchemy import (
    BigInteger,
    Boolean,
    false,
    Float,
    Integer,
    Select,
    and_,
    bindparam,
    case,
    cast,
    func,
    literal,
    literal_column,
    not_,
    or_,
    select,
    tuple_,
    union,
    union_all,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session, aliased
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import ColumnElement, TableClause, column
from sqlalchemy.sql.visitors import InternalTraversal

from .bits import blocks, check_fingerprint, to_signed
from .containment import MIN_CONTAINMENT, containment, shingles
from . import registry
from . import dialects
from .dialects import BLOCK_COUNT, equals_any, hamming_expression, probe_parameter, probe_values, radius_for, ring_values, row_estimate
from .errors import EmptyDocument
from .storage import Binding, binding_for
from .types import SimHash

DEFAULT_PROBE_RADIUS = 2
"""Bands probed through the index before falling back to a scan: radius 2 covers distance
<= 11 with 137 values per block, about 0.8% of a uniformly filled table."""

MAX_PROBE_RADIUS = 4
"""The widest probes accepted: radius 4 covers distance <= 19 with 2,517 values per block."""

BAND_BUDGET = 0.01
"""A band past the first runs only if its probes meet fewer index entries than this share of
the table's rows (see :func:`_band_budget`)."""

MIN_BAND_BUDGET = 5000
"""Budget floor: below this many entries a band is cheap whatever the table's size."""

MAX_EXACT_BLOCK_DISTANCE = BLOCK_COUNT - 1


class Match(NamedTuple):
    """A row found by a similarity query, with its distance (bits) and similarity (1 - d/64)."""

    row: Any
    distance: int
    similarity: float


class DuplicatePair(NamedTuple):
    """Two rows whose fingerprints are within the threshold; keys are primary-key values
    (a tuple for composite keys), ``a < b``."""

    a: Any
    b: Any
    distance: int


# -- targets ------------------------------------------------------------------------------


def _resolve(binding: Binding, target: object) -> tuple[int, tuple[Any, ...] | None]:
    """A target's fingerprint, and the key to exclude when the target is a row itself."""
    if isinstance(target, str):
        return binding.fingerprinter.fingerprint(target), None
    if isinstance(target, int) and not isinstance(target, bool):
        return check_fingerprint(target, "target"), None
    if isinstance(target, binding.model):
        fingerprint = binding.fingerprint_of(target)
        if fingerprint is None:
            raise EmptyDocument(f"row {binding.key_of(target)!r} of {binding.table.name} has no text to compare")
        return fingerprint, binding.key_of(target)
    raise TypeError(
        f"target must be text (str), a fingerprint (int) or an instance of {binding.model.__name__}, "
        f"got {type(target).__name__}"
    )


def _check_distance(max_distance: int | None) -> None:
    if max_distance is None:
        return
    if isinstance(max_distance, bool) or not isinstance(max_distance, int):
        raise TypeError(f"max_distance must be an int, got {type(max_distance).__name__}")
    if not 0 <= max_distance <= 64:
        raise ValueError(f"max_distance must be in 0..64, got {max_distance}")


def _check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be a positive int, got {type(limit).__name__} {limit!r}")
    if limit < 1:
        raise ValueError(f"limit must be a positive int, got {limit}")
    return limit


def _check_targets(targets: object) -> list[object]:
    """The targets of a batch as a list; a lone str or bytes is refused, not split into characters."""
    if isinstance(targets, (str, bytes, bytearray)):
        raise TypeError(
            f"targets must be a sequence of targets (texts, fingerprints or rows), got a single "
            f"{type(targets).__name__}; wrap it in a list: [text]"
        )
    if not isinstance(targets, Iterable):
        raise TypeError(f"targets must be a sequence of targets, got {type(targets).__name__}")
    return list(targets)


def _fingerprint_literal(fingerprint: int) -> ColumnElement[Any]:
    return literal(fingerprint, SimHash())


def _probe(binding: Binding, fingerprint: int, radius: int) -> ColumnElement[bool]:
    query_blocks = blocks(fingerprint)
    return or_(
        *(equals_any(column, probe_values(value, radius)) for column, value in zip(binding.blocks, query_blocks))
    )


def _keys_equal(left: Sequence[Any], right: Sequence[Any]) -> ColumnElement[bool]:
    return and_(*(a == b for a, b in zip(left, right)))


def _exclusion(binding: Binding, exclude: Iterable[tuple[Any, ...]]) -> ColumnElement[bool] | None:
    keys = list(exclude)
    if not keys:
        return None
    if len(binding.keys) == 1:
        return binding.keys[0].not_in([k[0] for k in keys])
    return not_(tuple_(*binding.keys).in_([tuple(k) for k in keys]))


def _exclude_keys(binding: Binding, exclude: object) -> list[tuple[Any, ...]]:
    if exclude is None:
        return []
    items = exclude if isinstance(exclude, (list, tuple, set, frozenset)) else [exclude]
    keys = []
    for item in items:
        if isinstance(item, binding.model):
            keys.append(binding.key_of(item))
        elif isinstance(item, tuple):
            keys.append(item)
        else:
            keys.append((item,))
    return keys


# -- similar_to ---------------------------------------------------------------------------


class _Within(ColumnElement[bool]):
    """What :func:`similar_to` returns: ``key IN (<rows within max_distance bits>)``, built
    when the statement is compiled rather than when it is called.

    Its cache key is the model, the bound and the bound values (the fingerprint and each
    block's probe values) and nothing else, so a repeated query only computes that short key
    and finds its compiled SQL in SQLAlchemy's cache: the expression tree of the per-block
    union is built once per model and bound (per dialect), not once per call.
    """

    inherit_cache = True
    _is_implicitly_boolean = True
    _traverse_internals = [
        ("model", InternalTraversal.dp_plain_obj),
        ("max_distance", InternalTraversal.dp_plain_obj),
        ("fingerprint", InternalTraversal.dp_clauseelement),
        ("probes", InternalTraversal.dp_clauseelement_list),
    ]

    def __init__(self, binding: Binding, fingerprint: int, max_distance: int) -> None:
        radius = radius_for(max_distance)
        self.type = Boolean()
        self.model = binding.model
        self.max_distance = max_distance
        self.fingerprint = _fingerprint_literal(fingerprint)
        self.probes = [probe_parameter(probe_values(value, radius)) for value in blocks(fingerprint)]

    @property
    def _from_objects(self) -> list[Any]:
        return list(binding_for(self.model).keys[0]._from_objects)

    def rows_within(self) -> ColumnElement[bool]:
        """The statement's SQL form, from this element's own bound values (so a cached
        compilation maps every later call's values onto it)."""
        binding = binding_for(self.model)
        distance = hamming_expression(binding.fingerprint, self.fingerprint)
        per_block = [
            select(*binding.table_keys).where(equals_any(column, probes), distance <= self.max_distance)
            for column, probes in zip(binding.blocks, self.probes)
        ]
        # Selected from a derived table rather than IN (<union>) directly: MariaDB rewrites an
        # IN over a UNION into a subquery correlated per row of the outer table (a scan in
        # disguise), while PostgreSQL plans both spellings the same.
        union_rows = union_all(*per_block).subquery("simsql_matches")
        matches = select(*union_rows.c)
        if len(binding.keys) == 1:
            return binding.keys[0].in_(matches)  # type: ignore[no-any-return]
        return tuple_(*binding.keys).in_(matches)


@compiles(_Within)
def _compile_within(element: _Within, compiler: Any, **kw: Any) -> str:
    return str(compiler.process(element.rows_within(), **kw))


def similar_to(model: type, target: object, max_distance: int = 3) -> ColumnElement[bool]:
    """Boolean expression for ``.where()``: rows within ``max_distance`` bits of ``target``.

    Exact for every ``max_distance`` (no false negatives): up to 3 bits the candidates are rows
    sharing a block; beyond, blocks are probed within the matching radius. A row target does
    not exclude itself here (use :func:`most_similar` for that). NULL fingerprints never match.

    It compiles to ``key IN (<one index-only scan per block, distance filtered inside it>)``:
    the block indexes cover the fingerprint, so candidates are checked without touching the
    table, and only matches are joined back. (An ``OR`` of the four blocks would read every
    candidate's heap row through a bitmap.) The values are bound parameters of a statement
    SQLAlchemy compiles once per model and ``max_distance`` (see :class:`_Within`).
    """
    _check_distance(max_distance)
    binding = binding_for(model)
    fingerprint, _ = _resolve(binding, target)
    return binding.guard(_Within(binding, fingerprint, max_distance))  # type: ignore[no-any-return]


# -- most_similar -------------------------------------------------------------------------


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
        return cls(_fingerprint_literal(fingerprint), probes, max_radius)

    def probe(self, block: int, radius: int) -> Any:
        """Block ``block``'s values within ``radius`` bits of the target's."""
        return self.probes[block * (self.max_radius + 1) + radius]


def _selected_model(stmt: Select[Any]) -> type:
    descriptions = stmt.column_descriptions
    entity = descriptions[0].get("entity") if descriptions else None
    if entity is None:
        raise TypeError("most_similar() needs a select() of a mapped class, e.g. select(Article)")
    return entity


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


def _band_budget(binding: Binding) -> ColumnElement[Any]:
    """Most index entries a band may read before the scan is the cheaper way to its rows.

    A band reads its candidates through the block indexes at about the cost per entry at which
    the scan reads rows, so a band that would read more than :data:`BAND_BUDGET` of the table
    is not worth running when the scan must follow anyway. The table size is the planner's
    estimate, read when the statement runs (a floor keeps small or unanalysed tables on bands).
    """
    estimate = row_estimate(binding.table) * literal(BAND_BUDGET, Float())
    return cast(func.greatest(estimate, literal(MIN_BAND_BUDGET, Float())), BigInteger)


def _band_affordable(binding: Binding, target: _Target, radius: int) -> Any:
    """A one-row CTE whose ``ok`` is true when the radius-``radius`` probes meet fewer index
    entries than the budget.

    Counted with ``LIMIT budget`` over the covering block indexes (index-only, no distance
    computed), so the check costs at most one budget of entries; PostgreSQL evaluates it once,
    when the band's branch is first pulled, and never for a query whose nearer bands already
    filled ``limit``.
    """
    budget = _band_budget(binding)
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
        scan = base.join(binding.table, _keys_equal(binding.keys, binding.table_keys))
    distance = hamming_expression(binding.fingerprint, target.fingerprint)
    top = (
        scan.with_only_columns(*binding.keys, distance.label("distance"), maintain_column_froms=True)
        .where(binding.fingerprint.is_not(None), guard)
        .order_by(distance, *binding.keys)
        .limit(limit)
        .subquery()
    )
    top_keys = [top.c[key.name] for key in binding.keys]
    branch = base.join(top, _keys_equal(binding.keys, top_keys)).add_columns(top.c.distance)
    branch = branch.where(top.c.distance >= low)
    if high is not None:
        branch = branch.where(top.c.distance <= high)
    # LIMIT although the join yields at most ``limit`` rows: MySQL and MariaDB drop an ORDER BY
    # from a UNION branch that has no LIMIT, and the answer's order is the branches' order.
    return branch.order_by(top.c.distance, *binding.keys).limit(limit)


def _approximate_branch(binding: Binding, base: Select[Any], fingerprint: int, radius: int, max_distance: int | None, limit: int) -> Select[Any]:
    """The nearest of a bounded set of candidates: every row sharing a block with the target,
    then, per block, rows whose block is 1, 2, ... ``radius`` bits from the target's, nearest
    rings first, until that block's share of the budget (:func:`_band_budget`) is spent."""
    distance = hamming_expression(binding.fingerprint, _fingerprint_literal(fingerprint)).label("distance")
    share = cast(_band_budget(binding) / literal(BLOCK_COUNT), BigInteger)

    def ring(column: Any, value: int, r: int) -> Select[Any]:
        part = select(*binding.table_keys, distance).where(equals_any(column, ring_values(value, r)))
        return part.where(distance <= max_distance) if max_distance is not None else part

    parts: list[Any] = []
    for column, value in zip(binding.blocks, blocks(fingerprint)):
        parts.append(ring(column, value, 0))
        if radius > 0:
            # Each block gets an equal share, so one crowded bucket of skewed fingerprints
            # cannot starve the other blocks; within a block the nearer rings come first.
            farther = union_all(*(ring(column, value, r) for r in range(1, radius + 1))).limit(dialects.run_time_limit(share)).subquery()
            parts.append(select(farther))
    merged = union(*parts).subquery()
    merged_keys = [merged.c[k.name] for k in binding.table_keys]
    # Rank keys and distances first: only the top rows are joined back to the caller's select.
    nearest = select(merged).order_by(merged.c.distance, *merged_keys).limit(limit).subquery()
    return (
        base.join(nearest, _keys_equal(binding.keys, [nearest.c[k.name] for k in binding.table_keys]))
        .add_columns(nearest.c.distance)
        .order_by(nearest.c.distance, *binding.keys)
    )


def _check_most_similar(stmt: object, limit: object, max_distance: int | None, probe_radius: int) -> None:
    _check_limit(limit)
    _check_distance(max_distance)
    if not isinstance(stmt, Select):
        raise TypeError(f"most_similar() takes a select(), got {type(stmt).__name__}")
    if stmt._order_by_clauses or stmt._limit_clause is not None or stmt._offset_clause is not None:
        raise ValueError("pass a select() without order_by/limit/offset: most_similar() orders and limits it")
    if isinstance(probe_radius, bool) or not isinstance(probe_radius, int) or not 0 <= probe_radius <= MAX_PROBE_RADIUS:
        raise ValueError(f"probe_radius must be an int in 0..{MAX_PROBE_RADIUS}, got {probe_radius!r}")


def _band_branch(binding: Binding, base: Select[Any], target: _Target, radius: int, low: int, high: int | None, limit: int, lazy: bool = False) -> Select[Any]:
    candidates = _band_candidates(binding, target, radius, low, high, lazy=lazy)
    return (
        base.join(candidates, _keys_equal(binding.keys, [candidates.c[k.name] for k in binding.table_keys]))
        .add_columns(candidates.c.distance)
        .order_by(candidates.c.distance, *binding.keys)
        .limit(limit)
    )


def _guarded_bands(binding: Binding, target: _Target, probe_radius: int, branch_for: Any, fewer_within: Any) -> tuple[list[Select[Any]], ColumnElement[Any] | int, ColumnElement[bool]]:
    """Bands ``0..probe_radius`` and the scan's start and guard, per database.

    PostgreSQL (lazy ``Append``, see :class:`simsql.dialects.EagerChoice`): a band past the
    first runs only if it and every band before it are affordable (:func:`_band_affordable`);
    the ``LIMIT`` stops the branches once the answer is full, so the scan needs no guard and
    starts where the last band that ran stopped.

    MySQL/MariaDB (every branch and every check it reaches is materialised): only band 0 runs,
    and the scan runs only when band 0 found fewer than ``limit`` rows (``fewer_within(0)``,
    evaluated once). Wider bands and their checks re-read crowded buckets several times, so
    there they cost more than the scan they might spare; with band 0 alone a query answered
    by its close neighbours costs one probe, and any other the scan plus one probe and count.
    ``fewer_within(k)`` is true when fewer than ``limit`` rows lie within ``4k + 3`` bits.
    """
    branches = []
    guards: list[Any] = []

    def ran(band: int) -> list[Any]:  # band ``band`` ran: it and all before it were affordable
        return [select(g.c.ok).scalar_subquery() for g in guards[:band]]

    for band in range(probe_radius + 1):
        branch = branch_for(band, 4 * band, 4 * band + 3, band > 0)
        if band > 0:
            guards.append(_band_affordable(binding, target, band))
            branch = branch.where(dialects.eager_choice(and_(*ran(band)), false()))
        branches.append(branch)
    if not guards:
        return branches, 4, dialects.eager_guard(fewer_within(0))
    whens = [(not_(select(g.c.ok).scalar_subquery()), literal(4 * (i + 1))) for i, g in enumerate(guards)]
    scan_from = dialects.eager_choice(case(*whens, else_=literal(4 * (probe_radius + 1))), literal(4))
    return branches, scan_from, dialects.eager_guard(fewer_within(0))


def _fewer_within(binding: Binding, base: Select[Any] | None, target: _Target, limit: int, exclusion: ColumnElement[bool] | None = None) -> Any:
    """``fewer_within(radius)`` for :func:`_guarded_bands`: whether ``base`` (or, for the key
    ranking, the whole table minus ``exclusion``) has fewer than ``limit`` rows within
    ``4 * radius + 3`` bits; one probe of the block indexes, counted."""

    def fewer_within(radius: int) -> ColumnElement[bool]:
        candidates = _band_candidates(binding, target, radius, 0, 4 * radius + 3, exclusion)
        if base is None:
            rows: Any = select(candidates.c.distance)
        else:
            within = base.join(candidates, _keys_equal(binding.keys, [candidates.c[k.name] for k in binding.table_keys]))
            rows = within.with_only_columns(*binding.keys)
        return select(func.count()).select_from(rows.subquery()).scalar_subquery() < limit

    return fewer_within


def _probe_reach(max_distance: int | None, probe_radius: int, scan: bool = True) -> int | None:
    """The one radius that answers alone when the bound is within the probes' reach
    (``max_distance < 4 * (probe_radius + 1)``), else None: bands, then the scan. Without the
    scan, the probes answer alone whatever the bound (farther rows only where a block is close)."""
    if max_distance is not None and max_distance < 4 * (probe_radius + 1):
        return radius_for(max_distance)
    return None if scan else probe_radius


def _exact_branches(binding: Binding, base: Select[Any], target: _Target, limit: int, max_distance: int | None, probe_radius: int, scan: bool = True) -> list[Select[Any]]:
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
    )
    branches.append(_scan_branch(binding, base, target, scan_from, max_distance, limit, scan_guard))
    return branches


def _is_plain(stmt: Select[Any], binding: Binding) -> bool:
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


def _key_ranking(binding: Binding, target: _Target, limit: int, max_distance: int | None, probe_radius: int, exclusion: ColumnElement[bool] | None, scan: bool = True) -> Any:
    """The exact top-``limit`` (key, distance) of the whole table: the plan of
    :func:`_exact_branches` without a join per branch (smaller to build and to plan)."""
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
        binding, target, probe_radius, band, _fewer_within(binding, None, target, limit, exclusion)
    )
    distance = hamming_expression(binding.fingerprint, target.fingerprint).label("distance")
    scanned = select(*table_keys, distance).where(binding.fingerprint.is_not(None), scan_guard)
    if exclusion is not None:
        scanned = scanned.where(exclusion)
    top = scanned.order_by(distance, *table_keys).limit(limit).subquery()
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
    and reuses the compiled SQL: the expression tree of the bands, checks and scan (a few
    milliseconds of Python) is built once per shape and dialect, not once per call.
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

    def ranking(self) -> Any:
        """The derived table this stands for, from this element's own bound values."""
        target = _Target(self.fingerprint, self.probes, self.max_radius)
        return _key_ranking(binding_for(self.model), target, self.limit, self.max_distance, self.probe_radius, self.exclusion, self.scan)


@compiles(_KeyRanking)
def _compile_key_ranking(element: _KeyRanking, compiler: Any, **kw: Any) -> str:
    linter = kw.pop("from_linter", None)
    if linter is not None:  # the outer query joins this element, not the subquery it renders
        linter.froms[element] = element.name
    return str(compiler.process(element.ranking(), **kw))


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
) -> Select[Any]:
    """The top-``limit`` rows of ``stmt`` by Hamming distance to ``target``: exact by default.

    ``stmt`` is your ``select(Model)`` with any ``where``/``join`` you like (no ``order_by`` or
    ``limit``); the result selects ``(Model, distance, similarity)`` ordered by distance, then
    primary key. ``target`` is text, a fingerprint, or a model instance (which is excluded).
    ``exclude`` adds rows or primary keys to leave out. Rows with a NULL fingerprint never appear.

    Exact (the default): bands of radius ``0..probe_radius`` come from the block indexes,
    anything farther from a scan that runs only if the bands did not fill ``limit`` rows. A band
    that would read more index entries than the scan would save is skipped and left to the scan,
    so a query whose neighbours are far costs little more than the scan itself. On MySQL and
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
    originality check's search (:func:`find_original`): disguised copies 12-14 bits away mostly
    keep one block that close, and the scan would cost every original submission a pass over the
    table.
    """
    _check_most_similar(stmt, limit, max_distance, probe_radius)
    if not isinstance(scan, bool):
        raise TypeError(f"scan must be True or False, got {scan!r}")
    model = _selected_model(stmt)
    binding = binding_for(model)
    fingerprint, own_key = _resolve(binding, target)
    excluded = _exclude_keys(binding, exclude) + ([own_key] if own_key is not None else [])
    exclusion = _exclusion(binding, excluded)
    schema, table = binding.registry_key
    check = {registry.CHECK_OPTION: (schema, table, binding.fingerprinter.config_id)}

    reach = _probe_reach(max_distance, probe_radius, scan)
    target_values = _Target.of(fingerprint, probe_radius if reach is None else reach) if exact else None
    if target_values is not None and _is_plain(stmt, binding):
        ranked: Any = _KeyRanking(binding, target_values, limit, max_distance, probe_radius, exclusion, scan)
        return (
            stmt.add_columns(ranked.c.distance, _similarity(ranked.c.distance))
            .join(ranked, _keys_equal(binding.keys, [ranked.c[k.name] for k in binding.table_keys]))
            .order_by(ranked.c.distance, *binding.keys)
            .execution_options(**check)
        )
    base = stmt.where(exclusion) if exclusion is not None else stmt
    if target_values is not None:
        branches = _exact_branches(binding, base, target_values, limit, max_distance, probe_radius, scan)
    else:
        branches = [_approximate_branch(binding, base, fingerprint, probe_radius, max_distance, limit)]
    ranked = (union_all(*branches) if len(branches) > 1 else branches[0]).subquery("simsql_ranked")
    entity: Any = aliased(model, ranked)
    return (
        select(entity, ranked.c.distance, _similarity(ranked.c.distance))
        .order_by(*(dialects.eager_order(c) for c in (ranked.c.distance, *(ranked.c[k.name] for k in binding.keys))))
        .limit(limit)
        .execution_options(**check)
    )


def _similarity(distance: ColumnElement[Any]) -> ColumnElement[float]:
    return (literal(1.0, Float()) - distance / literal(64.0, Float())).label("similarity")


ORIGINALITY_DISTANCE = 14
"""Default threshold of :func:`find_original`. Its probes (:data:`ORIGINALITY_PROBE_RADIUS`)
find every row within 11 bits, and a row 12-14 bits away when one of its four blocks is within 2
bits of the submission's: 12, 13 or 14 changed bits placed at random over four blocks leave one
block with 2 or fewer in 97%, 90% and 81% of cases. Measured on documentation prose
(BENCHMARKS.md, "Originality check"), this catches as many light evasions as probing every row
within 14 bits (radius 3) does, within a point, at the index cost of an 11-bit search; 11 bits
alone missed 5-14% of copies with a header and footer or several light edits at once."""

ORIGINALITY_PROBE_RADIUS = 2
"""Default probe radius of :func:`find_original`: each block is probed within 2 bits (137 values
per block, every row within ``4 * 2 + 3 = 11`` bits). Radius 3 (697 values per block) would
make the 14-bit bound exact at about four times the index work."""

ORIGINALITY_CANDIDATES = 16
"""How many of the nearest rows :func:`find_original` verifies by text before answering None."""


def bounded_probe_radius(max_distance: int | None) -> int:
    """The probe radius for a search bounded by ``max_distance``: one that reaches the bound, so
    the block indexes answer alone (radius-2 bands would leave the rest to a scan of the table,
    which every search with nothing within reach runs), and never less than the default."""
    if max_distance is None:
        return DEFAULT_PROBE_RADIUS
    return min(max(DEFAULT_PROBE_RADIUS, radius_for(max_distance)), MAX_PROBE_RADIUS)


def originality_search(
    model: type, target: object, max_distance: int = ORIGINALITY_DISTANCE, *,
    probe_radius: int | None = ORIGINALITY_PROBE_RADIUS, limit: int = ORIGINALITY_CANDIDATES,
) -> Select[Any]:  # fmt: skip
    """The index stage of :func:`find_original`: ``(Model, distance, similarity)`` of the nearest
    ``limit`` candidates for a text or fingerprint, from the block probes alone (never a scan of
    the table). One statement for the check and for the benchmark that times it."""
    if probe_radius is None:
        probe_radius = bounded_probe_radius(max_distance)
    return most_similar(select(model), target, limit=limit, max_distance=max_distance, probe_radius=probe_radius, scan=False)


def find_original(
    session: Session,
    model: type,
    text: str,
    max_distance: int = ORIGINALITY_DISTANCE,
    *,
    probe_radius: int | None = ORIGINALITY_PROBE_RADIUS,
    min_containment: float | None = MIN_CONTAINMENT,
    candidates: int = ORIGINALITY_CANDIDATES,
) -> Match | None:
    """The originality check: the nearest existing row that ``text`` is a copy of, or None.

    Two stages. The block index finds candidate rows, nearest first: every row within
    ``4 * probe_radius + 3`` bits (11 by default), and rows farther out, up to ``max_distance``
    (14), where one of their 16-bit blocks is within ``probe_radius`` bits of the submission's
    (``most_similar(..., scan=False)``; ``probe_radius=None`` probes far enough for every row
    within ``max_distance``, at several times the index work). Then each candidate's own text is
    compared with ``text`` and accepted when at least
    ``min_containment`` of the smaller one's word 5-shingles are in the other
    (:mod:`simsql.containment`). At 14 bits a large table holds some unrelated rows by chance
    (about 1e-4 of pairs of documentation articles); the second stage turns them away, so the
    threshold can be wide enough to catch disguised copies. ``min_containment=None`` skips it (fingerprints only:
    the nearest row within ``max_distance`` is the answer). At most ``candidates`` rows are
    read. Raises :class:`EmptyDocument` for text without words.
    """
    if not isinstance(text, str):
        raise TypeError(f"find_original() checks a text (str), got {type(text).__name__}")
    if min_containment is not None and not 0.0 < min_containment <= 1.0:
        raise ValueError(f"min_containment must be in (0, 1] or None, got {min_containment!r}")
    if isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1:
        raise ValueError(f"candidates must be a positive int, got {candidates!r}")
    statement = originality_search(model, text, max_distance, probe_radius=probe_radius, limit=1 if min_containment is None else candidates)
    rows = session.execute(statement).all()
    if min_containment is None:
        return Match(rows[0][0], int(rows[0][1]), float(rows[0][2])) if rows else None
    binding = binding_for(model)
    submitted = shingles(text)
    for row, distance, similarity in rows:
        stored = binding.text_of(row)
        if stored is not None and containment(submitted, shingles(stored)) >= min_containment:
            return Match(row, int(distance), float(similarity))
    return None


# -- near duplicates ----------------------------------------------------------------------


def _key_value(values: Sequence[Any]) -> Any:
    return values[0] if len(values) == 1 else tuple(values)


def _pair_masks() -> list[int]:
    """16 masks of 28 bits: one 16-bit block plus one 12-bit quarter of the other 48 bits.

    Two fingerprints within 3 bits agree on at least one of the four blocks (pigeonhole), and
    within the remaining 48 bits, where they differ in at most 3 bits, on at least one of four
    12-bit quarters; so they agree on all bits of at least one mask (Manku et al., 2007). Joining
    on 28 bits instead of 16 keeps the candidate pairs few even when real text skews the bits
    and crowds some 16-bit buckets with thousands of rows.
    """
    masks = []
    for block in range(BLOCK_COUNT):
        high = 16 * (BLOCK_COUNT - 1 - block)
        block_mask = 0xFFFF << high
        rest = [bit for bit in range(64) if not (block_mask >> bit) & 1]
        for quarter in range(4):
            bits = rest[12 * quarter : 12 * quarter + 12]
            masks.append(block_mask | sum(1 << bit for bit in bits))
    return masks


def near_duplicates_query(model: type, max_distance: int = 3, dialect: Any = None) -> Any:
    """The statement behind :func:`near_duplicates`: 16 hash self-joins on 28-bit masks, merged.

    Exact for ``max_distance <= 3`` (see :func:`_pair_masks`); larger thresholds would need an
    all-pairs scan and are refused. On a server that cannot hash-join on an expression
    (MariaDB, see :func:`simsql.dialects.hash_joins_expressions`) a masked join would compare
    every pair, so there the four self-joins go through the block indexes instead.
    """
    _check_distance(max_distance)
    if max_distance > MAX_EXACT_BLOCK_DISTANCE:
        raise ValueError(
            f"near_duplicates() is exact up to max_distance={MAX_EXACT_BLOCK_DISTANCE}; "
            f"got {max_distance}. Use most_similar() per row for wider searches."
        )
    binding = binding_for(model)
    a = binding.table.alias("a")
    b = binding.table.alias("b")
    a_keys = [a.c[k.name] for k in binding.table_keys]
    b_keys = [b.c[k.name] for k in binding.table_keys]
    a_fp = a.c[binding.fingerprint.name]
    b_fp = b.c[binding.fingerprint.name]
    distance = hamming_expression(a_fp, b_fp)
    before = a_keys[0] < b_keys[0] if len(a_keys) == 1 else tuple_(*a_keys) < tuple_(*b_keys)
    columns = (
        *(k.label(f"a_{i}") for i, k in enumerate(a_keys)),
        *(k.label(f"b_{i}") for i, k in enumerate(b_keys)),
        distance.label("distance"),
    )
    if dialect is not None and not dialects.hash_joins_expressions(dialect):
        a_blocks = [a.c[column.name] for column in binding.blocks]
        b_blocks = [b.c[column.name] for column in binding.blocks]
        return union(
            *(
                select(*columns).select_from(a.join(b, and_(ab == bb, before))).where(distance <= max_distance)
                for ab, bb in zip(a_blocks, b_blocks)
            )
        )
    parts = []
    for mask in _pair_masks():
        signed = literal(mask, SimHash())
        parts.append(
            select(*columns)
            .select_from(a.join(b, and_(a_fp.op("&")(signed) == b_fp.op("&")(signed), before)))
            .where(distance <= max_distance)
        )
    return union(*parts)


def near_duplicates(session: Session, model: type, max_distance: int = 3) -> list[DuplicatePair]:
    """Every pair of rows within ``max_distance`` bits (<= 3), ordered by keys: the crawler
    deduplication job, done by the database with block self-joins."""
    binding = binding_for(model)
    binding.check_config(session.connection())
    width = len(binding.table_keys)
    dialects.prepare_self_join(session.connection())
    rows = session.execute(near_duplicates_query(model, max_distance, session.get_bind().dialect)).all()
    pairs = [DuplicatePair(_key_value(r[:width]), _key_value(r[width : 2 * width]), int(r[-1])) for r in rows]
    pairs.sort(key=lambda p: (p.a, p.b))
    return pairs


def duplicate_groups(session: Session, model: type, max_distance: int = 3) -> list[list[Any]]:
    """Connected clusters of near-duplicates (transitively linked), each sorted, largest first."""
    parent: dict[Any, Any] = {}

    def find(x: Any) -> Any:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for pair in near_duplicates(session, model, max_distance):
        ra, rb = find(pair.a), find(pair.b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[Any, list[Any]] = {}
    for key in parent:
        groups.setdefault(find(key), []).append(key)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: (-len(g), g[0]))


# -- many targets -------------------------------------------------------------------------


def most_similar_many(
    session: Session,
    model: type,
    targets: Sequence[object],
    limit: int = 10,
    max_distance: int = 3,
) -> list[list[tuple[Any, int]]]:
    """Nearest rows for many targets in one round trip (arrays + LATERAL), for ingest pipelines.

    Returns, per target and in order, up to ``limit`` ``(primary key, distance)`` pairs within
    ``max_distance`` (<= 3, exact), nearest first. A text without features gets ``[]``.
    """
    _check_limit(limit)
    targets = _check_targets(targets)
    _check_distance(max_distance)
    if max_distance > MAX_EXACT_BLOCK_DISTANCE:
        raise ValueError(f"most_similar_many() supports max_distance <= 3, got {max_distance}")
    binding = binding_for(model)
    binding.check_config(session.connection())
    fingerprints: list[int | None] = []
    texts = [t for t in targets if isinstance(t, str)]
    text_fps = iter(binding.fingerprinter.fingerprint_many(texts, empty="none"))
    for target in targets:
        fingerprints.append(next(text_fps) if isinstance(target, str) else _resolve(binding, target)[0])
    live = [(i, fp) for i, fp in enumerate(fingerprints) if fp is not None]
    results: list[list[tuple[Any, int]]] = [[] for _ in targets]
    if not live:
        return results

    if dialects.is_mysql(session.get_bind().dialect):
        statement = _many_by_window(binding, live, limit, max_distance)
    else:
        statement = _many_by_lateral(binding, live, limit, max_distance)
    width = len(binding.table_keys)
    for row in session.execute(statement):
        results[row[0]].append((_key_value(row[1 : 1 + width]), int(row[-1])))
    return results


def _many_by_lateral(binding: Binding, live: list[tuple[int, int]], limit: int, max_distance: int) -> Select[Any]:
    """PostgreSQL: the targets as arrays (one bind each), unnested, each probing the block
    indexes through a LATERAL subquery that keeps its nearest ``limit``."""
    columns = {
        "ord": [i for i, _ in live],
        "fp": [to_signed(fp) for _, fp in live],
        **{f"b{j}": [blocks(fp)[j] for _, fp in live] for j in range(BLOCK_COUNT)},
    }
    arrays = [
        bindparam(f"simsql_{name}", values, type_=postgresql.ARRAY(BigInteger if name in ("fp", "ord") else Integer))
        for name, values in columns.items()
    ]
    queries = func.unnest(*arrays).table_valued(*columns.keys()).render_derived().alias("q")
    distance = hamming_expression(binding.fingerprint, queries.c.fp).label("distance")
    per_block = [
        select(*binding.table_keys, distance)
        .where(column == queries.c[f"b{j}"], distance <= max_distance)
        .correlate(queries)
        for j, column in enumerate(binding.blocks)
    ]
    merged = union(*per_block).subquery().lateral("c")
    key_columns = [merged.c[k.name] for k in binding.table_keys]
    nearest = (
        select(*key_columns, merged.c.distance)
        .order_by(merged.c.distance, *key_columns)
        .limit(limit)
        .lateral("n")
    )
    return select(queries.c.ord, *(nearest.c[k.name] for k in binding.table_keys), nearest.c.distance).select_from(
        queries.join(nearest, literal_column("true"))
    )


def _many_by_window(binding: Binding, live: list[tuple[int, int]], limit: int, max_distance: int) -> Select[Any]:
    """MySQL/MariaDB (MariaDB has no LATERAL, neither has arrays): the targets as a derived
    table of rows, joined to each block index, merged with UNION, and cut to the nearest
    ``limit`` per target with ``ROW_NUMBER()``. Within 3 bits the candidates are few, so
    ranking all of them costs little more than finding them."""
    rows = [
        select(
            literal(i, Integer()).label("ord"),
            # CAST: MySQL types a UNION's column of 64-bit literals DECIMAL, and ``^`` clips a
            # DECIMAL above 2**63 to a signed BIGINT, so distances to such targets came out wrong
            cast(literal(fp, SimHash()), SimHash()).label("fp"),
            *(literal(value, Integer()).label(f"b{j}") for j, value in enumerate(blocks(fp))),
        )
        for i, fp in live
    ]
    queries = (union_all(*rows) if len(rows) > 1 else rows[0]).subquery("q")
    distance = hamming_expression(binding.fingerprint, queries.c.fp).label("distance")
    per_block = [
        select(queries.c.ord, *binding.table_keys, distance)
        .select_from(queries.join(binding.table, column == queries.c[f"b{j}"]))
        .where(distance <= max_distance)
        for j, column in enumerate(binding.blocks)
    ]
    found = union(*per_block).subquery("c")
    key_columns = [found.c[k.name] for k in binding.table_keys]
    rank = func.row_number().over(partition_by=found.c.ord, order_by=[found.c.distance, *key_columns])
    ranked = select(found.c.ord, *key_columns, found.c.distance, rank.label("rank")).subquery("r")
    return (
        select(ranked.c.ord, *(ranked.c[k.name] for k in binding.table_keys), ranked.c.distance)
        .where(ranked.c.rank <= limit)
        .order_by(ranked.c.ord, ranked.c.distance, *(ranked.c[k.name] for k in binding.table_keys))
    )


__all__ = [
    "DuplicatePair",
    "Match",
    "duplicate_groups",
    "find_original",
    "most_similar",
    "most_similar_many",
    "near_duplicates",
    "near_duplicates_query",
    "similar_to",
]

