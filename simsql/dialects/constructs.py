"""SQL constructs built without a dialect and compiled per dialect (``@compiles``).

Queries and the ORM build these once; each backend module registers how its servers spell
them (:mod:`.postgresql`, :mod:`.mysql`). A dialect no family registered is refused when a
statement using one is compiled, naming the server found. Also here: the multi-index probe
sets the block columns are searched with.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from itertools import combinations
from typing import Any

from sqlalchemy import Boolean, Computed, Float, Integer, Text, TypeDecorator, bindparam, cast, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import ColumnElement, TableClause
from sqlalchemy.sql.elements import BindParameter
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.sql.visitors import InternalTraversal

from ..schema.names import BLOCK_COUNT
from .base import BLOCK_BITS, Backend, refuse

COVERING_INFO = "simsql_covering"
"""``Index.info`` key naming the columns a block index must also hold so lookups read only
the index: PostgreSQL ``INCLUDE``s them, MySQL appends them to the key."""


# -- constructs: built without a dialect, compiled per dialect ------------------------------


class HammingDistance(FunctionElement[int]):
    """``popcount(a XOR b)`` for two 64-bit fingerprints, compiled per dialect."""

    type = Integer()
    inherit_cache = True
    name = "simsql_hamming"


@compiles(HammingDistance)
def _hamming_default(element: HammingDistance, compiler: Any, **kw: Any) -> str:
    raise refuse(compiler.dialect)


class CurrentSchema(ColumnElement[str]):
    """The schema an unqualified name resolves to: where simsql's own tables are found
    (PostgreSQL ``current_schema()``, MySQL/MariaDB ``DATABASE()``)."""

    type = Text()
    inherit_cache = True
    _traverse_internals: list[Any] = []  # no state: every instance compiles alike (and caches)


@compiles(CurrentSchema)
def _current_schema_default(element: CurrentSchema, compiler: Any, **kw: Any) -> str:
    raise refuse(compiler.dialect)


class IntegerArray(TypeDecorator[list[int]]):
    """The type of every ``EqualsAny`` bind: an integer array, sent as the text of its literal
    (``'{1,2,3}'``) and cast in SQL (``CAST(... AS INTEGER[])``). Why: psycopg dumps a list
    element by element in Python (about 0.4 ms of client CPU for the 512 probes of
    :func:`simsql.find_original`'s second statement), a str at once; the server parses the
    literal as it would the array. MySQL expands the bind into ``IN (...)`` instead (each value
    an ``Integer``), so this type never reaches it."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Sequence[int] | None, dialect: Any) -> str | None:
        return None if value is None else "{" + ",".join(map(str, map(int, value))) + "}"

    def bind_expression(self, bindvalue: BindParameter[Any]) -> ColumnElement[Any]:
        return cast(bindvalue, postgresql.ARRAY(Integer))


_INTEGER_ARRAY = IntegerArray()
"""One array type for every ``EqualsAny`` bind (the PostgreSQL form; MySQL expands it)."""


class EqualsAny(ColumnElement[bool]):
    """``column`` equals one of ``values``: ``= ANY(:array)`` on PostgreSQL (one bind however
    many values, so one plan cache entry per statement shape), ``IN (...)`` elsewhere.

    The values travel in one bind parameter that is part of the cache key, so a cached
    compilation never reuses another call's values.
    """

    inherit_cache = True
    _is_implicitly_boolean = True  # a predicate: never rendered as ``(...) = 1`` where booleans are ints
    _traverse_internals = [
        ("column", InternalTraversal.dp_clauseelement),
        ("values", InternalTraversal.dp_clauseelement),
    ]

    def __init__(self, column: ColumnElement[Any], values: Sequence[int] | BindParameter[Any]) -> None:
        self.type = Boolean()
        self.column = column
        self.values = values if isinstance(values, BindParameter) else probe_parameter(values)


@compiles(EqualsAny)
def _equals_any_default(element: EqualsAny, compiler: Any, **kw: Any) -> str:
    raise refuse(compiler.dialect)


class BlockExpression(ColumnElement[int]):
    """Block ``index`` (0 = most significant 16 bits) of the fingerprint column ``fingerprint``,
    as the generation expression of a block column (no table prefix: it lives in DDL)."""

    type = Integer()
    inherit_cache = True
    _traverse_internals = [
        ("fingerprint", InternalTraversal.dp_string),
        ("index", InternalTraversal.dp_plain_obj),
    ]

    def __init__(self, fingerprint: str, index: int) -> None:
        if not 0 <= index < BLOCK_COUNT:
            raise ValueError(f"block index must be in 0..{BLOCK_COUNT - 1}, got {index}")
        self.fingerprint = fingerprint
        self.index = index

    @property
    def shift(self) -> int:
        return BLOCK_BITS * (BLOCK_COUNT - 1 - self.index)


@compiles(BlockExpression)
def _block_default(element: BlockExpression, compiler: Any, **kw: Any) -> str:
    # str() of a column outside any dialect (Alembic autogenerate, repr) reads as PostgreSQL's.
    quoted = '"' + element.fingerprint.replace('"', '""') + '"'
    return Backend.block_expression_sql(quoted, element.index)


class BlockComputed(Computed):
    """The generation clause of a block column: ``STORED`` on PostgreSQL (the only kind it can
    index), ``VIRTUAL`` on MySQL/MariaDB (no row bytes, and the only kind those servers add to
    a live table without copying it); the index holds the values either way."""

    inherit_cache = True

    def __init__(self, fingerprint: str, index: int) -> None:
        super().__init__(BlockExpression(fingerprint, index), persisted=True)

    def _copy(self, **kw: Any) -> BlockComputed:
        expression = self.sqltext
        assert isinstance(expression, BlockExpression)
        copied = BlockComputed(expression.fingerprint, expression.index)
        return self._schema_item_copy(copied)  # type: ignore[no-any-return]


class EagerGuard(ColumnElement[bool]):
    """A condition that matters only where ``UNION ALL`` branches all run.

    PostgreSQL runs the branches of an ``Append`` in order and stops pulling rows once the
    outer ``LIMIT`` is met, so a later, costlier branch (a wider band, the scan) never runs when
    nearer ones sufficed: there the guard compiles to ``true``, which the planner removes.
    MySQL and MariaDB materialise every branch of a derived ``UNION``; there the guard is the
    condition itself (uncorrelated, evaluated once), so a branch whose predecessors already
    filled the limit reads nothing.
    """

    inherit_cache = True
    _is_implicitly_boolean = True
    _traverse_internals = [("condition", InternalTraversal.dp_clauseelement)]

    def __init__(self, condition: ColumnElement[bool]) -> None:
        self.type = Boolean()
        self.condition = condition


@compiles(EagerGuard)
def _eager_guard_default(element: EagerGuard, compiler: Any, **kw: Any) -> str:
    raise refuse(compiler.dialect)


def eager_guard(condition: ColumnElement[bool]) -> EagerGuard:
    return EagerGuard(condition)


class EagerChoice(ColumnElement[Any]):
    """One expression where ``UNION ALL`` branches run lazily, another where they all run.

    PostgreSQL pulls the branches of an ``Append`` in order and stops at the ``LIMIT``, so
    costly branches may stay in the statement behind cheap run-time checks: there it is
    ``lazy``. MySQL and MariaDB materialise every branch and every check they reach, so a plan
    shaped for early stopping costs them more than it saves: there it is ``eager``, usually a
    constant that lets the optimizer drop a branch before reading anything.
    """

    inherit_cache = True
    _traverse_internals = [
        ("lazy", InternalTraversal.dp_clauseelement),
        ("eager", InternalTraversal.dp_clauseelement),
    ]

    def __init__(self, lazy: ColumnElement[Any], eager: ColumnElement[Any]) -> None:
        self.type = lazy.type
        self.lazy = lazy
        self.eager = eager
        self._is_implicitly_boolean = lazy._is_implicitly_boolean


@compiles(EagerChoice)
def _eager_choice_default(element: EagerChoice, compiler: Any, **kw: Any) -> str:
    raise refuse(compiler.dialect)


def eager_choice(lazy: ColumnElement[Any], eager: ColumnElement[Any]) -> EagerChoice:
    return EagerChoice(lazy, eager)


class EagerOrder(ColumnElement[int]):
    """An ORDER BY key that matters only where ``UNION ALL`` branches all run.

    The answer's order is the branches' order. PostgreSQL's ``Append`` yields them in order, and
    a real sort key would make it read every branch before the first row (no early stop): there
    the key is a constant expression, which the planner drops. MySQL and MariaDB give no order
    to rows read back from a derived ``UNION``: there it is the key itself.
    """

    inherit_cache = True
    _traverse_internals = [("ordered", InternalTraversal.dp_clauseelement)]

    def __init__(self, ordered: ColumnElement[Any]) -> None:
        self.type = Integer()
        self.ordered = ordered  # not ``key``: SQLAlchemy names columns by their ``.key``


@compiles(EagerOrder)
def _eager_order_default(element: EagerOrder, compiler: Any, **kw: Any) -> str:
    raise refuse(compiler.dialect)


def eager_order(key: ColumnElement[Any]) -> EagerOrder:
    return EagerOrder(key)


class SortBound(ColumnElement[bool]):
    """The ``WHERE`` of a top-N scan: ``rows`` (the rows it ranks), or ``bounded`` (those of them
    within a bound every row of the answer lies within) where bounding spares the sort.

    MySQL and MariaDB build a sort key for every row their top-N sort reads, whatever the heap
    holds, a good share of a covering-index scan's work: ``bounded`` there, so only the few rows
    within the bound reach the sort (BENCHMARKS.md, "MySQL 9's exact scan, bounded before its
    sort"). PostgreSQL: ``rows``, its statement as it was, the bound's subquery never sent (its
    bounded heap sort compares a row with the worst it holds; a bounded scan was not measured
    there). ``bounded`` must select a superset of the answer and nothing outside ``rows``.
    """

    inherit_cache = True
    _is_implicitly_boolean = True
    _traverse_internals = [
        ("rows", InternalTraversal.dp_clauseelement),
        ("bounded", InternalTraversal.dp_clauseelement),
    ]

    def __init__(self, rows: ColumnElement[bool], bounded: ColumnElement[bool]) -> None:
        self.type = Boolean()
        self.rows = rows
        self.bounded = bounded


@compiles(SortBound)
def _sort_bound_default(element: SortBound, compiler: Any, **kw: Any) -> str:
    raise refuse(compiler.dialect)


def sort_bound(rows: ColumnElement[bool], bounded: ColumnElement[bool]) -> SortBound:
    return SortBound(rows, bounded)


class HashJoinHint(ColumnElement[Any]):
    """A prefix of each masked self-join of ``near_duplicates`` (``SELECT <hint> ...``), naming
    the join's inner alias. Nothing on most servers; MySQL's ``NO_RANGE_OPTIMIZATION`` of the
    inner side there: without it MySQL 9 reads ``a.key < b.key`` as a key range on ``b``
    re-planned for every row of ``a`` (a nested loop over half the table a row) instead of
    hash-joining on the mask (``tests/test_queries.py``)."""

    inherit_cache = True
    _traverse_internals = [("inner", InternalTraversal.dp_string)]

    def __init__(self, inner: str) -> None:
        self.inner = inner


@compiles(HashJoinHint)
def _hash_join_hint_default(element: HashJoinHint, compiler: Any, **kw: Any) -> str:
    return ""


def hash_join_hint(inner: str) -> HashJoinHint:
    return HashJoinHint(inner)


class RowEstimate(ColumnElement[float]):
    """The server's estimate of a table's row count (PostgreSQL ``pg_class.reltuples``,
    MySQL/MariaDB ``information_schema.TABLES.TABLE_ROWS``; 0 when never analysed or missing):
    what a plan can compare its own work with, read at execution time, never counted."""

    type = Float()
    inherit_cache = True
    _traverse_internals = [("table", InternalTraversal.dp_clauseelement)]

    def __init__(self, table: TableClause) -> None:
        self.table = table


@compiles(RowEstimate)
def _row_estimate_default(element: RowEstimate, compiler: Any, **kw: Any) -> str:
    raise refuse(compiler.dialect)


def row_estimate(table: TableClause) -> RowEstimate:
    return RowEstimate(table)


def read_row_estimate(connection: Connection, table: TableClause) -> float:
    """:class:`RowEstimate` of ``table``, read on its own: the families'
    :meth:`~simsql.dialects.Backend.row_estimate`. Sent as plain text (compiled here, with the
    name as a literal of the dialect's own rules): a catalog read, not one of the caller's
    statements, so no statement hook sees it."""
    sql = str(select(RowEstimate(table)).compile(dialect=connection.dialect, compile_kwargs={"literal_binds": True}))
    return float(connection.exec_driver_sql(sql).scalar() or 0.0)


class WholeQuotient(ColumnElement[int]):
    """``dividend / divisor`` rounded toward zero, for non-negative integers: PostgreSQL's
    ``/`` on integers; MySQL's ``/`` is decimal division there, its integer one is ``DIV``."""

    type = Integer()
    inherit_cache = True
    _traverse_internals = [
        ("dividend", InternalTraversal.dp_clauseelement),
        ("divisor", InternalTraversal.dp_plain_obj),
    ]

    def __init__(self, dividend: ColumnElement[Any], divisor: int) -> None:
        self.dividend = dividend
        self.divisor = int(divisor)


@compiles(WholeQuotient)
def _whole_quotient_default(element: WholeQuotient, compiler: Any, **kw: Any) -> str:
    raise refuse(compiler.dialect)


def whole_quotient(dividend: ColumnElement[Any], divisor: int) -> WholeQuotient:
    return WholeQuotient(dividend, divisor)


class RunTimeLimit(ColumnElement[int]):
    """A ``LIMIT`` computed when the statement runs (a budget from :class:`RowEstimate`).

    PostgreSQL takes any expression there and stops reading at the bound. MySQL and MariaDB
    accept only constants in ``LIMIT``: there it compiles to "all rows" (2^64 - 1, their
    documented idiom), so a bounded read reads everything it would reach. A bounded count then
    gives the same comparison at a higher cost; a bounded candidate set is a superset.
    """

    type = Integer()
    inherit_cache = True
    _traverse_internals = [("bound", InternalTraversal.dp_clauseelement)]

    def __init__(self, bound: ColumnElement[Any]) -> None:
        self.bound = bound


@compiles(RunTimeLimit)
def _run_time_limit_default(element: RunTimeLimit, compiler: Any, **kw: Any) -> str:
    raise refuse(compiler.dialect)


def run_time_limit(bound: ColumnElement[Any]) -> RunTimeLimit:
    return RunTimeLimit(bound)


def hamming_expression(a: ColumnElement[Any], b: ColumnElement[Any]) -> HammingDistance:
    return HammingDistance(a, b)


def probe_parameter(values: Sequence[int], key: str | None = None) -> BindParameter[Any]:
    """``values`` as the one bound parameter :func:`equals_any` compares with: a plain integer
    for a single value, an integer array (an ``IN`` list on MySQL) for several. Built apart
    from the comparison so a statement can be compiled once and given new values each call;
    with ``key``, always the array, named, so a statement built once takes any number of values
    (none included) as an execution parameter."""
    if key is not None:
        return bindparam(key, list(values), type_=_INTEGER_ARRAY)
    if len(values) == 1:
        return bindparam(None, values[0], type_=Integer())
    return bindparam(None, list(values), type_=_INTEGER_ARRAY)


def equals_any(column: ColumnElement[Any], values: Sequence[int] | BindParameter[Any]) -> ColumnElement[bool]:
    """``column`` equals one of ``values`` (see :class:`EqualsAny`), or the value(s) of a
    :func:`probe_parameter`."""
    if isinstance(values, BindParameter):
        return EqualsAny(column, values) if isinstance(values.type, IntegerArray) else column == values
    if len(values) == 1:
        return column == values[0]
    return EqualsAny(column, values)


def block_computed(fingerprint: str, index: int) -> BlockComputed:
    """The ``Computed`` clause of block column ``index`` of the fingerprint column ``fingerprint``."""
    return BlockComputed(fingerprint, index)


@lru_cache(maxsize=8)
def _masks(radius: int) -> tuple[int, ...]:
    masks = [0]
    for r in range(1, radius + 1):
        for bits in combinations(range(BLOCK_BITS), r):
            masks.append(sum(1 << b for b in bits))
    return tuple(masks)


def probe_values(block: int, radius: int) -> list[int]:
    """All 16-bit values within ``radius`` bits of ``block`` (1, 17, 137, 697, ... values).

    Multi-index hashing: a fingerprint within ``4 * (radius + 1) - 1`` bits of the query has at
    least one block within ``radius`` bits of the query's block (pigeonhole over 4 blocks).
    """
    return [block ^ mask for mask in _masks(radius)]


def ring_values(block: int, radius: int) -> list[int]:
    """The 16-bit values exactly ``radius`` bits from ``block`` (1, 16, 120, 560, ... values)."""
    return [block ^ sum(1 << b for b in bits) for bits in combinations(range(BLOCK_BITS), radius)]


def radius_for(max_distance: int) -> int:
    """Smallest probe radius that finds every fingerprint within ``max_distance`` bits."""
    return max(0, (max_distance + 1 + BLOCK_COUNT - 1) // BLOCK_COUNT - 1)


def fenced_cte(statement: Any, name: str) -> Any:
    """``statement`` as a CTE the server computes once and never merges into the query that
    reads it, so a join on its columns stays a join on them: ``MATERIALIZED`` on PostgreSQL (a
    CTE read once is otherwise inlined); a ``DISTINCT`` derived table on MySQL and MariaDB (a
    plain one is merged; these materialize it and key it on the join column). ``statement``'s
    rows must be distinct already, so ``DISTINCT`` changes nothing but the plan."""
    return statement.prefix_with("DISTINCT", dialect="mysql").cte(name).prefix_with("MATERIALIZED", dialect="postgresql")


class InSelected(ColumnElement[bool]):
    """``column`` equals one of the values ``selected`` (a one-column select) returns, read by
    one scan of ``column``'s index for all of them: ``= ANY(ARRAY(...))`` on PostgreSQL (the
    values computed once, then one index scan with array keys; a join to the select, or ``IN``,
    is planned as one index scan per value under a join, whose per-row cost the partition
    lists' query paid: issue 41), ``IN (...)`` elsewhere."""

    inherit_cache = True
    _is_implicitly_boolean = True
    _traverse_internals = [
        ("column", InternalTraversal.dp_clauseelement),
        ("selected", InternalTraversal.dp_clauseelement),
    ]

    def __init__(self, column: ColumnElement[Any], selected: Any) -> None:
        self.type = Boolean()
        self.column = column
        self.selected = selected


@compiles(InSelected)
def _in_selected_default(element: InSelected, compiler: Any, **kw: Any) -> str:
    raise refuse(compiler.dialect)
