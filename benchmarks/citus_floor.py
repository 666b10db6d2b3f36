"""The floor of ``similar_to`` on Citus (issue 24), in raw SQL (psycopg, no ORM): p50 in ms of
one query shape per line on the plain table and the 4- and 32-shard tables kept by
``python -m benchmarks.citus --rows 200000 --keep``, the servers taking turns target by target,
with the plan's task counts (``EXPLAIN`` on the coordinator).

    python -m benchmarks.citus_floor --citus postgresql://postgres@127.0.0.1:9700/postgres \\
        --plain postgresql://postgres@127.0.0.1:5432/<db> --rows 200000 --queries 40

The last three shapes try a block lookup table, ``(block number * 65536 + block value, key,
fingerprint)`` distributed by its first column, so the four probes of a ``similar_to`` within 3
bits go to at most four shards: inside the statement (``key IN (<lookup>)``), alone, and as two
statements (the lookup, then ``key = ANY(<keys found>)``, which Citus routes to the shards holding
them). The lookup tables are made for the run (``INSERT ... SELECT`` from the kept tables) and
dropped after it. Targets are stored fingerprints with one bit flipped, so each finds a row.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Iterable
from typing import Any

import psycopg

DISTANCE = "bit_count(CAST((simhash # %(f)s) AS BIT(64))) <= 3"
PROBES = "(simhash_b0 = %(b0)s OR simhash_b1 = %(b1)s OR simhash_b2 = %(b2)s OR simhash_b3 = %(b3)s)"
LOOKUP = f"SELECT id FROM simsql_floor_lookup WHERE bkey = ANY(%(bkeys)s) AND {DISTANCE}"
SHAPES = {
    "one shard: id = k": "SELECT id FROM bench_notes WHERE id = %(k)s",
    "every shard: b0 = v": "SELECT id FROM bench_notes WHERE simhash_b0 = %(b0)s",
    "similar_to (the OR form)": f"SELECT id FROM bench_notes WHERE {PROBES} AND {DISTANCE}",
    "lookup: id IN (lookup)": f"SELECT id FROM bench_notes WHERE id IN ({LOOKUP})",
    "lookup alone": LOOKUP,
    "lookup, then id = ANY(keys)": LOOKUP,  # and the second statement, in _run
}
LOOKUP_SHAPES = [name for name in SHAPES if name.startswith("lookup")]


def params(fingerprint: int) -> dict[str, Any]:
    unsigned = fingerprint & (2**64 - 1)
    blocks = [(unsigned >> (48 - 16 * i)) & 0xFFFF for i in range(4)]
    found: dict[str, Any] = {f"b{i}": b for i, b in enumerate(blocks)}
    return {**found, "f": fingerprint, "bkeys": [i * 65536 + b for i, b in enumerate(blocks)], "k": abs(fingerprint) % 1000 + 1}


def make_lookup(connection: psycopg.Connection[Any], shards: int) -> None:
    connection.execute("DROP TABLE IF EXISTS simsql_floor_lookup")
    connection.execute("CREATE TABLE simsql_floor_lookup (bkey int, id int, simhash bigint, PRIMARY KEY (bkey, id))")
    connection.execute(f"SET citus.shard_count = {shards}")
    connection.execute("SELECT create_distributed_table('simsql_floor_lookup', 'bkey', colocate_with => 'none')")
    connection.execute(
        "INSERT INTO simsql_floor_lookup SELECT n * 65536 + CASE n WHEN 0 THEN simhash_b0 WHEN 1 THEN simhash_b1 "
        "WHEN 2 THEN simhash_b2 ELSE simhash_b3 END, id, simhash FROM bench_notes, generate_series(0, 3) AS n "
        "WHERE simhash IS NOT NULL"
    )
    connection.execute("ANALYZE simsql_floor_lookup")


def _run(connection: psycopg.Connection[Any], shape: str, values: dict[str, Any]) -> None:
    found = connection.execute(SHAPES[shape], values).fetchall()
    if shape == "lookup, then id = ANY(keys)" and found:
        connection.execute("SELECT id FROM bench_notes WHERE id = ANY(%s)", [[row[0] for row in found]]).fetchall()


def task_counts(connection: psycopg.Connection[Any], sql: str, values: dict[str, Any]) -> str:
    """The ``Task Count`` of each distributed step of ``sql``'s plan (``"-"``: not distributed)."""
    plan = [row[0].strip() for row in connection.execute("EXPLAIN (COSTS false) " + sql, values)]
    counts = [line.split(":")[1].strip() for line in plan if line.startswith("Task Count:")]
    return " + ".join(counts) or "-"


def tasks(connection: psycopg.Connection[Any], shape: str, values: dict[str, Any]) -> str:
    return task_counts(connection, SHAPES[shape], values)


def kept_servers(description: str) -> tuple[argparse.Namespace, dict[str, psycopg.Connection[Any]]]:
    """The command line of a script reading the tables ``benchmarks.citus --keep`` leaves, and a
    connection to each: ``plain``, ``4 shards``, ``32 shards`` (search_path set to its schema)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--citus", required=True, help="libpq URL of the coordinator")
    parser.add_argument("--plain", required=True, help="libpq URL of the plain PostgreSQL")
    parser.add_argument("--rows", type=int, default=200000, help="the kept tables' row count")
    parser.add_argument("--queries", type=int, default=40)
    arguments = parser.parse_args()
    servers: dict[str, psycopg.Connection[Any]] = {}
    for label, url, schema in (("plain", arguments.plain, "plain"), ("4 shards", arguments.citus, "4"), ("32 shards", arguments.citus, "32")):
        servers[label] = psycopg.connect(url, autocommit=True)
        servers[label].execute(f"SET search_path = bench_citus_{arguments.rows}_{schema}")
    return arguments, servers


def main() -> None:
    arguments, servers = kept_servers(__doc__.splitlines()[0])
    try:
        for label, connection in servers.items():
            if label != "plain":
                make_lookup(connection, int(label.split()[0]))
        rng = random.Random(3)
        stored = [row[0] for row in servers["plain"].execute("SELECT simhash FROM bench_notes WHERE simhash IS NOT NULL LIMIT 5000")]
        targets = [params(rng.choice(stored) ^ (1 << rng.randrange(63))) for _ in range(arguments.queries)]
        runs = [(label, shape) for shape in SHAPES for label in servers if not (label == "plain" and shape in LOOKUP_SHAPES)]
        times: dict[tuple[str, str], list[float]] = {key: [] for key in runs}
        for values in targets:
            for label, shape in runs:
                started = time.perf_counter()
                _run(servers[label], shape, values)
                times[(label, shape)].append(time.perf_counter() - started)
        plans = {key: tasks(servers[key[0]], key[1], targets[0]) for key in runs if key[0] != "plain"}
    finally:
        for label, connection in servers.items():
            if label != "plain":
                connection.execute("DROP TABLE IF EXISTS simsql_floor_lookup")
            connection.close()
    print_medians(arguments.queries, SHAPES, list(servers), times, plans)


def print_medians(
    queries: int, shapes: Iterable[str], labels: list[str], times: dict[tuple[str, str], list[float]],
    plans: dict[tuple[str, str], str],
) -> None:  # fmt: skip
    """One line per shape: each server's p50 in ms and, where distributed, its task counts."""
    print(f"p50 of {queries} (ms, tasks); load average {' '.join(f'{v:.1f}' for v in os.getloadavg())} (1, 5, 15 min)")
    shapes = list(shapes)
    width = max(len(shape) for shape in shapes)
    for shape in shapes:
        cells = [f"{label} {statistics.median(times[(label, shape)]) * 1000:.2f}" + (f" ({plans[(label, shape)]})" if (label, shape) in plans else "")
                 for label in labels if (label, shape) in times]  # fmt: skip
        print(f"{shape:>{width}}: " + ", ".join(cells))


if __name__ == "__main__":
    main()
