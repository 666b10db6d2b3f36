"""A fresh text's probes against btree and hash indexes: does a cheaper lookup per value help? (issue 43, measured, not kept)

    python -m benchmarks.probe_index_kinds --build --rows 10000000 --url postgresql+psycopg://postgres@127.0.0.1:5432/h_syn
    python -m benchmarks.probe_index_kinds --rows 10000000 --url ...

At ten million rows a fresh article's originality check is about 5,100 probes, one btree descent
each (``= ANY`` of each block's probed values; PostgreSQL 15 descends once per value), at 4.65
buffer hits a descent (BENCHMARKS.md, "Ten million rows with 10 x 24 blocks"). A hash index
finds a value in one bucket page. So: ten 24-bit block columns of uniformly random values (what
a centred signature's blocks are), ``--rows`` rows, each column with a btree and a hash index;
each round draws ``--probes`` random values a block (510: 5,100 a text) and runs the
candidates statement, ``b0 = ANY(...) OR ... OR b9 = ANY(...)`` (a BitmapOr, the plan a hash
index allows), with only one kind of index present (the other dropped inside a transaction
that is rolled back), twice: the first run reads what it needs, the second finds it in
``shared_buffers``. Custom plans (``plan_cache_mode = force_custom_plan``) and the server's
default (``auto``: after five executions a prepared statement may run a generic plan) apart.

The synthetic table is ``probe_kinds`` in the URL's database (created with ``--build``).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg

from .timing import emit

BLOCKS = 10
WIDTH = 24


def build(dsn: str, rows: int) -> dict[str, Any]:
    started = time.perf_counter()
    columns = ", ".join(f"b{block} integer" for block in range(BLOCKS))
    values = ", ".join(f"(random() * {(1 << WIDTH) - 1})::integer" for _ in range(BLOCKS))
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("DROP TABLE IF EXISTS probe_kinds")
        connection.execute(f"CREATE UNLOGGED TABLE probe_kinds (id bigserial PRIMARY KEY, {columns}, pad text)")
        connection.execute(f"INSERT INTO probe_kinds ({', '.join(f'b{b}' for b in range(BLOCKS))}, pad) SELECT {values}, repeat('x', 200) FROM generate_series(1, %s)", [rows])
        connection.execute("SET maintenance_work_mem = '1GB'")
        for block in range(BLOCKS):
            connection.execute(f"CREATE INDEX probe_kinds_btree_{block} ON probe_kinds (b{block})")
            connection.execute(f"CREATE INDEX probe_kinds_hash_{block} ON probe_kinds USING hash (b{block})")
        connection.execute("VACUUM ANALYZE probe_kinds")
        sizes = connection.execute(
            "SELECT pg_relation_size('probe_kinds_btree_0'), pg_relation_size('probe_kinds_hash_0')"
        ).fetchone()
    assert sizes is not None
    return {"rows": rows, "seconds": round(time.perf_counter() - started, 1), "btree_bytes": sizes[0], "hash_bytes": sizes[1]}


STATEMENT = "SELECT id FROM probe_kinds WHERE " + " OR ".join(f"b{block} = ANY(%s)" for block in range(BLOCKS))


def _plan_of(cursor: Any, parameters: list[list[int]]) -> tuple[float, float, int]:
    cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + STATEMENT, parameters)
    plan = cursor.fetchone()[0][0]
    node = plan["Plan"]
    while node.get("Node Type") != "BitmapOr" and node.get("Plans"):
        node = node["Plans"][0]
    return plan["Execution Time"], node.get("Actual Total Time", 0.0), node.get("Shared Hit Blocks", 0) + node.get("Shared Read Blocks", 0)


def measure(dsn: str, kind: str, mode: str, probes: int, rounds: int, seed: int) -> dict[str, Any]:
    other = "hash" if kind == "btree" else "btree"
    rng = random.Random(seed)
    cold, warm, stage, buffers, executed = [], [], [], [], []
    with psycopg.connect(dsn) as connection, connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL plan_cache_mode = {mode}")
        for block in range(BLOCKS):
            cursor.execute(f"DROP INDEX probe_kinds_{other}_{block}")
        for _ in range(rounds):
            parameters = [[rng.randrange(1 << WIDTH) for _ in range(probes)] for _ in range(BLOCKS)]
            first, _, _ = _plan_of(cursor, parameters)
            second, index_stage, touched = _plan_of(cursor, parameters)
            started = time.perf_counter()
            cursor.execute(STATEMENT, parameters)  # as a client runs it: prepared after five, then the server's plan choice
            cursor.fetchall()
            executed.append((time.perf_counter() - started) * 1000)
            cold.append(first)
            warm.append(second)
            stage.append(index_stage)
            buffers.append(touched)
        connection.rollback()
    return {"kind": kind, "plan_cache_mode": mode, "cold_ms_p50": statistics.median(cold), "warm_ms_p50": statistics.median(warm),
            "warm_index_stage_ms_p50": statistics.median(stage), "buffers_p50": statistics.median(buffers),
            "client_ms_p50": statistics.median(executed)}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="PostgreSQL; the table probe_kinds is made in its database")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--build", action="store_true")
    parser.add_argument("--probes", type=int, default=510, help="values probed a block")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--results", type=Path)
    args = parser.parse_args(argv)
    dsn = args.url.replace("postgresql+psycopg://", "postgresql://")
    report: dict[str, Any] = {"argv": sys.argv[1:], "load_before": list(os.getloadavg())}
    if args.build:
        report["build"] = build(dsn, args.rows)
    report["runs"] = [
        measure(dsn, kind, mode, args.probes, args.rounds, seed=repeat)
        for repeat in range(args.repeats)
        for mode in ("force_custom_plan", "auto")
        for kind in ("btree", "hash")
    ]
    report["load_after"] = list(os.getloadavg())
    emit(report, args.results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
