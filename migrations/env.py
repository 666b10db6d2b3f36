"""Alembic environment for simsql's own database objects.

Runs standalone (``simsql db upgrade``) with its own version table, so applications without
Alembic can use it, and honours a connection passed in ``config.attributes["connection"]``
so it can run inside an application's transaction or a test's connection.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import pool

from simsql.store import registry
from simsql.urls import engine_for, normalise_url

config = context.config
VERSION_TABLE = config.get_main_option("version_table") or registry.VERSION_TABLE


def run_offline() -> None:
    context.configure(
        url=normalise_url(config.get_main_option("sqlalchemy.url") or ""),
        literal_binds=True,
        version_table=VERSION_TABLE,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def _run(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(connection=connection, version_table=VERSION_TABLE, transaction_per_migration=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = engine_for(config.get_main_option("sqlalchemy.url") or "", poolclass=pool.NullPool)
    with engine.connect() as connection:
        _run(connection)
        connection.commit()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
