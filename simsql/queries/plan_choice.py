"""Band or scan: whether exact ``most_similar`` probes the bands past the first, decided before
any of them runs.

The bands (multi-index hashing probes, :mod:`simsql.queries.planner`) pay only when they fill
the answer: then the scan never runs. When the ``limit``-th neighbour lies beyond their reach
(``4 * probe_radius + 3`` bits; an article with no near copy, the common case), the scan runs
anyway and every index entry the bands and their budget counts read was wasted: exact top-10
was slower than the scan alone. So before band 1 the plan asks whether the bands can be
expected to fill, and if not it goes from band 0 straight to the scan:

* **the table's statistics**: the rows expected within the bands' reach of a target the table
  knows nothing about, ``N * P(Binomial(64, 1/2) <= 4 * probe_radius + 3)`` with ``N`` the
  planner's row estimate. At the default radius 2 that is 0.05 rows at 1M rows (10 need about
  200M); at radius 4 (19 bits), 10 rows are expected from about 16,000 rows on;
* **the target's own evidence**, which statistics cannot see: a row within 3 bits, found by
  band 0's four exact probes (counted again, a few index entries). Near copies and clusters
  (series, templates) are where neighbours crowd; a target with one keeps today's bands.

The bands run when either says so, each still only within its budget of index entries, as before.
Real text skews the bits, so the uniform model underestimates its neighbours: the rule then
errs towards the scan, which is what it must never be slower than.

Why the answer stays exact: the decision only chooses which of two exact plans runs. Bands that
do not run return nothing, and the scan then starts at 4 bits, right after band 0 (which always
runs and returns every row within 3 bits); bands that run are followed by the scan from where
the last one stopped, as before. Either way the rows are the full scan's, ordered by (distance,
key). MySQL/MariaDB never run bands past the first (band 0, then the scan when it fell short),
so nothing changes there.
"""

from __future__ import annotations

from functools import lru_cache
from math import comb

from sqlalchemy import Float, literal, or_, select
from sqlalchemy.sql import ColumnElement
from sqlalchemy.sql.selectable import CTE

from ..dialects import row_estimate
from ..storage import Binding

FINGERPRINT_BITS = 64


@lru_cache(maxsize=64)
def share_within(distance: int) -> float:
    """Share of uniformly random 64-bit fingerprints within ``distance`` bits of any target."""
    return sum(comb(FINGERPRINT_BITS, k) for k in range(distance + 1)) / 2.0**FINGERPRINT_BITS


def expected_within(rows: float, probe_radius: int) -> float:
    """Rows of a uniformly filled table of ``rows`` rows expected within the reach of bands
    ``0..probe_radius`` (``4 * probe_radius + 3`` bits) of a target with no near row."""
    return rows * share_within(4 * probe_radius + 3)


def rows_for_bands(probe_radius: int, limit: int) -> float:
    """Table size from which ``limit`` rows are expected within the bands' reach."""
    return limit / share_within(4 * probe_radius + 3)


def bands_worth_running(binding: Binding, probe_radius: int, limit: int, near_row: ColumnElement[bool]) -> CTE:
    """A one-row CTE whose ``ok`` says the bands past the first should run: the table's estimated
    size calls for them, or ``near_row`` (a row within 3 bits, from band 0's probes) does.

    The size test comes first: it reads one catalog row, and when it holds the probe count is
    never evaluated. PostgreSQL evaluates the CTE once, when band 1's branch is first pulled
    (never, for a query band 0 answered)."""
    sized = row_estimate(binding.table) >= literal(rows_for_bands(probe_radius, limit), Float())
    return select(or_(sized, near_row).label("ok")).cte("simsql_bands_worth")
