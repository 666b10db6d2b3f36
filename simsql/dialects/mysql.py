"""MySQL >= 8.0 and MariaDB >= 10.6: ``BIT_COUNT(a ^ b)`` on ``BIGINT UNSIGNED``.

The fingerprint is stored unsigned (no signed mapping: ``^`` and ``BIT_COUNT`` work on the full
64-bit range), blocks are ``VIRTUAL`` generated columns whose values live in their indexes, and
"any of these values" is a plain ``IN`` list (PyMySQL interpolates parameters on the client, so
there is no server-side plan to share between radii). DDL is not transactional here: each
statement commits at once, so every plan step carries its undo (:mod:`.mysql_ddl`); the catalog
is read from information_schema (:mod:`.mysql_catalog`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, ClassVar

from sqlalchemy import Integer, String, Uuid, event, text
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.pool import Pool
from sqlalchemy.schema import CreateIndex
from sqlalchemy.types import TypeEngine

from ..errors import SchemaError, UnsupportedDatabase
from ..schema import Names, check_name
from . import mysql_catalog
from .base import Backend, describe_server, version_text
from .batch import Job
from .constructs import (
    COVERING_INFO,
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
)
from .mysql_backfill import MySQLBatchSQL
from .mysql_catalog import is_mariadb, triggers_on
from .mysql_ddl import MYSQL_DDL, block_expression_sql, create_trigger_sql, digest_sql, drop_trigger_sql, quote, trigger_names
from .plan import TableFacts

NAMES = ("mysql", "mariadb")
"""SQLAlchemy names the MariaDB dialect ``mariadb`` (``mariadb+pymysql://``) and reads a
MariaDB server behind ``mysql+pymysql://`` as ``mysql``: both compile the same way."""

MIN_MYSQL = (8, 0)
"""Window functions, CTEs and ``ALGORITHM=INSTANT`` arrived in MySQL 8.0."""

MIN_MARIADB = (10, 6)
"""The oldest MariaDB still maintained when simsql added it; instant ADD COLUMN since 10.3."""

MAX_IDENTIFIER_CHARACTERS = 64


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
    return block_expression_sql(compiler.preparer.quote_identifier(element.fingerprint), element.index)


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
    if is_mariadb(connection.dialect):
        return
    info = connection.connection.info
    if info.get(_HAS_MD5):
        return
    try:
        connection.exec_driver_sql("SELECT MD5('')")  # a failed statement leaves MySQL's transaction alone
    except Exception as error:  # noqa: BLE001 - only the missing function is ours to explain
        if getattr(getattr(error, "orig", None), "args", (None,))[0] != 1305:  # ER_SP_DOES_NOT_EXIST
            raise
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



REGISTRY_PROBE = (
    "SELECT (SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s) > 0, "
    "(SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s) > 0, "
    "DATABASE()"
)
"""On the DBAPI cursor (format paramstyle): registry present, version table present, schema."""



# -- time bounds ----------------------------------------------------------------------------

TIMEOUT_CODES = {1205: "lock", 1969: "statement", 3024: "statement"}
"""``ER_LOCK_WAIT_TIMEOUT`` (metadata and row locks), MariaDB's ``ER_STATEMENT_TIMEOUT``
(``max_statement_time``), MySQL's ``ER_QUERY_TIMEOUT`` (``max_execution_time``)."""

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


# Timeouts. MySQL has no transaction-scoped settings: simsql sets session variables and puts
# the session's own values back when it is done (``bounded``), or, for a setting meant to last
# a transaction, when the connection goes back to its pool (the ``checkin`` listener below), so
# no pooled connection keeps simsql's bounds.

_REMEMBERED = "simsql_session_timeouts"


def _statement_variable(connection: Connection) -> str:
    """MariaDB bounds every statement (``max_statement_time``, seconds); MySQL only SELECTs
    (``max_execution_time``, milliseconds)."""
    return "max_statement_time" if is_mariadb(connection.dialect) else "max_execution_time"


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
    elif is_mariadb(connection.dialect):
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


class MySQLBackend(Backend):
    """MySQL >= 8.0 and MariaDB >= 10.6 (one family: the differences between the two, such as
    the statement-time variable or where metadata locks are listed, are read from the dialect)."""

    __dialect__ = NAMES
    name = "mysql"
    supported = "MySQL >= 8.0 or MariaDB >= 10.6"
    ddl = MYSQL_DDL

    transactional_ddl = False
    online_index_builds = True
    refingerprints_online = False
    folds_names = True
    backfill_isolation = "REPEATABLE READ"  # InnoDB's default; its reads that decide lock (LOCK IN SHARE MODE)
    offline_scripts = False  # trigger bodies hold several statements: the mysql client splits them without DELIMITER
    stored_blocks = False
    include_columns = False
    many_targets_plan = "window"  # MariaDB has no LATERAL, neither has arrays
    activity_view = "SHOW PROCESSLIST"
    registry_probe = REGISTRY_PROBE

    fingerprint_type: ClassVar[TypeEngine[Any]] = mysql.BIGINT(unsigned=True)
    digest_type: ClassVar[TypeEngine[Any]] = Uuid(native_uuid=False)
    """32 hex digits, where ``MD5()`` yields exactly that and MariaDB's own UUID type refuses
    md5 values whose variant bits are not RFC 4122's ("Incorrect uuid value")."""

    @property
    def alters_columns_beside_indexed_blocks(self) -> bool:
        """MySQL >= 8.0.29 adds and drops a column instantly beside indexed virtual columns;
        MariaDB 10.11 refuses both online ("online rebuild with indexed virtual columns")."""
        return not is_mariadb(self.dialect)

    @classmethod
    def describe_dialect(cls, dialect: Dialect) -> str:
        # SQLAlchemy keeps every number of the version string, the packager's too ("9.7.4-2"
        # is (9, 7, 4, 2), "10.11.6-MariaDB-0+deb12u1" is (10, 11, 6, 0)): the release is three.
        version = getattr(dialect, "server_version_info", None)
        return f"{'MariaDB' if is_mariadb(dialect) else 'MySQL'} {version_text(version[:3] if version else None)}"

    def check_server(self, connection: Connection) -> None:
        check_server(connection)

    def check_digest(self, connection: Connection) -> None:
        check_digest(connection)

    def check_identifier(self, name: str, what: str = "identifier") -> str:
        """The server's own limit (64 characters; the names simsql derives from ``name`` are
        cut to fit, :func:`simsql.schema.identifier`), then what no server holds (empty, NUL)."""
        if isinstance(name, str) and len(name) > MAX_IDENTIFIER_CHARACTERS:
            raise SchemaError(f"{what} {name!r} is {len(name)} characters long; MySQL and MariaDB names hold at most 64")
        return check_name(name, what, max_bytes=None)

    @staticmethod
    def fingerprint_to_db(value: int) -> int:
        return value

    @staticmethod
    def fingerprint_from_db(value: int) -> int:
        return int(value)

    @classmethod
    def block_expression_sql(cls, fingerprint_sql: str, index: int) -> str:
        return block_expression_sql(fingerprint_sql, index)

    def quote(self, name: str) -> str:
        return quote(name)

    def digest_sql(self, columns: Sequence[str], row: str = "") -> str:
        return digest_sql(columns, row)

    def distinct_sql(self, a: str, b: str) -> str:
        return f"NOT ({a} <=> {b})"

    def count_where(self, condition: str) -> str:
        return f"COALESCE(SUM(CASE WHEN {condition} THEN 1 ELSE 0 END), 0)"

    def current_schema(self, connection: Connection) -> str:
        return current_schema(connection)

    def relation_exists(self, connection: Connection, name: str) -> bool:
        return relation_exists(connection, name)

    def insert_new(self, table: Any, values: dict[str, Any]) -> Any:
        return insert_new(table, values)

    def upsert(self, table: Any, values: dict[str, Any], keys: Sequence[str], update: Sequence[str]) -> Any:
        return upsert(table, values, keys, update)

    def prepare_self_join(self, connection: Connection) -> None:
        """Nothing to set: without expression hash joins the self-joins go through the block indexes."""

    def hash_joins_expressions(self) -> bool:
        """MySQL >= 8.0.18 does; MariaDB would nest loops over every pair."""
        version = getattr(self.dialect, "server_version_info", None) or (0,)
        return not is_mariadb(self.dialect) and tuple(version) >= (8, 0, 18)

    # -- triggers ------------------------------------------------------------------------------

    def trigger_names(self, names: Names) -> tuple[str, ...]:
        return trigger_names(names)

    def create_trigger_sql(
        self, schema: str | None, names: Names, source: Sequence[str], keys: Sequence[str], *, derive_blocks: bool = False
    ) -> tuple[str, ...]:
        """``derive_blocks`` does not apply: blocks are generated columns in every mode here."""
        return create_trigger_sql(schema, names, source, keys)

    def drop_trigger_sql(self, schema: str | None, names: Names, *, table_dropped: bool = False) -> tuple[str, ...]:
        return drop_trigger_sql(schema, names)

    def trigger_schema(self, connection: Connection, schema: str | None) -> str | None:
        """The table's schema as given (None: the current database, where the table is)."""
        return schema

    # -- catalog -------------------------------------------------------------------------------

    def table_facts(self, connection: Connection, schema: str, table: str) -> TableFacts | None:
        return mysql_catalog.table_facts(connection, schema, table)

    def triggers_on(self, connection: Connection, schema: str, table: str) -> tuple[str, ...]:
        return triggers_on(connection, schema, table)

    def schema_triggers(self, connection: Connection, schema: str) -> dict[str, str]:
        """MySQL trigger names are unique per schema, not per table."""
        return mysql_catalog.schema_triggers(connection, schema)

    def index_names(self, connection: Connection, schema: str, table: str) -> tuple[str, ...]:
        return mysql_catalog.index_names(connection, schema, table)

    def dependents(self, connection: Connection, schema: str, table: str, columns: Sequence[str], own: Sequence[str]) -> list[str]:
        return mysql_catalog.dependents(connection, schema, table, columns, own)

    def primary_key_name(self, connection: Connection, schema: str, table: str) -> str:
        return "PRIMARY"

    def triggers_as_written(
        self, connection: Connection, schema: str, names: Names, source: Sequence[str], keys: Sequence[str]
    ) -> bool:
        statements = self.create_trigger_sql(schema, names, source, keys)
        return mysql_catalog.triggers_as_written(connection, schema, names.table, self.trigger_names(names), statements)

    def attach_conflicts(self, connection: Connection, facts: TableFacts, names: Names) -> list[str]:
        return mysql_catalog.attach_conflicts(connection, facts, names)

    # -- locks and time bounds -------------------------------------------------------------------

    def set_timeouts(self, connection: Connection, lock: str | None, statement: str | None, local: bool) -> None:
        set_timeouts(connection, lock, statement, local)

    def read_timeouts(self, connection: Connection) -> tuple[Any, ...]:
        return read_timeouts(connection)

    def reset_timeouts(self, connection: Connection) -> None:
        reset_timeouts(connection)

    def bounded(self, connection: Connection, lock: str | None, statement: str | None) -> AbstractContextManager[None]:
        """Session variables, set and put back (no setting here ends with the transaction)."""
        return _bounded(connection, lock, statement)

    @staticmethod
    def timeout_kind(error: BaseException) -> str | None:
        return timeout_kind(error)

    def online_ddl_refused(self, error: BaseException) -> str | None:
        return online_ddl_refused(error)

    def blockers(self, connection: Connection, relations: Sequence[str]) -> str:
        return mysql_catalog.blockers(connection, relations)

    def lock_exclusively(self, connection: Connection, schema: str, tables: Sequence[str]) -> None:
        raise UnsupportedDatabase(
            f"simsql does not lock {schema}.{', '.join(tables)} for a switch on {self.describe_server()}: MySQL's "
            "LOCK TABLES commits the transaction it would guard"
        )

    def analyze(self, connection: Connection, schema: str, table: str) -> None:
        connection.execute(text(f"ANALYZE TABLE {self.qualified(schema, table)}")).fetchall()

    def try_advisory_lock(self, connection: Connection, key: int) -> bool:
        return bool(connection.execute(text("SELECT GET_LOCK(:name, 0)"), {"name": _lock_name(key)}).scalar())

    def advisory_lock(self, connection: Connection, key: int) -> None:
        connection.execute(text("SELECT GET_LOCK(:name, :wait)"), {"name": _lock_name(key), "wait": UNBOUNDED_LOCK_WAIT})

    def advisory_unlock(self, connection: Connection, key: int) -> None:
        connection.execute(text("SELECT RELEASE_LOCK(:name)"), {"name": _lock_name(key)})

    def advisory_xact_lock(self, connection: Connection, key: int) -> None:
        """MySQL's named locks belong to the session: taken now, released when SQLAlchemy ends
        the transaction. Its ``commit`` event comes before the driver's COMMIT, so the release
        commits first (the driver's own COMMIT then finds nothing to do): the next holder
        sees every change."""
        self.advisory_lock(connection, key)
        _release_with_transaction(connection, _lock_name(key))

    def batch_sql(self, job: Job) -> MySQLBatchSQL:
        return MySQLBatchSQL(job)


@contextmanager
def _bounded(connection: Connection, lock: str | None, statement: str | None) -> Iterator[None]:
    previous = read_timeouts(connection)
    set_timeouts(connection, lock, statement, False)
    try:
        yield
    finally:
        restore_timeouts(connection, previous)


def _release_with_transaction(connection: Connection, name: str) -> None:
    dbapi_connection: Any = connection.connection.dbapi_connection
    released: list[bool] = []

    def end(finish: Any) -> None:
        if released:
            return
        released.append(True)
        finish()
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("SELECT RELEASE_LOCK(%s)", (name,))
        finally:
            cursor.close()

    event.listen(connection, "commit", lambda _connection: end(dbapi_connection.commit))
    event.listen(connection, "rollback", lambda _connection: end(dbapi_connection.rollback))


def _lock_name(key: int) -> str:
    """MySQL's named locks take a string (at most 64 characters)."""
    return f"simsql_{key}"
