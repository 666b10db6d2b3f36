"""Run the benchmark suite: ``python -m benchmarks [--quick] [--url URL] [--sizes ...]``.

``python -m benchmarks --quick`` is the smoke run (a few minutes: tiny sizes, every default
section). The full suite, whose results BENCHMARKS.md shows, is::

    python -m benchmarks --sizes 100000,1000000,10000000 --queries 100
    python -m benchmarks --sections latency --sizes 1000000 --queries 100 --configs default,background --hnsw-max 0

Without ``--url`` the run uses the embedded PostgreSQL wheel (PostgreSQL 18 with pgvector), so
every peer, pgvector included, runs in the same server. Results go to
``benchmarks/results/<name>.json``; a full run (not ``--quick``, not ``--no-report``) also
rewrites BENCHMARKS.md and the plots in ``benchmarks/plots/`` (``python -m benchmarks.report``
does the same from saved results).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, text

from . import corpus, log, scale
from .hamming import bit_balance
from .queries import BenchDoc, load_pgvector, load_simsql, make_workloads

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
SECTIONS = ("fingerprint", "quality", "queries", "latency", "ingest")


def _versions(engine: Engine) -> dict[str, Any]:
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
    return {
        "postgres": server,
        "pgvector": vector,
        "simsql": simsql.__version__,
        "sqlalchemy": sqlalchemy.__version__,
        "numpy": numpy.__version__,
        "simhash_package": simhash_version,
    }


def _machine(engine: Engine) -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    machine = {"date": time.strftime("%Y-%m-%d %H:%M"), "cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version()}
    return {**machine, **_versions(engine)}


@lru_cache(maxsize=2)
def _paragraphs(quick: bool) -> list[str]:
    """English man-page paragraphs: the raw material of the scale sets and the ingest rows."""
    return corpus.paragraphs(corpus.english_documents(limit=corpus.QUICK_DOCUMENTS if quick else None))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: the smoke run (CI)")
    parser.add_argument("--url", help="database URL (default: embedded PostgreSQL with pgvector)")
    parser.add_argument("--sizes", default=None, help="comma-separated table sizes (default 100000,1000000,10000000; quick: 20000)")
    parser.add_argument("--queries", type=int, default=None, help="queries per workload (default 200; quick: 20)")
    parser.add_argument("--hnsw-max", type=int, default=1_000_000, help="largest N to build pgvector HNSW for")
    parser.add_argument("--simhash-max", type=int, default=1_000_000, help="largest N for the simhash package index")
    parser.add_argument("--sections", default="fingerprint,quality,queries,ingest", help=f"comma-separated, of {', '.join(SECTIONS)}")
    parser.add_argument("--ingest-rows", type=int, default=None, help="rows of the lock-stall table")
    parser.add_argument("--configs", default="default", help="fingerprint configurations of the latency section (default, v1, idf-heldout, background)")
    parser.add_argument("--build-only", action="store_true", help="latency section: build, verify and cache the article sets, query nothing")
    parser.add_argument("--repeat", type=int, default=2, help="timed passes per system in the latency section")
    parser.add_argument("--name", default=None, help="results file name (default: quick or full)")
    parser.add_argument("--results-dir", type=Path, default=RESULTS, help="where <name>.json is written")
    parser.add_argument("--no-report", action="store_true", help="do not rewrite BENCHMARKS.md")
    return parser


def _queries(engine: Engine, args: argparse.Namespace, sizes: list[int], queries: int, save: Callable[[str, Any], None]) -> None:
    """The scale section: every system at each size, on fingerprints of real paragraphs."""
    import simsql

    from .queries import dedup, run_queries

    log("paragraph features")
    paragraphs = _paragraphs(args.quick)
    fingerprinter = simsql.Fingerprinter()
    features = scale.paragraph_features(paragraphs, fingerprinter)
    out: dict[str, Any] = {}
    for size in sizes:
        log(f"scale set N={size:,}")
        started = time.perf_counter()
        data = scale.build(features, size, seed=size, fingerprinter=fingerprinter)
        entry: dict[str, Any] = {"generate_seconds": time.perf_counter() - started}
        out[str(size)] = entry
        entry["verified"] = f"{scale.verify(paragraphs, data, fingerprinter, 100)}/100"
        log(f"  load simsql ({entry['verified']} sampled fingerprints equal simsql.text.fingerprint.simhash of the text)")
        entry["simsql_load"] = load_simsql(engine, data.fingerprints)
        with_vector = _load_vectors(engine, data.fingerprints, size, args.hnsw_max, entry)
        workloads = make_workloads(data, features, queries, seed=size + 1)
        log("  queries")
        entry["workloads"] = run_queries(engine, workloads, data.fingerprints, with_vector, size <= args.simhash_max)
        save("queries", out)
        if size <= 1_000_000:
            log("  whole-table dedup")
            entry["dedup"] = dedup(engine, data.fingerprints, size <= min(args.simhash_max, 100_000))
            save("queries", out)
        _drop_vectors(engine)


def _load_vectors(engine: Engine, fingerprints: Any, size: int, hnsw_max: int, entry: dict[str, Any]) -> bool:
    """Load pgvector's table (and its HNSW index up to ``hnsw_max`` rows); whether to query it."""
    with_vector = size <= hnsw_max
    log(f"  load pgvector (HNSW: {with_vector})")
    entry["pgvector_load"] = load_pgvector(engine, fingerprints, build_index=with_vector)
    if entry["pgvector_load"] is None:
        entry["pgvector_note"] = "pgvector extension not available on this server"
        return False
    if not with_vector:
        entry["pgvector_note"] = f"HNSW not built above N={hnsw_max:,} (build time)"
    return with_vector


def _drop_vectors(engine: Engine, size: int = 0) -> None:
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE IF EXISTS bench_vec"))
        if size > 1_000_000:
            BenchDoc.__table__.drop(connection, checkfirst=True)  # type: ignore[attr-defined]  # with its trigger function


def _latency_run(engine: Engine, config: str, size: int, queries: int, args: argparse.Namespace) -> dict[str, Any]:
    """Issue 8's real-text latencies for one configuration and table size."""
    from .latency import run_latency

    log(f"latency: {config} N={size:,}: articles")
    real = scale.real_text(config, limit=corpus.QUICK_DOCUMENTS if args.quick else None)
    started = time.perf_counter()
    data = scale.build_cached(real, size, seed=size)
    entry: dict[str, Any] = {"generate_seconds": time.perf_counter() - started, "config": real.fingerprinter.config_id}
    entry["verified"] = f"{scale.verify(real.paragraphs, data, real.fingerprinter, 100)}/100"
    entry["bits"] = bit_balance(data.fingerprints)
    log(f"  {entry['verified']} sampled fingerprints equal the text's; bits {entry['bits']}")
    if args.build_only:
        return entry
    entry["load_average_before"] = os.getloadavg()
    entry["simsql_load"] = load_simsql(engine, data.fingerprints)
    with_vector = size <= args.hnsw_max
    entry["pgvector_load"] = load_pgvector(engine, data.fingerprints, build_index=with_vector)
    with_vector = with_vector and entry["pgvector_load"] is not None
    workloads = make_workloads(data, real.features, queries, seed=size + 1)
    log("  queries")
    entry["workloads"] = run_latency(engine, workloads, data.fingerprints, with_pgvector=with_vector, repeat=args.repeat)
    entry["load_average"] = os.getloadavg()
    entry["command"] = "python -m benchmarks " + " ".join(sys.argv[1:])
    _drop_vectors(engine, size)
    return entry


def _ingest(engine: Engine, quick: bool, rows: int | None) -> dict[str, Any]:
    """Backfill throughput on article-length rows, then lock stalls on a busy table."""
    from . import ingest

    paragraphs = _paragraphs(quick)
    long_rows = 2_000 if quick else 100_000
    log(f"backfill throughput on {long_rows:,} article-length rows")
    count, seconds = ingest.load_articles(engine, "ingest_articles", corpus.assembled_articles(paragraphs, long_rows, seed=5))
    out: dict[str, Any] = {"load_rows": count, "load_rows_per_second": count / seconds}
    out["backfill"] = ingest.backfill_throughput(engine, "ingest_articles", workers=None)
    out["backfill_single_process"] = ingest.backfill_throughput(engine, "ingest_articles", workers=0)
    stall_rows = rows or (3_000 if quick else 1_000_000)
    log(f"lock stalls on a {stall_rows:,}-row table")
    count, _ = ingest.load_articles(engine, "stall_articles", (paragraphs[i % len(paragraphs)] for i in range(stall_rows)))
    out["lock_stalls"] = ingest.lock_stalls(engine, "stall_articles", count, workers=None)
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE IF EXISTS stall_articles CASCADE"))
    return out


def _run_sections(engine: Engine, args: argparse.Namespace, results: dict[str, Any], save: Callable[[str, Any], None]) -> None:
    quick = args.quick
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else ([20_000] if quick else [100_000, 1_000_000, 10_000_000])
    queries = args.queries or (20 if quick else 200)
    sections = set(args.sections.split(","))
    if "fingerprint" in sections:
        from . import throughput

        log("fingerprint throughput")
        save("fingerprint", throughput.run(quick=quick))
    if "quality" in sections:
        from . import quality

        log("quality curves")
        save("quality", quality.run(quick=quick, log=log))
    if "queries" in sections:
        _queries(engine, args, sizes, queries, save)
    if "latency" in sections:
        latency = results.setdefault("latency", {})
        for config in args.configs.split(","):
            latency[config] = {}
            for size in sizes:
                latency[config][str(size)] = _latency_run(engine, config, size, queries, args)
                save("latency", latency)
    if "ingest" in sections:
        save("ingest", _ingest(engine, quick, args.ingest_rows))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    unknown = set(args.sections.split(",")) - set(SECTIONS)
    if unknown:
        raise SystemExit(f"unknown section(s) {', '.join(sorted(unknown))}: choose from {', '.join(SECTIONS)}")
    # The simhash package logs a warning for every large bucket it meets; keep the run readable.
    logging.getLogger().setLevel(logging.ERROR)
    from simsql.embedded import embedded_url

    engine = create_engine(args.url or embedded_url())
    command = "python -m benchmarks " + " ".join(argv if argv is not None else sys.argv[1:])
    results: dict[str, Any] = {"quick": args.quick, "machine": _machine(engine), "command": command}
    args.results_dir.mkdir(parents=True, exist_ok=True)
    out = args.results_dir / f"{args.name or ('quick' if args.quick else 'full')}.json"

    def save(section: str, value: Any) -> None:
        results[section] = value
        out.write_text(json.dumps(results, indent=1, default=str))

    _run_sections(engine, args, results, save)
    save("command", command)
    if not args.quick and not args.no_report:
        from . import report

        report.write(results, ROOT.parent / "BENCHMARKS.md", ROOT / "plots")
        log("wrote BENCHMARKS.md")
    log(f"results in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
