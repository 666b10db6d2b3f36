"""Attaching the wide signature to an existing table: index sizes and backfill rate.

Two copies of the same ``--rows`` rows (plain tables, no simsql), each attached with
``simsql.attach_table(..., wide=True)``:

* **after**: what attach does: the block indexes are left to ``simsql.backfill``, which builds
  them (concurrently) once every row is filled;
* **before**: the indexes built right after attach (``create_simhash_indexes``, concurrently),
  then the backfill rewrites every row under them (``backfill(..., indexes=False)``).

Reported per variant: backfill rows/s (fingerprints and words, written in batches), the time of
the index builds, and each block index's size (``pg_relation_size``), with the load average.

    python -m benchmarks.wide_attach --rows 100000

PostgreSQL only (``--url``, default the local server); the schema ``simsql_bench_wide_attach``
is dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from typing import Any

from sqlalchemy import Engine, create_engine, text

import simsql
import simsql.alembic
from simsql.lifecycle import attach as operations
from simsql.urls import normalise_url

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
PLACE = "simsql_bench_wide_attach"
VOCABULARY = [f"w{i}" for i in range(5000)]


def _texts(rows: int, seed: int = 1) -> list[dict[str, Any]]:
    """Rows of 40-120 words drawn from a Zipf-like vocabulary (skewed, as real text is)."""
    rng = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(len(VOCABULARY))]
    out = []
    for key in range(1, rows + 1):
        words = rng.choices(VOCABULARY, weights, k=rng.randint(40, 120))
        out.append({"id": key, "title": f"document {key}", "body": " ".join(words)})
    return out


def _load(engine: Engine, table: str, rows: list[dict[str, Any]]) -> None:
    with engine.begin() as connection:
        connection.execute(text(f"CREATE TABLE {table} (id int PRIMARY KEY, title text, body text)"))
        for start in range(0, len(rows), 5000):
            connection.execute(text(f"INSERT INTO {table} VALUES (:id, :title, :body)"), rows[start : start + 5000])


def _sizes(engine: Engine, names: tuple[str, ...]) -> dict[str, int]:
    with engine.connect() as connection:
        return {
            name: int(connection.execute(text("SELECT pg_relation_size(CAST(:i AS regclass))"), {"i": f'"{PLACE}"."{name}"'}).scalar_one())
            for name in names
        }


def _variant(engine: Engine, table: str, built_before: bool, workers: int) -> dict[str, Any]:
    entry = simsql.attach_table(engine, table, ["title", "body"], wide=True)
    indexes_seconds = 0.0
    if built_before:
        started = time.perf_counter()
        with engine.connect() as connection:
            connection = connection.execution_options(isolation_level="AUTOCOMMIT")
            operations.create_simhash_indexes(connection, table, concurrently=True)
        indexes_seconds = time.perf_counter() - started
    started = time.perf_counter()
    result = simsql.backfill(engine, table, workers=workers, indexes=not built_before)
    total = time.perf_counter() - started
    if not built_before:
        indexes_seconds = total - result.seconds
    sizes = _sizes(engine, entry.names.indexes)
    wide = [sizes[n] for n in entry.names.wide_indexes]
    narrow = [sizes[n] for n in entry.names.indexes if n not in entry.names.wide_indexes]
    return {
        "indexes": "built before the backfill" if built_before else "built after the backfill (attach_table wide)",
        "rows": result.rows_read,
        "backfill_rows_per_s": round(result.rows_per_second),
        "index_build_s": round(indexes_seconds, 1),
        "wide_index_mb_each": round(sum(wide) / len(wide) / 2**20, 2),
        "wide_indexes_mb": round(sum(wide) / 2**20, 1),
        "block_index_mb_each": round(sum(narrow) / len(narrow) / 2**20, 2),
        "load_average": round(os.getloadavg()[0], 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--url", default=DEFAULT_URL)
    args = parser.parse_args(argv)
    admin = create_engine(normalise_url(args.url))
    with admin.begin() as connection:
        connection.execute(text(f"DROP SCHEMA IF EXISTS {PLACE} CASCADE"))
        connection.execute(text(f"CREATE SCHEMA {PLACE}"))
    engine = create_engine(normalise_url(args.url), connect_args={"options": f"-c search_path={PLACE}"})
    try:
        simsql.alembic.upgrade(engine)
        rows = _texts(args.rows)
        for table in ("after", "before"):
            _load(engine, table, rows)
        results = [_variant(engine, "after", False, args.workers), _variant(engine, "before", True, args.workers)]
        json.dump(results, sys.stdout, indent=2)
        sys.stdout.write("\n")
    finally:
        engine.dispose()
        with admin.begin() as connection:
            connection.execute(text(f"DROP SCHEMA IF EXISTS {PLACE} CASCADE"))
        admin.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
