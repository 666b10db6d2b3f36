"""MySQL >= 8.0 and MariaDB >= 10.6: ``BIT_COUNT(a ^ b)`` on ``BIGINT UNSIGNED``.

The fingerprint is stored unsigned (no signed mapping: ``^`` and ``BIT_COUNT`` work on the full
64-bit range), blocks are ``VIRTUAL`` generated columns whose values live in their indexes, and
"any of these values" is a plain ``IN`` list (PyMySQL interpolates parameters on the client, so
there is no server-side plan to share between radii).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Integer, String, bindparam, event, text
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.pool import Pool
from sqlalchemy.schema import CreateIndex

from ..errors import UnsupportedDatabase
from . import (
    COVERING_INFO,
    MIN_MARIADB,
    MIN_MYSQL,
    BlockComputed,
    BlockExpression,
    EagerChoice,
    EagerGuard,
    EagerOrder,
    EqualsAny,
    HammingDistance,
    RowEstimate,
    RunTimeLimit,
    WholeQuotient,
    block_expression_sql,
    describe_server,
)

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


def _eager_choice(element: EagerChoice, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.eager, **kw)  # type: ignore[no-any-return]


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
    compiles(EagerChoice, _name)(_eager_choice)
    compiles(CreateIndex, _name)(_create_index)
    compiles(HammingDistance, _name)(_hamming)
    compiles(EqualsAny, _name)(_equals_any)
    compiles(BlockExpression, _name)(_block)
    compiles(BlockComputed, _name)(_computed)


def check_server(connection: Connection) -> None:
    _check_version(connection.dialect)


_HAS_MD5 = "simsql_has_md5"
CLASSIC_HASHING = "file://component_classic_hashing"


def check_digest(connection: Connection) -> None:
    """Refuse a MySQL without ``MD5()``, which simsql's triggers, backfill and status compute.

    MySQL 9.6 moved ``MD5()`` out of the server into a component an administrator installs;
    without it a trigger simsql created would fail every INSERT into the user's table ("FUNCTION
    db.MD5 does not exist"), so nothing is created and nothing is fingerprinted; detach still
    runs, to take such triggers away. Asked once per session (MariaDB has it built in)."""
    if _is_mariadb(connection):
        return
    info = connection.connection.info
    if info.get(_HAS_MD5):
        return
    try:
        connection.exec_driver_sql("SELECT MD5('')")  # a failed statement leaves MySQL's transaction alone
    except Exception as error:  # noqa: BLE001 - only the missing function is ours to explain
        if getattr(getattr(error, "orig", None), "args", (None,))[0] != 1305:  # ER_SP_DOES_NOT_EXIST
            raise
        from . import describe_server

        raise UnsupportedDatabase(
            f"simsql's triggers compare MD5() digests, and {describe_server(connection.dialect)} has no MD5() "
            f"(MySQL 9.6 moved it into a component): an administrator can add it with "
            f"INSTALL COMPONENT '{CLASSIC_HASHING}'"
        ) from None
    info[_HAS_MD5] = True


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
# which SQLAlchemy's ``Uuid`` stores a UUID where there is no native type. Each column is
# converted to utf8mb4 first: MD5 hashes a string's bytes in its own character set, and Python
# hashes UTF-8, so a latin1 column's accented text would never match its digest.


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def digest_sql(columns: Sequence[str], row: str) -> str:
    return f"MD5(CONCAT_WS(CHAR(10), {', '.join(f'CONVERT({row}{quote(c)} USING utf8mb4)' for c in columns)}))"


def _unchanged(source: Sequence[str]) -> str:
    return " AND ".join(f"NEW.{quote(c)} <=> OLD.{quote(c)}" for c in source)


def _on(schema: str | None, name: str) -> str:
    """A trigger or table name, in ``schema`` when given (a trigger lives in its table's schema,
    and its body resolves unqualified names there)."""
    return quote(name) if schema is None else f"{quote(schema)}.{quote(name)}"


def row_trigger_sql(
    table: str, fingerprint: str, digest: str, source: Sequence[str], update: bool, name: str, schema: str | None = None
) -> str:
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
        f"CREATE TRIGGER {_on(schema, name)} BEFORE {'UPDATE' if update else 'INSERT'} ON {_on(schema, table)} FOR EACH ROW\n"
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


def stale_trigger_sql(
    table: str, side: str, digest: str, keys: Sequence[str], side_keys: Sequence[str], source: Sequence[str], name: str,
    schema: str | None = None,
) -> str:
    """Side-table mode: a row whose text changed loses its side row, unless that row already
    holds the new text's fingerprint."""
    condition = " AND ".join(f"{quote(s)} = OLD.{quote(k)}" for s, k in zip(side_keys, keys))
    return (
        f"CREATE TRIGGER {_on(schema, name)} AFTER UPDATE ON {_on(schema, table)} FOR EACH ROW\n"
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


# -- the live-table lifecycle: catalog reads, time bounds, who holds a lock -----------------
#
# What :mod:`simsql.lifecycle.catalog` and :mod:`simsql.lifecycle.apply` ask of the server,
# from information_schema with names as bound values. information_schema compares names
# case-insensitively on some servers; a name is matched exactly in Python afterwards, as
# ``lower_case_table_names=0`` (Linux) keeps ``Articles`` and ``articles`` apart.

NAME = "mysql"

TRANSACTIONAL_DDL = False
"""Every DDL statement commits on its own (and commits the transaction before it): a plan's
steps are kept one by one, so a plan that fails halfway must be undone, not rolled back."""

SCOPED_TIMEOUTS = False
"""Session variables only: no setting ends with the transaction."""

TIMEOUT_CODES = {1205: "lock", 1969: "statement", 3024: "statement"}
"""``ER_LOCK_WAIT_TIMEOUT`` (metadata and row locks), MariaDB's ``ER_STATEMENT_TIMEOUT``
(``max_statement_time``), MySQL's ``ER_QUERY_TIMEOUT`` (``max_execution_time``)."""

ACTIVITY_VIEW = "SHOW PROCESSLIST"

TEXT_TYPES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})

UNBOUNDED_LOCK_WAIT = 31536000
"""The largest ``lock_wait_timeout`` (a year, in seconds): what "unbounded" sets."""
UNBOUNDED_ROW_LOCK_WAIT = 100000000
"""The largest ``innodb_lock_wait_timeout`` both MariaDB and MySQL accept."""

_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*$")
_UNIT_SECONDS = {"": 0.001, "us": 1e-6, "ms": 0.001, "s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def interval_seconds(value: str | None) -> float | None:
    """Seconds in a PostgreSQL duration (``"5s"``, ``"10min"``, ``"500ms"``; a bare number is
    milliseconds, PostgreSQL's unit for timeouts); None for None or 0 (unbounded)."""
    if value is None:
        return None
    match = _INTERVAL.match(str(value).lower())
    if match is None or match.group(2) not in _UNIT_SECONDS:
        raise ValueError(f"timeout {value!r} is not a duration such as '5s', '500ms' or '10min'")
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    return seconds or None


def _is_mariadb(connection: Connection) -> bool:
    return bool(getattr(connection.dialect, "is_mariadb", False))


def _stores_no_checks(connection: Connection) -> bool:
    """MySQL 8.0.0-8.0.15: CHECK constraints were accepted and ignored, and
    information_schema.CHECK_CONSTRAINTS did not exist yet."""
    version = tuple(getattr(connection.dialect, "server_version_info", None) or ())
    return not _is_mariadb(connection) and bool(version) and version[:3] < (8, 0, 16)


def table_facts(connection: Connection, schema: str, table: str) -> tuple[str, list[tuple[str, str, bool]], tuple[str, ...], tuple[str, ...]] | None:
    """(kind ``r`` or ``p`` for partitioned, [(column, type, is_text)], primary key, the
    table's triggers) of a base table, or None. A string column's type carries its character
    set and collation, so a side table's key built from it can reference it."""
    where = {"schema": schema, "table": table}
    found = [
        row for row in connection.execute(
            text("SELECT TABLE_NAME, TABLE_TYPE, CREATE_OPTIONS FROM information_schema.TABLES "
                 "WHERE TABLE_SCHEMA = :schema AND TABLE_NAME = :table"), where
        )
        if row[0] == table
    ]
    if not found or found[0][1] != "BASE TABLE":
        return None
    kind = "p" if "partitioned" in str(found[0][2] or "").lower() else "r"
    columns = []
    for name, column_type, data_type, charset, collation, owner in connection.execute(
        text(
            "SELECT COLUMN_NAME, COLUMN_TYPE, DATA_TYPE, CHARACTER_SET_NAME, COLLATION_NAME, TABLE_NAME "
            "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = :schema AND TABLE_NAME = :table ORDER BY ORDINAL_POSITION"
        ),
        where,
    ):
        if owner != table:
            continue
        spelled = str(column_type)
        if charset:
            spelled += f" CHARACTER SET {charset} COLLATE {collation}"
        columns.append((str(name), spelled, str(data_type).lower() in TEXT_TYPES))
    keys = tuple(
        str(row[0]) for row in connection.execute(
            text("SELECT COLUMN_NAME, TABLE_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = :schema "
                 "AND TABLE_NAME = :table AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX"), where
        )
        if row[1] == table
    )
    return kind, columns, keys, triggers_on(connection, schema, table)


def triggers_on(connection: Connection, schema: str, table: str) -> tuple[str, ...]:
    return tuple(
        str(row[0]) for row in connection.execute(
            text("SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS "
                 "WHERE EVENT_OBJECT_SCHEMA = :schema AND EVENT_OBJECT_TABLE = :table ORDER BY TRIGGER_NAME"),
            {"schema": schema, "table": table},
        )
        if row[1] == table
    )


def schema_triggers(connection: Connection, schema: str) -> dict[str, str]:
    """Every trigger of ``schema`` and its table: MySQL trigger names are unique per schema,
    not per table, so a name simsql would use is taken whichever table holds it."""
    return {
        str(row[0]): str(row[1])
        for row in connection.execute(
            text("SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = :schema"),
            {"schema": schema},
        )
    }


def index_names(connection: Connection, schema: str, table: str) -> tuple[str, ...]:
    return tuple(sorted({
        str(row[0]) for row in connection.execute(
            text("SELECT INDEX_NAME, TABLE_NAME FROM information_schema.STATISTICS "
                 "WHERE TABLE_SCHEMA = :schema AND TABLE_NAME = :table"), {"schema": schema, "table": table}
        )
        if row[1] == table
    }))


def invalid_indexes(connection: Connection, schema: str, names: Sequence[str]) -> tuple[str, ...]:
    """None: an online ``ADD INDEX`` that fails leaves no index behind."""
    return ()


def dependents(connection: Connection, schema: str, table: str, columns: Sequence[str], own: Sequence[str]) -> list[str]:
    """Objects simsql did not create that use ``columns`` of ``schema.table`` (or the whole
    table when ``columns`` is empty), other than the indexes ``own``: indexes, generated
    columns, CHECK constraints, foreign keys, triggers (on the whole table) and views."""
    where = {"schema": schema, "table": table}
    wanted = set(columns)
    found: set[str] = set()

    def uses(name: Any) -> bool:
        return not wanted or str(name) in wanted

    for index, column, owner in connection.execute(
        text("SELECT INDEX_NAME, COLUMN_NAME, TABLE_NAME FROM information_schema.STATISTICS "
             "WHERE TABLE_SCHEMA = :schema AND TABLE_NAME = :table"), where
    ):
        if owner == table and index != "PRIMARY" and index not in own and uses(column):
            found.add(f"index {index} on table {table}")
    if wanted:
        for name, expression, owner in connection.execute(
            text("SELECT COLUMN_NAME, GENERATION_EXPRESSION, TABLE_NAME FROM information_schema.COLUMNS "
                 "WHERE TABLE_SCHEMA = :schema AND TABLE_NAME = :table AND GENERATION_EXPRESSION <> ''"), where
        ):
            if owner == table and name not in wanted and any(quote(c) in str(expression) for c in wanted):
                found.add(f"generated column {table}.{name}")
        # MySQL's CHECK_CONSTRAINTS has no TABLE_NAME, but its CHECK names are unique per schema,
        # so TABLE_CONSTRAINTS names the table; MariaDB's names are per table, and it has one.
        # MySQL before 8.0.16 parsed CHECK clauses and kept none (nor that table): nothing to find.
        checks = None if _stores_no_checks(connection) else (
            "SELECT CONSTRAINT_NAME, CHECK_CLAUSE, TABLE_NAME FROM information_schema.CHECK_CONSTRAINTS "
            "WHERE CONSTRAINT_SCHEMA = :schema AND TABLE_NAME = :table"
        ) if _is_mariadb(connection) else (
            "SELECT c.CONSTRAINT_NAME, c.CHECK_CLAUSE, t.TABLE_NAME FROM information_schema.CHECK_CONSTRAINTS c "
            "JOIN information_schema.TABLE_CONSTRAINTS t ON t.CONSTRAINT_SCHEMA = c.CONSTRAINT_SCHEMA "
            "AND t.CONSTRAINT_NAME = c.CONSTRAINT_NAME AND t.CONSTRAINT_TYPE = 'CHECK' "
            "WHERE c.CONSTRAINT_SCHEMA = :schema AND t.TABLE_NAME = :table"
        )
        for name, clause, owner in connection.execute(text(checks), where) if checks else ():
            if owner == table and any(quote(c) in str(clause) for c in wanted):
                found.add(f"check constraint {name} on table {table}")
    else:
        for trigger in triggers_on(connection, schema, table):
            found.add(f"trigger {trigger} on table {table}")
    for name, owner, column, referenced, referenced_column in connection.execute(
        text("SELECT CONSTRAINT_NAME, TABLE_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME "
             "FROM information_schema.KEY_COLUMN_USAGE WHERE REFERENCED_TABLE_SCHEMA IS NOT NULL AND "
             "((TABLE_SCHEMA = :schema AND TABLE_NAME = :table) OR (REFERENCED_TABLE_SCHEMA = :schema "
             "AND REFERENCED_TABLE_NAME = :table))"), where
    ):
        # another table's foreign key to these columns, or one of these columns' own
        theirs = referenced == table and owner != table and uses(referenced_column)
        if theirs or (owner == table and wanted and str(column) in wanted):
            found.add(f"constraint {name} on table {owner}")
    qualified_table = f"{quote(schema)}.{quote(table)}"
    needles = [f"{qualified_table}.{quote(c)}" for c in wanted] or [qualified_table]
    for view_schema, view, definition in connection.execute(
        text("SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS")
    ):
        if any(needle in str(definition) for needle in needles):
            found.add(f"view {view_schema}.{view}")
    return sorted(found)


# Timeouts. MySQL has no transaction-scoped settings: simsql sets session variables and puts
# the session's own values back when it is done (``bounded``), or, for a setting meant to last
# a transaction, when the connection goes back to its pool (the ``checkin`` listener below), so
# no pooled connection keeps simsql's bounds.

_REMEMBERED = "simsql_session_timeouts"


def _statement_variable(connection: Connection) -> str:
    """MariaDB bounds every statement (``max_statement_time``, seconds); MySQL only SELECTs
    (``max_execution_time``, milliseconds)."""
    return "max_statement_time" if _is_mariadb(connection) else "max_execution_time"


def read_timeouts(connection: Connection) -> tuple[Any, ...]:
    variable = _statement_variable(connection)
    row = connection.execute(
        text(f"SELECT @@SESSION.lock_wait_timeout, @@SESSION.innodb_lock_wait_timeout, @@SESSION.{variable}")
    ).one()
    return tuple(row)


def restore_timeouts(connection: Connection, values: Sequence[Any]) -> None:
    variable = _statement_variable(connection)
    connection.execute(
        text(f"SET SESSION lock_wait_timeout = :a, innodb_lock_wait_timeout = :b, {variable} = :c"),
        {"a": values[0], "b": values[1], "c": values[2]},
    )


def set_timeouts(connection: Connection, lock: str | None, statement: str | None, local: bool) -> None:
    """``lock``: how long to wait for a metadata or row lock (whole seconds, rounded up);
    ``statement``: how long a statement may run (MySQL: SELECTs only). The session's own
    values come back when the connection returns to its pool, ``local`` or not."""
    info = connection.connection.info
    if _REMEMBERED not in info:
        info[_REMEMBERED] = (_statement_variable(connection), read_timeouts(connection))
    lock_seconds, statement_seconds = interval_seconds(lock), interval_seconds(statement)
    lock_wait = UNBOUNDED_LOCK_WAIT if lock_seconds is None else max(1, math.ceil(lock_seconds))
    row_lock_wait = UNBOUNDED_ROW_LOCK_WAIT if lock_seconds is None else lock_wait
    if statement_seconds is None:
        statement_bound: float = 0
    elif _is_mariadb(connection):
        statement_bound = statement_seconds
    else:
        statement_bound = max(1, math.ceil(statement_seconds * 1000))
    restore_timeouts(connection, (lock_wait, row_lock_wait, statement_bound))


def reset_timeouts(connection: Connection) -> None:
    """The values the session had before simsql first bounded it."""
    remembered = connection.connection.info.pop(_REMEMBERED, None)
    if remembered is not None:
        restore_timeouts(connection, remembered[1])


@event.listens_for(Pool, "checkin")
def _restore_on_checkin(dbapi_connection: Any, record: Any) -> None:
    remembered = record.info.pop(_REMEMBERED, None) if record is not None else None
    if remembered is None or dbapi_connection is None:
        return
    variable, values = remembered
    try:
        cursor = dbapi_connection.cursor()
        cursor.execute(
            f"SET SESSION lock_wait_timeout = %s, innodb_lock_wait_timeout = %s, {variable} = %s", tuple(values)
        )
        cursor.close()
    except Exception as error:  # noqa: BLE001 - a session that cannot be reset is not reused
        record.invalidate(error)


def timeout_kind(error: BaseException) -> str | None:
    """``"lock"`` or ``"statement"`` when ``error`` is a MySQL/MariaDB timeout, else None."""
    arguments = getattr(getattr(error, "orig", None), "args", None)
    if not arguments or not isinstance(arguments[0], int):
        return None
    return TIMEOUT_CODES.get(arguments[0])


_NAME = re.compile(r'`((?:[^`]|``)*)`|"((?:[^"]|"")*)"|([^.`"]+)')


def split_qualified(relation: str) -> tuple[str, ...]:
    """``schema.table`` text quoted either way (backquotes, double quotes) or not, as names."""
    return tuple(
        m.group(1).replace("``", "`") if m.group(1) is not None
        else m.group(2).replace('""', '"') if m.group(2) is not None else m.group(3).strip()
        for m in _NAME.finditer(relation)
    )


def _lock_holders(connection: Connection, relations: Sequence[tuple[str, ...]]) -> set[int] | None:
    """Sessions holding a metadata lock on one of ``relations``, where the server says
    (MySQL's ``performance_schema.metadata_locks``, MariaDB's ``METADATA_LOCK_INFO`` plugin);
    None where it does not."""
    pairs = [r for r in relations if len(r) == 2]
    if not pairs:
        return None
    if not _is_mariadb(connection) and connection.execute(text("SELECT @@performance_schema")).scalar():
        sql = ("SELECT t.PROCESSLIST_ID, m.OBJECT_SCHEMA, m.OBJECT_NAME FROM performance_schema.metadata_locks m "
               "JOIN performance_schema.threads t ON t.THREAD_ID = m.OWNER_THREAD_ID "
               "WHERE m.LOCK_STATUS = 'GRANTED' AND m.OBJECT_TYPE = 'TABLE'")
    elif connection.execute(
        text("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'information_schema' "
             "AND TABLE_NAME = 'METADATA_LOCK_INFO'")
    ).scalar():
        sql = "SELECT THREAD_ID, TABLE_SCHEMA, TABLE_NAME FROM information_schema.METADATA_LOCK_INFO"
    else:
        return None
    return {int(row[0]) for row in connection.execute(text(sql)) if (row[1], row[2]) in pairs and row[0] is not None}


def blockers(connection: Connection, relations: Sequence[str]) -> str:
    """Sessions holding a metadata lock on ``relations`` (where the server can say), and
    sessions of this database with an open transaction or a running statement: who a DDL
    waits on."""
    holders = _lock_holders(connection, [split_qualified(r) for r in relations]) or set()
    rows = connection.execute(
        text(
            "SELECT p.ID, p.COMMAND, COALESCE(p.STATE, ''), LEFT(COALESCE(p.INFO, t.trx_query, ''), 80), "
            "TIMESTAMPDIFF(SECOND, t.trx_started, NOW()), p.ID IN :holders "
            "FROM information_schema.PROCESSLIST p LEFT JOIN information_schema.INNODB_TRX t "
            "ON t.trx_mysql_thread_id = p.ID WHERE p.ID <> CONNECTION_ID() AND (p.ID IN :holders OR "
            "(p.DB = DATABASE() AND (t.trx_id IS NOT NULL OR (p.COMMAND = 'Query' AND COALESCE(p.STATE, '') "
            "NOT LIKE 'Waiting for%')))) ORDER BY p.ID"
        ).bindparams(bindparam("holders", expanding=True)),
        {"holders": sorted(holders) or [-1]},
    ).all()
    if not rows:
        return "no session holds it any more"

    def describe(row: Any) -> str:
        state = "idle in transaction" if row[1] == "Sleep" else f"{row[1]}{': ' + row[2] if row[2] else ''}"
        age = f", transaction open {row[4]} s" if row[4] is not None else ""
        return f"session {row[0]} ({state}{age}: {row[3]!r})"

    return "; ".join(describe(row) for row in rows)


ONLINE_REFUSED = (1845, 1846, 4092)
"""``ER_ALTER_OPERATION_NOT_SUPPORTED`` and ``..._REASON``: the requested ``ALGORITHM`` or
``LOCK`` cannot do this change; MySQL's ``ER_INNODB_MAX_ROW_VERSION``: the table has used up
its instant ADD/DROP COLUMNs (64, from 9.1 255) until a rebuild, which INPLACE is."""


def online_ddl_refused(error: BaseException) -> str | None:
    """The server's reason when ``error`` refuses an online ``ALGORITHM``/``LOCK``, else None."""
    arguments = getattr(getattr(error, "orig", None), "args", None)
    if not arguments or arguments[0] not in ONLINE_REFUSED:
        return None
    return str(arguments[1]).strip() if len(arguments) > 1 else "online DDL not supported"
