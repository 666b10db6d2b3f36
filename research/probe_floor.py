"""What ``find_original``'s index stage costs, and what balanced bits could save of it.

Radius-2 probes of four 16-bit blocks read every index entry whose block equals one of 137 values
per block: ``4 * 137 / 65,536`` of the table when bits are uniform (8,362 entries at 1M rows),
more where real text crowds the buckets, however few rows end up within the bound. This run puts
the real-text fingerprints of the latency benchmark (``scale.real_text("default")``, the same
cached article set) beside uniform random fingerprints of the same size (perfectly balanced bits:
the best any weighting or background could do), in one table at a time, one after the other, and
times ``simsql.queries.originality_search`` through the ORM (the 16 nearest candidates, as
``find_original`` asks) for original submissions (fresh articles; uniform: random fingerprints),
the case that reads the whole reach:

* the default (14 bits from radius-2 probes), radius 1 to 14 bits, and the 7-bit search;
* on a sample of checks, ``EXPLAIN (ANALYZE, TIMING OFF)`` of the same statement: index entries
  read (rows the index-only scans returned plus those their distance filter removed), server
  execution and planning time.

Every answer is checked against the nearest row the probes can reach (numpy, exact distances).
Run: ``python -m research.probe_floor [--url URL] --rows 1000000 --queries 100`` (without
``--url``: the embedded PostgreSQL); results in ``research/results/probe-floor.json``.
PostgreSQL only (the plan is read from its EXPLAIN).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.orm import Session

from benchmarks import corpus, log, scale
from benchmarks.hamming import bit_balance, reachable_distances
from benchmarks.queries import BenchDoc, load_simsql
from benchmarks.timing import summary
from simsql.queries import originality_search

RESULTS = Path(__file__).resolve().parent / "results" / "probe-floor.json"
SEARCHES = (
    ("default: 14 bits, radius 2", 14, 2),
    ("14 bits, radius 1", 14, 1),
    ("7 bits, radius 1", 7, 1),
)
"""(label, max_distance, probe_radius) of each timed search."""


def expected_uniform_entries(rows: int, radius: int) -> float:
    """Index entries radius-``radius`` probes read on uniform fingerprints: each block is probed at
    every 16-bit value within ``radius`` bits of the target's (137 at radius 2), and every value
    holds ``rows / 65,536`` entries on average."""
    return 4 * sum(math.comb(16, k) for k in range(radius + 1)) * rows / 65536


def _plan_figures(plan: dict[str, Any]) -> dict[str, float]:
    """Entries the block index-only scans read, and the server's times, from an EXPLAIN JSON
    plan. The block indexes are the ones the mixin gives the table (its primary key is a
    constraint, not one of them)."""
    block_indexes = {index.name for index in BenchDoc.__table__.indexes}  # type: ignore[attr-defined]
    entries = 0.0

    def walk(node: dict[str, Any]) -> None:
        nonlocal entries
        if node.get("Node Type") == "Index Only Scan" and node.get("Index Name") in block_indexes:
            loops = node.get("Actual Loops", 1)
            entries += (
                node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)
            ) * loops
        for child in node.get("Plans", ()):
            walk(child)

    walk(plan["Plan"])
    return {
        "entries": entries,
        "execution_ms": plan["Execution Time"],
        "planning_ms": plan["Planning Time"],
    }


def _timed(session: Session, queries: list[int], repeat: int) -> tuple[dict[str, list[float]], dict[str, list[int | None]]]:
    """Every search of :data:`SEARCHES` over ``queries``, ``repeat`` interleaved passes after a
    warm-up: the seconds of each call, and the first pass's answers (the nearest candidate's
    distance, or None)."""

    def nearest(q: int, bound: int, radius: int) -> int | None:
        rows = session.execute(originality_search(BenchDoc, q, bound, probe_radius=radius)).all()
        return int(rows[0][1]) if rows else None

    times: dict[str, list[float]] = {label: [] for label, _, _ in SEARCHES}
    answers: dict[str, list[int | None]] = {label: [] for label, _, _ in SEARCHES}
    for label, bound, radius in SEARCHES:  # warm the plan and the buffer cache
        for q in queries[:5]:
            nearest(q, bound, radius)
    for rep in range(repeat):
        for label, bound, radius in SEARCHES:
            for q in queries:
                started = time.perf_counter()
                found = nearest(q, bound, radius)
                times[label].append(time.perf_counter() - started)
                if rep == 0:
                    answers[label].append(found)
    return times, answers


def _explained(session: Session, engine: Engine, queries: list[int], bound: int, radius: int) -> list[dict[str, float]]:
    """The plan figures of the search for each of ``queries``, from EXPLAIN ANALYZE."""
    plans = []
    for q in queries:
        statement = originality_search(BenchDoc, q, bound, probe_radius=radius)
        sql = str(statement.compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True}))
        plan = session.execute(text(f"EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) {sql}")).scalar_one()
        plans.append(_plan_figures(plan[0]))
    return plans


def measure(engine: Engine, fingerprints: np.ndarray, queries: list[int], repeat: int, explained: int) -> dict[str, Any]:
    """Time every search of :data:`SEARCHES` over ``queries`` (interleaved passes), explain a
    sample, and check each answer against the nearest row the probes can reach."""
    out: dict[str, Any] = {"bits": bit_balance(fingerprints), "searches": {}}
    with Session(engine) as session:
        times, answers = _timed(session, queries, repeat)
        for label, bound, radius in SEARCHES:
            agree = 0
            for q, found in zip(queries, answers[label]):
                best = int(reachable_distances(fingerprints, q, radius).min())
                agree += found == (best if best <= bound else None)
            plans = _explained(session, engine, queries[:explained], bound, radius)
            out["searches"][label] = {
                "max_distance": bound,
                "probe_radius": radius,
                **summary(times[label]),
                "timings": len(times[label]),
                "answers_equal_nearest_reachable": agree / len(queries),
                "explained": len(plans),
                "entries_median": statistics.median(p["entries"] for p in plans),
                "entries_uniform_expectation": expected_uniform_entries(len(fingerprints), radius),
                "execution_ms_median": statistics.median(p["execution_ms"] for p in plans),
                "planning_ms_median": statistics.median(p["planning_ms"] for p in plans),
            }
    return out


def run(
    url: str,
    rows: int,
    queries: int,
    repeat: int = 2,
    explained: int = 30,
    quick: bool = False,
) -> dict[str, Any]:
    engine = create_engine(url)
    if engine.dialect.name != "postgresql":
        raise SystemExit(
            "research.probe_floor reads PostgreSQL's EXPLAIN: give a postgresql URL"
        )
    results: dict[str, Any] = {
        "rows": rows,
        "queries": queries,
        "repeat": repeat,
        "command": "python -m research.probe_floor " + " ".join(sys.argv[1:]),
    }
    with engine.connect() as connection:
        results["server"] = connection.execute(text("SELECT version()")).scalar_one()
    rng = np.random.default_rng(rows)
    populations: dict[str, tuple[np.ndarray, list[int]]] = {}
    populations["uniform random"] = (
        rng.integers(0, 2**64, size=rows, dtype=np.uint64),
        [int(q) for q in rng.integers(0, 2**64, size=queries, dtype=np.uint64)],
    )
    real = scale.real_text("default", limit=corpus.QUICK_DOCUMENTS if quick else None)
    data = scale.build_cached(real, rows, seed=rows)
    fresh = scale.random_articles(
        np.random.default_rng(rows + 1), queries, len(real.features.ptr) - 1, data.pools
    )
    populations["real text (default fingerprints)"] = (
        data.fingerprints,
        [
            int(q)
            for q in scale.fingerprints_of(fresh, real.features, data.fingerprinter)
        ],
    )
    results["config"] = real.fingerprinter.config_id
    results["populations"] = {}
    for name, (fingerprints, fresh_queries) in populations.items():
        log(f"{name}: load {rows:,} rows")
        load = load_simsql(engine, fingerprints)
        results["populations"][name] = {
            "load": load,
            "load_average_before": os.getloadavg(),
        }
        results["populations"][name].update(
            measure(
                engine, fingerprints, fresh_queries, repeat, min(explained, queries)
            )
        )
        results["populations"][name]["load_average"] = os.getloadavg()
    with engine.begin() as connection:
        BenchDoc.__table__.drop(connection, checkfirst=True)  # type: ignore[attr-defined]
    engine.dispose()
    return results


def table(results: dict[str, Any]) -> str:
    """BENCHMARKS.md's table of one run."""
    lines = [
        "| fingerprints | search | p50 ms | p99 ms | index entries read (median) | uniform expectation | server execution / planning ms (median) |",
        "|---|---|--:|--:|--:|--:|--:|",
    ]
    for name, population in results["populations"].items():
        for label, row in population["searches"].items():
            lines.append(
                f"| {name} | {label} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} | {row['entries_median']:,.0f} | "
                f"{row['entries_uniform_expectation']:,.0f} | {row['execution_ms_median']:.2f} / {row['planning_ms_median']:.2f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m research.probe_floor", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--url",
        help="a PostgreSQL database URL, its bench_docs table replaced (default: the embedded server)",
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--quick", action="store_true", help="a small article set: the CI smoke run"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--table", action="store_true", help="print the table of --out and exit"
    )
    args = parser.parse_args(argv)
    if args.table:
        print(table(json.loads(args.out.read_text())))
        return 0
    if args.url is None:
        from simsql.embedded import embedded_url

        args.url = embedded_url()
    results = run(args.url, args.rows, args.queries, args.repeat, quick=args.quick)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
