"""Query performance at scale, simsql next to the peers a user would pick instead, in one run.

Systems, all answering the same queries on the same fingerprints:

1. ``simsql``: the block index (``similar_to`` for near-duplicates, ``most_similar`` for top-10).
2. ``plain scan``: ``ORDER BY bit_count(fp # q) LIMIT 10`` over the same table (the seeds' query).
3. ``pgvector HNSW``: a ``bit(64)`` column with an HNSW ``bit_hamming_ops`` index, at the default
   ``hnsw.ef_search`` (40) and a raised one (200). Approximate: recall is reported.
4. ``simhash package``: ``SimhashIndex`` (k=3) in memory, near-duplicates only.

Workloads (queries are *new* articles, not rows of the table):

* ``near-dup``: a variant (one paragraph changed) of a stored article, max_distance=3;
* ``top-10 clustered``: a new variant of a "series" article, so the 10th neighbour is near;
* ``top-10 spread``: a new random article, whose neighbours are far (the scan's home ground).

Latency is measured as the caller sees it: Python, SQLAlchemy, psycopg, a local socket.
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import BigInteger, Engine, Table, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.bits
import simsql.queries

from . import scale
from .hamming import distances
from .timing import near_recall, summary, time_queries, topk_recall


class _Base(DeclarativeBase):
    pass


class BenchDoc(simsql.SimHashMixin, _Base):
    """The benchmark table: what SimHashMixin gives a model (id, fingerprint, 4 blocks, indexes)."""

    __tablename__ = "bench_docs"
    __simhash_source__ = ("body",)
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    body: Mapped[str | None]


@dataclass
class Workload:
    name: str
    queries: list[int]
    truth_near: list[set[int]]  # ids within 3 bits
    truth_kth: list[int]  # distance of the 10th neighbour


def make_workloads(data: scale.ScaleSet, features: scale.ParagraphFeatures, count: int, seed: int) -> list[Workload]:
    """Queries are new articles: variants of stored ones (their copy is their only close
    neighbour), variants of a series member (ten near neighbours), and fresh articles of random
    paragraphs (related articles share a paragraph or two: the far-neighbour case)."""
    rng = np.random.default_rng(seed)
    n = len(data.fingerprints)
    paragraphs = len(features.ptr) - 1

    def variants(rows: np.ndarray) -> np.ndarray:
        members = data.members[rows].copy()
        for row in members:
            scale.mutate(row, rng, paragraphs, data.pools)
        return scale.fingerprints_of(members, features, data.fingerprinter)

    near_rows = rng.integers(0, n, size=count)
    heads = data.series_heads if len(data.series_heads) else np.array([1])
    cluster_rows = rng.choice(heads, size=count) - 1
    spread = scale.random_articles(rng, count, paragraphs, data.pools)
    sets = {
        "near-dup": variants(near_rows),
        "top-10 clustered": variants(cluster_rows),
        "top-10 spread": scale.fingerprints_of(spread, features, data.fingerprinter),
    }
    workloads = []
    for name, fps in sets.items():
        near, kth = [], []
        for q in fps:
            d = distances(data.fingerprints, int(q))
            near.append({int(i) + 1 for i in np.flatnonzero(d <= 3)})
            kth.append(int(np.partition(d, 9)[9]) if len(d) >= 10 else 64)
        workloads.append(Workload(name, [int(q) for q in fps], near, kth))
    return workloads


def load_simsql(engine: Engine, fingerprints: np.ndarray) -> dict[str, float]:
    """Create the mixin's table, COPY the fingerprints, then build the block indexes."""
    table: Table = BenchDoc.__table__  # type: ignore[assignment]
    with engine.begin() as connection:
        # Dropped through the table so its trigger function goes too (a raw DROP TABLE left it
        # behind, and the next create of the table, e.g. the latency section after the queries
        # section, failed on it).
        table.drop(connection, checkfirst=True)
        table.create(connection)
        for index in table.indexes:
            connection.execute(text(f'DROP INDEX "{index.name}"'))
    started = time.perf_counter()
    with engine.begin() as connection:
        raw = connection.connection.driver_connection
        with raw.cursor().copy("COPY bench_docs (id, simhash) FROM STDIN") as copy:
            for i, fp in enumerate(fingerprints.tolist()):
                copy.write_row((i + 1, simsql.bits.to_signed(fp)))
    loaded = time.perf_counter()
    with engine.begin() as connection:
        for index in table.indexes:
            index.create(connection)
    indexed = time.perf_counter()
    _vacuum(engine, "bench_docs")
    return {
        "load_seconds": loaded - started,
        "load_rows_per_second": len(fingerprints) / (loaded - started),
        "index_build_seconds": indexed - loaded,
        "bytes_per_row": _bytes_per_row(engine, "bench_docs", len(fingerprints)),
    }


def load_pgvector(engine: Engine, fingerprints: np.ndarray, build_index: bool) -> dict[str, float] | None:
    with engine.begin() as connection:
        try:
            connection.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        except Exception:
            return None
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE IF EXISTS bench_vec"))
        connection.execute(text("CREATE TABLE bench_vec (id bigint PRIMARY KEY, v bit(64))"))
        raw = connection.connection.driver_connection
        with raw.cursor().copy("COPY bench_vec (id, v) FROM STDIN") as copy:
            for i, fp in enumerate(fingerprints.tolist()):
                copy.write_row((i + 1, format(fp, "064b")))
    result: dict[str, float] = {}
    if build_index:
        started = time.perf_counter()
        with engine.begin() as connection:
            connection.execute(text("SET maintenance_work_mem = '2GB'"))
            connection.execute(text("CREATE INDEX bench_vec_hnsw ON bench_vec USING hnsw (v bit_hamming_ops)"))
        result["index_build_seconds"] = time.perf_counter() - started
    _vacuum(engine, "bench_vec")
    result["bytes_per_row"] = _bytes_per_row(engine, "bench_vec", len(fingerprints))
    return result


def _vacuum(engine: Engine, table: str) -> None:
    with engine.connect() as connection:
        connection.execution_options(isolation_level="AUTOCOMMIT").execute(text(f"VACUUM ANALYZE {table}"))


def _bytes_per_row(engine: Engine, table: str, rows: int) -> float:
    with engine.connect() as connection:
        total = connection.execute(text(f"SELECT pg_total_relation_size('{table}')")).scalar_one()
    return float(total) / max(rows, 1)


def vector_top(session: Session, q: int) -> list[tuple[int, int]]:
    """(id, distance) of pgvector's 10 nearest under the session's ``hnsw.ef_search``."""
    rows = session.execute(
        text("SELECT id, v <~> CAST(:q AS bit(64)) AS d FROM bench_vec ORDER BY v <~> CAST(:q AS bit(64)) LIMIT 10"),
        {"q": format(q, "064b")},
    ).all()
    return [(int(r[0]), int(r[1])) for r in rows]


def vector_recall(workload: Workload, answers: list[list[tuple[int, int]]], count: int | None = None) -> float:
    """pgvector's recall: near-duplicates within 3 bits, or top-10 with ties."""
    if workload.name == "near-dup":
        return near_recall([{i for i, d in a if d <= 3} for a in answers], workload.truth_near[:count])
    return topk_recall([[d for _, d in a] for a in answers], workload.truth_kth[:count])


def _exact_systems(session: Session, workload: Workload) -> dict[str, Callable[[int], Any]]:
    """simsql and the plain scan answering one workload's question."""
    distance = BenchDoc.simhash.hamming_distance
    if workload.name == "near-dup":
        return {
            "simsql": lambda q: set(session.scalars(select(BenchDoc.id).where(simsql.similar_to(BenchDoc, q, 3)))),
            "plain scan": lambda q: set(session.scalars(select(BenchDoc.id).where(distance(q) <= 3))),
        }
    return {
        "simsql": lambda q: [r.distance for r in session.execute(simsql.most_similar(select(BenchDoc), q, limit=10))],
        "plain scan": lambda q: [r[1] for r in session.execute(select(BenchDoc, distance(q)).order_by(distance(q)).limit(10))],
    }


def _batched(session: Session, workload: Workload) -> dict[str, float]:
    """``most_similar_many``: every lookup in one round trip (ingest pipelines)."""
    started = time.perf_counter()
    batched = simsql.queries.most_similar_many(session, BenchDoc, workload.queries, limit=10, max_distance=3)
    elapsed = time.perf_counter() - started
    return {"qps": len(workload.queries) / elapsed, "recall": near_recall([{k for k, _ in b} for b in batched], workload.truth_near)}


def _vector_rows(session: Session, workload: Workload) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for ef in (40, 200):
        session.execute(text(f"SET hnsw.ef_search = {ef}"))
        times, answers = time_queries(lambda q: vector_top(session, q), workload.queries)
        rows[f"pgvector HNSW ef_search={ef}"] = {**summary(times), "recall": vector_recall(workload, answers)}
    session.rollback()
    return rows


def run_queries(
    engine: Engine, workloads: list[Workload], fingerprints: np.ndarray, with_pgvector: bool, with_simhash_index: bool
) -> dict[str, Any]:
    """Every system on every workload. At 5M rows and more the plain scan (about a second per
    query) runs on the first 30 queries only: its latency barely varies between queries."""
    scan_queries = 30 if len(fingerprints) >= 5_000_000 else None
    results: dict[str, Any] = {}
    with Session(engine) as session:
        for workload in workloads:
            rows: dict[str, Any] = {}
            for name, fn in _exact_systems(session, workload).items():
                count = scan_queries if name == "plain scan" else None
                times, answers = time_queries(fn, workload.queries[:count])
                if workload.name == "near-dup":
                    recall = near_recall(answers, workload.truth_near[:count])
                else:
                    recall = topk_recall(answers, workload.truth_kth[:count])
                rows[name] = {**summary(times), "recall": recall, "queries": len(times)}
            if workload.name == "near-dup":
                rows["simsql most_similar_many"] = _batched(session, workload)
            if with_pgvector:
                rows.update(_vector_rows(session, workload))
            if with_simhash_index and workload.name == "near-dup":
                rows["simhash package"] = _simhash_package(fingerprints, workload)
            results[workload.name] = {
                "systems": rows,
                "kth_within_11_bits": sum(1 for k in workload.truth_kth if k <= 11) / len(workload.truth_kth),
                "median_kth_distance": statistics.median(workload.truth_kth),
            }
    return results


_SIMHASH_INDEX_CACHE: dict[int, tuple[Any, float, float]] = {}


def _simhash_package(fingerprints: np.ndarray, workload: Workload) -> dict[str, float]:
    """The ``simhash`` package's in-memory index over the same fingerprints (k=3)."""
    from simhash import Simhash, SimhashIndex

    key = id(fingerprints)
    if key not in _SIMHASH_INDEX_CACHE:
        gc.collect()
        tracemalloc.start()
        started = time.perf_counter()
        index = SimhashIndex([(str(i + 1), Simhash(int(fp))) for i, fp in enumerate(fingerprints.tolist())], k=3)
        build = time.perf_counter() - started
        memory = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        _SIMHASH_INDEX_CACHE.clear()
        _SIMHASH_INDEX_CACHE[key] = (index, build, memory)
    index, build, memory = _SIMHASH_INDEX_CACHE[key]
    times, answers = time_queries(lambda q: {int(i) for i in index.get_near_dups(Simhash(q))}, workload.queries)
    return {
        **summary(times),
        "recall": near_recall(answers, workload.truth_near),
        "index_build_seconds": build,
        "bytes_per_row": memory / len(fingerprints),
    }


def dedup(engine: Engine, fingerprints: np.ndarray, with_simhash_index: bool) -> dict[str, Any]:
    """Whole-table near-duplicate pairs (max_distance=3)."""
    out: dict[str, Any] = {}
    with Session(engine) as session:
        started = time.perf_counter()
        pairs = simsql.near_duplicates(session, BenchDoc, 3)
        out["simsql near_duplicates"] = {"seconds": time.perf_counter() - started, "pairs": len(pairs)}
    if with_simhash_index:
        from simhash import Simhash

        index = _SIMHASH_INDEX_CACHE.get(id(fingerprints), (None,))[0]
        if index is not None:
            started = time.perf_counter()
            found = 0
            for i, fp in enumerate(fingerprints.tolist()):
                found += sum(1 for j in index.get_near_dups(Simhash(int(fp))) if int(j) > i + 1)
            out["simhash package all-pairs"] = {"seconds": time.perf_counter() - started, "pairs": found}
    return out
