"""Exact ``most_similar`` on a table too small for its bands: the plan chosen by the table's
size, read when the statement runs.

The bands past the first (:mod:`simsql.queries.planner`) spare the scan when the target has near
neighbours, and cost a few milliseconds whatever the table's size: the server plans every branch,
the probes' value lists and the checks that decide whether they run (measured in BENCHMARKS.md,
"Lists without collateral": about 2 ms of planning against 0.1 ms for the keys-only scan, and
+30% at 100,000 rows on a target with no near copy, the common case of "most similar"). On a
table whose whole scan costs little more than that, the bands can never pay; so a statement
built with them carries a second one without them (band 0, then the scan: the answer is the
same, exact either way), and the server's row estimate, read once a minute per table, picks
which one is sent. The choice is made here, in ``before_execute``, because it needs the
connection the statement runs on; a statement that does not carry :data:`SIZED_OPTION` passes
untouched.

The same hook sends a query through partition lists (:data:`LISTS_OPTION`): it reads the
table's live generations on the statement's own connection (one statement, never cached: a refit
by another connection is seen), and a query that would probe most of the lists (``probes`` near
``lists``, or a ``recall`` whose curve needs that many) is sent as the exact statement, which
reads about as much and answers everything (on a small table, where the lists' fixed cost is a
larger part of the scan, from a smaller share); any other is sent with its lists chosen in
Python from the generations' cached centres and the bounds of the rows left behind, as bound
parameters (:class:`simsql.queries.lists.Chosen`): the server then plans one index scan with
array keys and four ranges, not the choice over the centres and the generation bounds that the
statement as built carries for a caller who compiles it without a connection (Django, ``str``).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, Select, event
from sqlalchemy.engine import Connection

from ..dialects import backend
from ..store.lists import chosen_lists, live_bounds, live_of_query, probes_wanted
from ..store.storage import Binding

SIZED_OPTION = "simsql_sized_plan"
BANDS_FROM_ROWS = 1_000_000
"""Tables estimated below this many rows run exact ``most_similar`` as band 0 and the scan: the
bands' fixed cost is then more than a few percent of the scan they might spare."""
LISTS_OPTION = "simsql_lists_step_aside"
STEP_ASIDE_SHARE = 0.75
"""A query through the lists that would probe this share of them or more runs the exact plan
instead: it reads about as many rows, through one index range per list, and answers less."""
STEP_ASIDE_ROWS = 8000
"""The lists' fixed cost (choosing the lists, one index range per list) in rows of the scan: on a
table of ``rows`` rows they step aside from a share of ``1 - STEP_ASIDE_ROWS / rows`` when that is
lower (a small table: at 20,000 rows, 13 probes of 20 lists were slower than the exact scan)."""
ESTIMATE_SECONDS = 60.0
"""How long a table's row estimate is reused before it is read again."""

_ESTIMATES: weakref.WeakKeyDictionary[Engine, dict[tuple[str | None, str], tuple[float, float]]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class SizedPlan:
    """What a statement with bands carries: its table, and the statement without them."""

    binding: Binding
    small: Callable[[], Select[Any]]
    """Builds the statement without bands (only when it is sent: most calls never need it)."""


@dataclass(frozen=True)
class ListedPlan:
    """What a statement through the lists carries: its table, the target, the probes asked (or
    the recall, in whole percent), the exact statement it steps aside for, and the statement
    with the lists chosen."""

    binding: Binding
    fingerprint: int
    probes: int | None
    percent: int | None
    exact: Callable[[], Select[Any]]
    """Builds the exact statement (only when it is sent)."""
    chosen: Callable[[Sequence[int], Sequence[int]], Select[Any]]
    """Builds the statement probing the given list values, rows left behind within the given
    bounds (:func:`simsql.store.lists.live_bounds`)."""


def stepping_aside(statement: Select[Any], plan: ListedPlan) -> Select[Any]:
    """``statement``, sent as ``plan.exact`` when it would probe :data:`STEP_ASIDE_SHARE` of the
    lists or more, else as ``plan.chosen`` with the lists chosen when it is sent."""
    return statement.execution_options(**{LISTS_OPTION: plan})


def _listed(connection: Connection, plan: ListedPlan) -> Select[Any]:
    """The statement ``plan`` is sent as on ``connection``."""
    schema, live = live_of_query(connection, plan.binding)
    probes = probes_wanted(live, plan.probes, plan.percent)
    lists = live[-1].lists if live else 0
    share = STEP_ASIDE_SHARE
    rows = estimated_rows(connection, plan.binding)
    if rows > 0:
        share = min(share, 1.0 - STEP_ASIDE_ROWS / rows)
    if probes >= share * lists:
        return plan.exact()
    chosen = chosen_lists(connection, schema, plan.binding.registry_key[1], live, plan.fingerprint, probes)
    return plan.chosen(chosen, live_bounds([g.generation for g in live]))


def sized(statement: Select[Any], binding: Binding, small: Callable[[], Select[Any]]) -> Select[Any]:
    """``statement``, sent as ``small`` when the table is estimated below :data:`BANDS_FROM_ROWS` rows."""
    return statement.execution_options(**{SIZED_OPTION: SizedPlan(binding, small)})


def estimated_rows(connection: Connection, binding: Binding) -> float:
    """The server's row estimate of the bound table (:meth:`simsql.dialects.Backend.row_estimate`:
    on Citus its shards' summed), as read at most every :data:`ESTIMATE_SECONDS`."""
    key = binding.registry_key
    known = _ESTIMATES.setdefault(connection.engine, {})
    cached = known.get(key)
    now = time.monotonic()
    if cached is not None and now - cached[0] < ESTIMATE_SECONDS:
        return cached[1]
    rows = backend(connection).row_estimate(connection, binding.table)
    known[key] = (now, rows)
    return rows


@event.listens_for(Engine, "before_execute", retval=True)
def _choose_by_size(connection: Connection, statement: Any, multiparams: Any, params: Any, execution_options: Any) -> Any:
    options = getattr(statement, "_execution_options", None) or {}
    listed = options.get(LISTS_OPTION)
    if isinstance(listed, ListedPlan):
        statement = _carrying(_listed(connection, listed), options)
        options = getattr(statement, "_execution_options", None) or {}
    plan = options.get(SIZED_OPTION)
    if isinstance(plan, SizedPlan) and estimated_rows(connection, plan.binding) < BANDS_FROM_ROWS:
        return _carrying(plan.small(), options), multiparams, params
    return statement, multiparams, params


def _carrying(replacement: Select[Any], options: Any) -> Select[Any]:
    """``replacement`` with the options the statement it replaces carried (the configuration
    check among them), but not the choices already made."""
    kept = {k: v for k, v in options.items() if k not in (LISTS_OPTION, SIZED_OPTION)}
    return replacement.execution_options(**kept)


__all__ = [
    "BANDS_FROM_ROWS",
    "LISTS_OPTION",
    "SIZED_OPTION",
    "STEP_ASIDE_ROWS",
    "STEP_ASIDE_SHARE",
    "ListedPlan",
    "SizedPlan",
    "estimated_rows",
    "sized",
    "stepping_aside",
]
