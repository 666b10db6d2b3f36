"""Band or scan: whether exact ``most_similar`` probes the bands past the first, decided before
any of them runs.

The bands (multi-index hashing probes, :mod:`simsql.queries.planner`) pay only when they fill
the answer: then the scan never runs. When the ``limit``-th neighbour lies beyond their reach
(``4 * probe_radius + 3`` bits; an article with no near copy, the common case), the scan runs
anyway and every index entry the bands and their budget counts read is wasted: exact top-10
was slower than the scan alone. So before band 1 the plan asks whether a row within the bands'
reach is to be expected at all, and if not it goes from band 0 straight to the scan.

**The statistics** (:func:`expected_within`): how crowded the target's own 16-bit buckets are,
read as the index entries of its four exact block values (the buckets band 0 probes; counted, no
distance computed) over the table's estimated rows. If a share ``f`` of the rows holds the
target's value in a block, a row agrees with the target on each of that block's bits with
probability ``f ** (1/16)``; taking the four blocks' geometric mean as every bit's agreement,
rows are ``Binomial(64, 1 - agreement)`` bits away, and ``rows * P(distance <= reach)`` are
expected within reach. On a uniformly filled table that is the exact expectation (0.05 rows
within 11 bits at 1M rows); real text's skewed bits make crowded buckets, and the model follows
them. It assumes bits independent, so it underestimates real text's neighbours: the bands are
tried when one row is expected (:data:`EXPECTED_ROWS`), not ``limit``; how that sorts real-text
targets is measured in BENCHMARKS.md ("Exact most_similar against the scan"). Clusters the
buckets do not show are left to the evidence below.

**The target's evidence**, which statistics cannot see: a row within 3 bits, in the same pass
over the four exact buckets (band 0's entries, read again index-only). Near copies and clusters (series, templates)
are where neighbours crowd; a target with one keeps the bands.

The bands run when either says so, each still only within its budget of index entries, as before.

Why the answer stays exact: the decision only chooses which of two exact plans runs. Bands that
do not run return nothing, and the scan then starts at 4 bits, right after band 0 (which always
runs and returns every row within 3 bits); bands that run are followed by the scan from where
the last one stopped, as before. Either way the rows are the full scan's, ordered by (distance,
key). MySQL/MariaDB never run bands past the first (band 0, then the scan when it fell short),
so nothing changes there.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb, exp, log
from typing import Any

from sqlalchemy import BigInteger, Float, Integer, and_, case, cast, func, literal, or_, select, union_all
from sqlalchemy.sql import ColumnElement
from sqlalchemy.sql.selectable import CTE

from ..dialects import BLOCK_BITS, BLOCK_COUNT, equals_any, hamming_expression, row_estimate
from ..store.storage import Binding

FINGERPRINT_BITS = BLOCK_COUNT * BLOCK_BITS

EXPECTED_ROWS = 1.0
"""The bands past the first are tried when the model expects at least this many rows within
their reach (see the module's docstring for why one, not ``limit``)."""

BAND_BUDGET = 0.01
"""A band past the first runs only if its probes meet fewer index entries than this share of
the table's rows (see :func:`band_budget`)."""

MIN_BAND_BUDGET = 5000
"""Budget floor: below this many entries a band is cheap whatever the table's size."""


def band_budget(binding: Binding) -> ColumnElement[Any]:
    """Most index entries a band may read before the scan is the cheaper way to its rows.

    A band reads its candidates through the block indexes at about the cost per entry at which
    the scan reads rows, so a band that would read more than :data:`BAND_BUDGET` of the table
    is not worth running when the scan must follow anyway. The table size is the planner's
    estimate, read when the statement runs (a floor keeps small or unanalysed tables on bands).
    """
    estimate = row_estimate(binding.table) * literal(BAND_BUDGET, Float())
    return cast(func.greatest(estimate, literal(MIN_BAND_BUDGET, Float())), BigInteger)


def _binomial_terms(reach: int) -> list[tuple[int, float]]:
    return [(k, float(comb(FINGERPRINT_BITS, k))) for k in range(reach + 1)]


def expected_within(bucket_rows: Sequence[float], table_rows: float, reach: int) -> float:
    """Rows expected within ``reach`` bits of a target whose exact block values each hold
    ``bucket_rows`` rows of a table of ``table_rows`` rows: the statistic the statement computes
    (:func:`bands_worth_running`), in Python for tests and benchmarks."""
    rows = max(table_rows, 1.0)
    log_share = sum(log(min(max(count, 1.0) / rows, 1.0)) for count in bucket_rows)
    differ = 1.0 - exp(log_share / FINGERPRINT_BITS)
    return rows * sum(c * differ**k * (1.0 - differ) ** (FINGERPRINT_BITS - k) for k, c in _binomial_terms(reach))


def _bucket_facts(binding: Binding, fingerprint: ColumnElement[Any], exact_probes: Sequence[Any], exclusion: ColumnElement[bool] | None) -> Any:
    """One pass over the target's four exact buckets (the entries band 0 reads, index-only):
    each bucket's rows, and whether any row other than the excluded lies within 3 bits."""
    near: Any = hamming_expression(binding.fingerprint, fingerprint) <= 3
    if exclusion is not None:
        near = and_(near, exclusion)
    entries = union_all(
        *(
            select(literal(j, Integer()).label("block"), case((near, 1), else_=0).label("near")).select_from(binding.table).where(equals_any(column, probe))
            for j, (column, probe) in enumerate(zip(binding.blocks, exact_probes))
        )
    ).subquery()
    counts = [func.sum(case((entries.c.block == j, 1), else_=0)).label(f"rows_{j}") for j in range(BLOCK_COUNT)]
    return select(*counts, func.coalesce(func.max(entries.c.near), 0).label("near")).offset(0).subquery()


def _worth_it(binding: Binding, facts: Any, reach: int) -> ColumnElement[bool]:
    """Whether :func:`expected_within` (in SQL, from the bucket counts and the planner's row
    estimate) reaches :data:`EXPECTED_ROWS`, or the facts found a row within 3 bits."""
    rows = func.greatest(row_estimate(binding.table), literal(1.0, Float()))
    log_share: Any = literal(0.0, Float())
    for j in range(BLOCK_COUNT):
        count = func.greatest(func.coalesce(facts.c[f"rows_{j}"], 0), 1)
        log_share = log_share + func.ln(func.least(count / rows, literal(1.0, Float())))
    # OFFSET 0 keeps the model a subquery of its own: pulled up, its expression would be copied
    # into each of the binomial's terms.
    differ = (literal(1.0, Float()) - func.exp(log_share / FINGERPRINT_BITS)).label("differ")
    model = select(rows.label("rows"), differ, facts.c.near).select_from(facts).offset(0).subquery()
    q = model.c.differ
    share = sum(
        (literal(c, Float()) * func.power(q, k) * func.power(literal(1.0, Float()) - q, FINGERPRINT_BITS - k) for k, c in _binomial_terms(reach)),
        literal(0.0, Float()),
    )
    return select(or_(model.c.rows * share >= literal(EXPECTED_ROWS, Float()), model.c.near > 0)).scalar_subquery()


def bands_worth_running(
    binding: Binding, fingerprint: ColumnElement[Any], exact_probes: Sequence[Any], probe_radius: int, exclusion: ColumnElement[bool] | None,
) -> CTE:  # fmt: skip
    """A one-row CTE whose ``ok`` says the bands past the first should run: the statistics
    expect a row within their reach (``exact_probes``: the target's value in each block), or a
    row (``exclusion`` holding) lies within 3 bits of ``fingerprint``.

    PostgreSQL evaluates it once, when band 1's branch is first pulled (never for a query band 0
    answered): one index-only pass over the four buckets band 0 probed."""
    facts = _bucket_facts(binding, fingerprint, exact_probes, exclusion)
    return select(_worth_it(binding, facts, 4 * probe_radius + 3).label("ok")).cte("simsql_bands_worth")
