"""Autogenerate comparators: what ``alembic revision --autogenerate`` cannot see by itself.

- :func:`compare_triggers`: the trigger ``create_all`` installs for an ORM-declared table
  (through the table's DDL events) comes out as ``op.create_simhash_trigger`` when the database
  lacks it, so a database built by migrations drops stale fingerprints like a created one.
- :func:`compare_for_mysql`: on MySQL/MariaDB simsql's columns and block indexes are rewritten
  into the form ``create_all`` gives them there, in types a migration renders without simsql.
- :func:`leave_simsqls_objects`: simsql's own objects never appear in an application's
  revision (see :mod:`.own`).

Importing this module registers all three (``comparators.dispatch_for``), after Alembic's own
comparison of the same table where Alembic supports priorities.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from alembic.autogenerate import comparators
from alembic.autogenerate.api import AutogenContext
from alembic.operations import ops
from sqlalchemy import Column, Computed
from sqlalchemy.engine import Connection

from ..dialects import COVERING_INFO, Backend, BlockComputed, BlockExpression, backend
from ..lifecycle import catalog
from ..store.orm_triggers import orm_trigger
from ..store.types import SimHash
from ..text.errors import UnsupportedDatabase
from .ops import CreateSimHashTriggerOp
from .own import leave_simsqls_objects


def _trigger_installed(connection: Connection, schema: str | None, table: str, trigger: str) -> bool:
    return catalog.schema_triggers(connection, schema or backend(connection).current_schema(connection)).get(trigger) == table


def _server(context: AutogenContext) -> Backend | None:
    """The backend of the compared database; ``None`` where simsql does not run (nothing of
    simsql's to compare there)."""
    if context.dialect is None:
        return None
    try:
        return backend(context.dialect)
    except UnsupportedDatabase:
        return None


def compare_triggers(
    context: AutogenContext, table_ops: Any, schema: str | None, name: str, conn_table: Any, metadata_table: Any
) -> Any:
    """Autogenerate: a table whose ``create_all`` would install simsql's trigger gets
    ``op.create_simhash_trigger`` when the database lacks it (a new table, or one that just
    gained ``SimHashMixin``), so a migrated database drops stale fingerprints like a created one."""
    trigger = orm_trigger(metadata_table) if metadata_table is not None else None
    server = _server(context)
    if trigger is None or server is None:
        return None
    installed_as = trigger.installed_name(server)
    if conn_table is None or context.connection is None or not _trigger_installed(
        context.connection, schema, trigger.names.table, installed_as
    ):
        table_ops.ops.append(CreateSimHashTriggerOp.from_trigger(trigger, schema))
    return None


def _created_column(column: Column[Any], server: Backend) -> Column[Any]:
    """A simsql column as the ORM creates it on ``server``, in types a migration renders without
    simsql: the server's fingerprint type (MySQL: ``BIGINT UNSIGNED``; a plain
    ``sa.BigInteger()`` would be signed there and refuse half of all fingerprints), the blocks
    generated with the server's own expression, stored or not as the server keeps them."""
    if isinstance(column.type, SimHash):
        return Column(column.name, server.fingerprint_type, nullable=column.nullable)
    computed = column.computed
    if isinstance(computed, BlockComputed):
        expression = computed.sqltext
        assert isinstance(expression, BlockExpression)
        sql = server.block_expression_sql(server.quote(expression.fingerprint), expression.index)
        return Column(column.name, column.type, Computed(sql, persisted=server.stored_blocks), nullable=column.nullable)
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


def _covering_index(operation: ops.CreateIndexOp, metadata: Any) -> ops.CreateIndexOp:
    """A block index as the ORM creates it on a server without ``INCLUDE`` (MySQL): the
    fingerprint as a trailing key column, not a ``postgresql_include`` the server ignores."""
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


def _as_created(operations: list[Any], metadata: Any, server: Backend) -> None:
    for position, operation in enumerate(operations):
        if isinstance(operation, ops.CreateTableOp):
            operation.columns = [_created_column(c, server) if isinstance(c, Column) else c for c in operation.columns]
        elif isinstance(operation, ops.AddColumnOp):
            operation.column = _created_column(operation.column, server)
        elif isinstance(operation, ops.CreateIndexOp):
            operations[position] = _covering_index(operation, metadata)
        elif isinstance(operation, ops.ModifyTableOps):
            _as_created(operation.ops, metadata, server)
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


def compare_for_mysql(context: AutogenContext, upgrade_ops: Any, schemas: Any) -> Any:
    """Autogenerate where ``create_all`` makes simsql's columns and indexes in another form than
    the models declare (MySQL/MariaDB: virtual blocks, no ``INCLUDE``): they come out in that
    form (see :func:`_created_column`, :func:`_covering_index`); on PostgreSQL nothing changes."""
    server = _server(context)
    if server is None or (server.stored_blocks and server.include_columns):
        return None
    _as_created(upgrade_ops.ops, context.metadata, server)
    return None


try:  # Alembic >= 1.18: after the columns and indexes of the same table
    from alembic.util import DispatchPriority

    comparators.dispatch_for("table", priority=DispatchPriority.LAST)(compare_triggers)
    comparators.dispatch_for("schema", priority=DispatchPriority.LAST)(compare_for_mysql)
    comparators.dispatch_for("schema", priority=DispatchPriority.LAST)(leave_simsqls_objects)
except ImportError:  # pragma: no cover - older Alembic
    comparators.dispatch_for("table")(compare_triggers)
    comparators.dispatch_for("schema")(compare_for_mysql)
    comparators.dispatch_for("schema")(leave_simsqls_objects)
