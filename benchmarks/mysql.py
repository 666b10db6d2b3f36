"""simsql on MariaDB/MySQL at scale, beside seed 003's own query and beside simsql on PostgreSQL.

One run, the same fingerprints and queries everywhere:

* ``simsql (mariadb)``: ``similar_to`` (near-dup, 3 bits) and ``most_similar`` (top-10) on the
  mixin's table (BIGINT UNSIGNED, VIRTUAL block columns, indexes (block, simhash) + primary key);
* ``BIT_COUNT scan``: seed 003's query, ``ORDER BY BIT_COUNT(simhash ^ q) LIMIT 10`` (and
  ``WHERE BIT_COUNT(simhash ^ q) <= 3`` for near-dup) over the same table;
* ``simsql (postgresql)``: the same calls on PostgreSQL (``--pg-url``; skipped with ``--no-pg``).

Fingerprints come from real text (``benchmarks.scale``: articles assembled from man-page
paragraphs, with planted variants and series) unless the corpus is unavailable or ``--uniform``
is given, in which case they are uniform random and the results say so.

    python -m benchmarks.mysql --size 1000000 --queries 200

Not part of CI beyond ``--quick`` (tests/test_mysql_benchmark_smoke.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import BigInteger, Engine, Text, create_engine, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.store
from simsql.urls import normalise_url

from . import log
from .hamming import distances
from .queries import BenchDoc, Workload, load_simsql, make_workloads
from .timing import near_recall, summary, time_queries, topk_recall


class _Base(DeclarativeBase):
    pass


class MysqlBenchDoc(simsql.SimHashMixin, _Base):
    """BenchDoc's twin for MySQL, which needs a bounded or TEXT type for the body."""

    __tablename__ = "bench_docs"
    __simhash_source__ = ("body",)
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    body: Mapped[str | None] = mapped_column(Text)

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_MYSQL = "mysql+pymysql://root@127.0.0.1:3306/simsql_bench"
DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
_BATCH = 10_000


def fingerprint_set(
    size: int, queries: int, uniform: bool, seed: int, documents: int | None = None
) -> tuple[np.ndarray, list[Workload], str]:
    """Fingerprints and workloads from real text when possible, else uniform (and say which).

    ``documents`` caps how many man pages the articles are assembled from (all by default); a
    smoke run takes a few hundred, so a fresh checkout renders those instead of the corpus."""
    if not uniform:
        from . import corpus, scale

        try:
            paragraphs = corpus.paragraphs(corpus.english_documents(documents))
        except corpus.CorpusUnavailable as exc:
            log(f"corpus unavailable ({exc}); uniform fingerprints")
        else:
            fingerprinter = simsql.Fingerprinter()
            features = scale.paragraph_features(paragraphs, fingerprinter)
            data = scale.build(features, size, seed=seed, fingerprinter=fingerprinter)
            return data.fingerprints, make_workloads(data, features, queries, seed=seed + 1), "real text (man pages)"
    rng = np.random.default_rng(seed)
    fingerprints = rng.integers(0, 2**64, size=size, dtype=np.uint64)
    workloads = []
    for name in ("near-dup", "top-10 spread"):
        picked = rng.integers(0, size, size=queries)
        fps = [int(fingerprints[i]) ^ (1 << int(rng.integers(0, 64))) if name == "near-dup" else int(rng.integers(0, 2**63)) for i in picked]
        near, kth = [], []
        for q in fps:
            d = distances(fingerprints, q)
            near.append({int(i) + 1 for i in np.flatnonzero(d <= 3)})
            kth.append(int(np.partition(d, 9)[9]))
        workloads.append(Workload(name, fps, near, kth))
    return fingerprints, workloads, "uniform random"


def load_mysql(engine: Engine, fingerprints: np.ndarray, stored: bool) -> dict[str, float]:
    """The mixin's table, rows inserted in batches without the block indexes, then the indexes."""
    table: Any = MysqlBenchDoc.__table__
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE IF EXISTS bench_docs"))
        table.create(connection)
        for index in table.indexes:
            connection.execute(text(f"DROP INDEX `{index.name}` ON bench_docs"))
        if stored:  # the alternative measured: block values kept in the rows as well
            for i, name in enumerate(simsql.store.binding_for(MysqlBenchDoc).names.blocks):
                shift = 16 * (3 - i)
                connection.execute(
                    text(f"ALTER TABLE bench_docs DROP COLUMN `{name}`, ADD COLUMN `{name}` INT AS ((`simhash` >> {shift}) & 65535) STORED")
                )
    started = time.perf_counter()
    values = fingerprints.tolist()
    with engine.begin() as connection:
        raw = connection.connection.driver_connection
        with raw.cursor() as cursor:
            for lo in range(0, len(values), _BATCH):
                rows = [(lo + i + 1, fp) for i, fp in enumerate(values[lo : lo + _BATCH])]
                cursor.executemany("INSERT INTO bench_docs (id, simhash) VALUES (%s, %s)", rows)
    loaded = time.perf_counter()
    with engine.begin() as connection:
        for index in table.indexes:
            index.create(connection)
        connection.execute(text("ANALYZE TABLE bench_docs"))
    indexed = time.perf_counter()
    with engine.connect() as connection:
        size = connection.execute(
            text("SELECT DATA_LENGTH + INDEX_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'bench_docs'")
        ).scalar_one()
    return {
        "load_seconds": loaded - started,
        "index_build_seconds": indexed - loaded,
        "bytes_per_row": float(size) / len(values),
    }


def _mysql_database(url: str) -> Engine:
    """An engine on the URL's database, created if missing (the benchmark's table is dropped after)."""
    target = normalise_url(url)
    admin = create_engine(target._replace(database=None))
    with admin.begin() as connection:
        connection.execute(text(f"CREATE DATABASE IF NOT EXISTS `{target.database}`"))
    admin.dispose()
    return create_engine(target)


def _near(model: Any) -> Any:
    def near(session: Session, q: int) -> set[int]:
        return set(session.scalars(select(model.id).where(simsql.similar_to(model, q, 3))))

    return near


def _top(model: Any) -> Any:
    def top(session: Session, q: int) -> list[int]:
        return [r.distance for r in session.execute(simsql.most_similar(select(model), q, limit=10))]

    return top


def _raw_near(model: Any) -> Any:
    """similar_to's SQL sent straight through the driver's cursor (compiled before the clock
    starts): the server and driver share of the latency, without SQLAlchemy's."""

    def near(session: Session, q: int) -> Any:
        raw = session.connection().connection.driver_connection
        sql = _literal_sql(session, select(model.id).where(simsql.similar_to(model, q, 3)))
        return lambda: _fetch_ids(raw, sql)

    return near


def _literal_sql(session: Session, statement: Any) -> str:
    return str(statement.compile(session.get_bind(), compile_kwargs={"literal_binds": True}))


def _fetch_ids(raw: Any, sql: str) -> set[int]:
    with raw.cursor() as cursor:
        cursor.execute(sql)
        return {int(row[0]) for row in cursor.fetchall()}


def _scan_near(session: Session, q: int) -> set[int]:
    return set(session.scalars(text("SELECT id FROM bench_docs WHERE BIT_COUNT(simhash ^ :q) <= 3"), {"q": q}))


def _scan_top(session: Session, q: int) -> list[int]:
    sql = text("SELECT id, BIT_COUNT(simhash ^ :q) AS d FROM bench_docs ORDER BY BIT_COUNT(simhash ^ :q) LIMIT 10")
    return [int(r.d) for r in session.execute(sql, {"q": q})]


def measure(engine: Engine, workloads: list[Workload], systems: dict[str, Any], scan_queries: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with Session(engine) as session:
        for workload in workloads:
            rows = {}
            for name, (near_fn, top_fn) in systems.items():
                fn = near_fn if workload.name == "near-dup" else top_fn
                if fn is None:
                    continue
                count = scan_queries if "scan" in name else None
                if name.endswith("(no SQLAlchemy)"):  # prepared outside the clock
                    prepared = [fn(session, q) for q in workload.queries]
                    times, answers = time_queries(lambda i: prepared[i](), list(range(len(prepared))))
                else:
                    times, answers = time_queries(lambda q: fn(session, q), workload.queries[:count])
                if workload.name == "near-dup":
                    recall = near_recall(answers, workload.truth_near[:count])
                else:
                    recall = topk_recall(answers, workload.truth_kth[:count])
                rows[name] = {**summary(times), "recall": recall, "queries": len(times)}
                log(f"    {workload.name:16} {name:22} p50 {rows[name]['p50_ms']:8.2f} ms  recall {recall:.3f}")
            out[workload.name] = {"systems": rows, "median_kth_distance": statistics.median(workload.truth_kth)}
    return out


def _ratios(mysql: dict[str, Any], pg: dict[str, Any] | None) -> dict[str, Any]:
    ratios: dict[str, Any] = {}
    for workload, entry in mysql.items():
        systems = entry["systems"]
        simsql_p50 = systems["simsql (mariadb)"]["p50_ms"]
        ratios[workload] = {"BIT_COUNT scan / simsql (p50)": systems["BIT_COUNT scan"]["p50_ms"] / simsql_p50}
        if pg is not None and workload in pg:
            ratios[workload]["simsql mariadb / simsql postgresql (p50)"] = simsql_p50 / pg[workload]["systems"]["simsql (postgresql)"]["p50_ms"]
    return ratios


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"command": "python -m benchmarks.mysql " + " ".join(sys.argv[1:]), "load_average_start": os.getloadavg()}
    log(f"fingerprints N={args.size:,}")
    fingerprints, workloads, source = fingerprint_set(args.size, args.queries, args.uniform, seed=args.size, documents=args.documents)
    results.update(size=args.size, fingerprints=source, queries_per_workload=args.queries)
    mysql_engine = _mysql_database(args.mysql_url)
    with mysql_engine.connect() as connection:
        results["mysql_server"] = connection.execute(text("SELECT VERSION()")).scalar_one()
    results["mariadb"] = {}
    for storage in args.storage.split(","):
        log(f"MariaDB/MySQL load ({storage} blocks)")
        load = load_mysql(mysql_engine, fingerprints, stored=storage == "stored")
        log(f"  {load}")
        systems = {
            "simsql (mariadb)": (_near(MysqlBenchDoc), _top(MysqlBenchDoc)),
            "simsql SQL (no SQLAlchemy)": (_raw_near(MysqlBenchDoc), None),
            "BIT_COUNT scan": (_scan_near, _scan_top),
        }
        chosen = [w for w in workloads if w.name in args.workloads.split(",")]
        measured = measure(mysql_engine, chosen, systems, args.scan_queries)
        for driver in filter(None, args.drivers.split(",")):  # the same table through another driver
            other = create_engine(mysql_engine.url.set(drivername=f"mysql+{driver}"))
            others = {
                f"simsql (mariadb, {driver})": (_near(MysqlBenchDoc), _top(MysqlBenchDoc)),
                f"simsql SQL via {driver} (no SQLAlchemy)": (_raw_near(MysqlBenchDoc), None),
            }
            for name, entry in measure(other, chosen, others, args.scan_queries).items():
                measured[name]["systems"].update(entry["systems"])
            other.dispose()
        results["mariadb"][storage] = {"load": load, "workloads": measured}
    if args.pg_url:
        log("PostgreSQL load")
        pg_schema = f"simsql_bench_mysql_{os.getpid()}"
        pg_engine = create_engine(args.pg_url, connect_args={"options": f"-csearch_path={pg_schema}"})
        with pg_engine.begin() as connection:
            connection.execute(text(f"CREATE SCHEMA {pg_schema}"))
        results["postgresql"] = {"load": load_simsql(pg_engine, fingerprints)}
        pg_systems = {"simsql (postgresql)": (_near(BenchDoc), _top(BenchDoc))}
        chosen = [w for w in workloads if w.name in args.workloads.split(",")]
        results["postgresql"]["workloads"] = measure(pg_engine, chosen, pg_systems, None)
        with pg_engine.begin() as connection:
            connection.execute(text(f"DROP SCHEMA {pg_schema} CASCADE"))
    first = results["mariadb"][args.storage.split(",")[0]]["workloads"]
    results["ratios"] = _ratios(first, results.get("postgresql", {}).get("workloads"))
    with mysql_engine.begin() as connection:
        connection.execute(text("DROP TABLE IF EXISTS bench_docs"))
    results["load_average_end"] = os.getloadavg()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mysql", description=__doc__.splitlines()[0])
    parser.add_argument("--mysql-url", default=DEFAULT_MYSQL)
    parser.add_argument("--pg-url", default=DEFAULT_PG, help="'' to skip PostgreSQL")
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--scan-queries", type=int, default=30, help="queries timed for the BIT_COUNT scan (it barely varies)")
    parser.add_argument("--storage", default="virtual", help="virtual, stored or virtual,stored")
    parser.add_argument("--workloads", default="near-dup,top-10 clustered,top-10 spread")
    parser.add_argument("--drivers", default="", help="other SQLAlchemy MySQL drivers timed on the same table, e.g. mysqldb (mysqlclient)")
    parser.add_argument("--uniform", action="store_true", help="uniform random fingerprints instead of real text")
    parser.add_argument("--documents", type=int, default=None, help="man pages the real-text articles come from (default: all)")
    parser.add_argument("--name", default="mysql")
    parser.add_argument("--results-dir", type=Path, default=RESULTS, help="where <name>.json is written")
    args = parser.parse_args(argv)
    results = run(args)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / f"{args.name}.json").write_text(json.dumps(results, indent=1, default=str))
    print(json.dumps(results["ratios"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
