"""The row estimate of a distributed table on Citus (issue 41): what each way of reading it costs
and what it reads, side by side in one run, the ways taking turns.

The coordinator's shell of a distributed table is empty (``pg_class.reltuples`` 0 there), so
simsql reads the table's size elsewhere; :mod:`simsql.queries.plan_size` reads it at most once a
minute per table. Ways timed, each on its own warm connection:

* ``shards' estimates`` — what simsql reads (``backend(connection).row_estimate``,
  :data:`simsql.dialects.citus.backend.SHARD_ROWS_SQL`): each node holding shards asked once for
  the sum of their ``reltuples`` (``master_run_on_worker``, one connection at a time);
* ``1% page sample`` — what it read before: ``count(*) * 100 ... TABLESAMPLE SYSTEM (1)``, a
  pushed-down aggregate over the executor's cached connections (reads 1% of the pages);
* ``run_command_on_shards`` — Citus's own way (its ``citus_stats`` view): one command per shard.

    python -m benchmarks.citus_estimate --url postgresql+psycopg://postgres@127.0.0.1:9700/postgres \\
        --rows 20000 200000 1000000 --repeats 15
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from sqlalchemy import Engine, create_engine, table, text
from sqlalchemy.engine import Connection

from simsql.dialects import backend

TABLE = "simsql_bench_estimate"
SAMPLE = f"SELECT count(*) * 100 FROM {TABLE} TABLESAMPLE SYSTEM (1)"
PER_SHARD = (
    f"SELECT sum(CAST(result AS float8)) FROM run_command_on_shards('{TABLE}', "
    "$$SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = '%s'::regclass$$) WHERE success"
)


def load(engine: Engine, rows: int) -> None:
    with engine.begin() as connection:
        connection.execute(text(f"DROP TABLE IF EXISTS {TABLE}"))
        connection.execute(text(f"CREATE TABLE {TABLE} (id bigint PRIMARY KEY, body text)"))
        connection.execute(text(f"SELECT create_distributed_table('{TABLE}', 'id')"))
        connection.execute(text(f"INSERT INTO {TABLE} SELECT i, repeat(md5(i::text), 8) FROM generate_series(1, {rows}) AS i"))
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text(f"ANALYZE {TABLE}"))


def ways(connection: Connection) -> dict[str, Callable[[], float]]:
    return {
        "shards' estimates": lambda: backend(connection).row_estimate(connection, table(TABLE)),
        "1% page sample": lambda: float(connection.execute(text(SAMPLE)).scalar_one()),
        "run_command_on_shards": lambda: float(connection.execute(text(PER_SHARD)).scalar_one()),
    }


def measure(engine: Engine, rows: int, repeats: int) -> None:
    load(engine, rows)
    connections = {name: engine.connect() for name in ways(engine.connect())}
    readers = {name: ways(connections[name])[name] for name in connections}
    times: dict[str, list[float]] = {name: [] for name in readers}
    values: dict[str, list[float]] = {name: [] for name in readers}
    for name, read in readers.items():
        read()  # warm: the executor's connections to the workers, the catalog caches
    for turn in range(repeats):
        order = list(readers) if turn % 2 == 0 else list(reversed(readers))
        for name in order:
            start = time.perf_counter()
            values[name].append(readers[name]())
            times[name].append((time.perf_counter() - start) * 1000)
    for name in readers:
        found = values[name]
        print(
            f"{rows:>9,} rows  {name:<22} p50 {statistics.median(times[name]):7.1f} ms"
            f"   read {min(found):>11,.0f} .. {max(found):>11,.0f}"
        )
    for connection in connections.values():
        connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--url", required=True)
    parser.add_argument("--rows", type=int, nargs="+", default=[20000, 200000])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    engine = create_engine(args.url)
    try:
        for rows in args.rows:
            measure(engine, rows, args.repeats)
    finally:
        with engine.begin() as connection:
            connection.execute(text(f"DROP TABLE IF EXISTS {TABLE}"))
        engine.dispose()


if __name__ == "__main__":
    main()
