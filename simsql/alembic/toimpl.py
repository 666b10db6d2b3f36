"""Running the operations of :mod:`.ops` (Alembic's ``toimpl.py``): online on the live catalog
through :mod:`simsql.lifecycle.attach`, offline (``--sql``) by writing what
the backend's describer (`backend(bind).ddl`) describes from the operation's arguments alone.

Importing this module registers one implementation per operation
(``Operations.implementation_for``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from alembic.operations import Operations
from sqlalchemy import Text, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY

from ..dialects import Backend, backend, execute_sql
from ..dialects.ddl_plan import DDLPlan, Step, TableShape
from ..lifecycle import add_vector_index, attach, drop_vector_index, lists_columns
from ..schema.names import Names
from ..text.errors import SchemaError, UnsupportedDatabase
from .ops import (
    AddSimhashListsOp,
    AddSimHashOp,
    AddVectorIndexOp,
    AttachmentOp,
    CreateSimHashIndexesOp,
    CreateSimHashTriggerOp,
    DowngradeSimsqlOp,
    DropSimHashIndexesOp,
    DropSimhashListsOp,
    DropSimHashOp,
    DropSimHashTriggerOp,
    DropVectorIndexOp,
    IndexesOp,
    TriggerOp,
    UpgradeSimsqlOp,
    key_names,
)
from .revisions import attached_tables, detach_commands, run_own_revisions

#: The schema offline SQL uses when an operation names none (offline, nothing can ask the server).
OFFLINE_SCHEMA = "public"

_log = logging.getLogger(__name__)  # a child of "simsql.alembic": its handlers and level apply


def _server(operations: Operations) -> Backend:
    """The backend of the migration's dialect (offline there is no connection to ask)."""
    return backend(operations.get_context().dialect)


def _offline(operations: Operations) -> bool:
    """Whether Alembic writes a script (``--sql``). Refused where the backend cannot write one
    (MySQL/MariaDB: simsql's triggers there have bodies of several statements, which the
    ``mysql`` client would cut at their first ``;`` without a ``DELIMITER`` line that SQL
    scripts cannot carry portably)."""
    offline = bool(operations.get_context().as_sql)
    if offline and not _server(operations).offline_scripts:
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
    if concurrently and not _server(operations).online_index_builds:
        with operations.get_context().autocommit_block():
            work()
    else:
        work()


def _statement(step: Step) -> Any:
    # list parameters bind as arrays: only servers with offline scripts come here, and only they
    # (PostgreSQL) take a step with parameters
    params = [
        bindparam(name, value, type_=ARRAY(Text) if isinstance(value, list) else None)
        for name, value in step.params.items()
    ]
    return text(step.sql).bindparams(*params) if params else text(step.sql)


def _emit(operations: Operations, plan: DDLPlan) -> None:
    """Write a plan into the offline script; consecutive ``CONCURRENTLY`` statements share one
    stretch outside the migration's transaction."""
    steps = list(plan.steps)
    while steps:
        concurrently = steps[0].concurrently
        run = []
        while steps and steps[0].concurrently == concurrently:
            run.append(steps.pop(0))
        _autocommit(operations, concurrently, lambda run=run: _execute_all(operations, run))


def _execute_all(operations: Operations, steps: Sequence[Step]) -> None:
    for step in steps:
        operations.execute(_statement(step))


def _offline_state(operations: Operations) -> dict[tuple[str, str], tuple[Names, tuple[str, ...]]]:
    """What earlier operations of this offline run attached: names and primary key per table."""
    state: dict[tuple[str, str], tuple[Names, tuple[str, ...]]] = operations.get_context().opts.setdefault(
        "simsql_offline", {}
    )
    return state


def _offline_names(operations: Operations, operation: AttachmentOp | IndexesOp) -> tuple[str, Names, tuple[str, ...]]:
    """Offline: the names and key an earlier operation of this run used for the table, else the
    defaults for the operation's arguments (the key only if given)."""
    schema = operation.schema or OFFLINE_SCHEMA
    known = _offline_state(operations).get((schema, operation.table_name))
    if known is not None:
        return schema, known[0], known[1]
    return schema, operation.names, key_names(operation.primary_key)


def _offline_keys(operation: AttachmentOp | IndexesOp) -> tuple[tuple[str, ...], tuple[str, ...]]:
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
    return key_names(key), types


def _check_primary_key(target: TableShape, operation: AddSimHashOp) -> None:
    expected = key_names(operation.primary_key)
    if expected and tuple(expected) != tuple(target.keys):
        raise SchemaError(
            f"primary_key={list(expected)} was given for {target.schema}.{target.table}, but its primary key "
            f"is {list(target.keys)}; correct the migration"
        )


@Operations.implementation_for(AddSimHashOp)
def _add_simhash(operations: Operations, operation: AddSimHashOp) -> None:
    if _offline(operations):
        keys, types = _offline_keys(operation)
        target = TableShape(operation.schema or OFFLINE_SCHEMA, operation.table_name, keys, types, operation.source)
        names = operation.names
        _offline_state(operations)[(target.schema, target.table)] = (names, target.keys)
        _emit(operations, _server(operations).ddl.attach(target, names, operation.configuration))
        return
    target = attach.add_simhash(
        operations.get_bind(),
        operation.table_name,
        operation.source,
        schema=operation.schema,
        fingerprinter=operation.configuration,
        side_table=operation.side_table,
        prefix=operation.prefix,
        wide_blocks=operation.wide_blocks,  # None unless asked: a vector or version 2 table then refuses it, naming it
    )
    _check_primary_key(target, operation)


@Operations.implementation_for(DropSimHashOp)
def _drop_simhash(operations: Operations, operation: DropSimHashOp) -> None:
    if _offline(operations):
        schema, names, _ = _offline_names(operations, operation)
        # The trigger attach created in this mode (online, the catalog says which exist). Offline
        # there is no catalog to describe the table from: the describer of the script's dialect
        # (only a backend with ``offline_scripts`` gets here).
        created = names.stale_function if names.side else names.row_function
        describer = backend(operations.migration_context.dialect).ddl
        _emit(operations, describer.drop_attachment(schema, names, triggers=(created,)))
        return
    attach.drop_simhash(operations.get_bind(), operation.table_name, schema=operation.schema)


@Operations.implementation_for(CreateSimHashIndexesOp)
def _create_indexes(operations: Operations, operation: CreateSimHashIndexesOp) -> None:
    if _offline(operations):
        schema, names, keys = _offline_names(operations, operation)
        keys = keys or _offline_keys(operation)[0]
        holder_keys = names.side_keys(keys) if names.side else keys
        _emit(operations, _server(operations).ddl.create_indexes(schema, names, holder_keys, concurrently=operation.concurrently))
        return
    _autocommit(
        operations,
        operation.concurrently,
        lambda: attach.create_simhash_indexes(
            operations.get_bind(), operation.table_name, schema=operation.schema, concurrently=operation.concurrently
        ),
    )


@Operations.implementation_for(AddSimhashListsOp)
def _add_lists(operations: Operations, operation: AddSimhashListsOp) -> None:
    _online_only(operations, "add_simhash_lists")
    _autocommit(operations, operation.concurrently, lambda: lists_columns.add_list_column(
        operations.get_bind(), operation.table_name, schema=operation.schema, concurrently=operation.concurrently
    ))  # fmt: skip


@Operations.implementation_for(DropSimhashListsOp)
def _drop_lists(operations: Operations, operation: DropSimhashListsOp) -> None:
    _online_only(operations, "drop_simhash_lists")
    _autocommit(operations, operation.concurrently, lambda: lists_columns.drop_list_column(
        operations.get_bind(), operation.table_name, schema=operation.schema, concurrently=operation.concurrently
    ))  # fmt: skip


@Operations.implementation_for(AddVectorIndexOp)
def _add_vector_index(operations: Operations, operation: AddVectorIndexOp) -> None:
    """:func:`simsql.lifecycle.add_vector_index` on the migration's connection: its plan, run in
    the migration's transaction, or ``CONCURRENTLY`` in an autocommit block."""
    _online_only(operations, "add_vector_index", "the catalog (pgvector's schema, the vector column's type)")
    _autocommit(operations, operation.concurrently, lambda: add_vector_index(
        operations.get_bind(), operation.table_name, schema=operation.schema, m=operation.m, ef_construction=operation.ef_construction
    ))  # fmt: skip


@Operations.implementation_for(DropVectorIndexOp)
def _drop_vector_index(operations: Operations, operation: DropVectorIndexOp) -> None:
    _online_only(operations, "drop_vector_index", "the catalog")
    _autocommit(operations, operation.concurrently, lambda: drop_vector_index(
        operations.get_bind(), operation.table_name, schema=operation.schema
    ))  # fmt: skip


def _online_only(operations: Operations, name: str, reads: str = "") -> None:
    """Operations that read the registry for the table's columns (partition lists, pgvector's
    index, which also reads the catalog): no offline script."""
    if operations.get_context().as_sql:
        also = f" and {reads}" if reads else ""
        raise UnsupportedDatabase(f"op.{name} runs online only (alembic upgrade head, not --sql): it reads the registry{also}")


@Operations.implementation_for(DropSimHashIndexesOp)
def _drop_indexes(operations: Operations, operation: DropSimHashIndexesOp) -> None:
    if _offline(operations):
        schema, names, _ = _offline_names(operations, operation)
        _emit(operations, _server(operations).ddl.drop_indexes(schema, names, concurrently=operation.concurrently))
        return
    _autocommit(
        operations,
        operation.concurrently,
        lambda: attach.drop_simhash_indexes(
            operations.get_bind(), operation.table_name, schema=operation.schema, concurrently=operation.concurrently
        ),
    )


def _trigger_schema(operations: Operations, operation: TriggerOp) -> str:
    if operation.schema:
        return operation.schema
    if _offline(operations):
        return OFFLINE_SCHEMA
    bind = operations.get_bind()
    return backend(bind).current_schema(bind)


@Operations.implementation_for(CreateSimHashTriggerOp)
def _create_trigger(operations: Operations, operation: CreateSimHashTriggerOp) -> None:
    schema = _trigger_schema(operations, operation)
    server = _server(operations)
    if not operations.get_context().as_sql:
        server.check_digest(operations.get_bind())
    for statement in operation.trigger.create_statements(server, schema):
        _execute_raw(operations, statement)


@Operations.implementation_for(DropSimHashTriggerOp)
def _drop_trigger(operations: Operations, operation: DropSimHashTriggerOp) -> None:
    schema = _trigger_schema(operations, operation)
    for statement in operation.trigger.drop_statements(_server(operations), schema):
        _execute_raw(operations, statement)


def _execute_raw(operations: Operations, statement: str) -> None:
    """Online, straight to the driver, as the lifecycle runs its DDL: a trigger body may hold
    ``%`` or ``:name`` text, which a bound ``text()`` would read as parameters. Offline, into the
    script (only servers that write scripts get here)."""
    if operations.get_context().as_sql:
        operations.execute(text(statement))
    else:
        execute_sql(operations.get_bind(), statement)


@Operations.implementation_for(UpgradeSimsqlOp)
def _upgrade_simsql(operations: Operations, operation: UpgradeSimsqlOp) -> None:
    run_own_revisions(operations, operation.revision, upgrade=True)


@Operations.implementation_for(DowngradeSimsqlOp)
def _downgrade_simsql(operations: Operations, operation: DowngradeSimsqlOp) -> None:
    if not _offline(operations):
        connection = operations.get_bind()
        attached = attached_tables(connection)
        if attached:
            _log.warning(
                "simsql's objects are kept: %s still use(s) them; detach those first (%s), "
                "then `simsql db downgrade`",
                ", ".join(f"{e.table_schema}.{e.table_name}" for e in attached),
                detach_commands(connection, attached),
            )
            return
    run_own_revisions(operations, operation.revision, upgrade=False)
