"""simsql's own revisions (its registry, backfill cursor and SQL functions), always recorded in
simsql's own version table ``simsql_alembic_version``, whoever applies them: ``simsql db
upgrade`` and :func:`upgrade` as a standalone Alembic run, ``op.upgrade_simsql()`` through
:func:`run_own_revisions` inside an application's migration. One record is why ``simsql db
current`` and the application's history always agree.
"""

from __future__ import annotations

import importlib.resources
import shlex
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, MetaData, Table
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from ..dialects import backend
from ..schema.names import Attachment, metadata
from ..schema.urls import engine_for, normalise_url
from ..store import registry
from ..store.registry import VERSION_TABLE
from ..text.errors import SchemaError

BRANCH = "simsql"


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


def _with_connection(bind: str | Engine | Connection, action: Any, one_at_a_time: bool = False) -> Any:
    """``action`` on a connection to ``bind``, in a transaction of its own unless ``bind`` is a
    connection (then the caller's). ``one_at_a_time``: under :func:`migration_lock`."""
    if isinstance(bind, Connection):
        return action(config(bind))
    engine = engine_for(bind) if isinstance(bind, str) else bind
    try:
        with engine.connect() as connection:
            with migration_lock(connection) if one_at_a_time else nullcontext():
                with connection.begin():
                    return action(config(connection))
    finally:
        if isinstance(bind, str):
            engine.dispose()


def migration_lock_key(schema_name: str) -> int:
    """The advisory lock of simsql's migrations in one schema (MySQL: one database): upgrades
    of two schemas never wait for each other."""
    return zlib.crc32(f"simsql migrations {schema_name}".encode())


@contextmanager
def migration_lock(connection: Connection, *, until_transaction_ends: bool = False) -> Iterator[None]:
    """Upgrades and downgrades of simsql's objects in this schema, one at a time.

    Several processes starting at once (deployments, workers each running ``simsql db
    upgrade``) would otherwise race to create the version table and the registry, and the
    losers fail with the server's "already exists". The lock is the session's, taken before
    the migration's transaction begins and released after it ended: a waiter starts once the
    winner committed, finds the revision applied and has nothing to do. Released however the
    block ends; if the release itself fails, the connection is closed, which releases it too.

    ``until_transaction_ends``: on a connection inside a transaction that is not simsql's to
    end (an application's migration running ``op.upgrade_simsql()``), the same lock is held
    until that transaction ends instead, since what it guards is committed only then.
    """
    server = backend(connection)
    if until_transaction_ends:
        server.advisory_xact_lock(connection, migration_lock_key(registry.current_schema(connection)))
        yield
        return
    key = migration_lock_key(registry.current_schema(connection))
    server.advisory_lock(connection, key)
    connection.commit()
    try:
        yield
    finally:
        try:
            if connection.in_transaction():
                connection.rollback()
            server.advisory_unlock(connection, key)
            connection.commit()
        except SQLAlchemyError:
            connection.invalidate()  # never back to the pool still holding the lock


def upgrade(bind: str | Engine | Connection, revision: str = "heads") -> None:
    """Create or update simsql's own objects (registry, helper functions); recreates the
    registry tables if they were dropped by hand while the revision stayed recorded.

    Given a URL or an engine, concurrent upgrades of one schema wait for each other
    (:func:`migration_lock`) and all succeed; given a connection, the caller's transaction
    decides, and serialising is the caller's."""

    def run(cfg: Config) -> None:
        # before Alembic creates its version table (which MySQL would keep: DDL commits there)
        connection = cfg.attributes["connection"]
        backend(connection).check_server(connection)
        command.upgrade(cfg, revision)
        connection = cfg.attributes.get("connection")
        if connection is not None and revision in ("head", "heads"):  # an older revision's tables only
            _repair(connection)

    _with_connection(bind, run, one_at_a_time=True)


def install(bind: str | Engine | Connection) -> bool:
    """Install simsql's own objects when its registry or a table of a newer revision is missing (:func:`upgrade` to the
    newest revision, under the migration lock); returns whether it had to. Given a connection,
    in its transaction, the lock held until that ends (as ``op.upgrade_simsql()``).

    The one rule of "install when needed": ``simsql attach``, :func:`simsql.attach_table` and
    ``create_all`` of a ``SimHashMixin`` model all call it, so a script, a model and the command
    line leave the same database behind."""
    if isinstance(bind, Connection):
        if registry.installed(bind):
            return False
        with migration_lock(bind, until_transaction_ends=True):
            if registry.installed(bind):  # installed by whoever held the lock
                return False
            upgrade(bind)
        return True
    engine = engine_for(bind) if isinstance(bind, str) else bind
    try:
        with engine.connect() as connection:
            if registry.installed(connection):
                return False
        upgrade(engine)
        return True
    finally:
        if isinstance(bind, str):
            engine.dispose()


def _repair(connection: Connection) -> None:
    context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    if context.get_current_heads():
        metadata.create_all(connection, checkfirst=True)


def downgrade(bind: str | Engine | Connection, revision: str = "base") -> None:
    """Undo simsql's own revisions down to ``revision``; at base nothing of simsql is left, its
    version table included.

    Refused with :class:`SchemaError` while the registry lists attached tables (their columns,
    triggers and indexes would outlive the registry that records them); the message names them
    and the ``simsql detach`` commands that release them, and nothing is removed."""

    def run(cfg: Config) -> None:
        connection = cfg.attributes["connection"]
        if revision not in _applied(connection):
            refuse_while_attached(connection)
        command.downgrade(cfg, revision)
        forget_version_table(connection)

    _with_connection(bind, run, one_at_a_time=True)


def _applied(connection: Connection) -> tuple[str, ...]:
    context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    return tuple(context.get_current_heads())


def attached_tables(connection: Connection) -> list[Attachment]:
    """The tables the registry records as attached; none when there is no registry (never
    installed, or dropped by hand: a downgrade then removes what is left)."""
    return registry.entries(connection) if registry.registry_exists(connection) else []


def detach_commands(connection: Connection, attached: list[Attachment]) -> str:
    """The ``simsql detach`` command of each table, ready to paste into a shell."""
    here = registry.current_schema(connection)
    return "; ".join(
        f"simsql detach --table {shlex.quote(entry.table_name)}"
        + ("" if entry.table_schema == here else f" --schema {shlex.quote(entry.table_schema)}")
        for entry in attached
    )


def refuse_while_attached(connection: Connection) -> None:
    """:class:`SchemaError` when removing simsql's objects would strand attached tables."""
    attached = attached_tables(connection)
    if attached:
        names = ", ".join(f"{entry.table_schema}.{entry.table_name}" for entry in attached)
        raise SchemaError(
            f"simsql's objects are still used by attached tables ({names}): removing them would leave those "
            "tables' fingerprint columns, triggers and indexes with no registry. Nothing was removed. Detach "
            f"them first ({detach_commands(connection, attached)}), then run `simsql db downgrade` again"
        )


def current(bind: str | Engine | Connection) -> tuple[str, ...]:
    """Applied simsql revisions (empty when simsql's objects are not installed)."""

    def read(cfg: Config) -> tuple[str, ...]:
        return _applied(cfg.attributes["connection"])

    return _with_connection(bind, read)  # type: ignore[no-any-return]


def history() -> list[tuple[str, str | None, str]]:
    """simsql's revisions, newest first: (revision, down revision, message)."""
    scripts = ScriptDirectory(script_location())
    return [
        (s.revision, s.down_revision if isinstance(s.down_revision, str) or s.down_revision is None else ",".join(s.down_revision), (s.doc or "").strip())
        for s in scripts.walk_revisions()
    ]


def forget_version_table(connection: Connection) -> None:
    """Drop simsql's version table once it records no revision. Alembic keeps an empty version
    table after a downgrade to base; simsql's promise is that a downgrade leaves nothing of it
    behind, and an upgrade creates the table again."""
    context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    if not context.get_current_heads() and registry.version_table_exists(connection):
        Table(VERSION_TABLE, MetaData()).drop(connection)


def run_own_revisions(operations: Operations, destination: str, upgrade: bool) -> None:
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
        # Online: one migration of simsql's objects at a time, as `simsql db upgrade` (the
        # application's transaction holds the lock); before the version table is read.
        lock = nullcontext() if outer.as_sql else migration_lock(operations.get_bind(), until_transaction_ends=True)
        with lock, Operations.context(inner):
            inner.run_migrations()
            if not upgrade and outer.as_sql and destination == "base":
                Operations(inner).drop_table(VERSION_TABLE)  # the script leaves nothing either
        if not upgrade and not outer.as_sql:
            forget_version_table(operations.get_bind())
    finally:
        operations._install_proxy()
