"""Backfill, awaited: batch by batch, each batch's statements awaited, fingerprints computed in
a worker thread (no process pool: an async application's process is not the place for one).

The rules are the sync backfill's own (:mod:`simsql.lifecycle.backfill`): the same job
resolution, the same batch reads (``batch_size`` rows and ``max_batch_bytes`` of text), the
same writes (a fingerprint stored only if the row still holds the text it came from), the same
cursor saved with every batch, so an interrupted run (cancelled task, killed process) resumes
where it stopped, whichever API runs next. What is here is only the loop that awaits them:
the next batch is read while the thread fingerprints the one before, as the sync run overlaps
its workers.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.util import greenlet_spawn

from ..dialects.batch import BatchSQL
from ..vectors import AnyFingerprinter
from ..lifecycle import apply
from ..lifecycle.backfill import (
    DEFAULT_MAX_BATCH_BYTES,
    BackfillResult,
    FillStart,
    ProgressCallback,
    check_sizes,
    label_of,
    open_run,
    passes,
    raise_explained,
    start_backfill,
    start_fill,
)
from .runner import AsyncBind, engine_of


async def backfill(
    bind: AsyncBind,
    target: type | str,
    *,
    schema: str | None = None,
    fingerprinter: AnyFingerprinter | None = None,
    batch_size: int = 2000,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    progress: ProgressCallback | None = None,
    lock_timeout: str | None = "5s",
    statement_timeout: str | None = "5min",
) -> BackfillResult:
    """:func:`simsql.backfill`, awaited: fingerprint every row of ``target`` (a mapped class,
    or an attached table's name) that has none yet. Fingerprints are computed in one worker
    thread while the next batch is read; ``progress(rows_done, rows_total_estimate)`` is called
    after each batch. Cancel it at any point: a rerun (sync or async) resumes after the last
    batch written. A statement past ``lock_timeout`` / ``statement_timeout`` raises
    :class:`~simsql.errors.LockTimeout`."""
    check_sizes(batch_size, max_batch_bytes)
    timeouts = apply.Timeouts(lock_timeout, statement_timeout)
    engine = engine_of(bind)
    label = label_of(target, schema)
    started = time.perf_counter()
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="simsql-backfill")
    try:
        async with engine.connect() as connection:
            job = await connection.run_sync(start_backfill, target, schema, fingerprinter, timeouts)
            start: FillStart = await connection.run_sync(start_fill, job, timeouts)
        options = dict(
            batch_size=batch_size, max_batch_bytes=max_batch_bytes, timeouts=timeouts, progress=progress,
            has_progress_table=start.has_progress_table, total=start.total,
        )  # fmt: skip
        run = open_run(engine.sync_engine, job, options, pool)
        await _run_phases(engine, run, start)
    except DBAPIError as error:
        await greenlet_spawn(raise_explained, engine.sync_engine, label, timeouts, error)
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    c = run.counters
    return BackfillResult(c.read, c.fingerprinted, c.empty, c.skipped, c.batches, time.perf_counter() - started, start.resumed)


async def _run_phases(engine: AsyncEngine, run: Any, start: FillStart) -> None:
    """The scan, then a catch-up pass for rows changed behind the cursor while it ran (the
    sync run's :func:`~simsql.lifecycle.backfill.passes`), on a reader and a prepared writer."""
    async with engine.connect() as reader, engine.connect() as writer:
        await writer.run_sync(_prepare, run.sql)
        try:
            for current, cursor in passes(start.phase, start.last_key):
                await _phase(run, reader, writer, current, cursor)
            if run.has_progress_table:
                await writer.run_sync(_done, run.sql)
        except BaseException:
            try:
                await writer.run_sync(_release_after_failure, run.sql)
            except Exception:  # noqa: BLE001 - best effort: the run's own error follows
                await writer.invalidate()
            raise
        await writer.run_sync(_release, run.sql)


async def _phase(run: Any, reader: AsyncConnection, writer: AsyncConnection, phase: str, cursor: list[Any] | None) -> None:
    """Read, fingerprint (in the thread) and write batches until no row is left; two batches
    stay in flight so reading, fingerprinting and writing overlap, as in the sync run."""
    in_flight: deque[Any] = deque()
    while True:
        rows = await reader.run_sync(run.read, cursor)
        if rows:
            cursor = list(rows[-1][: run.sql.key_count])
            batch = run.submit(rows, phase)
            if batch is not None:
                in_flight.append(batch)
        while in_flight and (len(in_flight) > 2 or not rows):
            batch = in_flight.popleft()
            if isinstance(batch.fingerprints, Future):
                await asyncio.wrap_future(batch.fingerprints)
            await writer.run_sync(run.write, batch)
        if not rows:
            return


def _prepare(connection: Connection, sql: BatchSQL) -> None:
    sql.prepare(connection)
    connection.commit()


def _done(connection: Connection, sql: BatchSQL) -> None:
    sql.save_progress(connection, "done", None, 0)
    connection.commit()


def _release(connection: Connection, sql: BatchSQL) -> None:
    sql.release(connection)
    connection.commit()


def _release_after_failure(connection: Connection, sql: BatchSQL) -> None:
    connection.rollback()
    _release(connection, sql)
