"""Vector signatures on real embeddings (issue 25): recall@10 against exact cosine, and latency.

Embeddings are computed offline from text this machine has: English man-page paragraphs
(:mod:`benchmarks.corpus`), TF-IDF then a truncated SVD to ``--dimensions`` (256), unit length.
``--rows`` of them are stored in a ``SimHashMixin`` table whose source is the vector column
(``real[]`` on PostgreSQL, a float32 BLOB on MySQL/MariaDB), signed by
``simsql.VectorFingerprinter``; ``--queries`` held-out paragraphs are the queries. Ground truth:
the exact cosine top-10 over all rows (numpy). Each system, timed per query (p50):

- ``most_similar top-10``: simsql's exact Hamming top-10 by signature (block indexes, then scan);
- ``most_similar top-N + rerank`` (N = 50, 200): its top-N, re-ranked by exact cosine in Python on the
  stored vectors it returned;
- ``most_similar probe_radius=0 ...``: exact, band 0 then the scan (no wider bands: an
  embedding's neighbours are rarely within a few bits, so wider bands seldom fill the limit);
- ``most_similar exact=False top-200 + rerank``: the approximate search (block probes within
  a budget, never a scan), re-ranked;
- ``hamming scan top-10``: the plain scan, ``ORDER BY hamming distance LIMIT 10``;
- ``hamming scan top-N + rerank``: the same with N rows and the re-ranking;

Then near copies: stored rows turned by exactly arccos(0.95) as queries; how often simsql's
top-1 / top-10 holds the original.

Run (scikit-learn is the ``bench`` extra)::

    python -m benchmarks.vectors --rows 20000 [--url postgresql+psycopg://...]

``--rows`` + ``--queries`` can be at most the corpus's distinct English paragraphs (60,050 on
the reference machine). Without ``--url``: ``DATABASE_URL``, else the embedded PostgreSQL. The table is dropped after.
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
from sqlalchemy import REAL, Integer, LargeBinary, create_engine, insert, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql

from .corpus import CACHE_DIR, english_documents, paragraphs

DIMENSIONS = 256
TOP = 10
RERANKS = (50, 200)
"""Candidates re-ranked by exact cosine: more candidates, more recall, more rows fetched."""


class _Base(DeclarativeBase):
    pass


class VectorDoc(simsql.SimHashMixin, _Base):
    __tablename__ = "bench_vectors"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = simsql.VectorFingerprinter(DIMENSIONS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(ARRAY(REAL()).with_variant(LargeBinary(), "mysql", "mariadb"))


def texts(count: int) -> list[str]:
    """``count`` distinct English paragraphs (the cached corpus read directly when present)."""
    cached = CACHE_DIR / "manpages-en.jsonl"
    if cached.exists():
        from .corpus import Document

        with cached.open(encoding="utf-8") as f:
            docs = [Document(d["doc_id"], d["title"], d["text"]) for d in map(json.loads, f)]
    else:
        docs = english_documents()
    found = paragraphs(docs)
    if len(found) < count:
        raise SystemExit(f"the corpus has {len(found)} paragraphs, fewer than the {count} asked for")
    order = np.random.default_rng(0).permutation(len(found))[:count]
    return [found[i] for i in order]


def embed(corpus: Sequence[str], dimensions: int) -> np.ndarray:
    """TF-IDF (sublinear counts, words seen twice or more) then truncated SVD, unit rows."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    tfidf = TfidfVectorizer(sublinear_tf=True, min_df=2, max_features=100_000, dtype=np.float32).fit_transform(corpus)
    reduced = TruncatedSVD(dimensions, algorithm="randomized", n_iter=4, random_state=0).fit_transform(tfidf)
    reduced /= np.maximum(np.linalg.norm(reduced, axis=1, keepdims=True), 1e-12)
    return reduced.astype(np.float32)


def load(engine: Engine, vectors: np.ndarray) -> float:
    """The table, filled in batches with signatures computed by one matrix product per batch
    (Core inserts: what a bulk loader would do). Seconds taken."""
    _Base.metadata.drop_all(engine)
    _Base.metadata.create_all(engine)
    mysql = engine.dialect.name in ("mysql", "mariadb")
    fingerprinter = VectorDoc.__simhash_fingerprinter__
    assert isinstance(fingerprinter, simsql.VectorFingerprinter)
    started = time.perf_counter()
    with engine.begin() as connection:
        for start in range(0, len(vectors), 2000):
            batch = vectors[start : start + 2000]
            signatures = fingerprinter.fingerprint_many(batch)
            rows = [
                {"id": start + i + 1, "embedding": v.astype("<f4").tobytes() if mysql else v.tolist(), "simhash": s}
                for i, (v, s) in enumerate(zip(batch, signatures))
            ]
            connection.execute(insert(VectorDoc), rows)
    return time.perf_counter() - started


def _stored(value: Any) -> np.ndarray:
    return np.frombuffer(value, dtype="<f4") if isinstance(value, bytes) else np.asarray(value, dtype=np.float32)


def _rerank(rows: Sequence[Any], query: np.ndarray) -> list[int]:
    if not rows:
        return []
    stored = np.stack([_stored(row.embedding) for row in rows])
    order = np.argsort(-(stored @ query), kind="stable")[:TOP]
    return [rows[i].id for i in order]


def systems(session: Session) -> dict[str, Callable[[np.ndarray], list[int]]]:
    fingerprinter = VectorDoc.__simhash_fingerprinter__
    assert isinstance(fingerprinter, simsql.VectorFingerprinter)

    def simsql_top(limit: int, exact: bool = True, **options: Any) -> Callable[[np.ndarray], list[Any]]:
        return lambda q: [
            row[0]
            for row in session.execute(simsql.most_similar(select(VectorDoc), q, limit=limit, exact=exact, **options))
        ]

    def scan_top(limit: int) -> Callable[[np.ndarray], list[Any]]:
        def run(q: np.ndarray) -> list[Any]:
            distance = VectorDoc.simhash.hamming_distance(fingerprinter.fingerprint(q))
            return list(session.scalars(select(VectorDoc).where(VectorDoc.simhash.is_not(None)).order_by(distance, VectorDoc.id).limit(limit)))

        return run

    def reranked(top: Callable[[np.ndarray], list[Any]]) -> Callable[[np.ndarray], list[int]]:
        return lambda q: _rerank(top(q), q)

    def ids(top: Callable[[np.ndarray], list[Any]]) -> Callable[[np.ndarray], list[int]]:
        return lambda q: [row.id for row in top(q)]

    found: dict[str, Callable[[np.ndarray], list[int]]] = {"most_similar top-10": ids(simsql_top(TOP))}
    found |= {f"most_similar top-{n} + rerank": reranked(simsql_top(n)) for n in RERANKS}
    found["most_similar probe_radius=0 top-10"] = ids(simsql_top(TOP, probe_radius=0))
    found[f"most_similar probe_radius=0 top-{RERANKS[-1]} + rerank"] = reranked(simsql_top(RERANKS[-1], probe_radius=0))
    found[f"most_similar exact=False top-{RERANKS[-1]} + rerank"] = reranked(simsql_top(RERANKS[-1], exact=False))
    found["hamming scan top-10"] = ids(scan_top(TOP))
    found |= {f"hamming scan top-{n} + rerank": reranked(scan_top(n)) for n in RERANKS}
    return found


def measure(engine: Engine, vectors: np.ndarray, queries: np.ndarray) -> dict[str, dict[str, float]]:
    """recall@10 against the exact cosine top-10 and p50/p90 latency of each system; each
    query runs every system in turn (interleaved, so load drifts hit all alike), once to warm."""
    truth = [set((np.argsort(-(vectors @ q), kind="stable")[:TOP] + 1).tolist()) for q in queries]
    results: dict[str, dict[str, list[float]]] = {}
    with Session(engine) as session:
        runners = systems(session)
        for q in queries[:3]:
            for run in runners.values():
                run(q)
        for q, expected in zip(queries, truth):
            for name, run in runners.items():
                started = time.perf_counter()
                found = run(q)
                elapsed = time.perf_counter() - started
                entry = results.setdefault(name, {"recall": [], "ms": []})
                entry["recall"].append(len(expected & set(found[:TOP])) / TOP)
                entry["ms"].append(elapsed * 1000)
    return {
        name: {
            "recall@10": statistics.fmean(entry["recall"]),
            "p50_ms": statistics.median(entry["ms"]),
            "p90_ms": float(np.percentile(entry["ms"], 90)),
        }
        for name, entry in results.items()
    }


def near_copies(engine: Engine, vectors: np.ndarray, count: int, cosine: float = 0.95) -> dict[str, float]:
    """Near-duplicate lookups: ``count`` stored rows, each turned by exactly ``arccos(cosine)``
    in a random direction, as queries; the share whose original is simsql's top-1 / in its
    top-10, and the p50 of the top-10 query."""
    rng = np.random.default_rng(7)
    rows = rng.choice(len(vectors), size=min(count, len(vectors)), replace=False)
    angle = float(np.arccos(cosine))
    top1 = top10 = 0
    times = []
    with Session(engine) as session:
        for row in rows:
            u = vectors[row] / np.linalg.norm(vectors[row])
            w = rng.normal(size=len(u))
            w -= (w @ u) * u
            query = np.cos(angle) * u + np.sin(angle) * w / np.linalg.norm(w)
            started = time.perf_counter()
            found = [r[0].id for r in session.execute(simsql.most_similar(select(VectorDoc), query, limit=TOP))]
            times.append((time.perf_counter() - started) * 1000)
            top1 += bool(found) and found[0] == row + 1
            top10 += (row + 1) in found
    return {"cosine": cosine, "top1_recall": top1 / len(rows), "top10_recall": top10 / len(rows), "p50_ms": statistics.median(times)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.vectors", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dimensions", type=int, default=DIMENSIONS)
    parser.add_argument("--url", default=None)
    args = parser.parse_args(argv)
    if args.dimensions != DIMENSIONS:
        VectorDoc.__simhash_fingerprinter__ = simsql.VectorFingerprinter(args.dimensions)
    url = args.url or os.environ.get("DATABASE_URL")
    if url is None:
        from simsql.embedded import embedded_url

        url = embedded_url()
    started = time.perf_counter()
    corpus = texts(args.rows + args.queries)
    embedded = embed(corpus, args.dimensions)
    embed_seconds = time.perf_counter() - started
    vectors, queries = embedded[: args.rows], embedded[args.rows :]
    engine = create_engine(url)
    try:
        load_seconds = load(engine, vectors)
        figures = measure(engine, vectors.astype(np.float64), queries.astype(np.float64))
        copies = near_copies(engine, vectors.astype(np.float64), args.queries)
    finally:
        _Base.metadata.drop_all(engine)
        engine.dispose()
    report = {
        "rows": args.rows,
        "queries": args.queries,
        "dimensions": args.dimensions,
        "server": engine.dialect.name,
        "embed_seconds": round(embed_seconds, 1),
        "load_seconds": round(load_seconds, 1),
        "systems": {k: {m: round(v, 3) for m, v in f.items()} for k, f in figures.items()},
        "near_copies": {k: round(v, 3) for k, v in copies.items()},
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
