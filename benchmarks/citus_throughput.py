"""Throughput on Citus (issue 24): ``backfill`` and ``duplicate_groups`` over the whole table, in
rows per second, on a plain PostgreSQL table and on tables of 4 and 32 shards on each of the
clusters given (two workers, one worker), the servers taking turns round by round; the median of
``--rounds``. A backfill is timed after clearing every fingerprint, twice per distributed table:
with simsql's store of fingerprint columns (``one statement`` per batch, which Citus runs on
every shard, each task joining the whole batch) and stored shard by shard as a side table's
batch is (``per shard``: a statement per shard naming its keys, routed to that shard).

    .ci/citus-cluster && .ci/citus-cluster --workers 1 --port 9710
    python -m benchmarks.citus_throughput --plain postgresql+psycopg://postgres@127.0.0.1:5432/<db> \\
        --citus postgresql+psycopg://postgres@127.0.0.1:9700/postgres \\
        --citus postgresql+psycopg://postgres@127.0.0.1:9710/postgres --rows 30000 --rounds 3

Each table is in a schema of its own (``bench_tp_<shards>``), dropped first and kept after.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.orm import Session

import simsql
from simsql.dialects.citus.backend import CitusBackend, CitusBatchSQL

from .citus import BenchNote, random_rows, load_rows


class PerShardStore(CitusBatchSQL):
    """Fingerprint columns stored shard by shard, as a side table's batch is (b387af2 did so for
    both modes): an ``UPDATE`` per shard naming its keys, routed to that shard."""

    columns_by_shard = True


def _engine(url: str, schema: str) -> Engine:
    admin = create_engine(url)
    with admin.begin() as connection:
        connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    admin.dispose()
    return create_engine(url, connect_args={"options": f"-csearch_path={schema},public"})


def _backfill(engine: Engine, store: str) -> float:
    routed = CitusBackend.batch_sql
    if store == "per shard":
        CitusBackend.batch_sql = lambda self, job: PerShardStore(job)  # type: ignore[method-assign]
    try:
        with engine.begin() as connection:
            connection.execute(text("SELECT set_config('citus.multi_shard_modify_mode', 'sequential', true)"))
            connection.execute(text("UPDATE bench_notes SET simhash = NULL, simhash_src = NULL"))
        started = time.perf_counter()
        done = simsql.backfill(engine, BenchNote, workers=0).rows_fingerprinted
        return done / (time.perf_counter() - started)
    finally:
        CitusBackend.batch_sql = routed  # type: ignore[method-assign]


def _dupes(engine: Engine, rows: int) -> float:
    with Session(engine) as session:
        started = time.perf_counter()
        simsql.duplicate_groups(session, BenchNote, max_distance=3)
        return rows / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plain", required=True)
    parser.add_argument("--citus", action="append", required=True, help="a coordinator's URL (repeat for each cluster)")
    parser.add_argument("--rows", type=int, default=30000)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    rows = random_rows(arguments.rows, random.Random(5))
    servers: dict[str, tuple[Engine, int | None]] = {"plain": (_engine(arguments.plain, "bench_tp_plain"), None)}
    for url in arguments.citus:
        with create_engine(url).connect() as connection:
            workers = connection.execute(text("SELECT count(*) FROM citus_get_active_worker_nodes()")).scalar_one()
        for shards in (4, 32):
            servers[f"{workers} worker(s), {shards} shards"] = (_engine(url, f"bench_tp_{shards}"), shards)
    for engine, count in servers.values():
        load_rows(engine, rows, count)
    found: dict[str, list[float]] = {}
    for round_ in range(arguments.rounds):
        for label, (engine, sharded) in servers.items():
            for store in ("one statement", "per shard") if sharded else ("one statement",):
                found.setdefault(f"{label}: backfill" + (f" ({store} store)" if sharded else ""), []).append(_backfill(engine, store))
            found.setdefault(f"{label}: duplicate_groups", []).append(_dupes(engine, arguments.rows))
        print(f"round {round_ + 1} of {arguments.rounds}: load average {os.getloadavg()[0]:.1f}", flush=True)
    print(f"{arguments.rows} rows, median of {arguments.rounds} rounds (rows/s); load average "
          + " ".join(f"{v:.1f}" for v in os.getloadavg()) + " (1, 5, 15 min)")  # fmt: skip
    for name, values in found.items():
        print(f"{name:>50}: {statistics.median(values):7.0f}  ({', '.join(f'{v:.0f}' for v in values)})")
    for engine, _ in servers.values():
        engine.dispose()


if __name__ == "__main__":
    main()
