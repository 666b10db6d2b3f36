"""The one place where SQL differs between databases.

Everything database-specific that simsql emits goes through here: the Hamming-distance
expression, "column equals any of these values", and the version check. PostgreSQL >= 14 is
implemented; MySQL/MariaDB (``BIT_COUNT(a ^ b)``, unsigned ``BIGINT``) is planned and only needs
the constructs below compiled for ``"mysql"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from itertools import combinations
from typing import Any

from sqlalchemy import Float, Integer, bindparam, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import ColumnElement, TableClause, any_
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.sql.visitors import InternalTraversal

from .errors import UnsupportedDatabase

MIN_POSTGRES = 140000
"""``bit_count`` arrived in PostgreSQL 14."""

BLOCK_COUNT = 4
BLOCK_BITS = 16
BLOCK_MASK = (1 << BLOCK_BITS) - 1


class HammingDistance(FunctionElement[int]):
    """``popcount(a XOR b)`` for two 64-bit fingerprints, compiled per dialect."""

    type = Integer()
    inherit_cache = True
    name = "simsql_hamming"


@compiles(HammingDistance)
def _hamming_default(element: HammingDistance, compiler: Any, **kw: Any) -> str:
    raise UnsupportedDatabase(
        f"simsql does not support the {compiler.dialect.name!r} dialect yet; use PostgreSQL >= 14"
    )


@compiles(HammingDistance, "postgresql")
def _hamming_postgresql(element: HammingDistance, compiler: Any, **kw: Any) -> str:
    version = getattr(compiler.dialect, "server_version_info", None)
    if version is not None and version < (14,):
        found = ".".join(str(part) for part in version)
        raise UnsupportedDatabase(
            f"simsql needs PostgreSQL >= 14 (for bit_count), but the server is PostgreSQL {found}"
        )
    a, b = list(element.clauses)
    return f"bit_count(CAST(({compiler.process(a, **kw)} # {compiler.process(b, **kw)}) AS BIT(64)))"


class RowEstimate(ColumnElement[float]):
    """The planner's row count of a table (``pg_class.reltuples``, 0 when never analysed or
    missing): what a plan can compare its own work with, read at execution time."""

    type = Float()
    inherit_cache = True
    _traverse_internals = [("table", InternalTraversal.dp_clauseelement)]

    def __init__(self, table: TableClause) -> None:
        self.table = table


@compiles(RowEstimate)
def _row_estimate_default(element: RowEstimate, compiler: Any, **kw: Any) -> str:
    raise UnsupportedDatabase(
        f"simsql does not support the {compiler.dialect.name!r} dialect yet; use PostgreSQL >= 14"
    )


@compiles(RowEstimate, "postgresql")
def _row_estimate_postgresql(element: RowEstimate, compiler: Any, **kw: Any) -> str:
    name = compiler.preparer.format_table(element.table).replace("'", "''")
    return f"(SELECT greatest(max(reltuples), 0) FROM pg_class WHERE oid = to_regclass('{name}'))"


def row_estimate(table: TableClause) -> RowEstimate:
    return RowEstimate(table)


def hamming_expression(a: ColumnElement[Any], b: ColumnElement[Any]) -> HammingDistance:
    return HammingDistance(a, b)


_INTEGER_ARRAY = postgresql.ARRAY(Integer)


def equals_any(column: ColumnElement[Any], values: Sequence[int]) -> ColumnElement[bool]:
    """``column = ANY(:array)``: one bind parameter however many values, so the statement
    text, and therefore its plan cache entry, does not depend on the probe radius."""
    if len(values) == 1:
        return column == values[0]
    return column == any_(bindparam(None, list(values), type_=_INTEGER_ARRAY))


def block_expression_sql(fingerprint_sql: str, index: int) -> str:
    """SQL deriving block ``index`` (0 = most significant) from a quoted bigint column."""
    shift = BLOCK_BITS * (BLOCK_COUNT - 1 - index)
    return f"CAST(({fingerprint_sql} >> {shift}) & {BLOCK_MASK} AS INTEGER)"


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


def server_version(connection: Connection) -> int:
    """``server_version_num`` of the connected PostgreSQL, after checking the backend."""
    name = connection.dialect.name
    if name != "postgresql":
        raise UnsupportedDatabase(f"simsql needs PostgreSQL >= 14, but the database is {name!r}")
    return int(connection.execute(text("SHOW server_version_num")).scalar_one())


def check_server(connection: Connection) -> None:
    """Refuse PostgreSQL older than 14 (no ``bit_count``) with the version that was found."""
    version = server_version(connection)
    if version < MIN_POSTGRES:
        found = f"{version // 10000}.{version % 10000}" if version >= 100000 else str(version)
        raise UnsupportedDatabase(
            f"simsql needs PostgreSQL >= 14 (for bit_count), but the server is PostgreSQL {found}"
        )


