"""Fingerprint the rows a table already has, in resumable keyset batches.

Guarantees, and how they are kept:

* **Nothing is lost, nothing is redone.** Each batch is one transaction that writes the
  fingerprints *and* the cursor (``simsql_backfill``). Killed at any instant, the batch in flight
  rolls back; a rerun continues after the last committed batch. Only rows still lacking a
  fingerprint are ever selected, so a rerun after completion is cheap and changes nothing.
* **Concurrent writers win.** Every fingerprint is written with the digest of the text it was
  computed from, and the database stores it only if the row still holds that text: the row
  trigger checks it in columns mode; in side-table mode the write locks the user's rows
  (``FOR SHARE``) and compares digests, so a writer that changed a row after it was read
  either commits first (the fingerprint is not stored) or waits (its trigger then removes
  it). Rows skipped that way are picked up by the catch-up pass that follows the main pass.
* **Bounded.** Batches are cut by ``batch_size`` rows *and* ``max_batch_bytes`` of text, so
  a table of multi-megabyte documents does not need gigabytes; every statement runs under
  ``lock_timeout`` / ``statement_timeout``.
* **Throughput.** Fingerprinting runs in worker processes while the main process reads the
  next batch and writes the previous one, so database time and CPU time overlap.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from .. import registry
from ..bits import to_signed
from ..dialects import check_lifecycle_server as check_server
from ..errors import ConfigMismatch, LockTimeout, NotAttached, SchemaError
from ..fingerprint import Fingerprinter
from ..schema import PROGRESS_TABLE, Names
from ..storage import binding_for, digest_sql, join_text, quote, text_digest
from ..urls import engine_for
from . import apply, catalog

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

    @property
    def rows_per_second(self) -> float:
        return self.rows_read / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class _Job:
    """One table to backfill, resolved from the registry or a mapped class."""

    schema: str
    table: str
    keys: tuple[str, ...]
    key_types: tuple[str, ...]
    source: tuple[str, ...]
    names: Names
    fingerprinter: Fingerprinter
    cursor: str | None = None
    """Key of the resume cursor in ``simsql_backfill`` (default: the table's name)."""

    @property
    def cursor_key(self) -> str:
        return self.cursor or self.table


def _fingerprint_batch(fingerprinter: Fingerprinter, texts: list[str | None]) -> list[int | None]:
    """Runs in a worker process."""
    present = [t for t in texts if t is not None]
    fingerprints = iter(fingerprinter.fingerprint_many(present, empty="none"))
    return [next(fingerprints) if t is not None else None for t in texts]


def _resolve(connection: Connection, target: type | str, schema: str | None, fingerprinter: Fingerprinter | None) -> _Job:
    if isinstance(target, type):
        binding = binding_for(target)
        base: Any = binding.model.__table__  # type: ignore[attr-defined]
        schema = base.schema or registry.current_schema(connection)
        table, source, names = base.name, binding.source_columns, binding.names
        if fingerprinter is not None and fingerprinter != binding.fingerprinter:
            raise ConfigMismatch(
                f"{target.__name__} is configured with {binding.fingerprinter.config_id}, not {fingerprinter.config_id}"
            )
        chosen = binding.fingerprinter
        registry.claim(connection, table, schema, chosen, source, names)
    else:
        schema = schema or registry.current_schema(connection)
        entry = registry.read(connection, target, schema)
        if entry is None:
            raise NotAttached(
                f"{schema}.{target} is not attached to simsql (no registry entry); run `simsql attach` or op.add_simhash() first"
            )
        table, source, names = target, entry.source, entry.names
        chosen = fingerprinter or registry.fingerprinter_from_settings(entry.settings)
    registry.check(connection, table, schema, chosen.config_id)
    info = catalog.describe(connection, table, source, schema)
    holder = catalog.table_facts(connection, names.holder, schema)
    missing = [c for c in (names.fingerprint, names.digest) if holder is None or c not in holder.columns]
    if missing:
        raise SchemaError(
            f"{schema}.{names.holder} has no column {', '.join(map(repr, missing))}: attach simsql first (a table "
            f"attached by simsql 0.1 is upgraded in place, fingerprints kept, by running `simsql attach --table {table}` "
            "again with the same settings)"
        )
    return _Job(schema, table, info.keys, info.key_types, source, names, chosen)


class _Statements:
    """SQL for one job; identifiers quoted, values always bound, key values cast to the key's
    own type (a cursor over ``bytea`` or ``uuid`` keys resumes exactly)."""

    def __init__(self, job: _Job) -> None:
        keys = [quote(k) for k in job.keys]
        self.key_count = len(keys)
        self.base = f"{quote(job.schema)}.{quote(job.table)}"
        key_list = ", ".join(f"b.{k}" for k in keys)
        last = [f"CAST(:last_{i} AS {t})" for i, t in enumerate(job.key_types)]
        after = f"({key_list}) > ({', '.join(last)})" if len(keys) > 1 else f"b.{keys[0]} > {last[0]}"
        if job.names.side is None:
            # A fingerprint without its text's digest (stored by simsql 0.1, or a raw loader) is
            # unverified: fingerprinted again.
            missing = f"(b.{quote(job.names.fingerprint)} IS NULL OR b.{quote(job.names.digest)} IS NULL)"
            source_from = f"{self.base} AS b"
        else:
            side = f"{quote(job.schema)}.{quote(job.names.side)}"
            side_keys = [quote(k) for k in job.names.side_keys(job.keys)]
            join = " AND ".join(f"s.{s} = b.{k}" for s, k in zip(side_keys, keys))
            source_from = f"{self.base} AS b LEFT JOIN {side} AS s ON {join}"
            missing = f"(s.{side_keys[0]} IS NULL OR s.{quote(job.names.digest)} IS NULL)"
        size = " + ".join(f"coalesce(octet_length(b.{quote(c)}), 0)" for c in job.source)
        # As text, the way the digest reads them (char(n) loses its padding in both).
        texts = ", ".join(f"CAST(b.{quote(c)} AS text)" for c in job.source)
        tail = f"ORDER BY {key_list} LIMIT :limit"
        self.sizes = {
            False: text(f"SELECT {size} FROM {source_from} WHERE {missing} {tail}"),
            True: text(f"SELECT {size} FROM {source_from} WHERE {missing} AND {after} {tail}"),
        }
        self.rows = {
            False: text(f"SELECT {key_list}, {texts} FROM {source_from} WHERE {missing} {tail}"),
            True: text(f"SELECT {key_list}, {texts} FROM {source_from} WHERE {missing} AND {after} {tail}"),
        }
        self.count = text(f"SELECT count(*) FROM {source_from} WHERE {missing}")
        self.write = self._write(job, keys)

    def _write(self, job: _Job, keys: list[str]) -> Any:
        arrays = ", ".join(
            [f"CAST(:k_{i} AS {t}[])" for i, t in enumerate(job.key_types)]
            + ["CAST(:fps AS bigint[])", "CAST(:srcs AS uuid[])"]
        )
        columns = ", ".join([f"k_{i}" for i in range(len(keys))] + ["fp", "src"])
        match = " AND ".join(f"b.{k} = v.k_{i}" for i, k in enumerate(keys))
        fp, src = quote(job.names.fingerprint), quote(job.names.digest)
        if job.names.side is None:
            # The row trigger keeps the fingerprint only if src is the digest of the row's text.
            return text(
                f"UPDATE {self.base} AS b SET {fp} = v.fp, {src} = v.src FROM unnest({arrays}) AS v({columns}) "
                f"WHERE {match} AND (b.{fp} IS NULL OR b.{src} IS NULL) RETURNING b.{fp} IS NOT NULL"
            )
        side = f"{quote(job.schema)}.{quote(job.names.side)}"
        side_keys = ", ".join(quote(k) for k in job.names.side_keys(job.keys))
        return text(
            f"INSERT INTO {side} ({side_keys}, {fp}, {src}) "
            f"SELECT {', '.join(f'v.k_{i}' for i in range(len(keys)))}, v.fp, v.src FROM unnest({arrays}) AS v({columns}) "
            f"JOIN {self.base} AS b ON {match} WHERE {digest_sql(job.source, 'b.')} = v.src "
            f"ORDER BY {', '.join(f'v.k_{i}' for i in range(len(keys)))} FOR SHARE OF b "
            f"ON CONFLICT ({side_keys}) DO UPDATE SET {fp} = excluded.{fp}, {src} = excluded.{src} "
            f"WHERE {side}.{src} IS NULL RETURNING {fp} IS NOT NULL"
        )


def _encode_key(value: Any) -> Any:
    """A key value as JSON that PostgreSQL casts back to the key's type."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(value).hex()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _cursor_params(cursor: Sequence[Any]) -> dict[str, Any]:
    return {f"last_{i}": None if v is None else str(_encode_key(v)) for i, v in enumerate(cursor)}


def _read_progress(connection: Connection, job: _Job) -> tuple[str, list[Any] | None, bool]:
    row = connection.execute(
        text(f"SELECT config_id, phase, last_key FROM {PROGRESS_TABLE} WHERE table_schema = :schema AND table_name = :table"),
        {"schema": job.schema, "table": job.cursor_key},
    ).first()
    if row is None or row.phase == "done" or row.config_id != job.fingerprinter.config_id:
        return "scan", None, False
    return row.phase, row.last_key, True


def _save_progress(connection: Connection, job: _Job, phase: str, last_key: Sequence[Any] | None, rows: int) -> None:
    connection.execute(
        text(
            f"INSERT INTO {PROGRESS_TABLE} (table_schema, table_name, config_id, phase, last_key, rows_done) "
            "VALUES (:schema, :table, :config, :phase, CAST(:last_key AS jsonb), :rows) "
            "ON CONFLICT (table_schema, table_name) DO UPDATE SET config_id = excluded.config_id, phase = excluded.phase, "
            f"last_key = excluded.last_key, rows_done = {PROGRESS_TABLE}.rows_done + excluded.rows_done, updated_at = now()"
        ),
        {
            "schema": job.schema,
            "table": job.cursor_key,
            "config": job.fingerprinter.config_id,
            "phase": phase,
            "last_key": None if last_key is None else json.dumps([_encode_key(v) for v in last_key]),
            "rows": rows,
        },
    )


@dataclass
class _Batch:
    keys: list[list[Any]]
    texts: list[str | None]
    fingerprints: Future[list[int | None]] | list[int | None]
    phase: str

    def result(self) -> list[int | None]:
        return self.fingerprints.result() if isinstance(self.fingerprints, Future) else self.fingerprints


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

    def __init__(self, engine: Engine, job: _Job, options: dict[str, Any], pool: ProcessPoolExecutor | None) -> None:
        self.engine, self.job, self.pool = engine, job, pool
        self.statements = _Statements(job)
        self.batch_size: int = options["batch_size"]
        self.max_bytes: int = options["max_batch_bytes"]
        self.timeouts: apply.Timeouts = options["timeouts"]
        self.progress: ProgressCallback | None = options["progress"]
        self.has_progress_table: bool = options["has_progress_table"]
        self.total: int = options["total"]
        self.counters = _Counters()

    def read(self, reader: Connection, cursor: list[Any] | None) -> list[Any]:
        """The next rows after ``cursor``: at most ``batch_size`` rows and ``max_batch_bytes`` of
        text (always at least one row). Sizes are read first, without the texts."""
        apply.set_timeouts(reader, self.timeouts)
        params: dict[str, Any] = {"limit": self.batch_size, **(_cursor_params(cursor) if cursor else {})}
        sizes = list(reader.execute(self.statements.sizes[cursor is not None], params).scalars())
        budget, count = self.max_bytes, 0
        for size in sizes:
            if count and size > budget:
                break
            budget -= size
            count += 1
        rows = list(reader.execute(self.statements.rows[cursor is not None], {**params, "limit": max(count, 1)})) if sizes else []
        reader.rollback()
        return rows

    def submit(self, rows: list[Any], phase: str) -> _Batch | None:
        n = self.statements.key_count
        rows = [r for r in rows if tuple(r[:n]) not in self.counters.seen_empty]  # found empty earlier in this run
        if not rows:
            return None
        keys = [list(r[:n]) for r in rows]
        texts = [_row_text(r[n:]) for r in rows]
        self.counters.read += len(rows)
        if self.pool is None:
            return _Batch(keys, texts, _fingerprint_batch(self.job.fingerprinter, texts), phase)
        return _Batch(keys, texts, self.pool.submit(_fingerprint_batch, self.job.fingerprinter, texts), phase)

    def write(self, writer: Connection, batch: _Batch) -> None:
        fingerprints = batch.result()
        for attempt in range(RETRIES + 1):
            try:
                written = self._write_once(writer, batch, fingerprints)
                break
            except DBAPIError as error:
                writer.rollback()
                if getattr(getattr(error, "orig", None), "sqlstate", None) != "40P01" or attempt == RETRIES:
                    raise
                time.sleep(0.05 * (attempt + 1))  # deadlocked with a writer: it won, try again
        self._count(batch, fingerprints, written)

    def _write_once(self, writer: Connection, batch: _Batch, fingerprints: list[int | None]) -> int:
        apply.set_timeouts(writer, self.timeouts)
        side = self.job.names.side is not None
        chosen = [
            (k, None if f is None else to_signed(f), None if t is None else str(text_digest(t)))
            for k, f, t in zip(batch.keys, fingerprints, batch.texts)
            if f is not None or (side and t is not None)
        ]
        written = 0
        if chosen:
            params: dict[str, Any] = {f"k_{i}": [k[i] for k, _, _ in chosen] for i in range(self.statements.key_count)}
            params["fps"] = [f for _, f, _ in chosen]
            params["srcs"] = [s for _, _, s in chosen]
            written = sum(1 for stored in writer.execute(self.statements.write, params).scalars() if stored)
        if self.has_progress_table:
            _save_progress(writer, self.job, batch.phase, batch.keys[-1], len(batch.keys))
        writer.commit()
        return written

    def _count(self, batch: _Batch, fingerprints: list[int | None], written: int) -> None:
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
                cursor = list(rows[-1][: self.statements.key_count])
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


def _pool(workers: int | None, total: int, batch_size: int) -> ProcessPoolExecutor | None:
    if workers is None:
        workers = min(4, os.cpu_count() or 1)
    if workers <= 0 or total <= batch_size:
        return None
    # Workers ignore Ctrl-C: the main process decides, and a worker traceback helps nobody.
    return ProcessPoolExecutor(max_workers=workers, initializer=signal.signal, initargs=(signal.SIGINT, signal.SIG_IGN))


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
    fingerprinter: Fingerprinter | None = None,
    batch_size: int = 2000,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
    lock_timeout: str | None = "5s",
    statement_timeout: str | None = "5min",
) -> BackfillResult:
    """Fingerprint every row of ``target`` (a mapped class, or an attached table's name) that
    has no fingerprint yet.

    ``workers`` processes fingerprint in parallel (default: CPU count, at most 4; 0 = in this
    process). A batch holds at most ``batch_size`` rows and ``max_batch_bytes`` of text.
    ``progress(rows_done, rows_total_estimate)`` is called after each batch. Interrupt it at
    any point (Ctrl-C, SIGKILL): a rerun resumes after the last batch. A statement that waits
    longer than ``lock_timeout`` or runs longer than ``statement_timeout`` raises
    :class:`~simsql.errors.LockTimeout`.
    """
    for name, value in (("batch_size", batch_size), ("max_batch_bytes", max_batch_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    timeouts = apply.Timeouts(lock_timeout, statement_timeout)
    engine = engine_for(bind) if isinstance(bind, str) else bind
    label = target if isinstance(target, str) else getattr(target, "__tablename__", target.__name__)
    label = f"{schema}.{label}" if schema else label
    try:
        with _explained_timeouts(engine, label, timeouts), engine.connect() as connection:
            apply.set_timeouts(connection, timeouts)
            check_server(connection)
            job = _resolve(connection, target, schema, fingerprinter)
            connection.commit()
        options = dict(batch_size=batch_size, max_batch_bytes=max_batch_bytes, timeouts=timeouts, progress=progress)
        return fill(engine, job, label, options, workers)
    finally:
        if isinstance(bind, str):
            engine.dispose()


def fill(engine: Engine, job: _Job, label: str, options: dict[str, Any], workers: int | None) -> BackfillResult:
    """Run one resolved job to the end (the body of :func:`backfill`; a refingerprint runs
    its shadow set through it)."""
    started = time.perf_counter()
    timeouts: apply.Timeouts = options["timeouts"]
    with _explained_timeouts(engine, label, timeouts), engine.connect() as connection:
        apply.set_timeouts(connection, timeouts)
        has_progress_table = registry.progress_exists(connection)
        phase, last_key, resumed = _read_progress(connection, job) if has_progress_table else ("scan", None, False)
        total = int(connection.execute(_Statements(job).count).scalar_one())
        connection.commit()
    options = dict(options, has_progress_table=has_progress_table, total=total)
    run = _Run(engine, job, options, _pool(workers, total, options["batch_size"]))
    try:
        with _explained_timeouts(engine, label, timeouts):
            _run_phases(run, phase, last_key)
    finally:
        if run.pool is not None:
            run.pool.shutdown(wait=False, cancel_futures=True)
    c = run.counters
    return BackfillResult(c.read, c.fingerprinted, c.empty, c.skipped, c.batches, time.perf_counter() - started, resumed)


def fill_locked(connection: Connection, job: _Job, batch_size: int = 2000) -> int:
    """Fingerprint, in the connection's open transaction and in this process, every row the
    job still lacks; returns how many were stored. For the last rows of a refingerprint,
    while it holds a lock that keeps writers out (so none can be missed)."""
    statements = _Statements(job)
    n, cursor, stored = statements.key_count, None, 0
    while True:
        params: dict[str, Any] = {"limit": batch_size, **(_cursor_params(cursor) if cursor else {})}
        rows = list(connection.execute(statements.rows[cursor is not None], params))
        if not rows:
            return stored
        cursor = list(rows[-1][:n])
        texts = [_row_text(r[n:]) for r in rows]
        fingerprints = _fingerprint_batch(job.fingerprinter, texts)
        side = job.names.side is not None
        chosen = [
            (list(r[:n]), None if f is None else to_signed(f), None if t is None else str(text_digest(t)))
            for r, f, t in zip(rows, fingerprints, texts)
            if f is not None or (side and t is not None)
        ]
        if chosen:
            values: dict[str, Any] = {f"k_{i}": [k[i] for k, _, _ in chosen] for i in range(n)}
            values["fps"], values["srcs"] = [f for _, f, _ in chosen], [s for _, _, s in chosen]
            stored += sum(1 for ok in connection.execute(statements.write, values).scalars() if ok)


def _run_phases(run: _Run, phase: str, last_key: list[Any] | None) -> None:
    """The scan, then a catch-up pass for rows changed behind the cursor while it ran."""
    with run.engine.connect() as reader, run.engine.connect() as writer:
        for current in ("scan", "catchup"):
            if current == "scan" and phase == "catchup":
                continue
            run.phase(reader, writer, current, last_key if current == phase else None)
        if run.has_progress_table:
            _save_progress(writer, run.job, "done", None, 0)
            writer.commit()
