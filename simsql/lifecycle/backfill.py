"""Fingerprint the rows a table already has, in resumable keyset batches.

Guarantees, and how they are kept:

* **Nothing is lost, nothing is redone.** Each batch is one transaction that writes the
  fingerprints *and* the cursor (``simsql_backfill``). Killed at any instant, the batch in flight
  rolls back; a rerun continues after the last committed batch. Only rows still lacking a
  fingerprint are ever selected, so a rerun after completion is cheap and changes nothing.
* **Concurrent writers win.** Every fingerprint is written with the digest of the text it was
  computed from, and the database stores it only if the row still holds that text: the row
  trigger checks it in columns mode; in side-table mode the write locks the user's rows
  (``FOR SHARE``; ``LOCK IN SHARE MODE`` on MySQL/MariaDB, which under ``READ COMMITTED``
  would otherwise read a snapshot) and compares digests, so a writer that changed a row after
  it was read either commits first (the fingerprint is not stored) or waits (its trigger then
  removes it). Rows skipped that way are picked up by the catch-up pass that follows the main pass.
* **Bounded.** Batches are cut by ``batch_size`` rows *and* ``max_batch_bytes`` of text, so
  a table of multi-megabyte documents does not need gigabytes; every statement runs under
  ``lock_timeout`` / ``statement_timeout`` (their MySQL/MariaDB counterparts: see
  :mod:`.apply`).
* **Throughput.** Fingerprinting runs in worker processes while the main process reads the
  next batch and writes the previous one, so database time and CPU time overlap.

The flow here is the same on every server; the statements, which differ (PostgreSQL writes a
batch over ``unnest()`` arrays, MySQL/MariaDB through a session temporary table), are the
backend's (:meth:`simsql.dialects.Backend.batch_sql`).
"""

from __future__ import annotations

import dataclasses
import os
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from ..dialects import backend
from ..dialects.batch import BatchSQL, Fingerprinted, Job
from ..schema.urls import engine_for
from ..store import registry
from ..store.awaiting import off_loop, wait_for
from ..store.storage import join_text, text_digest
from ..text.errors import LockTimeout, SchemaError
from ..text.fingerprint import Fingerprinter
from ..text.vectors import AnyFingerprinter
from . import apply, catalog
from .attach import plan_indexes
from .backfill_start import FillStart, check_sizes, label_of, start_backfill, start_fill
from .lists import place_left_behind
from .vector_batch import sign_rows
from .workers import worker_pool

ProgressCallback = Callable[[int, int], None]

DEFAULT_MAX_BATCH_BYTES = 16 * 1024 * 1024
"""Text read per batch; at most three batches are in memory at once (read, fingerprinting,
written), each held about twice (the rows and the copy sent to a worker)."""

RETRIES = 5
"""A batch that deadlocks with a writer is rolled back and tried again this many times."""


@dataclass(frozen=True)
class BackfillResult:
    """What a backfill run did."""

    rows_read: int
    rows_fingerprinted: int
    rows_empty: int
    rows_skipped_changed: int
    batches: int
    seconds: float
    resumed: bool
    indexes_built: tuple[str, ...] = ()
    """Block indexes built once the rows were filled (those a wide attach leaves to the backfill)."""
    rows_placed: int = 0
    """Rows placed in partition lists once the rows were filled (:mod:`simsql.lists`)."""

    @property
    def rows_per_second(self) -> float:
        return self.rows_read / self.seconds if self.seconds > 0 else 0.0


Words = tuple[int, ...]
"""What a batch computes for one text: its fingerprint, or on a wide table the four words of
its signature (word 0 the fingerprint)."""


def _fingerprint_batch(fingerprinter: Fingerprinter, texts: list[str | None], wide: bool = False) -> list[Words | None]:
    """Runs in a worker process. None for a NULL text or one without features."""
    present = [t for t in texts if t is not None]
    if wide:
        computed: Iterator[Words | None] = (
            None if s is None else tuple(s.words) for s in fingerprinter.signatures_many(present, empty="none")
        )
    else:
        computed = (None if f is None else (f,) for f in fingerprinter.fingerprint_many(present, empty="none"))
    return [next(computed) if t is not None else None for t in texts]


def _to_store(keys: Sequence[Sequence[Any]], fingerprints: Sequence[Words | None], digests: Sequence[uuid.UUID | None]) -> list[Fingerprinted]:
    """What a batch writes: every fingerprint (with a wide signature's words 1-3), and for
    text without features a NULL fingerprint with its digest (the mark that the row is done:
    it is not read again, and status counts it as "no text" while the text stays). ``digests``:
    of each row's source (None: NULL text or vector, nothing written)."""
    return [
        Fingerprinted(k, None if f is None else f[0], d, () if f is None else f[1:])
        for k, f, d in zip(keys, fingerprints, digests)
        if d is not None
    ]


def _digests(texts: Sequence[str | None]) -> list[uuid.UUID | None]:
    return [None if t is None else text_digest(t) for t in texts]


@dataclass(frozen=True)
class FillOptions:
    """How a run reads and writes its batches: at most ``batch_size`` rows and
    ``max_batch_bytes`` of text a batch, each statement within ``timeouts``,
    ``progress(rows_done, rows_total_estimate)`` after each batch. What :func:`backfill`,
    :func:`simsql.lifecycle.refingerprinting.refingerprint` and the move to the wide signature hand to :func:`fill`."""

    timeouts: apply.Timeouts
    batch_size: int = 2000
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    progress: ProgressCallback | None = None

    def __post_init__(self) -> None:
        check_sizes(self.batch_size, self.max_batch_bytes)


@dataclass
class _Batch:
    keys: list[list[Any]]
    digests: list[uuid.UUID | None]
    fingerprints: Future[list[Words | None]] | list[Words | None]
    phase: str

    def result(self) -> list[Words | None]:
        return wait_for(self.fingerprints) if isinstance(self.fingerprints, Future) else self.fingerprints


@dataclass
class _Counters:
    read: int = 0
    done: int = 0
    fingerprinted: int = 0
    empty: int = 0
    skipped: int = 0
    batches: int = 0
    seen_empty: set[tuple[Any, ...]] = field(default_factory=set)


class _Run:
    """One backfill: reads keyset batches, fingerprints them (in workers), writes them."""

    def __init__(self, engine: Engine, job: Job, options: FillOptions, start: FillStart, pool: Executor | None) -> None:
        self.engine, self.job, self.pool = engine, job, pool
        self.sql = backend(engine).batch_sql(job)
        self.batch_size, self.max_bytes = options.batch_size, options.max_batch_bytes
        self.timeouts, self.progress = options.timeouts, options.progress
        self.has_progress_table, self.total = start.has_progress_table, start.total
        self.counters = _Counters()

    def read(self, reader: Connection, cursor: list[Any] | None) -> list[Any]:
        """The next rows after ``cursor``: at most ``batch_size`` rows and ``max_batch_bytes`` of
        text (always at least one row). Sizes are read first, without the texts."""
        apply.set_timeouts(reader, self.timeouts)
        params: dict[str, Any] = {"limit": self.batch_size, **(self.sql.cursor_params(cursor) if cursor else {})}
        sizes = list(reader.execute(self.sql.sizes[cursor is not None], params).scalars())
        budget, count = self.max_bytes, 0
        for size in sizes:
            if count and size > budget:
                break
            budget -= size
            count += 1
        rows = list(reader.execute(self.sql.rows[cursor is not None], {**params, "limit": max(count, 1)})) if sizes else []
        reader.rollback()
        return rows

    def submit(self, rows: list[Any], phase: str) -> _Batch | None:
        n = self.sql.key_count
        rows = [r for r in rows if tuple(r[:n]) not in self.counters.seen_empty]  # found empty earlier in this run
        if not rows:
            return None
        keys = [list(r[:n]) for r in rows]
        self.counters.read += len(rows)
        fingerprinter, wide = self.job.fingerprinter, self.job.names.wide
        if not isinstance(fingerprinter, Fingerprinter):  # a vector column: one matrix product, here
            return _Batch(keys, *sign_rows(self.job, keys, rows), phase)
        texts = [_row_text(r[n:]) for r in rows]
        if self.pool is None:
            return _Batch(keys, _digests(texts), off_loop(_fingerprint_batch, fingerprinter, texts, wide), phase)
        return _Batch(keys, _digests(texts), self.pool.submit(_fingerprint_batch, fingerprinter, texts, wide), phase)

    def write(self, writer: Connection, batch: _Batch) -> None:
        fingerprints = batch.result()
        for attempt in range(RETRIES + 1):
            try:
                written = self._write_once(writer, batch, fingerprints)
                break
            except DBAPIError as error:
                writer.rollback()
                if not self.sql.is_deadlock(error) or attempt == RETRIES:
                    raise
                time.sleep(0.05 * (attempt + 1))  # deadlocked with a writer: it won, try again
        self._count(batch, fingerprints, written)

    def _write_once(self, writer: Connection, batch: _Batch, fingerprints: list[Words | None]) -> int:
        apply.set_timeouts(writer, self.timeouts)
        chosen = _to_store(batch.keys, fingerprints, batch.digests)
        written = self.sql.store(writer, chosen) if chosen else 0
        if chosen and self.job.cursor is None:
            # A table's own fingerprints (not a refingerprint's shadow set): refused, batch and
            # all, once the table moved to another configuration (registry.confirm says why).
            registry.confirm(writer, self.job.table, self.job.schema, self.job.fingerprinter.config_id)
        if self.has_progress_table:
            self.sql.save_progress(writer, batch.phase, batch.keys[-1], len(batch.keys))
        writer.commit()
        return written

    def _count(self, batch: _Batch, fingerprints: list[Words | None], written: int) -> None:
        c = self.counters
        c.batches += 1
        empties = [tuple(k) for k, f in zip(batch.keys, fingerprints) if f is None]
        c.seen_empty.update(empties)
        c.empty += len(empties)
        c.fingerprinted += written
        c.skipped += sum(1 for f in fingerprints if f is not None) - written
        c.done += len(batch.keys)
        if self.progress is not None:
            self.progress(c.done, max(self.total, c.read))

    def phase(self, reader: Connection, writer: Connection, phase: str, cursor: list[Any] | None) -> None:
        """Read, fingerprint and write batches until no row is left; two batches stay in
        flight so reading, fingerprinting and writing overlap."""
        in_flight: deque[_Batch] = deque()
        while True:
            rows = self.read(reader, cursor)
            if rows:
                cursor = list(rows[-1][: self.sql.key_count])
                batch = self.submit(rows, phase)
                if batch is not None:
                    in_flight.append(batch)
            while in_flight and (len(in_flight) > 2 or not rows):
                self.write(writer, in_flight.popleft())
            if not rows:
                return


def _row_text(values: Sequence[Any]) -> str | None:
    for value in values:
        if value is not None and not isinstance(value, str):
            raise SchemaError(f"source column holds {type(value).__name__}, not text")
    return join_text(list(values))


def _pool(engine: Engine, workers: int | None, total: int, batch_size: int) -> ProcessPoolExecutor | None:
    """The fingerprinting workers (see :mod:`.workers` for why they die with this process)."""
    if workers is None:
        workers = min(4, os.cpu_count() or 1)
    if workers <= 0 or total <= batch_size:
        return None
    return worker_pool(workers, engine)


@contextmanager
def _explained_timeouts(engine: Engine, label: str, timeouts: apply.Timeouts) -> Iterator[None]:
    """A PostgreSQL timeout becomes :class:`LockTimeout`, naming who held the table and what
    was kept."""
    try:
        yield
    except DBAPIError as error:
        kind = apply.timeout_kind(error)
        if kind is None:
            raise
        with engine.connect() as connection:
            holders = apply.blockers(connection, [])
        bound = timeouts.lock if kind == "lock" else timeouts.statement
        raise LockTimeout(
            f"backfill of {label} gave up after waiting {bound} for "
            f"{'a lock' if kind == 'lock' else 'a statement to finish'} (open transactions: {holders}). Every batch "
            "committed before it is kept: run the same backfill again to resume where it stopped."
        ) from error


def backfill(
    bind: Engine | str,
    target: type | str,
    *,
    schema: str | None = None,
    fingerprinter: AnyFingerprinter | None = None,
    batch_size: int = 2000,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
    lock_timeout: str | None = "5s",
    statement_timeout: str | None = "5min",
    indexes: bool = True,
    index_lock_timeout: str | None = "10min",
) -> BackfillResult:
    """Fingerprint every row of ``target`` (a mapped class, or an attached table's name) that
    has no fingerprint yet; on a table with the wide signature, its words too.

    ``workers`` processes fingerprint in parallel (default: CPU count, at most 4; 0 = in this
    process). A batch holds at most ``batch_size`` rows and ``max_batch_bytes`` of text.
    ``progress(rows_done, rows_total_estimate)`` is called after each batch. Interrupt it at
    any point (Ctrl-C, SIGKILL): a rerun resumes after the last batch. A statement that waits
    longer than ``lock_timeout`` or runs longer than ``statement_timeout`` raises
    :class:`~simsql.text.errors.LockTimeout`.

    ``indexes``: once every row is filled, build the block indexes a wide attachment lacks
    (``attach_table(..., wide=True)`` leaves them to the backfill on a table with rows, so each
    is built once over the final rows, concurrently on PostgreSQL, waiting at most
    ``index_lock_timeout`` for older transactions; online on MySQL/MariaDB). Their names are in
    :attr:`BackfillResult.indexes_built`.
    """
    check_sizes(batch_size, max_batch_bytes)
    timeouts = apply.Timeouts(lock_timeout, statement_timeout)
    owned = engine_for(bind) if isinstance(bind, str) else bind
    engine = _isolated(owned)
    label = label_of(target, schema)
    try:
        with _explained_timeouts(engine, label, timeouts), engine.connect() as connection:
            job = start_backfill(connection, target, schema, fingerprinter, timeouts)
        options = FillOptions(timeouts, batch_size, max_batch_bytes, progress)
        result = fill(engine, job, label, options, workers)
        if indexes and isinstance(target, str) and job.names.wide:
            built = build_deferred_indexes(owned, job, apply.Timeouts(lock_timeout, None), index_lock_timeout)
            result = dataclasses.replace(result, indexes_built=built)
        if job.lists:
            result = dataclasses.replace(result, rows_placed=place_left_behind(owned, job.table, job.schema))
        return result
    finally:
        if isinstance(bind, str):
            owned.dispose()


def build_deferred_indexes(
    engine: Engine, job: Job, timeouts: apply.Timeouts, index_lock_timeout: str | None
) -> tuple[str, ...]:
    """The block indexes of ``job``'s attachment that do not exist yet, built (concurrently
    where the server needs it said); their names."""
    with engine.connect() as connection, apply.bounded(connection, apply.DDL_TIMEOUTS):
        before = catalog.present(connection, job.schema, job.table, job.names)
        missing = tuple(name for name in job.names.indexes if not before.has_index(name) or name in before.invalid)
        if not missing:
            return ()
        plan = plan_indexes(connection, job.table, schema=job.schema, concurrently=True)
        relation = backend(connection).qualified(job.schema, job.table)
    apply.run_on_engine(engine, plan, timeouts, relations=[relation], concurrent_timeouts=apply.Timeouts(index_lock_timeout, None))
    return missing


def _isolated(engine: Engine) -> Engine:
    """``engine`` whose connections run at the backfill's own isolation level
    (:attr:`simsql.dialects.Backend.backfill_isolation`), set on checkout and reset on return to
    the pool, so a role whose default is REPEATABLE READ or SERIALIZABLE changes nothing."""
    return engine.execution_options(isolation_level=backend(engine).backfill_isolation)


def fill(engine: Engine, job: Job, label: str, options: FillOptions, workers: int | None) -> BackfillResult:
    """Run one resolved job to the end (the body of :func:`backfill`; a refingerprint runs
    its shadow set through it)."""
    started = time.perf_counter()
    timeouts = options.timeouts
    engine = _isolated(engine)
    with _explained_timeouts(engine, label, timeouts), engine.connect() as connection:
        start = start_fill(connection, job, timeouts)
    phase, last_key, resumed = start.phase, start.last_key, start.resumed
    run = _Run(engine, job, options, start, _pool(engine, workers, start.total, options.batch_size))
    try:
        with _explained_timeouts(engine, label, timeouts):
            _run_phases(run, phase, last_key)
    finally:
        if run.pool is not None:
            run.pool.shutdown(wait=False, cancel_futures=True)
    c = run.counters
    return BackfillResult(c.read, c.fingerprinted, c.empty, c.skipped, c.batches, time.perf_counter() - started, resumed)


def fill_locked(connection: Connection, job: Job, batch_size: int = 2000) -> int:
    """Fingerprint, in the connection's open transaction and in this process, every row the
    job still lacks; returns how many were stored. For the last rows of a refingerprint,
    while it holds a lock that keeps writers out (so none can be missed)."""
    sql = backend(connection).batch_sql(job)
    n, cursor, stored = sql.key_count, None, 0
    sql.prepare(connection)
    while True:
        params: dict[str, Any] = {"limit": batch_size, **(sql.cursor_params(cursor) if cursor else {})}
        rows = list(connection.execute(sql.rows[cursor is not None], params))
        if not rows:
            sql.release(connection)
            return stored
        cursor = list(rows[-1][:n])
        keys = [list(r[:n]) for r in rows]
        if isinstance(job.fingerprinter, Fingerprinter):
            texts = [_row_text(r[n:]) for r in rows]
            chosen = _to_store(keys, _fingerprint_batch(job.fingerprinter, texts, job.names.wide), _digests(texts))
        else:
            digests, signed = sign_rows(job, keys, rows)
            chosen = _to_store(keys, signed.result(), digests)
        if chosen:
            stored += sql.store(connection, chosen)


def passes(phase: str, last_key: list[Any] | None) -> list[tuple[str, list[Any] | None]]:
    """The passes a run makes, each ``(phase, cursor to start after)``, from where the last
    run stopped (``phase``, ``last_key``: :class:`FillStart`): the scan, resumed after its
    cursor, then a catch-up pass from the first key for the rows changed behind the scan.

    A run stopped during its catch-up starts that pass again from the first key, not after the
    saved cursor: while nothing ran, writers may have cleared fingerprints below the cursor
    (their triggers do, on every change of the text), and a pass resumed after it would never
    go back for them. So a run to the end leaves no row without its fingerprint, whatever was
    stopped before; starting the catch-up over costs what a catch-up costs (one pass reading
    the rows that lack a fingerprint), never fingerprinting a row twice."""
    if phase == "catchup":
        return [("catchup", None)]
    return [("scan", last_key), ("catchup", None)]


def _run_phases(run: _Run, phase: str, last_key: list[Any] | None) -> None:
    """The passes (:func:`passes`): the scan, then a catch-up for rows changed behind it."""
    with run.engine.connect() as reader, _writer(run.engine, run.sql) as writer:
        for current, cursor in passes(phase, last_key):
            run.phase(reader, writer, current, cursor)
        if run.has_progress_table:
            run.sql.save_progress(writer, "done", None, 0)
            writer.commit()


@contextmanager
def _writer(engine: Engine, sql: BatchSQL) -> Iterator[Connection]:
    """A connection prepared for :meth:`BatchSQL.store` (MySQL: its batch table), released
    after. If the run failed and even the release fails, the session is discarded rather than
    returned to the pool: the run's own error is the one to report."""
    with engine.connect() as writer:
        sql.prepare(writer)
        writer.commit()
        try:
            yield writer
        except BaseException:
            try:
                writer.rollback()
                sql.release(writer)
                writer.commit()
            except Exception:  # noqa: BLE001 - best effort: the run's own error follows
                writer.invalidate()
            raise
        sql.release(writer)
        writer.commit()
