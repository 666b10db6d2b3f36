"""Attach, detach and status, awaited.

Each is two parts, written once in :mod:`simsql.lifecycle.tables` and shared with the sync API:
the catalog reads that describe the change (one short step on a connection), then the plan's
DDL, each statement on a connection of the engine's pool and awaited on the event loop
(SQLAlchemy's greenlet bridge), so the application keeps serving while a statement waits for
its lock or a concurrent index build runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.util import greenlet_spawn

from ..vectors import AnyFingerprinter
from ..lifecycle import apply
from ..lifecycle.tables import (
    TableStatus,
    describe_attach_table,
    describe_detach_table,
    install_after_checking,
    run_attach_table,
    run_detach_table,
    status_of,
)
from ..schema import DEFAULT_PREFIX, Attachment
from .runner import AsyncBind, engine_of


async def attach_table(
    bind: AsyncBind,
    table: str,
    source: Sequence[str],
    *,
    schema: str | None = None,
    fingerprinter: AnyFingerprinter | None = None,
    side_table: bool = False,
    prefix: str = DEFAULT_PREFIX,
    indexes: bool = True,
    concurrently: bool = True,
    lock_timeout: str | None = "5s",
    index_lock_timeout: str | None = "10min",
) -> Attachment:
    """:func:`simsql.attach_table`, awaited; the same guarantees (nothing changes when it
    refuses; run it again after a failure)."""
    engine = engine_of(bind)
    await greenlet_spawn(install_after_checking, engine.sync_engine, table, source, schema)
    timeouts = apply.Timeouts(lock_timeout, "10min")
    options = dict(schema=schema, fingerprinter=fingerprinter, side_table=side_table, prefix=prefix)
    async with engine.connect() as connection:
        planned = await connection.run_sync(
            describe_attach_table, table, source, options, timeouts, indexes=indexes, concurrently=concurrently
        )
    return await greenlet_spawn(run_attach_table, engine.sync_engine, planned, timeouts, index_lock_timeout)


async def detach_table(
    bind: AsyncBind, table: str, *, schema: str | None = None, lock_timeout: str | None = "5s"
) -> Attachment:
    """:func:`simsql.detach_table`, awaited: removes exactly what simsql created on ``table``."""
    engine = engine_of(bind)
    timeouts = apply.Timeouts(lock_timeout, "10min")
    async with engine.connect() as connection:
        entry, planned = await connection.run_sync(describe_detach_table, table, schema, timeouts)
    await greenlet_spawn(run_detach_table, engine.sync_engine, planned, timeouts)
    return entry


async def status(bind: AsyncBind, *, statement_timeout: str | None = "10min") -> list[TableStatus]:
    """:func:`simsql.status`, awaited: every attached table with its row counts."""
    async with engine_of(bind).connect() as connection:
        return await connection.run_sync(status_of, statement_timeout)
