"""MySQL >= 8.0 and MariaDB >= 10.6: ``BIT_COUNT(a ^ b)`` on ``BIGINT UNSIGNED``.

The fingerprint is stored unsigned (no signed mapping: ``^`` and ``BIT_COUNT`` work on the full
64-bit range), blocks are ``VIRTUAL`` generated columns whose values live in their indexes, and
"any of these values" is a plain ``IN`` list (PyMySQL interpolates parameters on the client, so
there is no server-side plan to share between radii).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Integer, String, text
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.schema import CreateIndex

from . import COVERING_INFO, MIN_MARIADB, MIN_MYSQL, BlockComputed, BlockExpression, EagerGuard, EagerOrder, EqualsAny, HammingDistance, RowEstimate, RunTimeLimit, WholeQuotient, block_expression_sql, describe_server
from ..errors import UnsupportedDatabase

NAMES = ("mysql", "mariadb")


def _check_version(dialect: Dialect) -> None:
    """Refuse MySQL < 8.0 and MariaDB < 10.6 (None: not connected yet, checked again at run time)."""
    version = getattr(dialect, "server_version_info", None)
    if version is None:
        return
    mariadb = bool(getattr(dialect, "is_mariadb", False))
    minimum = MIN_MARIADB if mariadb else MIN_MYSQL
    if tuple(version[:2]) < minimum:
        wanted = f"{'MariaDB' if mariadb else 'MySQL'} >= {'.'.join(map(str, minimum))}"
        raise UnsupportedDatabase(f"simsql needs {wanted}, but the server is {describe_server(dialect)}")


def _hamming(element: HammingDistance, compiler: Any, **kw: Any) -> str:
    _check_version(compiler.dialect)
    a, b = list(element.clauses)
    return f"BIT_COUNT({compiler.process(a, **kw)} ^ {compiler.process(b, **kw)})"


def _equals_any(element: EqualsAny, compiler: Any, **kw: Any) -> str:
    values = element.values._clone()
    values.type = Integer()  # type: ignore[assignment]  # each value, no longer the array
    values.expanding = True
    return compiler.process(element.column.in_(values), **kw)  # type: ignore[no-any-return]


def _block(element: BlockExpression, compiler: Any, **kw: Any) -> str:
    return block_expression_sql(compiler.preparer.quote_identifier(element.fingerprint), element.index, "mysql")


def _computed(element: BlockComputed, compiler: Any, **kw: Any) -> str:
    expression = compiler.sql_compiler.process(element.sqltext, include_table=False, literal_binds=True)
    return f"GENERATED ALWAYS AS ({expression}) VIRTUAL"


def _create_index(element: CreateIndex, compiler: Any, **kw: Any) -> str:
    """simsql's block indexes get their covering columns as trailing key columns (MySQL has no
    INCLUDE; InnoDB secondary indexes carry the primary key already). Other indexes unchanged."""
    index = element.element
    covering = index.info.get(COVERING_INFO)
    if not covering:
        return compiler.visit_create_index(element, **kw)  # type: ignore[no-any-return]
    preparer = compiler.preparer
    columns = [preparer.quote(column.name) for column in index.columns]
    columns += [preparer.quote(name) for name in covering if name not in {c.name for c in index.columns}]
    return (
        f"CREATE INDEX {preparer.format_index(index)} ON {preparer.format_table(index.table)} "
        f"({', '.join(columns)})"
    )


def _eager_guard(element: EagerGuard, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.condition, **kw)  # type: ignore[no-any-return]


def _eager_order(element: EagerOrder, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.ordered, **kw)  # type: ignore[no-any-return]


def _row_estimate(element: RowEstimate, compiler: Any, **kw: Any) -> str:
    # InnoDB's sampled estimate (what ANALYZE TABLE refreshes). Names are string literals here,
    # rendered by the dialect's own literal rule (quotes, backslashes, percent signs).
    table = element.table

    def literal(value: str) -> str:
        return str(compiler.render_literal_value(value, String()))

    schema = getattr(table, "schema", None)
    where_schema = "DATABASE()" if schema is None else literal(str(schema))
    return (
        "(SELECT COALESCE(MAX(TABLE_ROWS), 0) FROM information_schema.TABLES "
        f"WHERE TABLE_SCHEMA = {where_schema} AND TABLE_NAME = {literal(str(table.name))})"
    )


def _run_time_limit(element: RunTimeLimit, compiler: Any, **kw: Any) -> str:
    return "18446744073709551615"  # LIMIT takes constants only here: every row


def _whole_quotient(element: WholeQuotient, compiler: Any, **kw: Any) -> str:
    return f"({compiler.process(element.dividend, **kw)} DIV {element.divisor})"


for _name in NAMES:
    compiles(WholeQuotient, _name)(_whole_quotient)
    compiles(RunTimeLimit, _name)(_run_time_limit)
    compiles(RowEstimate, _name)(_row_estimate)
    compiles(EagerOrder, _name)(_eager_order)
    compiles(EagerGuard, _name)(_eager_guard)
    compiles(CreateIndex, _name)(_create_index)
    compiles(HammingDistance, _name)(_hamming)
    compiles(EqualsAny, _name)(_equals_any)
    compiles(BlockExpression, _name)(_block)
    compiles(BlockComputed, _name)(_computed)


def check_server(connection: Connection) -> None:
    _check_version(connection.dialect)


def current_schema(connection: Connection) -> str:
    return str(connection.execute(text("SELECT DATABASE()")).scalar_one())


def relation_exists(connection: Connection, name: str) -> bool:
    found = connection.execute(
        text("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = :n"),
        {"n": name},
    ).scalar_one()
    return bool(found)


def insert_new(table: Any, values: dict[str, Any]) -> Any:
    # A no-op update (first key to itself) rather than INSERT IGNORE, which would also swallow
    # truncation and NOT NULL errors.
    statement = mysql.insert(table).values(values)
    first = table.primary_key.columns.values()[0].name
    return statement.on_duplicate_key_update({first: statement.inserted[first]})


def upsert(table: Any, values: dict[str, Any], keys: Sequence[str], update: Sequence[str]) -> Any:
    statement = mysql.insert(table).values(values)
    return statement.on_duplicate_key_update({name: statement.inserted[name] for name in update})


def prepare_self_join(connection: Connection) -> None:
    """Nothing to set: without expression hash joins the self-joins go through the block indexes."""



def hash_joins_expressions(dialect: Dialect) -> bool:
    if getattr(dialect, "is_mariadb", False):
        return False
    version = getattr(dialect, "server_version_info", None) or (0,)
    return tuple(version) >= (8, 0, 18)


# -- triggers (the digest invariant of simsql.storage, in MySQL's dialect) ------------------
#
# MySQL has no trigger functions and no "INSERT OR UPDATE" trigger: the same rule as the
# PostgreSQL trigger is written twice (before insert, before update). ``MD5(CONCAT_WS(CHAR(10),
# ...))`` is the digest of ``storage.join_text`` (NULLs skipped), 32 hex digits: the form in
# which SQLAlchemy's ``Uuid`` stores a UUID where there is no native type.


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def digest_sql(columns: Sequence[str], row: str) -> str:
    return f"MD5(CONCAT_WS(CHAR(10), {', '.join(row + quote(c) for c in columns)}))"


def _unchanged(source: Sequence[str]) -> str:
    return " AND ".join(f"NEW.{quote(c)} <=> OLD.{quote(c)}" for c in source)


def row_trigger_sql(table: str, fingerprint: str, digest: str, source: Sequence[str], update: bool, name: str) -> str:
    """Columns mode: a fingerprint is kept only with the digest of the row's current text."""
    fp, src = f"NEW.{quote(fingerprint)}", f"NEW.{quote(digest)}"
    if update:
        rewritten = (
            f"    IF NOT ({fp} <=> OLD.{quote(fingerprint)}) AND {src} <=> OLD.{quote(digest)} THEN SET {src} = NULL; END IF;\n"
        )
        no_digest = f"    ELSEIF NOT ({_unchanged(source)}) THEN SET {fp} = NULL;\n"
    else:
        rewritten, no_digest = "", ""
    return (
        f"CREATE TRIGGER {quote(name)} BEFORE {'UPDATE' if update else 'INSERT'} ON {quote(table)} FOR EACH ROW\n"
        f"BEGIN\n"
        f"  IF {fp} IS NOT NULL THEN\n"
        f"{rewritten}"
        f"    IF {src} IS NOT NULL THEN\n"
        f"      IF {src} <> {digest_sql(source, 'NEW.')} THEN SET {fp} = NULL; END IF;\n"
        f"{no_digest}"
        f"    END IF;\n"
        f"  END IF;\n"
        f"  IF {fp} IS NULL THEN SET {src} = NULL; END IF;\n"
        f"END"
    )


def stale_trigger_sql(table: str, side: str, digest: str, keys: Sequence[str], side_keys: Sequence[str], source: Sequence[str], name: str) -> str:
    """Side-table mode: a row whose text changed loses its side row, unless that row already
    holds the new text's fingerprint."""
    condition = " AND ".join(f"{quote(s)} = OLD.{quote(k)}" for s, k in zip(side_keys, keys))
    return (
        f"CREATE TRIGGER {quote(name)} AFTER UPDATE ON {quote(table)} FOR EACH ROW\n"
        f"BEGIN\n"
        f"  IF NOT ({_unchanged(source)}) THEN\n"
        f"    DELETE FROM {quote(side)} WHERE {condition} AND NOT ({quote(digest)} <=> {digest_sql(source, 'NEW.')});\n"
        f"  END IF;\n"
        f"END"
    )


REGISTRY_PROBE = (
    "SELECT (SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s) > 0, "
    "(SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s) > 0, "
    "DATABASE()"
)
"""On the DBAPI cursor (format paramstyle): registry present, version table present, schema."""
