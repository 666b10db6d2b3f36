"""PostgreSQL >= 14: ``bit_count`` over ``#`` (XOR), ``= ANY(array)``, ``ON CONFLICT``.

Fingerprints are stored in a signed ``bigint`` (two's complement, see :mod:`simsql.types`);
XOR and so every distance is the same on the signed bits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import any_

from . import MIN_POSTGRES, BlockExpression, EagerGuard, EagerOrder, EqualsAny, HammingDistance, RowEstimate, RunTimeLimit, WholeQuotient, block_expression_sql
from ..errors import UnsupportedDatabase


def _refuse(found: str) -> UnsupportedDatabase:
    return UnsupportedDatabase(f"simsql needs PostgreSQL >= 14 (for bit_count), but the server is PostgreSQL {found}")


@compiles(HammingDistance, "postgresql")
def _hamming(element: HammingDistance, compiler: Any, **kw: Any) -> str:
    version = getattr(compiler.dialect, "server_version_info", None)
    if version is not None and version < (14,):
        raise _refuse(".".join(str(part) for part in version))
    a, b = list(element.clauses)
    return f"bit_count(CAST(({compiler.process(a, **kw)} # {compiler.process(b, **kw)}) AS BIT(64)))"


@compiles(EqualsAny, "postgresql")
def _equals_any(element: EqualsAny, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.column == any_(element.values), **kw)  # type: ignore[no-any-return]


@compiles(BlockExpression, "postgresql")
def _block(element: BlockExpression, compiler: Any, **kw: Any) -> str:
    return block_expression_sql(compiler.preparer.quote_identifier(element.fingerprint), element.index)


@compiles(EagerGuard, "postgresql")
def _eager_guard(element: EagerGuard, compiler: Any, **kw: Any) -> str:
    return "true"


@compiles(EagerOrder, "postgresql")
def _eager_order(element: EagerOrder, compiler: Any, **kw: Any) -> str:
    # Not a bare literal (``ORDER BY 0`` would name a column by position); constant, so no sort.
    return "CAST(0 AS INTEGER)"


@compiles(RowEstimate, "postgresql")
def _row_estimate(element: RowEstimate, compiler: Any, **kw: Any) -> str:
    name = compiler.preparer.format_table(element.table).replace("'", "''")
    return f"(SELECT greatest(max(reltuples), 0) FROM pg_class WHERE oid = to_regclass('{name}'))"


@compiles(RunTimeLimit, "postgresql")
def _run_time_limit(element: RunTimeLimit, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.bound, **kw)  # type: ignore[no-any-return]


@compiles(WholeQuotient, "postgresql")
def _whole_quotient(element: WholeQuotient, compiler: Any, **kw: Any) -> str:
    return f"({compiler.process(element.dividend, **kw)} / {element.divisor})"


def server_version_num(connection: Connection) -> int:
    return int(connection.execute(text("SHOW server_version_num")).scalar_one())


def check_server(connection: Connection) -> None:
    version = server_version_num(connection)
    if version < MIN_POSTGRES:
        raise _refuse(f"{version // 10000}.{version % 10000}" if version >= 100000 else str(version))


def current_schema(connection: Connection) -> str:
    return str(connection.execute(text("SELECT current_schema()")).scalar_one())


def relation_exists(connection: Connection, name: str) -> bool:
    """Resolved through ``search_path`` as every unqualified simsql statement is."""
    return bool(connection.execute(text("SELECT to_regclass(:n) IS NOT NULL"), {"n": name}).scalar_one())


def insert_new(table: Any, values: dict[str, Any]) -> Any:
    return postgresql.insert(table).values(values).on_conflict_do_nothing()


def upsert(table: Any, values: dict[str, Any], keys: Sequence[str], update: Sequence[str]) -> Any:
    statement = postgresql.insert(table).values(values)
    return statement.on_conflict_do_update(
        index_elements=list(keys), set_={name: statement.excluded[name] for name in update}
    )


def prepare_self_join(connection: Connection) -> None:
    # Each self-join hashes the whole table; give it room so it does not spill to disk.
    connection.execute(text("SET LOCAL work_mem = '256MB'"))



def hash_joins_expressions(dialect: Dialect) -> bool:
    return True


REGISTRY_PROBE = "SELECT to_regclass(%s) IS NOT NULL, to_regclass(%s) IS NOT NULL, current_schema()"
"""On the DBAPI cursor (format paramstyle): registry present, version table present, schema."""
