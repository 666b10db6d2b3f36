"""By meaning where pgvector cannot run (issue 44): simsql's vector lists against the exact
cosine scan, on any server (MySQL/MariaDB above all), on :mod:`benchmarks.vectors_hnsw`'s data.

The same 256-dimension vectors and held-out queries as the pgvector run
(:func:`benchmarks.vectors.cached_embeddings`, as :mod:`benchmarks.vectors_hnsw`: man-page paragraphs, TF-IDF + SVD, grown to
``--rows``), so the recall figures compare across the two. One table
(:class:`benchmarks.lists_models.VectorDoc`: float32 bytes in a BLOB, the 256-bit centred
signature, partition lists on), loaded by :func:`benchmarks.lists_load.load_vectors`, lists
fitted by ``simsql.lists.fit_lists`` (``--lists``, default the library's).

Systems, interleaved per query in a shuffled order, recall@10 against numpy's exact top-10:

- ``exact scan``: ``most_similar_vectors(..., exact=True)``, every stored vector read and ranked
  in numpy (what a user has on these servers without lists; the first ``--exact-queries``
  queries only, it is slow);
- ``lists probes=N candidates=M``: ``most_similar_vectors(..., probes=N, candidates=M)`` over the
  grid ``--probes`` x ``--candidates``.

    python -m benchmarks.vectors_lists --rows 200000 --queries 200 --url mysql+pymysql://root@127.0.0.1:3306/bench44_lists

The database must exist. ``--keep`` leaves the table loaded and fitted, ``--reuse`` takes it
as it is when it holds the same rows. JSON on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

import simsql
from simsql.lists import fit_lists

from . import lists_load as load
from .lists_models import ListsBase, VectorDoc, as_dict, lists_status
from .vectors import cached_embeddings

DIMENSIONS = 256
"""As benchmarks.vectors_hnsw (its cache is shared)."""
TOP = 10
FIT_SAMPLE = 20_000
"""Rows the vector signatures' centre is fitted on (as :mod:`benchmarks.lists`)."""


def systems(session: Session, grid: Sequence[tuple[int, int]]) -> dict[str, Callable[[np.ndarray], list[int]]]:
    found: dict[str, Callable[[np.ndarray], list[int]]] = {
        "exact scan": lambda q: [m.row.id for m in simsql.most_similar_vectors(session, select(VectorDoc), q, limit=TOP, exact=True)]
    }
    for n, m in grid:
        found[f"lists probes={n} candidates={m}"] = lambda q, n=n, m=m: [
            r.row.id for r in simsql.most_similar_vectors(session, select(VectorDoc), q, limit=TOP, probes=n, candidates=m)
        ]
    return found


def measure(runs: dict[str, Callable[[np.ndarray], list[int]]], queries: np.ndarray, truth: list[set[int]], exact_queries: int) -> dict[str, Any]:
    """p50/p90 and recall@10 of each system, in an order shuffled per query (two queries to warm)."""
    for q in queries[:2]:
        for name, run in runs.items():
            if name != "exact scan":
                run(q)
    times: dict[str, list[float]] = {name: [] for name in runs}
    recalls: dict[str, list[float]] = {name: [] for name in runs}
    shuffle = np.random.default_rng(44)
    for i, q in enumerate(queries):
        for name in shuffle.permutation(list(runs)).tolist():
            if name == "exact scan" and i >= exact_queries:
                continue
            started = time.perf_counter()
            found = runs[name](q)
            times[name].append((time.perf_counter() - started) * 1000)
            recalls[name].append(len(truth[i] & set(found[:TOP])) / TOP)
    figures = {
        name: {"queries": len(times[name]), "recall@10": round(statistics.fmean(recalls[name]), 3),
               "p50_ms": round(statistics.median(times[name]), 2), "p90_ms": round(float(np.percentile(times[name], 90)), 2)}
        for name in runs if times[name]
    }  # fmt: skip
    exact = figures["exact scan"]["p50_ms"]
    for f in figures.values():
        f["speed-up vs exact scan"] = round(exact / f["p50_ms"], 1)
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.vectors_lists", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--exact-queries", type=int, default=30, help="queries the exact scan runs (the first ones)")
    parser.add_argument("--probes", default="8,16,32,64")
    parser.add_argument("--candidates", default="200,1000")
    parser.add_argument("--lists", type=int, default=None, help="lists to fit (default: the library's)")
    parser.add_argument("--url", required=True)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args(argv)
    queries, vectors, real = cached_embeddings(args.rows, args.queries, DIMENSIONS)
    queries = queries.astype(np.float64)
    sample = np.random.default_rng(2).choice(len(vectors), size=min(FIT_SAMPLE, len(vectors)), replace=False)
    VectorDoc.__simhash_fingerprinter__ = simsql.VectorFingerprinter.fit(vectors[np.sort(sample)])  # type: ignore[attr-defined]
    engine = create_engine(args.url)
    report: dict[str, Any] = {"command": "python -m benchmarks.vectors_lists " + " ".join(sys.argv[1:] if argv is None else argv),
                              "rows": len(vectors), "real_rows": real, "queries": len(queries), "server": engine.dialect.name}  # fmt: skip
    with engine.connect() as connection:
        report["server_version"] = connection.exec_driver_sql("SELECT version()").scalar()
    table = VectorDoc.__tablename__
    try:
        if not (args.reuse and load.loaded(engine, table, len(vectors)) and load.same_vector(engine, table, vectors[0])):
            report["load_seconds"] = {k: round(v, 1) for k, v in load.load_vectors(engine, VectorDoc.__table__, vectors, VectorDoc.__simhash_fingerprinter__).items()}  # type: ignore[attr-defined]
            started = time.perf_counter()
            report["fit"] = as_dict(fit_lists(engine, table, lists=args.lists, seed=0))
            report["fit_seconds"] = round(time.perf_counter() - started, 1)
            load.analyze(engine, table)
        report["lists"] = lists_status(engine, table)
        print(json.dumps(report), file=sys.stderr, flush=True)
        truth = [set((np.argpartition(-(vectors @ q), TOP)[:TOP] + 1).tolist()) for q in queries]
        grid = [(int(n), int(m)) for n in args.probes.split(",") for m in args.candidates.split(",")]
        report["load_average_before"] = [round(x, 2) for x in os.getloadavg()]
        with Session(engine) as session:
            report["top10"] = measure(systems(session, grid), queries, truth, args.exact_queries)
        report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        if not args.keep:
            ListsBase.metadata.drop_all(engine, tables=[VectorDoc.__table__])  # type: ignore[list-item]
        engine.dispose()
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
