"""PostgreSQL >= 14: ``bit_count`` over ``#`` (XOR), ``= ANY(array)``, ``ON CONFLICT``.

Fingerprints are stored in a signed ``bigint`` (two's complement, see :mod:`simsql.store.types`);
XOR and so every distance is the same on the signed bits. DDL is transactional, index builds
can run ``CONCURRENTLY`` (:mod:`.postgresql_ddl`), and time bounds are ``SET LOCAL``
settings that end with the transaction. The catalog is read from ``pg_class`` and friends,
every table named by a bound value (``to_regclass``, ``pg_namespace``), never formatted into SQL.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import text
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import TableClause, any_

from ...schema.names import Names
from ...text.errors import SchemaError, UnsupportedDatabase
from ..base import Backend, backend, version_text
from ..batch import Job
from ..constructs import (
    BlockExpression,
    CurrentSchema,
    EagerChoice,
    EagerGuard,
    EagerOrder,
    EqualsAny,
    HammingDistance,
    RowEstimate,
    RunTimeLimit,
    SortBound,
    WholeQuotient,
    read_row_estimate,
)
from ..ddl_plan import Column, Partition, TableFacts
from ..sqltext import execute_sql, is_autocommit
from .backfill import PostgresBatchSQL
from .ddl import (
    FUNCTION_MARK,
    POSTGRES_DDL,
    create_trigger_sql,
    digest_sql,
    drop_trigger_sql,
    qualified,
    trigger_function,
)
from .lists import POSTGRES_PARTITION_DDL
from .pgvector import POSTGRES_VECTOR_INDEX

MIN_POSTGRES = 140000
"""``bit_count`` arrived in PostgreSQL 14."""

TIMEOUT_STATES = {"55P03": "lock", "57014": "statement"}
"""SQLSTATEs of ``lock_not_available`` and ``query_canceled``."""

REGISTRY_PROBE = "SELECT to_regclass(%s) IS NOT NULL, to_regclass(%s) IS NOT NULL, current_schema()"
"""On the DBAPI cursor (format paramstyle): registry present, version table present, schema."""


def _refuse(found: str) -> UnsupportedDatabase:
    return UnsupportedDatabase(f"simsql needs PostgreSQL >= 14 (for bit_count), but the server is PostgreSQL {found}")


@compiles(CurrentSchema, "postgresql")
def _current_schema(element: CurrentSchema, compiler: Any, **kw: Any) -> str:
    return "current_schema()"


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
    return Backend.block_expression_sql(compiler.preparer.quote_identifier(element.fingerprint), element.index)


# The Eager* constructs: PostgreSQL's lazy forms, unless the server's backend (a variant such as
# Citus, see PostgresBackend.lazy_branches) runs every branch first.


@compiles(EagerGuard, "postgresql")
def _eager_guard(element: EagerGuard, compiler: Any, **kw: Any) -> str:
    if backend(compiler.dialect).lazy_branches:
        return "true"
    return compiler.process(element.condition, **kw)  # type: ignore[no-any-return]


@compiles(EagerChoice, "postgresql")
def _eager_choice(element: EagerChoice, compiler: Any, **kw: Any) -> str:
    chosen = element.lazy if backend(compiler.dialect).lazy_branches else element.eager
    return compiler.process(chosen, **kw)  # type: ignore[no-any-return]


@compiles(EagerOrder, "postgresql")
def _eager_order(element: EagerOrder, compiler: Any, **kw: Any) -> str:
    if not backend(compiler.dialect).lazy_branches:
        return compiler.process(element.ordered, **kw)  # type: ignore[no-any-return]
    # Not a bare literal (``ORDER BY 0`` would name a column by position); constant, so no sort.
    return "CAST(0 AS INTEGER)"


@compiles(SortBound, "postgresql")
def _sort_bound(element: SortBound, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.rows, **kw)  # type: ignore[no-any-return]


@compiles(RowEstimate, "postgresql")
def _row_estimate(element: RowEstimate, compiler: Any, **kw: Any) -> str:
    server = backend(compiler.dialect)
    assert isinstance(server, PostgresBackend)  # registered for the "postgresql" dialect only
    return server.row_estimate_sql(compiler.preparer.format_table(element.table))


@compiles(RunTimeLimit, "postgresql")
def _run_time_limit(element: RunTimeLimit, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.bound, **kw)  # type: ignore[no-any-return]


@compiles(WholeQuotient, "postgresql")
def _whole_quotient(element: WholeQuotient, compiler: Any, **kw: Any) -> str:
    return f"({compiler.process(element.dividend, **kw)} / {element.divisor})"


def server_version_num(connection: Connection) -> int:
    return int(connection.execute(text("SHOW server_version_num")).scalar_one())


class PostgresBackend(Backend):
    """PostgreSQL >= 14. A variant (Citus) subclasses this and overrides what differs."""

    __dialect__ = ("postgresql",)
    name = "postgresql"
    supported = "PostgreSQL >= 14"
    ddl = POSTGRES_DDL
    lists_ddl = POSTGRES_PARTITION_DDL
    vector_index = POSTGRES_VECTOR_INDEX
    activity_view = "pg_stat_activity"
    registry_probe = REGISTRY_PROBE
    def row_estimate(self, connection: Connection, table: TableClause) -> float:
        """:meth:`row_estimate_sql`, read on its own."""
        return read_row_estimate(connection, table)

    def row_estimate_sql(self, table: str) -> str:
        """:class:`~simsql.dialects.RowEstimate` of ``table`` (a formatted name): the planner's."""
        name = table.replace("'", "''")
        return f"(SELECT greatest(max(reltuples), 0) FROM pg_class WHERE oid = to_regclass('{name}'))"

    @classmethod
    def describe_dialect(cls, dialect: Dialect) -> str:
        return f"PostgreSQL {version_text(getattr(dialect, 'server_version_info', None))}"

    def check_server(self, connection: Connection) -> None:
        version = server_version_num(connection)
        if version < MIN_POSTGRES:
            raise _refuse(f"{version // 10000}.{version % 10000}" if version >= 100000 else str(version))

    def digest_sql(self, columns: Sequence[str], row: str = "") -> str:
        return digest_sql(columns, row)

    # -- statements ------------------------------------------------------------------------------

    def current_schema(self, connection: Connection) -> str:
        return str(connection.execute(text("SELECT current_schema()")).scalar_one())

    def relation_exists(self, connection: Connection, name: str) -> bool:
        """Resolved through ``search_path`` as every unqualified simsql statement is."""
        return bool(connection.execute(text("SELECT to_regclass(:n) IS NOT NULL"), {"n": name}).scalar_one())

    def insert_new(self, table: Any, values: dict[str, Any]) -> Any:
        return postgresql.insert(table).values(values).on_conflict_do_nothing()

    def upsert(self, table: Any, values: dict[str, Any], keys: Sequence[str], update: Sequence[str]) -> Any:
        statement = postgresql.insert(table).values(values)
        return statement.on_conflict_do_update(
            index_elements=list(keys), set_={name: statement.excluded[name] for name in update}
        )

    def prepare_self_join(self, connection: Connection) -> None:
        # Each self-join hashes the whole table; give it room so it does not spill to disk.
        connection.execute(text("SET LOCAL work_mem = '256MB'"))
        # No JIT: a self-join's expressions are a few integer operations a row pair, while JIT
        # compiles every expression of the plan first; above jit_above_cost (a few thousand
        # rows, or a fresh table without statistics) that compiling was most of each join's
        # time, and at 50,000 rows most of the 64-bit rule's (BENCHMARKS.md, issue 42).
        connection.execute(text("SET LOCAL jit = off"))

    # -- the trigger: a function and a trigger named like it ----------------------------------

    def trigger_names(self, names: Names) -> tuple[str, ...]:
        return (trigger_function(names),)

    def create_trigger_sql(
        self, schema: str | None, names: Names, source: Sequence[str], keys: Sequence[str], *, derive_blocks: bool = False
    ) -> tuple[str, ...]:
        assert schema is not None, "PostgreSQL's trigger functions are named in a schema"
        return create_trigger_sql(schema, names, source, keys, derive_blocks=derive_blocks)

    def drop_trigger_sql(self, schema: str | None, names: Names, *, table_dropped: bool = False) -> tuple[str, ...]:
        assert schema is not None, "PostgreSQL's trigger functions are named in a schema"
        return drop_trigger_sql(schema, names.table, trigger_function(names), table_dropped=table_dropped)

    def clear_trigger_names(self, connection: Connection, schema: str | None, names: Names) -> None:
        """A trigger function simsql wrote (marked) that no trigger uses any more: its table was
        dropped by raw SQL or ``op.drop_table``, and recreating the table must not fail on it. A
        function of that name that simsql did not write is left alone, and CREATE then fails."""
        function = trigger_function(names)
        orphan = connection.execute(
            text(
                "SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname = :schema AND p.proname = :name AND p.pronargs = 0 "
                "AND position(:mark in p.prosrc) > 0 "
                "AND NOT EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgfoid = p.oid)"
            ),
            {"schema": schema, "name": function, "mark": FUNCTION_MARK},
        ).first()
        if orphan is not None:
            execute_sql(connection, f"DROP FUNCTION {qualified(str(schema), function)}()")

    # -- catalog -------------------------------------------------------------------------------

    def table_facts(self, connection: Connection, schema: str, table: str) -> TableFacts | None:
        row = connection.execute(
            text(
                # relkind and typcategory are the one-byte "char" type, which asyncpg returns as
                # bytes: cast to text so every driver reads the letter as a str
                "SELECT c.oid, CAST(c.relkind AS text) AS relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = :schema AND c.relname = :table"
            ),
            {"schema": schema, "table": table},
        ).first()
        if row is None or row.relkind not in ("r", "p"):
            return None
        columns = [
            Column(r.attname, r.type, r.typcategory == "S")
            for r in connection.execute(
                text(
                    "SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type, CAST(t.typcategory AS text) AS typcategory "
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
        return TableFacts(schema, table, str(row.relkind), {c.name: c for c in columns}, keys, triggers)

    def triggers_on(self, connection: Connection, schema: str, table: str) -> tuple[str, ...]:
        return tuple(
            connection.execute(
                text(
                    "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = :schema AND c.relname = :table AND NOT t.tgisinternal ORDER BY t.tgname"
                ),
                {"schema": schema, "table": table},
            ).scalars()
        )

    def schema_triggers(self, connection: Connection, schema: str) -> dict[str, str]:
        """Every (non-internal) trigger of ``schema`` and its table."""
        rows = connection.execute(
            text(
                "SELECT t.tgname, c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = :schema AND NOT t.tgisinternal"
            ),
            {"schema": schema},
        )
        return {str(name): str(table) for name, table in rows}

    def index_names(self, connection: Connection, schema: str, table: str) -> tuple[str, ...]:
        return tuple(
            connection.execute(
                text("SELECT indexname FROM pg_indexes WHERE schemaname = :schema AND tablename = :table ORDER BY indexname"),
                {"schema": schema, "table": table},
            ).scalars()
        )

    def invalid_indexes(self, connection: Connection, schema: str, names: Sequence[str]) -> tuple[str, ...]:
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

    def dependents(self, connection: Connection, schema: str, table: str, columns: Sequence[str], own: Sequence[str]) -> list[str]:
        """From ``pg_depend``: views, a user's indexes, foreign keys, ... Views reach a table
        through their rewrite rule; the view is named, not the rule."""
        rows = connection.execute(
            text(
                "SELECT DISTINCT pg_describe_object(d.classid, d.objid, d.objsubid) AS what, c.relname "
                "FROM pg_depend d LEFT JOIN pg_class c ON d.classid = CAST('pg_class' AS regclass) AND c.oid = d.objid "
                "WHERE d.refclassid = CAST('pg_class' AS regclass) AND d.refobjid = CAST(:rel AS regclass) "
                "AND d.deptype IN ('n', 'a') AND (cardinality(CAST(:columns AS text[])) = 0 OR d.refobjsubid IN "
                "(SELECT attnum FROM pg_attribute WHERE attrelid = CAST(:rel AS regclass) AND attname = ANY(CAST(:columns AS text[]))))"
            ),
            {"rel": qualified(schema, table), "columns": list(columns)},
        ).all()
        found = [
            str(row.what) for row in rows
            if row.relname not in own and not row.what.startswith(("sequence ", "type ", "default value"))
        ]  # fmt: skip
        return sorted(set(found))

    def partition_tree(self, connection: Connection, schema: str, table: str) -> list[Partition]:
        """(relation, parent, is_leaf) of a partitioned table, parents first; all in ``schema``
        (simsql names indexes in the holder's schema)."""
        rows = connection.execute(
            text(
                "SELECT c.relname, p.relname AS parent, t.isleaf, n.nspname FROM pg_partition_tree(CAST(:rel AS regclass)) t "
                "JOIN pg_class c ON c.oid = t.relid JOIN pg_namespace n ON n.oid = c.relnamespace "
                "LEFT JOIN pg_class p ON p.oid = t.parentrelid ORDER BY t.level, c.relname"
            ),
            {"rel": qualified(schema, table)},
        ).all()
        elsewhere = [f"{r.nspname}.{r.relname}" for r in rows if r.nspname != schema]
        if elsewhere:
            raise SchemaError(
                f"partitions of {schema}.{table} live in other schemas ({', '.join(elsewhere)}); simsql builds "
                "per-partition indexes only for partitions in the table's own schema"
            )
        return [(r.relname, r.parent, bool(r.isleaf)) for r in rows]

    def primary_key_name(self, connection: Connection, schema: str, table: str) -> str:
        sql = text("SELECT conname FROM pg_constraint WHERE contype = 'p' AND conrelid = CAST(:rel AS regclass)")
        return str(connection.execute(sql, {"rel": qualified(schema, table)}).scalar_one())

    def triggers_as_written(
        self, connection: Connection, schema: str, names: Names, source: Sequence[str], keys: Sequence[str]
    ) -> bool:
        """One trigger, BEFORE INSERT OR UPDATE FOR EACH ROW (``tgtype`` 1 | 2 | 4 | 16), enabled,
        running simsql's function of that table, whose source is the one simsql writes, or the one
        it wrote before its fits' list writes skipped the check (``skips_list_writes=False``)."""
        bodies = []
        for skips in (True, False):
            function_sql, trigger_sql = create_trigger_sql(schema, names, source, keys, skips_list_writes=skips)
            assert " BEFORE INSERT OR UPDATE ON " in trigger_sql and " FOR EACH ROW " in trigger_sql
            quoted = function_sql.split(" LANGUAGE plpgsql AS ", 1)[1]  # the body, dollar-quoted
            tag = quoted[: quoted.index("$", 1) + 1]
            bodies.append(quoted[len(tag) : -len(tag)])
        rows = connection.execute(
            text(
                "SELECT t.tgname, t.tgtype, t.tgenabled, pn.nspname, p.proname, p.prosrc, p.pronargs "
                "FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
                "JOIN pg_proc p ON p.oid = t.tgfoid JOIN pg_namespace pn ON pn.oid = p.pronamespace "
                "WHERE n.nspname = :schema AND c.relname = :table AND NOT t.tgisinternal AND t.tgname = ANY(:names)"
            ),
            {"schema": schema, "table": names.table, "names": list(names.functions)},
        ).all()
        found = {tuple(row) for row in rows}
        return any(
            found == {(name, 23, "O", schema, trigger_function(names), body, 0) for name in self.trigger_names(names)}
            for body in bodies
        )

    def attach_conflicts(self, connection: Connection, facts: TableFacts, names: Names) -> list[str]:
        found = []
        if names.side is None:
            found += [f"column {facts.name}.{c}" for c in names.added_columns if c in facts.columns]
        elif self.table_facts(connection, facts.schema, names.side) is not None:
            found.append(f"table {facts.schema}.{names.side}")
        found += [f"trigger {t} on {facts.name}" for t in names.functions if t in facts.triggers]
        return found

    # -- locks and time bounds ----------------------------------------------------------------

    def set_timeouts(self, connection: Connection, lock: str | None, statement: str | None, local: bool) -> None:
        """``lock_timeout`` and ``statement_timeout`` (interval text; None or "0": unbounded)."""
        connection.execute(
            text("SELECT set_config('lock_timeout', :lock, :local), set_config('statement_timeout', :statement, :local)"),
            {"lock": lock or "0", "statement": statement or "0", "local": local},
        )

    def read_timeouts(self, connection: Connection) -> tuple[str, str]:
        row = connection.execute(text("SELECT current_setting('lock_timeout'), current_setting('statement_timeout')")).one()
        return str(row[0]), str(row[1])

    def reset_timeouts(self, connection: Connection) -> None:
        connection.execute(text("RESET lock_timeout"))
        connection.execute(text("RESET statement_timeout"))

    @contextmanager
    def bounded(self, connection: Connection, lock: str | None, statement: str | None) -> Iterator[None]:
        """``SET LOCAL`` in a transaction (the previous bounds come back after, unless the
        transaction failed, which ends them anyway); session settings, reset after, in
        autocommit mode."""
        autocommit = is_autocommit(connection)
        previous = self.read_timeouts(connection)
        self.set_timeouts(connection, lock, statement, not autocommit)
        try:
            yield
        finally:
            if autocommit:
                self.reset_timeouts(connection)
        if not autocommit:
            self.set_timeouts(connection, previous[0], previous[1], True)

    @staticmethod
    def timeout_kind(error: BaseException) -> str | None:
        code = getattr(getattr(error, "orig", None), "sqlstate", None)
        return TIMEOUT_STATES.get(str(code)) if code else None

    def blockers(self, connection: Connection, relations: Sequence[str]) -> str:
        """Sessions holding locks on ``relations`` or idle in a transaction."""
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

    def lock_exclusively(self, connection: Connection, schema: str, tables: Sequence[str]) -> None:
        relations = ", ".join(qualified(schema, table) for table in tables)
        execute_sql(connection, f"LOCK TABLE {relations} IN ACCESS EXCLUSIVE MODE")

    def try_advisory_lock(self, connection: Connection, key: int) -> bool:
        return bool(connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": key}).scalar_one())

    def advisory_lock(self, connection: Connection, key: int) -> None:
        connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})

    def advisory_unlock(self, connection: Connection, key: int) -> None:
        connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})

    def advisory_xact_lock(self, connection: Connection, key: int) -> None:
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})

    def batch_sql(self, job: Job) -> PostgresBatchSQL:
        return PostgresBatchSQL(job)


__all__ = ["MIN_POSTGRES", "PostgresBackend", "REGISTRY_PROBE", "TIMEOUT_STATES", "server_version_num"]
