"""Alembic integration: operations for your own migrations, and simsql's own revisions.

In a migration of your application (``alembic revision -m "fingerprint articles"`` writes it
into your own ``alembic/versions``)::

    import simsql.alembic  # registers the operations below on ``op``

    def upgrade():
        op.upgrade_simsql()  # simsql's registry and SQL functions, recorded in simsql_alembic_version
        op.add_simhash("articles", source=["title", "body"], primary_key=["id"])
        op.create_simhash_indexes("articles", concurrently=True)

    def downgrade():
        op.drop_simhash_indexes("articles", concurrently=True)
        op.drop_simhash("articles")
        op.downgrade_simsql()  # removes simsql's objects unless other tables still use them

Why an operation and not ``version_locations``: simsql's revisions are recorded in one place
only, its own version table ``simsql_alembic_version``, whoever applies them (this operation,
``simsql db upgrade`` or :func:`upgrade`), so ``simsql db current`` and your history always
agree and either order works. Your history stays one branch: ``alembic revision`` never writes
into simsql's package, ``alembic upgrade head`` sees one head, no ``depends_on`` is needed.

On MySQL/MariaDB the operations run online only (their DDL is described by
:mod:`simsql.lifecycle.mysql_ddl`: instant or online, undone statement by statement if one
fails); offline scripts are refused there (trigger bodies would need the ``mysql`` client's
``DELIMITER``), and ``concurrently`` changes nothing (index builds are always online).

On PostgreSQL every operation works online and offline (``alembic upgrade head --sql``): offline they write
the same DDL without reading the catalog, which is why ``primary_key`` is an argument (online
it is checked against the table; offline it is needed, with SQL types for a side table, e.g.
``primary_key={"id": "bigint"}``), and the schema is ``public`` unless ``schema=`` names one.
Each operation has a ``reverse()`` (autogenerate-style downgrades write themselves), renders in
autogenerate, and has a typed function twin (``simsql.alembic.add_simhash(op, ...)``).
A table that already has a column named ``simhash`` is attached under another prefix
(``op.add_simhash(..., prefix="fp")``: columns ``fp``, ``fp_src``, ``fp_b0``..), given to the
index operations and carried by every ``reverse()``; online the downgrade reads it from the
registry, offline it must be in the arguments like ``primary_key``.

Autogenerate: tables your models declare (``SimHashMixin``, the side table of
``simsql.attach``) come out of ``alembic revision --autogenerate`` with their columns and
indexes, like any table, and with ``op.create_simhash_trigger(table, source)``: the trigger
``create_all`` installs through the table's DDL events, which Alembic's own comparison cannot
see. Without it, a database built by migrations would keep fingerprints of text that raw SQL
changed. The comparator emits it for a new table, and for an existing one that lacks the
trigger (a model that just gained the mixin); its reverse drops trigger and function. Both
work offline. It is registered when this module is imported, which simsql does itself when a
model is mapped in a process that has imported Alembic (the ``alembic`` command runs ``env.py``
after importing Alembic, so ``env.py`` needs nothing); a program that imports its models before
Alembic and runs autogenerate through Alembic's API imports ``simsql.alembic`` itself.
"""

from __future__ import annotations

import importlib.resources
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from alembic import command
from alembic.autogenerate import comparators, renderers
from alembic.autogenerate.api import AutogenContext
from alembic.config import Config
from alembic.operations import MigrateOperation, Operations
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.operations import ops
from sqlalchemy import Column, Computed, Engine, MetaData, Table, Text, bindparam, text
from sqlalchemy.dialects import mysql as mysql_types
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection

from . import registry
from .dialects import mysql as mysql_dialect
from .dialects import COVERING_INFO, MYSQL_NAMES, BlockComputed, BlockExpression, block_expression_sql, check_server, current_schema
from .dialects.mysql import quote as quote_mysql
from .errors import SchemaError, UnsupportedDatabase
from .fingerprint import DEFAULT, Fingerprinter
from .lifecycle import attach as ddl
from .lifecycle import catalog
from .lifecycle import ddl as describe
from .registry import VERSION_TABLE
from .schema import DEFAULT_PREFIX, Names
from .schema import metadata as _state_metadata
from .storage import OrmTrigger, orm_trigger
from .types import SimHash
from .urls import engine_for, normalise_url

BRANCH = "simsql"
#: The schema offline SQL uses when an operation names none (offline, nothing can ask the server).
OFFLINE_SCHEMA = "public"

_log = logging.getLogger(__name__)

PrimaryKey = Sequence[str] | Mapping[str, str] | None


# -- operations ---------------------------------------------------------------------------


def _key_names(primary_key: PrimaryKey) -> tuple[str, ...]:
    if primary_key is None:
        return ()
    return tuple([primary_key] if isinstance(primary_key, str) else primary_key)


class _AttachmentOp(MigrateOperation):
    """What add_simhash and drop_simhash both carry, so each can rebuild the other."""

    def __init__(
        self,
        table_name: str,
        source: Sequence[str] = (),
        schema: str | None = None,
        side_table: bool = False,
        fingerprinter: Fingerprinter | None = None,
        primary_key: PrimaryKey = None,
        prefix: str = DEFAULT_PREFIX,
    ) -> None:
        self.table_name = table_name
        self.source = tuple([source] if isinstance(source, str) else source)
        self.schema = schema
        self.side_table = side_table
        self.fingerprinter = fingerprinter
        self.primary_key = dict(primary_key) if isinstance(primary_key, Mapping) else _key_names(primary_key) or None
        self.prefix = prefix

    def _args(self) -> tuple[Any, ...]:
        return (self.table_name, self.source, self.schema, self.side_table, self.fingerprinter, self.primary_key,
                self.prefix)  # fmt: skip


class _IndexesOp(MigrateOperation):
    def __init__(
        self,
        table_name: str,
        schema: str | None = None,
        concurrently: bool = False,
        side_table: bool = False,
        primary_key: PrimaryKey = None,
        prefix: str = DEFAULT_PREFIX,
    ) -> None:
        self.table_name = table_name
        self.schema = schema
        self.concurrently = concurrently
        self.side_table = side_table
        self.primary_key = dict(primary_key) if isinstance(primary_key, Mapping) else _key_names(primary_key) or None
        self.prefix = prefix

    def _args(self) -> tuple[Any, ...]:
        return (self.table_name, self.schema, self.concurrently, self.side_table, self.primary_key, self.prefix)


@Operations.register_operation("add_simhash")
class AddSimHashOp(_AttachmentOp):
    """Add fingerprint columns (or a side table), the block trigger and the registry entry."""

    @classmethod
    def add_simhash(
        cls,
        operations: Operations,
        table_name: str,
        source: Sequence[str],
        *,
        schema: str | None = None,
        side_table: bool = False,
        fingerprinter: Fingerprinter | None = None,
        primary_key: PrimaryKey = None,
        prefix: str = DEFAULT_PREFIX,
    ) -> Any:
        return operations.invoke(cls(table_name, source, schema, side_table, fingerprinter, primary_key, prefix))

    def reverse(self) -> DropSimHashOp:
        return DropSimHashOp(*self._args())


@Operations.register_operation("drop_simhash")
class DropSimHashOp(_AttachmentOp):
    """Remove what :class:`AddSimHashOp` added; the table's own data and indexes are untouched."""

    @classmethod
    def drop_simhash(
        cls,
        operations: Operations,
        table_name: str,
        *,
        source: Sequence[str] = (),
        schema: str | None = None,
        side_table: bool = False,
        fingerprinter: Fingerprinter | None = None,
        primary_key: PrimaryKey = None,
        prefix: str = DEFAULT_PREFIX,
    ) -> Any:
        return operations.invoke(cls(table_name, source, schema, side_table, fingerprinter, primary_key, prefix))

    def reverse(self) -> AddSimHashOp:
        if not self.source:
            raise ValueError("drop_simhash needs source=[...] to be reversible")
        return AddSimHashOp(*self._args())


@Operations.register_operation("create_simhash_indexes")
class CreateSimHashIndexesOp(_IndexesOp):
    """Covering block indexes; ``concurrently=True`` builds them without blocking writes."""

    @classmethod
    def create_simhash_indexes(
        cls,
        operations: Operations,
        table_name: str,
        *,
        schema: str | None = None,
        concurrently: bool = False,
        side_table: bool = False,
        primary_key: PrimaryKey = None,
        prefix: str = DEFAULT_PREFIX,
    ) -> Any:
        return operations.invoke(cls(table_name, schema, concurrently, side_table, primary_key, prefix))

    def reverse(self) -> DropSimHashIndexesOp:
        return DropSimHashIndexesOp(*self._args())


@Operations.register_operation("drop_simhash_indexes")
class DropSimHashIndexesOp(_IndexesOp):
    """Drop the block indexes (``concurrently=True`` without blocking writes)."""

    @classmethod
    def drop_simhash_indexes(
        cls,
        operations: Operations,
        table_name: str,
        *,
        schema: str | None = None,
        concurrently: bool = False,
        side_table: bool = False,
        primary_key: PrimaryKey = None,
        prefix: str = DEFAULT_PREFIX,
    ) -> Any:
        return operations.invoke(cls(table_name, schema, concurrently, side_table, primary_key, prefix))

    def reverse(self) -> CreateSimHashIndexesOp:
        return CreateSimHashIndexesOp(*self._args())


@Operations.register_operation("upgrade_simsql")
class UpgradeSimsqlOp(MigrateOperation):
    """Apply simsql's own revisions up to ``revision`` (registry, backfill cursor, SQL functions),
    recorded in ``simsql_alembic_version``; nothing to do when they are applied already."""

    def __init__(self, revision: str = "heads") -> None:
        self.revision = revision

    @classmethod
    def upgrade_simsql(cls, operations: Operations, revision: str = "heads") -> Any:
        return operations.invoke(cls(revision))

    def reverse(self) -> DowngradeSimsqlOp:
        return DowngradeSimsqlOp()


@Operations.register_operation("downgrade_simsql")
class DowngradeSimsqlOp(MigrateOperation):
    """Undo simsql's own revisions down to ``revision`` (default: remove them all), unless the
    registry still lists attached tables: then nothing is dropped and a warning is logged,
    because those tables' triggers and fingerprints depend on it."""

    def __init__(self, revision: str = "base") -> None:
        self.revision = revision

    @classmethod
    def downgrade_simsql(cls, operations: Operations, revision: str = "base") -> Any:
        return operations.invoke(cls(revision))

    def reverse(self) -> UpgradeSimsqlOp:
        return UpgradeSimsqlOp()


class _TriggerOp(MigrateOperation):
    """The trigger ``create_all`` installs for an ORM-declared table (a ``SimHashMixin`` table,
    or the side table of :func:`simsql.attach`), for autogenerated migrations. Tables attached
    by ``op.add_simhash`` get theirs from that operation."""

    def __init__(
        self,
        table_name: str,
        source: Sequence[str],
        schema: str | None = None,
        side_table: str | None = None,
        primary_key: Sequence[str] = (),
        prefix: str = DEFAULT_PREFIX,
    ) -> None:
        self.table_name = table_name
        self.source = tuple([source] if isinstance(source, str) else source)
        self.schema = schema
        self.side_table = side_table
        self.primary_key = _key_names(primary_key)
        self.prefix = prefix

    @classmethod
    def from_trigger(cls, trigger: OrmTrigger, schema: str | None) -> Any:
        return cls(trigger.names.table, trigger.source, schema, trigger.names.side, trigger.keys, trigger.names.prefix)

    @property
    def trigger(self) -> OrmTrigger:
        if self.side_table and not self.primary_key:
            raise SchemaError(f"the trigger of side table {self.side_table} needs primary_key=[...] of {self.table_name}")
        return OrmTrigger(Names(self.table_name, self.prefix, self.side_table), self.source, self.primary_key)

    def _args(self) -> tuple[Any, ...]:
        return (self.table_name, self.source, self.schema, self.side_table, self.primary_key, self.prefix)


@Operations.register_operation("create_simhash_trigger")
class CreateSimHashTriggerOp(_TriggerOp):
    """The trigger that drops fingerprints of changed text (and its function)."""

    @classmethod
    def create_simhash_trigger(
        cls, operations: Operations, table_name: str, source: Sequence[str], *, schema: str | None = None,
        side_table: str | None = None, primary_key: Sequence[str] = (), prefix: str = DEFAULT_PREFIX,
    ) -> Any:  # fmt: skip
        return operations.invoke(cls(table_name, source, schema, side_table, primary_key, prefix))

    def reverse(self) -> DropSimHashTriggerOp:
        return DropSimHashTriggerOp(*self._args())


@Operations.register_operation("drop_simhash_trigger")
class DropSimHashTriggerOp(_TriggerOp):
    """Drop what :class:`CreateSimHashTriggerOp` created (nothing else: both are simsql's names)."""

    @classmethod
    def drop_simhash_trigger(
        cls, operations: Operations, table_name: str, source: Sequence[str], *, schema: str | None = None,
        side_table: str | None = None, primary_key: Sequence[str] = (), prefix: str = DEFAULT_PREFIX,
    ) -> Any:  # fmt: skip
        return operations.invoke(cls(table_name, source, schema, side_table, primary_key, prefix))

    def reverse(self) -> CreateSimHashTriggerOp:
        return CreateSimHashTriggerOp(*self._args())


# -- running them: online on the live catalog, offline from the arguments --------------------


def _mysql(operations: Operations) -> bool:
    return operations.get_context().dialect.name in MYSQL_NAMES


def _offline(operations: Operations) -> bool:
    """Whether Alembic writes a script (``--sql``). Refused on MySQL/MariaDB: simsql's triggers
    there have bodies of several statements, which the ``mysql`` client would cut at their
    first ``;`` without a ``DELIMITER`` line that SQL scripts cannot carry portably."""
    offline = bool(operations.get_context().as_sql)
    if offline and _mysql(operations):
        raise UnsupportedDatabase(
            "simsql's Alembic operations do not write offline (--sql) scripts for MySQL/MariaDB: their trigger "
            "bodies hold several statements, which the mysql client splits without DELIMITER. Run the migration "
            "online (alembic upgrade head)"
        )
    return offline


def _autocommit(operations: Operations, concurrently: bool, work: Any) -> None:
    """``CONCURRENTLY`` cannot run in a transaction block: Alembic commits around it (offline it
    writes the COMMIT and BEGIN into the script). MySQL/MariaDB build indexes online inside
    any transaction (DDL commits on its own there)."""
    if concurrently and not _mysql(operations):
        with operations.get_context().autocommit_block():
            work()
    else:
        work()


def _statement(step: describe.Step) -> Any:
    params = [
        bindparam(name, value, type_=ARRAY(Text) if isinstance(value, list) else None)
        for name, value in step.params.items()
    ]
    return text(step.sql).bindparams(*params) if params else text(step.sql)


def _emit(operations: Operations, plan: describe.Plan) -> None:
    """Write a plan into the offline script; consecutive ``CONCURRENTLY`` statements share one
    stretch outside the migration's transaction."""
    steps = list(plan.steps)
    while steps:
        concurrently = steps[0].concurrently
        run = []
        while steps and steps[0].concurrently == concurrently:
            run.append(steps.pop(0))
        _autocommit(operations, concurrently, lambda run=run: _execute_all(operations, run))


def _execute_all(operations: Operations, steps: Sequence[describe.Step]) -> None:
    for step in steps:
        operations.execute(_statement(step))


def _offline_state(operations: Operations) -> dict[tuple[str, str], tuple[Names, tuple[str, ...]]]:
    """What earlier operations of this offline run attached: names and primary key per table."""
    state: dict[tuple[str, str], tuple[Names, tuple[str, ...]]] = operations.get_context().opts.setdefault(
        "simsql_offline", {}
    )
    return state


def _offline_names(
    operations: Operations, operation: _AttachmentOp | _IndexesOp
) -> tuple[str, Names, tuple[str, ...]]:
    """Offline: the names and key an earlier operation of this run used for the table, else the
    defaults for the operation's arguments (the key only if given)."""
    schema = operation.schema or OFFLINE_SCHEMA
    known = _offline_state(operations).get((schema, operation.table_name))
    if known is not None:
        return schema, known[0], known[1]
    return schema, _names(operation), _key_names(operation.primary_key)


def _names(operation: _AttachmentOp | _IndexesOp) -> Names:
    return Names.for_table(operation.table_name, operation.prefix, "side_table" if operation.side_table else "columns")


def _offline_keys(operation: _AttachmentOp | _IndexesOp) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Primary key names and SQL types from the operation's arguments (offline nothing else knows)."""
    key = operation.primary_key
    if not key:
        raise SchemaError(
            f"offline mode (--sql) cannot read the primary key of {operation.table_name}: pass "
            f"primary_key=[...] to this operation (with SQL types for a side table: primary_key={{'id': 'bigint'}})"
        )
    types = tuple(key.values()) if isinstance(key, Mapping) else ()
    if operation.side_table and not types:
        raise SchemaError(
            f"offline mode (--sql) needs the key types of {operation.table_name} for its side table: pass "
            "primary_key as a mapping of column to SQL type, e.g. primary_key={'id': 'bigint'}"
        )
    return _key_names(key), types


def _check_primary_key(target: describe.Target, operation: AddSimHashOp) -> None:
    expected = _key_names(operation.primary_key)
    if expected and tuple(expected) != tuple(target.keys):
        raise SchemaError(
            f"primary_key={list(expected)} was given for {target.schema}.{target.table}, but its primary key "
            f"is {list(target.keys)}; correct the migration"
        )


@Operations.implementation_for(AddSimHashOp)
def _add_simhash(operations: Operations, operation: AddSimHashOp) -> None:
    if _offline(operations):
        keys, types = _offline_keys(operation)
        target = describe.Target(operation.schema or OFFLINE_SCHEMA, operation.table_name, keys, types, operation.source)
        names = _names(operation)
        _offline_state(operations)[(target.schema, target.table)] = (names, target.keys)
        _emit(operations, describe.attach(target, names, operation.fingerprinter or DEFAULT))
        return
    target = ddl.add_simhash(
        operations.get_bind(),
        operation.table_name,
        operation.source,
        schema=operation.schema,
        fingerprinter=operation.fingerprinter,
        side_table=operation.side_table,
        prefix=operation.prefix,
    )
    _check_primary_key(target, operation)


@Operations.implementation_for(DropSimHashOp)
def _drop_simhash(operations: Operations, operation: DropSimHashOp) -> None:
    if _offline(operations):
        schema, names, _ = _offline_names(operations, operation)
        # The trigger attach created in this mode (online, the catalog says which exist).
        created = names.stale_function if names.side else names.row_function
        _emit(operations, describe.detach(schema, names, triggers=(created,)))
        return
    ddl.drop_simhash(operations.get_bind(), operation.table_name, schema=operation.schema)


@Operations.implementation_for(CreateSimHashIndexesOp)
def _create_indexes(operations: Operations, operation: CreateSimHashIndexesOp) -> None:
    if _offline(operations):
        schema, names, keys = _offline_names(operations, operation)
        keys = keys or _offline_keys(operation)[0]
        holder_keys = names.side_keys(keys) if names.side else keys
        _emit(operations, describe.create_indexes(schema, names, holder_keys, concurrently=operation.concurrently))
        return
    _autocommit(
        operations,
        operation.concurrently,
        lambda: ddl.create_simhash_indexes(
            operations.get_bind(), operation.table_name, schema=operation.schema, concurrently=operation.concurrently
        ),
    )


@Operations.implementation_for(DropSimHashIndexesOp)
def _drop_indexes(operations: Operations, operation: DropSimHashIndexesOp) -> None:
    if _offline(operations):
        schema, names, _ = _offline_names(operations, operation)
        _emit(operations, describe.drop_indexes(schema, names, concurrently=operation.concurrently))
        return
    _autocommit(
        operations,
        operation.concurrently,
        lambda: ddl.drop_simhash_indexes(
            operations.get_bind(), operation.table_name, schema=operation.schema, concurrently=operation.concurrently
        ),
    )


def _trigger_schema(operations: Operations, operation: _TriggerOp) -> str:
    if operation.schema:
        return operation.schema
    if _offline(operations):
        return OFFLINE_SCHEMA
    return current_schema(operations.get_bind())


@Operations.implementation_for(CreateSimHashTriggerOp)
def _create_trigger(operations: Operations, operation: CreateSimHashTriggerOp) -> None:
    schema = _trigger_schema(operations, operation)
    if _mysql(operations) and not operations.get_context().as_sql:
        mysql_dialect.check_digest(operations.get_bind())
    statements = operation.trigger.create_mysql(schema) if _mysql(operations) else operation.trigger.create_sql(schema)
    for statement in statements:
        _execute_raw(operations, statement)


@Operations.implementation_for(DropSimHashTriggerOp)
def _drop_trigger(operations: Operations, operation: DropSimHashTriggerOp) -> None:
    schema = _trigger_schema(operations, operation)
    statements = operation.trigger.drop_mysql(schema) if _mysql(operations) else operation.trigger.drop_sql(schema)
    for statement in statements:
        _execute_raw(operations, statement)


def _execute_raw(operations: Operations, statement: str) -> None:
    """Online on MySQL, straight to the driver: a trigger body may hold ``%`` or ``:name``
    text, which a bound ``text()`` would read as parameters."""
    if _mysql(operations):
        operations.get_bind().exec_driver_sql(statement)
    else:
        operations.execute(text(statement))


def _run_own_revisions(operations: Operations, destination: str, upgrade: bool) -> None:
    """Run simsql's revisions on the migration's own connection (or into its offline script),
    recorded in simsql's version table. A nested migration context replaces Alembic's ``op``
    proxy while it runs; the application's is put back afterwards."""
    outer = operations.get_context()
    script = ScriptDirectory(script_location())

    def steps(revision: Any, _context: Any) -> Any:
        if upgrade:
            return script._upgrade_revs(destination, revision)
        return script._downgrade_revs(destination, revision)

    opts: dict[str, Any] = {"version_table": VERSION_TABLE, "fn": steps, "script": script}
    if outer.as_sql:
        # Offline nothing can be read: an upgrade starts from no simsql revision, a downgrade
        # from simsql's newest.
        opts.update(as_sql=True, literal_binds=True, output_buffer=outer.output_buffer,
                    starting_rev=None if upgrade else script.get_current_head())  # fmt: skip
        inner = MigrationContext.configure(dialect_name=outer.dialect.name, opts=opts)
    else:
        inner = MigrationContext.configure(connection=operations.get_bind(), opts=opts)
    try:
        with Operations.context(inner):
            inner.run_migrations()
            if not upgrade and outer.as_sql and destination == "base":
                Operations(inner).drop_table(VERSION_TABLE)  # the script leaves nothing either
        if not upgrade and not outer.as_sql:
            _forget_version_table(operations.get_bind())
    finally:
        operations._install_proxy()


def _forget_version_table(connection: Connection) -> None:
    """Drop simsql's version table once it records no revision. Alembic keeps an empty version
    table after a downgrade to base; simsql's promise is that a downgrade leaves nothing of it
    behind, and an upgrade creates the table again."""
    context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    if not context.get_current_heads() and registry.version_table_exists(connection):
        Table(VERSION_TABLE, MetaData()).drop(connection)


@Operations.implementation_for(UpgradeSimsqlOp)
def _upgrade_simsql(operations: Operations, operation: UpgradeSimsqlOp) -> None:
    _run_own_revisions(operations, operation.revision, upgrade=True)


@Operations.implementation_for(DowngradeSimsqlOp)
def _downgrade_simsql(operations: Operations, operation: DowngradeSimsqlOp) -> None:
    if not _offline(operations):
        connection = operations.get_bind()
        if registry.registry_exists(connection):
            attached = registry.entries(connection)
            if attached:
                _log.warning(
                    "simsql's objects are kept: %s still use(s) them; detach those first "
                    "(`simsql detach --table NAME`), then `simsql db downgrade`",
                    ", ".join(f"{e.table_schema}.{e.table_name}" for e in attached),
                )
                return
    _run_own_revisions(operations, operation.revision, upgrade=False)


# -- autogenerate -------------------------------------------------------------------------


def _keywords(**values: Any) -> str:
    return "".join(f", {name}={value!r}" for name, value in values.items() if value)


def _trigger_installed(connection: Connection, schema: str | None, table: str, trigger: str) -> bool:
    return catalog.schema_triggers(connection, schema or current_schema(connection)).get(trigger) == table


def _compare_triggers(
    context: AutogenContext, table_ops: Any, schema: str | None, name: str, conn_table: Any, metadata_table: Any
) -> Any:
    """Autogenerate: a table whose ``create_all`` would install simsql's trigger gets
    ``op.create_simhash_trigger`` when the database lacks it (a new table, or one that just
    gained ``SimHashMixin``), so a migrated database drops stale fingerprints like a created one."""
    trigger = orm_trigger(metadata_table) if metadata_table is not None else None
    if trigger is None or context.dialect is None or context.dialect.name not in ("postgresql", *MYSQL_NAMES):
        return None
    # on MySQL the row rule is two triggers; the first one stands for both
    installed_as = trigger.mysql_names[0] if context.dialect.name in MYSQL_NAMES else trigger.function
    if conn_table is None or context.connection is None or not _trigger_installed(
        context.connection, schema, trigger.names.table, installed_as
    ):
        table_ops.ops.append(CreateSimHashTriggerOp.from_trigger(trigger, schema))
    return None


def _mysql_column(column: Column[Any]) -> Column[Any]:
    """A simsql column as the ORM creates it on MySQL, in types a migration renders without
    simsql: the fingerprint ``BIGINT UNSIGNED`` (a plain ``sa.BigInteger()`` would be signed
    there and refuse half of all fingerprints), the blocks ``VIRTUAL`` with MySQL's expression."""
    if isinstance(column.type, SimHash):
        return Column(column.name, mysql_types.BIGINT(unsigned=True), nullable=column.nullable)
    computed = column.computed
    if isinstance(computed, BlockComputed):
        expression = computed.sqltext
        assert isinstance(expression, BlockExpression)
        sql = block_expression_sql(quote_mysql(expression.fingerprint), expression.index, "mysql")
        return Column(column.name, column.type, Computed(sql, persisted=False), nullable=column.nullable)
    return column


def _model_index(operation: ops.CreateIndexOp, metadata: Any) -> Any:
    """The index of the models (``metadata``, one MetaData or several) that ``operation`` creates."""
    key = f"{operation.schema}.{operation.table_name}" if operation.schema else operation.table_name
    for each in metadata if isinstance(metadata, Sequence) else [metadata]:
        table = each.tables.get(key) if each is not None else None
        for index in table.indexes if table is not None else ():
            if index.name == operation.index_name:
                return index
    return None


def _mysql_index(operation: ops.CreateIndexOp, metadata: Any) -> ops.CreateIndexOp:
    """A block index as the ORM creates it on MySQL: the fingerprint as a trailing key column
    (no ``INCLUDE`` there), not a ``postgresql_include`` MySQL ignores."""
    index = _model_index(operation, metadata)
    covering = index.info.get(COVERING_INFO) if index is not None else None
    if not covering:
        return operation
    own = [c.name for c in index.columns]
    kw = {k: v for k, v in operation.kw.items() if k != "postgresql_include"}
    return ops.CreateIndexOp(operation.index_name, operation.table_name, own + [c for c in covering if c not in own],
                             schema=operation.schema, unique=operation.unique, **kw)  # fmt: skip


def _column_names(columns: Sequence[Any]) -> list[str]:
    return [getattr(c, "name", str(c)) for c in columns]


def _mysql_ops(operations: list[Any], metadata: Any) -> None:
    for position, operation in enumerate(operations):
        if isinstance(operation, ops.CreateTableOp):
            operation.columns = [_mysql_column(c) if isinstance(c, Column) else c for c in operation.columns]
        elif isinstance(operation, ops.AddColumnOp):
            operation.column = _mysql_column(operation.column)
        elif isinstance(operation, ops.CreateIndexOp):
            operations[position] = _mysql_index(operation, metadata)
        elif isinstance(operation, ops.ModifyTableOps):
            _mysql_ops(operation.ops, metadata)
    # A block index the database already holds in its covering form is no change (the model
    # declares the block alone; MySQL's CREATE INDEX appends the fingerprint): drop the pair.
    held: dict[str, list[str]] = {}
    for operation in operations:
        reflected = getattr(operation, "_reverse", None) if isinstance(operation, ops.DropIndexOp) else None
        if reflected is not None:
            held[str(operation.index_name)] = _column_names(reflected.columns)
    same = {
        o.index_name for o in operations
        if isinstance(o, ops.CreateIndexOp) and held.get(str(o.index_name)) == _column_names(o.columns)
    }  # fmt: skip
    operations[:] = [o for o in operations if not (isinstance(o, (ops.DropIndexOp, ops.CreateIndexOp)) and o.index_name in same)]


def _compare_for_mysql(context: AutogenContext, upgrade_ops: Any, schemas: Any) -> Any:
    """Autogenerate on MySQL/MariaDB: simsql's columns and indexes come out as ``create_all``
    makes them there (see :func:`_mysql_column`, :func:`_mysql_index`); on PostgreSQL nothing
    changes."""
    if context.dialect is None or context.dialect.name not in MYSQL_NAMES:
        return None
    _mysql_ops(upgrade_ops.ops, context.metadata)
    return None


try:  # Alembic >= 1.18: after the columns and indexes of the same table
    from alembic.util import DispatchPriority

    comparators.dispatch_for("table", priority=DispatchPriority.LAST)(_compare_triggers)
    comparators.dispatch_for("schema", priority=DispatchPriority.LAST)(_compare_for_mysql)
except ImportError:  # pragma: no cover - older Alembic
    comparators.dispatch_for("table")(_compare_triggers)
    comparators.dispatch_for("schema")(_compare_for_mysql)


@renderers.dispatch_for(AddSimHashOp)
@renderers.dispatch_for(DropSimHashOp)
def _render_attachment(context: AutogenContext, operation: _AttachmentOp) -> str:
    context.imports.add("import simsql.alembic")
    if isinstance(operation, AddSimHashOp):
        call = f"op.add_simhash({operation.table_name!r}, {list(operation.source)!r}"
    else:
        call = f"op.drop_simhash({operation.table_name!r}" + _keywords(source=list(operation.source))
    call += _keywords(schema=operation.schema, side_table=operation.side_table, primary_key=_plain(operation.primary_key),
                      prefix=_custom(operation.prefix))  # fmt: skip
    if operation.fingerprinter is not None and operation.fingerprinter.config_id != DEFAULT.config_id:
        context.imports.add("import simsql")
        call += f", fingerprinter=simsql.Fingerprinter(**{operation.fingerprinter.settings!r})"
    return call + ")"


def _custom(prefix: str) -> str | None:
    return None if prefix == DEFAULT_PREFIX else prefix


def _plain(primary_key: PrimaryKey) -> Any:
    """The primary key as the literal a user would write (a list, or a dict with types)."""
    if not primary_key:
        return None
    return dict(primary_key) if isinstance(primary_key, Mapping) else list(_key_names(primary_key))


@renderers.dispatch_for(CreateSimHashIndexesOp)
@renderers.dispatch_for(DropSimHashIndexesOp)
def _render_indexes(context: AutogenContext, operation: _IndexesOp) -> str:
    context.imports.add("import simsql.alembic")
    name = "create_simhash_indexes" if isinstance(operation, CreateSimHashIndexesOp) else "drop_simhash_indexes"
    extra = _keywords(schema=operation.schema, concurrently=operation.concurrently, side_table=operation.side_table,
                      primary_key=_plain(operation.primary_key), prefix=_custom(operation.prefix))  # fmt: skip
    return f"op.{name}({operation.table_name!r}{extra})"


@renderers.dispatch_for(CreateSimHashTriggerOp)
@renderers.dispatch_for(DropSimHashTriggerOp)
def _render_trigger(context: AutogenContext, operation: _TriggerOp) -> str:
    context.imports.add("import simsql.alembic")
    name = "create_simhash_trigger" if isinstance(operation, CreateSimHashTriggerOp) else "drop_simhash_trigger"
    extra = _keywords(schema=operation.schema, side_table=operation.side_table,
                      primary_key=list(operation.primary_key) if operation.side_table else None,
                      prefix=_custom(operation.prefix))  # fmt: skip
    return f"op.{name}({operation.table_name!r}, {list(operation.source)!r}{extra})"


@renderers.dispatch_for(UpgradeSimsqlOp)
@renderers.dispatch_for(DowngradeSimsqlOp)
def _render_own(context: AutogenContext, operation: UpgradeSimsqlOp | DowngradeSimsqlOp) -> str:
    context.imports.add("import simsql.alembic")
    if isinstance(operation, UpgradeSimsqlOp):
        return "op.upgrade_simsql()" if operation.revision == "heads" else f"op.upgrade_simsql({operation.revision!r})"
    return "op.downgrade_simsql()" if operation.revision == "base" else f"op.downgrade_simsql({operation.revision!r})"


# Typed twins: the same operations as plain functions taking ``op``.


def add_simhash(
    op: Any,
    table_name: str,
    source: Sequence[str],
    *,
    schema: str | None = None,
    side_table: bool = False,
    fingerprinter: Fingerprinter | None = None,
    primary_key: PrimaryKey = None,
    prefix: str = DEFAULT_PREFIX,
) -> None:
    op.invoke(AddSimHashOp(table_name, source, schema, side_table, fingerprinter, primary_key, prefix))


def drop_simhash(
    op: Any,
    table_name: str,
    *,
    source: Sequence[str] = (),
    schema: str | None = None,
    side_table: bool = False,
    fingerprinter: Fingerprinter | None = None,
    primary_key: PrimaryKey = None,
    prefix: str = DEFAULT_PREFIX,
) -> None:
    op.invoke(DropSimHashOp(table_name, source, schema, side_table, fingerprinter, primary_key, prefix))


def create_simhash_indexes(
    op: Any, table_name: str, *, schema: str | None = None, concurrently: bool = False,
    side_table: bool = False, primary_key: PrimaryKey = None, prefix: str = DEFAULT_PREFIX,
) -> None:  # fmt: skip
    op.invoke(CreateSimHashIndexesOp(table_name, schema, concurrently, side_table, primary_key, prefix))


def drop_simhash_indexes(
    op: Any, table_name: str, *, schema: str | None = None, concurrently: bool = False,
    side_table: bool = False, primary_key: PrimaryKey = None, prefix: str = DEFAULT_PREFIX,
) -> None:  # fmt: skip
    op.invoke(DropSimHashIndexesOp(table_name, schema, concurrently, side_table, primary_key, prefix))


def upgrade_simsql(op: Any, revision: str = "heads") -> None:
    op.invoke(UpgradeSimsqlOp(revision))


def downgrade_simsql(op: Any, revision: str = "base") -> None:
    op.invoke(DowngradeSimsqlOp(revision))


# -- simsql's own revisions ---------------------------------------------------------------


def script_location() -> str:
    """Filesystem path of simsql's Alembic environment (inside the installed package)."""
    return str(importlib.resources.files("simsql.migrations"))


def versions_path() -> str:
    """Where simsql's revision files are. Not for your ``version_locations``: applied from your
    history they would be recorded in your version table and not in simsql's, and ``alembic
    revision`` could write your migrations next to them; use ``op.upgrade_simsql()`` instead."""
    return str(importlib.resources.files("simsql.migrations").joinpath("versions"))


def config(bind: str | Engine | Connection) -> Config:
    """An Alembic ``Config`` for simsql's own revisions on ``bind`` (URL, engine or connection)."""
    cfg = Config()
    cfg.set_main_option("script_location", script_location())
    cfg.set_main_option("version_table", VERSION_TABLE)
    if isinstance(bind, str):
        url = normalise_url(bind).render_as_string(hide_password=False)
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    elif isinstance(bind, Engine):
        cfg.set_main_option("sqlalchemy.url", bind.url.render_as_string(hide_password=False).replace("%", "%%"))
    else:
        cfg.attributes["connection"] = bind
    return cfg


def _with_connection(bind: str | Engine | Connection, action: Any) -> Any:
    if isinstance(bind, Connection):
        return action(config(bind))
    engine = engine_for(bind) if isinstance(bind, str) else bind
    try:
        with engine.begin() as connection:
            return action(config(connection))
    finally:
        if isinstance(bind, str):
            engine.dispose()


def upgrade(bind: str | Engine | Connection, revision: str = "heads") -> None:
    """Create or update simsql's own objects (registry, helper functions); recreates the
    registry tables if they were dropped by hand while the revision stayed recorded."""

    def run(cfg: Config) -> None:
        # before Alembic creates its version table (which MySQL would keep: DDL commits there)
        check_server(cfg.attributes["connection"])
        command.upgrade(cfg, revision)
        connection = cfg.attributes.get("connection")
        if connection is not None:
            _repair(connection)

    _with_connection(bind, run)


def _repair(connection: Connection) -> None:
    context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    if context.get_current_heads():
        _state_metadata.create_all(connection, checkfirst=True)


def downgrade(bind: str | Engine | Connection, revision: str = "base") -> None:
    """Undo simsql's own revisions down to ``revision``; at base nothing of simsql is left, its
    version table included."""

    def run(cfg: Config) -> None:
        command.downgrade(cfg, revision)
        _forget_version_table(cfg.attributes["connection"])

    _with_connection(bind, run)


def current(bind: str | Engine | Connection) -> tuple[str, ...]:
    """Applied simsql revisions (empty when simsql's objects are not installed)."""

    def read(cfg: Config) -> tuple[str, ...]:
        connection = cfg.attributes["connection"]
        context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
        return tuple(context.get_current_heads())

    return _with_connection(bind, read)  # type: ignore[no-any-return]


def history() -> list[tuple[str, str | None, str]]:
    """simsql's revisions, newest first: (revision, down revision, message)."""
    scripts = ScriptDirectory(script_location())
    return [
        (s.revision, s.down_revision if isinstance(s.down_revision, str) or s.down_revision is None else ",".join(s.down_revision), (s.doc or "").strip())
        for s in scripts.walk_revisions()
    ]
