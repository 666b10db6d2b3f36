"""``find_original`` on a distributed table with its candidates' rows read by key (``CitusBackend.rows_by_key``,
the committed plan) against the one statement joining the table to the ranked keys (the plan of
plain PostgreSQL), the two taking turns target by target in one process (in random order),
p50 in ms and the ratio by key / join; then the parts of the plan by key (the keys statement,
the fetch by key) against plain PostgreSQL's whole ``find_original``.

    python -m benchmarks.citus --rows 200000 --shards 4 32 --keep ...   # the tables, once
    python -m benchmarks.citus_original --citus postgresql+psycopg://postgres@127.0.0.1:9700/postgres \\
        --plain postgresql+psycopg://postgres@127.0.0.1:5432/<db> --rows 200000 --queries 40
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import create_engine
from sqlalchemy.orm import Session

import simsql
from simsql.dialects.citus import CitusBackend
from simsql.queries.nearest import most_similar_keys
from simsql.queries.targets import rows_of_keys
from simsql.store import binding_for

from .citus import BenchNote, random_rows


def _session(url: str, schema: str) -> Session:
    return Session(create_engine(url, connect_args={"options": f"-csearch_path={schema},public"}))


def _timed(function: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    found = function()
    return (time.perf_counter() - started) * 1000, found


def _parts(session: Session, targets: list[str]) -> str:
    """p50 of the keys statement, of the fetch by key and of the whole ``find_original``."""
    binding = binding_for(BenchNote)
    times: dict[str, list[float]] = {"keys": [], "fetch": [], "whole": []}
    for target in targets:
        statement = most_similar_keys(BenchNote, target, 16, 14, probe_radius=2, scan=False)
        elapsed, ranked = _timed(lambda: session.execute(statement).all())
        times["keys"].append(elapsed)
        times["fetch"].append(_timed(lambda: session.execute(rows_of_keys(binding, [r[:1] for r in ranked])).all())[0])
        times["whole"].append(_timed(lambda: simsql.find_original(session, BenchNote, target))[0])
    return ", ".join(f"{name} {statistics.median(t):.1f} ms" for name, t in times.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--citus", default=os.environ.get("SIMSQL_TEST_CITUS_URL"))
    parser.add_argument("--plain", default=os.environ.get("SIMSQL_TEST_DATABASE_URL"))
    parser.add_argument("--rows", type=int, default=200000)
    parser.add_argument("--shards", type=int, nargs="+", default=[4, 32])
    parser.add_argument("--queries", type=int, default=40)
    arguments = parser.parse_args()
    rng = random.Random(5)
    rows = random_rows(arguments.rows, rng)
    targets = [f"{rng.choice(rows)['title']}\n{rng.choice(rows)['body']}" for _ in range(arguments.queries)]
    committed = CitusBackend.rows_by_key
    try:
        for shards in arguments.shards:
            with _session(arguments.citus, f"bench_citus_{arguments.rows}_{shards}") as session:
                times: dict[bool, list[float]] = {True: [], False: []}
                for target in [targets[0], *targets]:
                    for by_key in rng.sample([True, False], 2):
                        CitusBackend.rows_by_key = by_key
                        times[by_key].append(_timed(lambda: simsql.find_original(session, BenchNote, target))[0])
                by_key_p50, join_p50 = (statistics.median(times[flag][1:]) for flag in (True, False))
                CitusBackend.rows_by_key = committed
                print(f"{shards} shards: by key {by_key_p50:.1f} ms, join {join_p50:.1f} ms, by key / join {by_key_p50 / join_p50:.2f}")
                print(f"{shards} shards, by key: {_parts(session, targets)}")
    finally:
        CitusBackend.rows_by_key = committed
    with _session(arguments.plain, f"bench_citus_{arguments.rows}_plain") as session:
        print(f"plain: {_parts(session, targets)}")
    print(f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())} (1, 5, 15 min)")


if __name__ == "__main__":
    main()
