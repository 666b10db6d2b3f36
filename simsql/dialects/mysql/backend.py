"""MySQL >= 8.0 and MariaDB >= 10.6: the :class:`MySQLBackend`.

The fingerprint is stored unsigned (no signed mapping: ``^`` and ``BIT_COUNT`` work on the full
64-bit range), blocks are ``VIRTUAL`` generated columns whose values live in their indexes, and
"any of these values" is a plain ``IN`` list (PyMySQL interpolates parameters on the client, so
there is no server-side plan to share between radii). DDL is not transactional here: each
statement commits at once, so every plan step carries its undo (:mod:`.ddl`); the catalog is
read from information_schema (:mod:`.catalog`); session variables and named locks are set and
put back by :mod:`.session`; the SQL constructs compile by :mod:`.compile`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar

from sqlalchemy import Uuid, text
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql import TableClause
from sqlalchemy.types import TypeEngine

from ...schema.names import Names, check_name
from ...text.errors import SchemaError, UnsupportedDatabase
from ..base import Backend, describe_server, version_text
from ..batch import Job
from ..constructs import read_row_estimate
from ..ddl_plan import TableFacts
from . import catalog, session
from .backfill import MySQLBatchSQL
from .compile import MYSQL_DIALECTS
from .ddl import MYSQL_DDL, block_expression_sql, create_trigger_sql, digest_sql, drop_trigger_sql, quote, trigger_names
from .lists import MYSQL_PARTITION_DDL
from .server import check_version

MAX_IDENTIFIER_CHARACTERS = 64

HAS_MD5 = "simsql_has_md5"
"""The connection's ``info`` key remembering that its server has ``MD5()``."""
CLASSIC_HASHING = "file://component_classic_hashing"

REGISTRY_PROBE = (
    "SELECT (SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s) > 0, "
    "(SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s) > 0, "
    "DATABASE()"
)
"""On the DBAPI cursor (format paramstyle): registry present, version table present, schema."""


class MySQLBackend(Backend):
    """MySQL >= 8.0 and MariaDB >= 10.6 (one family: the differences between the two, such as
    the statement-time variable or where metadata locks are listed, are read from the dialect)."""

    __dialect__ = MYSQL_DIALECTS
    name = "mysql"
    supported = "MySQL >= 8.0 or MariaDB >= 10.6"
    ddl = MYSQL_DDL
    lists_ddl = MYSQL_PARTITION_DDL

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
        return not catalog.is_mariadb(self.dialect)

    @classmethod
    def describe_dialect(cls, dialect: Dialect) -> str:
        # SQLAlchemy keeps every number of the version string, the packager's too ("9.7.4-2"
        # is (9, 7, 4, 2), "10.11.6-MariaDB-0+deb12u1" is (10, 11, 6, 0)): the release is three.
        version = getattr(dialect, "server_version_info", None)
        return f"{'MariaDB' if catalog.is_mariadb(dialect) else 'MySQL'} {version_text(version[:3] if version else None)}"

    def check_server(self, connection: Connection) -> None:
        check_version(connection.dialect)

    def check_digest(self, connection: Connection) -> None:
        """Refuse a MySQL without ``MD5()``, which simsql's triggers, backfill and status compute.

        MySQL 9.6 moved ``MD5()`` out of the server into a component an administrator installs;
        without it a trigger simsql created would fail every INSERT into the user's table ("FUNCTION
        db.MD5 does not exist"), so nothing is created and nothing is fingerprinted; detach still
        runs, to take such triggers away. Asked once per session (MariaDB has it built in)."""
        if catalog.is_mariadb(connection.dialect):
            return
        info = connection.connection.info
        if info.get(HAS_MD5):
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
        info[HAS_MD5] = True

    def check_identifier(self, name: str, what: str = "identifier") -> str:
        """The server's own limit (64 characters; the names simsql derives from ``name`` are
        cut to fit, :func:`simsql.schema.names.identifier`), then what no server holds (empty, NUL)."""
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
        return str(connection.execute(text("SELECT DATABASE()")).scalar_one())

    def relation_exists(self, connection: Connection, name: str) -> bool:
        found = connection.execute(
            text("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = :n"),
            {"n": name},
        ).scalar_one()
        return bool(found)

    def insert_new(self, table: Any, values: dict[str, Any]) -> Any:
        # A no-op update (first key to itself) rather than INSERT IGNORE, which would also swallow
        # truncation and NOT NULL errors.
        statement = mysql.insert(table).values(values)
        first = table.primary_key.columns.values()[0].name
        return statement.on_duplicate_key_update({first: statement.inserted[first]})

    def upsert(self, table: Any, values: dict[str, Any], keys: Sequence[str], update: Sequence[str]) -> Any:
        statement = mysql.insert(table).values(values)
        return statement.on_duplicate_key_update({name: statement.inserted[name] for name in update})

    def prepare_self_join(self, connection: Connection) -> None:
        """Nothing to set: without expression hash joins the self-joins go through the block indexes."""

    def hash_joins_expressions(self) -> bool:
        """MySQL >= 8.0.18 does; MariaDB would nest loops over every pair."""
        version = getattr(self.dialect, "server_version_info", None) or (0,)
        return not catalog.is_mariadb(self.dialect) and tuple(version) >= (8, 0, 18)

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
        return catalog.table_facts(connection, schema, table)

    def triggers_on(self, connection: Connection, schema: str, table: str) -> tuple[str, ...]:
        return catalog.triggers_on(connection, schema, table)

    def schema_triggers(self, connection: Connection, schema: str) -> dict[str, str]:
        """MySQL trigger names are unique per schema, not per table."""
        return catalog.schema_triggers(connection, schema)

    def index_names(self, connection: Connection, schema: str, table: str) -> tuple[str, ...]:
        return catalog.index_names(connection, schema, table)

    def dependents(self, connection: Connection, schema: str, table: str, columns: Sequence[str], own: Sequence[str]) -> list[str]:
        return catalog.dependents(connection, schema, table, columns, own)

    def primary_key_name(self, connection: Connection, schema: str, table: str) -> str:
        return "PRIMARY"

    def triggers_as_written(
        self, connection: Connection, schema: str, names: Names, source: Sequence[str], keys: Sequence[str]
    ) -> bool:
        statements = self.create_trigger_sql(schema, names, source, keys)
        return catalog.triggers_as_written(connection, schema, names.table, self.trigger_names(names), statements)

    def attach_conflicts(self, connection: Connection, facts: TableFacts, names: Names) -> list[str]:
        return catalog.attach_conflicts(connection, facts, names)

    # -- locks and time bounds -------------------------------------------------------------------

    def set_timeouts(self, connection: Connection, lock: str | None, statement: str | None, local: bool) -> None:
        session.set_timeouts(connection, lock, statement, local)

    def read_timeouts(self, connection: Connection) -> tuple[Any, ...]:
        return session.read_timeouts(connection)

    def reset_timeouts(self, connection: Connection) -> None:
        session.reset_timeouts(connection)

    def bounded(self, connection: Connection, lock: str | None, statement: str | None) -> AbstractContextManager[None]:
        """Session variables, set and put back (no setting here ends with the transaction)."""
        return session.bounded(connection, lock, statement)

    @staticmethod
    def timeout_kind(error: BaseException) -> str | None:
        return session.timeout_kind(error)

    def online_ddl_refused(self, error: BaseException) -> str | None:
        return session.online_ddl_refused(error)

    def blockers(self, connection: Connection, relations: Sequence[str]) -> str:
        return catalog.blockers(connection, relations)

    def lock_exclusively(self, connection: Connection, schema: str, tables: Sequence[str]) -> None:
        raise UnsupportedDatabase(
            f"simsql does not lock {schema}.{', '.join(tables)} for a switch on {self.describe_server()}: MySQL's "
            "LOCK TABLES commits the transaction it would guard"
        )

    def row_estimate(self, connection: Connection, table: TableClause) -> float:
        """InnoDB's sampled estimate (``information_schema.TABLES.TABLE_ROWS``, what ``ANALYZE
        TABLE`` refreshes), as :class:`~simsql.dialects.RowEstimate` compiles it here."""
        return read_row_estimate(connection, table)

    def analyze(self, connection: Connection, schema: str, table: str) -> None:
        connection.execute(text(f"ANALYZE TABLE {self.qualified(schema, table)}")).fetchall()

    def try_advisory_lock(self, connection: Connection, key: int) -> bool:
        return bool(connection.execute(text("SELECT GET_LOCK(:name, 0)"), {"name": session.lock_name(key)}).scalar())

    def advisory_lock(self, connection: Connection, key: int) -> None:
        connection.execute(text("SELECT GET_LOCK(:name, :wait)"), {"name": session.lock_name(key), "wait": session.UNBOUNDED_LOCK_WAIT})

    def advisory_unlock(self, connection: Connection, key: int) -> None:
        connection.execute(text("SELECT RELEASE_LOCK(:name)"), {"name": session.lock_name(key)})

    def advisory_xact_lock(self, connection: Connection, key: int) -> None:
        """MySQL's named locks belong to the session: taken now, released when SQLAlchemy ends
        the transaction. Its ``commit`` event comes before the driver's COMMIT, so the release
        commits first (the driver's own COMMIT then finds nothing to do): the next holder
        sees every change."""
        self.advisory_lock(connection, key)
        session.release_with_transaction(connection, session.lock_name(key))

    def batch_sql(self, job: Job) -> MySQLBatchSQL:
        return MySQLBatchSQL(job)


