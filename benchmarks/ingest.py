"""Ingest: backfill throughput on article-length rows, and lock stalls on a busy big table.

The stall measurement is the point of the lock-friendly design: while simsql is attached to a
table with rows and its fingerprints are backfilled, a reader and a writer keep running; their
worst single-statement latency is the stall a live application would feel. For contrast the same
table then gets what a naive migration would do, a ``GENERATED ... STORED`` column, which
rewrites the whole table under an exclusive lock.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Engine, text

import simsql
import simsql.alembic
from simsql.lifecycle import attach as operations


def load_articles(engine: Engine, table: str, texts: Iterable[str]) -> tuple[int, float]:
    """A legacy table built with plain SQL, filled with COPY: (rows, seconds)."""
    with engine.begin() as connection:
        connection.execute(text(f"DROP TABLE IF EXISTS {table}_simhash"))
        connection.execute(text(f"DROP TABLE IF EXISTS {table} CASCADE"))
        connection.execute(text(f"CREATE TABLE {table} (id bigserial PRIMARY KEY, title text, body text)"))
    started = time.perf_counter()
    rows = 0
    with engine.begin() as connection:
        raw = connection.connection.driver_connection
        with raw.cursor().copy(f"COPY {table} (title, body) FROM STDIN") as copy:
            for body in texts:
                rows += 1
                copy.write_row((body[:60], body))
    elapsed = time.perf_counter() - started
    with engine.connect() as connection:
        connection.execution_options(isolation_level="AUTOCOMMIT").execute(text(f"VACUUM ANALYZE {table}"))
    return rows, elapsed


def _attach(engine: Engine, table: str) -> dict[str, float]:
    simsql.alembic.upgrade(engine)
    started = time.perf_counter()
    with engine.begin() as connection:
        operations.add_simhash(connection, table, ["title", "body"])
    attached = time.perf_counter()
    with engine.connect() as connection:
        operations.create_simhash_indexes(
            connection.execution_options(isolation_level="AUTOCOMMIT"), table, concurrently=True
        )
    return {"attach_seconds": attached - started, "index_seconds": time.perf_counter() - attached}


def _detach(engine: Engine, table: str) -> None:
    with engine.begin() as connection:
        if simsql.store.registry.read(connection, table) is not None:
            operations.drop_simhash_indexes(connection, table)
            operations.drop_simhash(connection, table)


def backfill_throughput(engine: Engine, table: str, workers: int | None) -> dict[str, Any]:
    """Attach (columns, indexes) then backfill every row, as ``simsql attach --backfill`` does."""
    _detach(engine, table)
    timings = _attach(engine, table)
    result = simsql.backfill(engine, table, workers=workers, batch_size=2000)
    return {
        **timings,
        "rows": result.rows_read,
        "backfill_seconds": result.seconds,
        "rows_per_second": result.rows_per_second,
        "workers": workers,
    }


class _Probe(threading.Thread):
    """Runs one statement in a loop and records the slowest execution."""

    def __init__(self, engine: Engine, statement: str, rows: int, name: str) -> None:
        super().__init__(daemon=True, name=name)
        self.engine = engine
        self.statement = text(statement)
        self.rows = rows
        self.stop = threading.Event()
        self.worst = 0.0
        self.count = 0
        self.errors = 0

    def run(self) -> None:
        rng = random.Random(self.name)
        with self.engine.connect() as connection:
            connection = connection.execution_options(isolation_level="AUTOCOMMIT")
            while not self.stop.is_set():
                started = time.perf_counter()
                try:
                    connection.execute(self.statement, {"id": rng.randint(1, self.rows)})
                except Exception:
                    self.errors += 1
                self.worst = max(self.worst, time.perf_counter() - started)
                self.count += 1
                time.sleep(0.002)


def lock_stalls(engine: Engine, table: str, rows: int, workers: int | None) -> dict[str, Any]:
    """Worst reader/writer latency during attach + backfill, then during a naive rewrite."""
    _detach(engine, table)
    reader = _Probe(engine, f"SELECT id, title FROM {table} WHERE id = :id", rows, "reader")
    writer = _Probe(engine, f"UPDATE {table} SET title = title WHERE id = :id", rows, "writer")
    reader.start()
    writer.start()
    time.sleep(1.0)
    baseline = {"reader_worst_ms": reader.worst * 1000, "writer_worst_ms": writer.worst * 1000}
    reader.worst = writer.worst = 0.0
    started = time.perf_counter()
    timings = _attach(engine, table)
    result = simsql.backfill(engine, table, workers=workers, batch_size=2000)
    simsql_phase = {
        **timings,
        "backfill_seconds": result.seconds,
        "rows_per_second": result.rows_per_second,
        "total_seconds": time.perf_counter() - started,
        "reader_worst_ms": reader.worst * 1000,
        "writer_worst_ms": writer.worst * 1000,
        "reader_statements": reader.count,
        "writer_statements": writer.count,
        "errors": reader.errors + writer.errors,
    }
    _detach(engine, table)
    reader.worst = writer.worst = 0.0
    started = time.perf_counter()
    with engine.begin() as connection:
        connection.execute(
            text(f"ALTER TABLE {table} ADD COLUMN naive_block integer GENERATED ALWAYS AS (length(body)) STORED")
        )
    naive = {
        "seconds": time.perf_counter() - started,
        "reader_worst_ms": reader.worst * 1000,
        "writer_worst_ms": writer.worst * 1000,
    }
    with engine.begin() as connection:
        connection.execute(text(f"ALTER TABLE {table} DROP COLUMN naive_block"))
    reader.stop.set()
    writer.stop.set()
    reader.join()
    writer.join()
    return {"rows": rows, "baseline": baseline, "simsql": simsql_phase, "naive_generated_column": naive}
