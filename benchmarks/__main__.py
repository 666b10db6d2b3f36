"""Run the benchmarks: ``python -m benchmarks [--quick] [--url URL] [--sizes ...]``.

Without ``--url`` the run uses the embedded PostgreSQL wheel (PostgreSQL 18 with pgvector), so
every peer, pgvector included, runs in the same server. Results go to
``benchmarks/results/<name>.json``; a full run (not ``--quick``) also rewrites ``BENCHMARKS.md``
and the plots in ``benchmarks/plots/``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from . import log as _log

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"


def _machine(engine: Any) -> dict[str, Any]:
    import numpy
    import sqlalchemy

    import simsql

    with engine.connect() as connection:
        server = connection.execute(text("SELECT version()")).scalar_one()
        try:
            vector = connection.execute(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar()
        except Exception:
            vector = None
    try:
        import simhash

        simhash_version = getattr(simhash, "__version__", "2.1.2")
    except ImportError:
        simhash_version = None
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "postgres": server,
        "pgvector": vector,
        "simsql": simsql.__version__,
        "sqlalchemy": sqlalchemy.__version__,
        "numpy": numpy.__version__,
        "simhash_package": simhash_version,
    }


def _latency_run(engine: Any, config: str, size: int, queries: int, args: argparse.Namespace) -> dict[str, Any]:
    """Issue 8's real-text latencies for one configuration and table size."""
    from . import queries as query_bench
    from . import scale

    _log(f"latency: {config} N={size:,}: articles")
    real = scale.real_text(config, limit=200 if args.quick else None)
    started = time.perf_counter()
    data = scale.build_cached(real, size, seed=size)
    entry: dict[str, Any] = {"generate_seconds": time.perf_counter() - started, "config": real.fingerprinter.config_id}
    entry["verified"] = f"{scale.verify(real.paragraphs, data, real.fingerprinter, 100)}/100"
    entry["bits"] = query_bench.bit_balance(data.fingerprints)
    if args.build_only:
        _log(f"  cached ({entry['verified']} sampled fingerprints equal the text's; bits {entry['bits']})")
        return entry
    entry["load_average_before"] = os.getloadavg()
    _log(f"  load ({entry['verified']} sampled fingerprints equal the text's; bits {entry['bits']})")
    entry["simsql_load"] = query_bench.load_simsql(engine, data.fingerprints)
    with_vector = size <= args.hnsw_max
    entry["pgvector_load"] = query_bench.load_pgvector(engine, data.fingerprints, build_index=with_vector)
    with_vector = with_vector and entry["pgvector_load"] is not None
    _log("  workloads")
    workloads = query_bench.make_workloads(data, real.features, queries, seed=size + 1)
    _log("  queries")
    entry["workloads"] = query_bench.run_latency(engine, workloads, data.fingerprints, with_pgvector=with_vector, repeat=args.repeat)
    entry["load_average"] = os.getloadavg()
    entry["command"] = "python -m benchmarks " + " ".join(sys.argv[1:])
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE IF EXISTS bench_vec"))
        if size > 1_000_000:
            query_bench.BenchDoc.__table__.drop(connection, checkfirst=True)  # with its trigger function
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: the CI smoke run")
    parser.add_argument("--url", help="database URL (default: embedded PostgreSQL with pgvector)")
    parser.add_argument("--sizes", default=None, help="comma-separated table sizes (default 100000,1000000,10000000)")
    parser.add_argument("--queries", type=int, default=None, help="queries per workload")
    parser.add_argument("--hnsw-max", type=int, default=1_000_000, help="largest N to build pgvector HNSW for")
    parser.add_argument("--simhash-max", type=int, default=1_000_000, help="largest N for the simhash package index")
    parser.add_argument("--sections", default="fingerprint,quality,queries,ingest")
    parser.add_argument("--ingest-rows", type=int, default=None, help="rows of the lock-stall table")
    parser.add_argument("--configs", default="default", help="fingerprint configurations of the latency section (default, v1, idf-heldout, background)")
    parser.add_argument("--build-only", action="store_true", help="latency section: build, verify and cache the article sets, query nothing")
    parser.add_argument("--repeat", type=int, default=2, help="timed passes per system in the latency section")
    parser.add_argument("--name", default=None, help="results file name (default: quick or full)")
    parser.add_argument("--no-report", action="store_true", help="do not rewrite BENCHMARKS.md")
    args = parser.parse_args(argv)

    # The simhash package logs a warning for every large bucket it meets; keep the run readable.
    logging.getLogger().setLevel(logging.ERROR)
    quick = args.quick
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else ([20_000] if quick else [100_000, 1_000_000, 10_000_000])
    queries = args.queries or (20 if quick else 200)
    sections = set(args.sections.split(","))
    name = args.name or ("quick" if quick else "full")

    from simsql.embedded import embedded_url

    url = args.url or embedded_url()
    engine = create_engine(url)
    results: dict[str, Any] = {"quick": quick, "machine": _machine(engine), "command": "python -m benchmarks " + " ".join(argv if argv is not None else sys.argv[1:])}
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"{name}.json"

    def save() -> None:
        out.write_text(json.dumps(results, indent=1, default=str))

    from . import corpus

    if "fingerprint" in sections:
        from . import throughput

        _log("fingerprint throughput")
        results["fingerprint"] = throughput.run(quick=quick)
        save()
    if "quality" in sections:
        from . import quality

        _log("quality curves")
        results["quality"] = quality.run(quick=quick)
        save()

    if "queries" in sections or "ingest" in sections:
        import simsql

        from . import queries as query_bench
        from . import scale

        _log("paragraph features")
        docs = corpus.english_documents()
        paragraphs = corpus.paragraphs(docs)
        fingerprinter = simsql.Fingerprinter()
        features = scale.paragraph_features(paragraphs, fingerprinter)

    if "queries" in sections:
        results["queries"] = {}
        for size in sizes:
            _log(f"scale set N={size:,}")
            started = time.perf_counter()
            data = scale.build(features, size, seed=size, fingerprinter=fingerprinter)
            entry: dict[str, Any] = {"generate_seconds": time.perf_counter() - started}
            entry["verified"] = f"{scale.verify(paragraphs, data, fingerprinter, 100)}/100"
            _log(f"  load simsql ({entry['verified']} sampled fingerprints equal simsql.simhash of the text)")
            entry["simsql_load"] = query_bench.load_simsql(engine, data.fingerprints)
            with_vector = size <= args.hnsw_max
            _log(f"  load pgvector (HNSW: {with_vector})")
            entry["pgvector_load"] = query_bench.load_pgvector(engine, data.fingerprints, build_index=with_vector)
            if entry["pgvector_load"] is None:
                with_vector = False
                entry["pgvector_note"] = "pgvector extension not available on this server"
            elif not with_vector:
                entry["pgvector_note"] = f"HNSW not built above N={args.hnsw_max:,} (build time)"
            _log("  workloads")
            workloads = query_bench.make_workloads(data, features, queries, seed=size + 1)
            with_simhash = size <= args.simhash_max
            _log("  queries")
            entry["workloads"] = query_bench.run_queries(engine, workloads, data.fingerprints, with_vector, with_simhash)
            results["queries"][str(size)] = entry
            save()
            if size <= 1_000_000:
                _log("  whole-table dedup")
                entry["dedup"] = query_bench.dedup(engine, data.fingerprints, with_simhash and size <= 100_000)
            results["queries"][str(size)] = entry
            save()
            with engine.begin() as connection:
                connection.execute(text("DROP TABLE IF EXISTS bench_vec"))

    if "latency" in sections:
        results["latency"] = results.get("latency") or {}
        for config in args.configs.split(","):
            results["latency"][config] = {}
            for size in sizes:
                results["latency"][config][str(size)] = _latency_run(engine, config, size, queries, args)
                save()

    if "ingest" in sections:
        from . import ingest

        rows = args.ingest_rows or (3_000 if quick else 1_000_000)
        long_rows = 2_000 if quick else 100_000
        _log(f"backfill throughput on {long_rows:,} article-length rows")
        count, seconds = ingest.load_articles(engine, "ingest_articles", corpus.assembled_articles(paragraphs, long_rows, seed=5))
        results["ingest"] = {"load_rows": count, "load_rows_per_second": count / seconds}
        results["ingest"]["backfill"] = ingest.backfill_throughput(engine, "ingest_articles", workers=None)
        results["ingest"]["backfill_single_process"] = ingest.backfill_throughput(engine, "ingest_articles", workers=0)
        save()
        _log(f"lock stalls on a {rows:,}-row table")
        count, _ = ingest.load_articles(engine, "stall_articles", (paragraphs[i % len(paragraphs)] for i in range(rows)))
        results["ingest"]["lock_stalls"] = ingest.lock_stalls(engine, "stall_articles", count, workers=None)
        save()
        with engine.begin() as connection:
            connection.execute(text("DROP TABLE IF EXISTS stall_articles CASCADE"))

    if not quick and not args.no_report:
        from . import report

        report.write(results, ROOT.parent / "BENCHMARKS.md", ROOT / "plots")
        _log("wrote BENCHMARKS.md")
    _log(f"results in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
