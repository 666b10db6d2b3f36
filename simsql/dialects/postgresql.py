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

from . import MIN_POSTGRES, BlockExpression, EagerChoice, EagerGuard, EagerOrder, EqualsAny, HammingDistance, RowEstimate, RunTimeLimit, WholeQuotient, block_expression_sql
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


@compiles(EagerChoice, "postgresql")
def _eager_choice(element: EagerChoice, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.lazy, **kw)  # type: ignore[no-any-return]


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


# -- the live-table lifecycle: catalog reads, time bounds, who holds a lock -----------------
#
# What :mod:`simsql.lifecycle.catalog` and :mod:`simsql.lifecycle.apply` ask of the server.
# Tables are named by bound values (``pg_class``, ``to_regclass``), never formatted into SQL.

NAME = "postgresql"

TRANSACTIONAL_DDL = True
"""DDL runs inside a transaction: a plan's transactional steps commit or vanish together."""

SCOPED_TIMEOUTS = True
"""``SET LOCAL`` bounds last until the transaction ends."""

TIMEOUT_STATES = {"55P03": "lock", "57014": "statement"}
"""SQLSTATEs of ``lock_not_available`` and ``query_canceled``."""

ACTIVITY_VIEW = "pg_stat_activity"
"""Where an administrator looks for the sessions a timeout names."""


def _qualified(connection: Connection, schema: str, table: str) -> str:
    quote = connection.dialect.identifier_preparer.quote_identifier
    return f"{quote(schema)}.{quote(table)}"


def table_facts(connection: Connection, schema: str, table: str) -> tuple[str, list[tuple[str, str, bool]], tuple[str, ...], tuple[str, ...]] | None:
    """(relkind, [(column, type, is_text)], primary key, own triggers) of a table, or None."""
    row = connection.execute(
        text(
            "SELECT c.oid, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = :schema AND c.relname = :table"
        ),
        {"schema": schema, "table": table},
    ).first()
    if row is None or row.relkind not in ("r", "p"):
        return None
    columns = [
        (r.attname, r.type, r.typcategory == "S")
        for r in connection.execute(
            text(
                "SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type, t.typcategory "
                "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
                "WHERE a.attrelid = :oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
            ),
            {"oid": row.oid},
        )
    ]
    keys = tuple(
        connection.execute(
            text(
                "SELECT a.attname FROM pg_constraint k CROSS JOIN LATERAL unnest(k.conkey) WITH ORDINALITY AS u(attnum, n) "
                "JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.attnum "
                "WHERE k.conrelid = :oid AND k.contype = 'p' ORDER BY u.n"
            ),
            {"oid": row.oid},
        ).scalars()
    )
    triggers = tuple(
        connection.execute(
            text("SELECT tgname FROM pg_trigger WHERE tgrelid = :oid AND NOT tgisinternal ORDER BY tgname"),
            {"oid": row.oid},
        ).scalars()
    )
    return str(row.relkind), columns, keys, triggers


def invalid_indexes(connection: Connection, schema: str, names: Sequence[str]) -> tuple[str, ...]:
    """Which of the indexes ``names`` a failed concurrent build left INVALID."""
    return tuple(
        connection.execute(
            text(
                "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = :schema AND c.relname = ANY(:names) AND NOT i.indisvalid"
            ),
            {"schema": schema, "names": list(names)},
        ).scalars()
    )


def dependents(connection: Connection, schema: str, table: str, columns: Sequence[str], own: Sequence[str]) -> list[str]:
    """Objects that depend on ``columns`` of ``schema.table`` (or on the whole table when
    ``columns`` is empty), other than the indexes ``own``, from ``pg_depend``."""
    rows = connection.execute(
        text(
            "SELECT DISTINCT pg_describe_object(d.classid, d.objid, d.objsubid) AS what, c.relname "
            "FROM pg_depend d LEFT JOIN pg_class c ON d.classid = CAST('pg_class' AS regclass) AND c.oid = d.objid "
            "WHERE d.refclassid = CAST('pg_class' AS regclass) AND d.refobjid = CAST(:rel AS regclass) "
            "AND d.deptype IN ('n', 'a') AND (cardinality(CAST(:columns AS text[])) = 0 OR d.refobjsubid IN "
            "(SELECT attnum FROM pg_attribute WHERE attrelid = CAST(:rel AS regclass) AND attname = ANY(CAST(:columns AS text[]))))"
        ),
        {"rel": _qualified(connection, schema, table), "columns": list(columns)},
    ).all()
    found = []
    for row in rows:
        if row.relname in own or row.what.startswith(("sequence ", "type ", "default value")):
            continue
        found.append(str(row.what))
    # Views reach a table through their rewrite rule; name the view, not the rule.
    return sorted(set(found))


def set_timeouts(connection: Connection, lock: str | None, statement: str | None, local: bool) -> None:
    """``lock_timeout`` and ``statement_timeout`` (interval text; None or "0": unbounded)."""
    connection.execute(
        text("SELECT set_config('lock_timeout', :lock, :local), set_config('statement_timeout', :statement, :local)"),
        {"lock": lock or "0", "statement": statement or "0", "local": local},
    )


def read_timeouts(connection: Connection) -> tuple[str, str]:
    row = connection.execute(text("SELECT current_setting('lock_timeout'), current_setting('statement_timeout')")).one()
    return str(row[0]), str(row[1])


def reset_timeouts(connection: Connection) -> None:
    connection.execute(text("RESET lock_timeout"))
    connection.execute(text("RESET statement_timeout"))


def timeout_kind(error: BaseException) -> str | None:
    """``"lock"`` or ``"statement"`` when ``error`` is a PostgreSQL timeout, else None."""
    code = getattr(getattr(error, "orig", None), "sqlstate", None)
    return TIMEOUT_STATES.get(str(code)) if code else None


def blockers(connection: Connection, relations: Sequence[str]) -> str:
    """Sessions holding locks on ``relations`` or idle in a transaction: who a DDL waits on."""
    rows = connection.execute(
        text(
            "SELECT DISTINCT a.pid, a.state, coalesce(left(a.query, 80), '') AS query, "
            "date_trunc('second', now() - a.xact_start) AS age FROM pg_stat_activity a "
            "LEFT JOIN pg_locks l ON l.pid = a.pid AND l.granted "
            "WHERE a.pid <> pg_backend_pid() AND a.datname = current_database() AND a.xact_start IS NOT NULL "
            "AND (l.relation = ANY(CAST(:relations AS regclass[])) OR a.state LIKE 'idle in transaction%' "
            "OR a.wait_event_type IS NULL AND a.state = 'active') "
            "ORDER BY a.pid"
        ),
        {"relations": list(relations)},
    ).all()
    if not rows:
        return "no session holds it any more"
    return "; ".join(f"pid {r.pid} ({r.state}, transaction open {r.age}: {r.query!r})" for r in rows)


def index_names(connection: Connection, schema: str, table: str) -> tuple[str, ...]:
    return tuple(
        connection.execute(
            text("SELECT indexname FROM pg_indexes WHERE schemaname = :schema AND tablename = :table ORDER BY indexname"),
            {"schema": schema, "table": table},
        ).scalars()
    )


def schema_triggers(connection: Connection, schema: str) -> dict[str, str]:
    """Every (non-internal) trigger of ``schema`` and its table."""
    rows = connection.execute(
        text(
            "SELECT t.tgname, c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = :schema AND NOT t.tgisinternal"
        ),
        {"schema": schema},
    )
    return {str(name): str(table) for name, table in rows}
