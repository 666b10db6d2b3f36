"""``find_original``'s index stage on Citus with a block lookup table (issue 24), in raw SQL
(psycopg, no ORM): p50 in ms per shape on the plain table and the 4- and 32-shard tables kept by
``python -m benchmarks.citus --rows 200000 --keep``, the servers taking turns target by target,
with the plan's task counts (``EXPLAIN`` on the coordinator).

    python -m benchmarks.citus_lookup --citus postgresql://postgres@127.0.0.1:9700/postgres \\
        --plain postgresql://postgres@127.0.0.1:5432/<db> --rows 200000 --queries 40

The index stage is the candidates' keys and distances: every row within 14 bits sharing a block
within 2 bits of the target's (137 probe values per block, 548 in all), the nearest 16. Shapes:

* ``keys (block columns)``: what simsql runs today (``most_similar_keys``' one band: a ``UNION``
  of four index-only probes, ``ORDER BY ... LIMIT`` outermost), a task on every shard;
* ``keys (lookup by block)``: the same from a lookup table ``(block number, block number * 65536
  + block value, key, fingerprint)`` distributed by the block number (four values, so at most four shards, whatever
  the base table's count); the 548 values are spread over all 65,536 of each block, so a lookup
  distributed by ``block * 65536 + value`` (``benchmarks.citus_floor``'s, four probes for
  ``similar_to``) would be on every shard again: that shape is timed too (``lookup by value``);
* ``... then rows by key``: the keys statement, then ``id = ANY(<keys>)`` (routed to the shards
  holding them), the two statements ``find_original`` would run.

The lookup tables are made for the run by ``INSERT ... SELECT`` from the kept tables and dropped
after it: nothing here keeps them exact under writes (BENCHMARKS.md says why a trigger cannot on
Citus 13.2). Targets are stored fingerprints with 3 to 12 bits flipped.
"""

from __future__ import annotations

import random
import time
from typing import Any

import psycopg

from simsql.bits import blocks
from simsql.dialects.constructs import probe_values

from .citus_floor import kept_servers, print_medians, task_counts

DISTANCE = "bit_count(CAST((simhash # %(f)s) AS BIT(64)))"
BLOCK_PROBES = " UNION ".join(
    f"SELECT id, {DISTANCE} AS distance FROM bench_notes WHERE simhash_b{i} = ANY(%(p{i})s) AND {DISTANCE} <= 14"
    for i in range(4)
)
SHAPES = {
    "keys (block columns)": f"SELECT id, distance FROM ({BLOCK_PROBES}) AS c ORDER BY distance, id LIMIT 16",
    "keys (lookup by block)": (
        f"SELECT id, {DISTANCE} AS distance FROM simsql_lookup_block WHERE block IN (0, 1, 2, 3) AND bkey = ANY(%(bkeys)s) "
        f"AND {DISTANCE} <= 14 GROUP BY id, simhash ORDER BY distance, id LIMIT 16"
    ),
    "keys (lookup by value)": (
        f"SELECT id, {DISTANCE} AS distance FROM simsql_lookup_value WHERE bkey = ANY(%(bkeys)s) "
        f"AND {DISTANCE} <= 14 GROUP BY id, simhash ORDER BY distance, id LIMIT 16"
    ),
}
THEN_ROWS = {f"{name}, then rows by key": name for name in SHAPES}
LOOKUP_SHAPES = {name for name in [*SHAPES, *THEN_ROWS] if "lookup" in name}


def params(fingerprint: int) -> dict[str, Any]:
    """The statement's parameters: the fingerprint, each block's radius-2 probe values."""
    unsigned = fingerprint & (2**64 - 1)
    probes = [probe_values(b, 2) for b in blocks(unsigned)]
    found: dict[str, Any] = {f"p{i}": values for i, values in enumerate(probes)}
    return {**found, "f": fingerprint, "bkeys": [i * 65536 + v for i, values in enumerate(probes) for v in values]}


def make_lookups(connection: psycopg.Connection[Any], shards: int) -> None:
    """Both lookup tables of the kept ``bench_notes``, filled from it."""
    values = "CASE n WHEN 0 THEN simhash_b0 WHEN 1 THEN simhash_b1 WHEN 2 THEN simhash_b2 ELSE simhash_b3 END"
    drop_lookups(connection)
    connection.execute(
        "CREATE TABLE simsql_lookup_block (block smallint NOT NULL, bkey integer NOT NULL, id integer NOT NULL, "
        "simhash bigint NOT NULL, PRIMARY KEY (bkey, id, block) INCLUDE (simhash))"
    )
    connection.execute("SELECT create_distributed_table('simsql_lookup_block', 'block', colocate_with => 'none', shard_count => 4)")
    connection.execute(
        f"INSERT INTO simsql_lookup_block SELECT n, n * 65536 + {values}, id, simhash FROM bench_notes, generate_series(0, 3) AS n "
        "WHERE simhash IS NOT NULL"
    )
    connection.execute(
        "CREATE TABLE simsql_lookup_value (bkey integer NOT NULL, id integer NOT NULL, simhash bigint NOT NULL, "
        "PRIMARY KEY (bkey, id) INCLUDE (simhash))"
    )
    connection.execute(f"SELECT create_distributed_table('simsql_lookup_value', 'bkey', colocate_with => 'none', shard_count => {shards})")
    connection.execute(
        f"INSERT INTO simsql_lookup_value SELECT n * 65536 + {values}, id, simhash FROM bench_notes, generate_series(0, 3) AS n "
        "WHERE simhash IS NOT NULL"
    )
    connection.execute("VACUUM (ANALYZE) simsql_lookup_block, simsql_lookup_value")  # index-only scans


def drop_lookups(connection: psycopg.Connection[Any]) -> None:
    connection.execute("DROP TABLE IF EXISTS simsql_lookup_block, simsql_lookup_value")


def _run(connection: psycopg.Connection[Any], shape: str, values: dict[str, Any]) -> list[Any]:
    found = connection.execute(SHAPES[THEN_ROWS.get(shape, shape)], values).fetchall()
    if shape in THEN_ROWS and found:
        connection.execute("SELECT * FROM bench_notes WHERE id = ANY(%s)", [[row[0] for row in found]]).fetchall()
    return found


def tasks(connection: psycopg.Connection[Any], shape: str, values: dict[str, Any]) -> str:
    return task_counts(connection, SHAPES[THEN_ROWS.get(shape, shape)], values)


def main() -> None:
    arguments, servers = kept_servers(__doc__.splitlines()[0])
    try:
        for label, connection in servers.items():
            if label != "plain":
                make_lookups(connection, int(label.split()[0]))
        rng = random.Random(3)
        stored = [row[0] for row in servers["plain"].execute("SELECT simhash FROM bench_notes WHERE simhash IS NOT NULL LIMIT 5000")]
        targets = []
        for _ in range(arguments.queries):
            flipped = rng.choice(stored)
            for bit in rng.sample(range(63), rng.randrange(3, 13)):
                flipped ^= 1 << bit
            targets.append(params(flipped))
        names = [*SHAPES, *THEN_ROWS]
        runs = [(label, shape) for shape in names for label in servers if not (label == "plain" and shape in LOOKUP_SHAPES)]
        times: dict[tuple[str, str], list[float]] = {key: [] for key in runs}
        for values in targets:
            answers = set()
            for label, shape in runs:
                started = time.perf_counter()
                found = _run(servers[label], shape, values)
                times[(label, shape)].append(time.perf_counter() - started)
                answers.add(tuple(map(tuple, found)))
            if len(answers) != 1:
                raise AssertionError(f"the shapes disagree: {answers}")
        plans = {key: tasks(servers[key[0]], key[1], targets[0]) for key in runs if key[0] != "plain"}
    finally:
        for label, connection in servers.items():
            if label != "plain":
                drop_lookups(connection)
            connection.close()
    print_medians(arguments.queries, names, list(servers), times, plans)


if __name__ == "__main__":
    main()
