"""Alembic integration: operations for your own migrations, and simsql's own revisions.

In an application's migration::

    import simsql.alembic  # registers the operations

    def upgrade():
        op.add_simhash("articles", source=["title", "body"])
        op.create_simhash_indexes("articles", concurrently=True)

    def downgrade():
        op.drop_simhash_indexes("articles", concurrently=True)
        op.drop_simhash("articles")

Each operation has a ``reverse()`` (so autogenerate-style downgrades write themselves) and a
typed function twin (``simsql.alembic.add_simhash(op, ...)``) for editors and type checkers.
simsql's own objects (registry, helper functions) live in revisions labelled ``simsql``: run
them standalone with :func:`upgrade` (own version table) or add :func:`versions_path` to your
``version_locations`` and depend on ``"simsql@head"``.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Sequence
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.operations import MigrateOperation, Operations
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine
from sqlalchemy.engine import Connection

from .lifecycle import attach as ddl
from .urls import engine_for, normalise_url
from .fingerprint import Fingerprinter

VERSION_TABLE = "simsql_alembic_version"
BRANCH = "simsql"


# -- operations ---------------------------------------------------------------------------


class _AttachmentOp(MigrateOperation):
    """What add_simhash and drop_simhash both carry, so each can rebuild the other."""

    def __init__(
        self,
        table_name: str,
        source: Sequence[str] = (),
        schema: str | None = None,
        side_table: bool = False,
        fingerprinter: Fingerprinter | None = None,
    ) -> None:
        self.table_name = table_name
        self.source = tuple([source] if isinstance(source, str) else source)
        self.schema = schema
        self.side_table = side_table
        self.fingerprinter = fingerprinter


class _IndexesOp(MigrateOperation):
    def __init__(self, table_name: str, schema: str | None = None, concurrently: bool = False) -> None:
        self.table_name = table_name
        self.schema = schema
        self.concurrently = concurrently


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
    ) -> Any:
        return operations.invoke(cls(table_name, source, schema, side_table, fingerprinter))

    def reverse(self) -> DropSimHashOp:
        return DropSimHashOp(self.table_name, self.source, self.schema, self.side_table, self.fingerprinter)


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
    ) -> Any:
        return operations.invoke(cls(table_name, source, schema, side_table, fingerprinter))

    def reverse(self) -> AddSimHashOp:
        if not self.source:
            raise ValueError("drop_simhash needs source=[...] to be reversible")
        return AddSimHashOp(self.table_name, self.source, self.schema, self.side_table, self.fingerprinter)


@Operations.register_operation("create_simhash_indexes")
class CreateSimHashIndexesOp(_IndexesOp):
    """Covering block indexes; ``concurrently=True`` builds them without blocking writes."""

    @classmethod
    def create_simhash_indexes(
        cls, operations: Operations, table_name: str, *, schema: str | None = None, concurrently: bool = False
    ) -> Any:
        return operations.invoke(cls(table_name, schema, concurrently))

    def reverse(self) -> DropSimHashIndexesOp:
        return DropSimHashIndexesOp(self.table_name, self.schema, self.concurrently)


@Operations.register_operation("drop_simhash_indexes")
class DropSimHashIndexesOp(_IndexesOp):
    """Drop the block indexes (``concurrently=True`` without blocking writes)."""

    @classmethod
    def drop_simhash_indexes(
        cls, operations: Operations, table_name: str, *, schema: str | None = None, concurrently: bool = False
    ) -> Any:
        return operations.invoke(cls(table_name, schema, concurrently))

    def reverse(self) -> CreateSimHashIndexesOp:
        return CreateSimHashIndexesOp(self.table_name, self.schema, self.concurrently)


@Operations.implementation_for(AddSimHashOp)
def _add_simhash(operations: Operations, operation: AddSimHashOp) -> None:
    ddl.add_simhash(
        operations.get_bind(),
        operation.table_name,
        operation.source,
        schema=operation.schema,
        fingerprinter=operation.fingerprinter,
        side_table=operation.side_table,
    )


@Operations.implementation_for(DropSimHashOp)
def _drop_simhash(operations: Operations, operation: DropSimHashOp) -> None:
    ddl.drop_simhash(operations.get_bind(), operation.table_name, schema=operation.schema)


def _maybe_autocommit(operations: Operations, concurrently: bool, work: Any) -> None:
    if concurrently and not operations.get_context().as_sql:
        with operations.get_context().autocommit_block():
            work(operations.get_bind())
    else:
        work(operations.get_bind())


@Operations.implementation_for(CreateSimHashIndexesOp)
def _create_indexes(operations: Operations, operation: CreateSimHashIndexesOp) -> None:
    _maybe_autocommit(
        operations,
        operation.concurrently,
        lambda bind: ddl.create_simhash_indexes(
            bind, operation.table_name, schema=operation.schema, concurrently=operation.concurrently
        ),
    )


@Operations.implementation_for(DropSimHashIndexesOp)
def _drop_indexes(operations: Operations, operation: DropSimHashIndexesOp) -> None:
    _maybe_autocommit(
        operations,
        operation.concurrently,
        lambda bind: ddl.drop_simhash_indexes(
            bind, operation.table_name, schema=operation.schema, concurrently=operation.concurrently
        ),
    )


# Typed twins: the same operations as plain functions taking ``op``.


def add_simhash(
    op: Any,
    table_name: str,
    source: Sequence[str],
    *,
    schema: str | None = None,
    side_table: bool = False,
    fingerprinter: Fingerprinter | None = None,
) -> None:
    op.invoke(AddSimHashOp(table_name, source, schema, side_table, fingerprinter))


def drop_simhash(
    op: Any,
    table_name: str,
    *,
    source: Sequence[str] = (),
    schema: str | None = None,
    side_table: bool = False,
    fingerprinter: Fingerprinter | None = None,
) -> None:
    op.invoke(DropSimHashOp(table_name, source, schema, side_table, fingerprinter))


def create_simhash_indexes(op: Any, table_name: str, *, schema: str | None = None, concurrently: bool = False) -> None:
    op.invoke(CreateSimHashIndexesOp(table_name, schema, concurrently))


def drop_simhash_indexes(op: Any, table_name: str, *, schema: str | None = None, concurrently: bool = False) -> None:
    op.invoke(DropSimHashIndexesOp(table_name, schema, concurrently))


# -- simsql's own revisions ---------------------------------------------------------------


def script_location() -> str:
    """Filesystem path of simsql's Alembic environment (inside the installed package)."""
    return str(importlib.resources.files("simsql.migrations"))


def versions_path() -> str:
    """Add this to your ``version_locations`` to run simsql's revisions in your history."""
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
    """Create or update simsql's own objects (registry, helper functions)."""
    _with_connection(bind, lambda cfg: command.upgrade(cfg, revision))


def downgrade(bind: str | Engine | Connection, revision: str = "base") -> None:
    _with_connection(bind, lambda cfg: command.downgrade(cfg, revision))


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
