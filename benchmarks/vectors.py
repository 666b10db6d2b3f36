"""Vector signatures on real embeddings (issue 25): recall@10 against exact cosine, and latency.

Embeddings are computed offline from text this machine has: English man-page paragraphs
(:mod:`benchmarks.corpus`), TF-IDF then a truncated SVD to ``--dimensions`` (256), unit length.
``--queries`` held-out paragraphs are the queries; ``--rows`` are stored. The corpus has about
60k distinct paragraphs; past that (``--rows 1000000``) the extra rows are *turned* real
embeddings: a random real row rotated by an angle drawn uniformly in 15-60 degrees towards
another random real row (so every row stays a mix of real directions, never isotropic noise).
The run prints the mean cosine of each query's 1st/10th/100th/1000th neighbour so the
difficulty of the two sets can be compared.

Two tables, loaded with signatures computed by one matrix product per batch:

- ``raw``: ``VectorFingerprinter(256)``, no centre (the first version);
- ``centred``: ``VectorFingerprinter.fit(20,000 random rows)`` on a ``WideSimHashMixin`` table:
  its ``simhash`` is the centred 64-bit signature, its words 1-3 extend it to 256 bits
  (``VectorFingerprinter.signatures_many``, written with the row).

Ground truth: the exact cosine top-10 over all rows (numpy). Each system, timed per query (p50),
every query running every system in turn:

- ``most_similar top-10``: the Hamming top-10 by the 64-bit signature (``probe_radius=0``);
- ``most_similar_vectors candidates=N``: the Hamming top-N re-ranked by exact cosine on the
  stored vectors (:func:`simsql.most_similar_vectors`);
- ``wide 256 scan top-N + rerank``: ``ORDER BY`` the 256-bit distance ``LIMIT N`` (a scan), then
  the same re-ranking.

With pgvector installed on the PostgreSQL server (built outside this repository), the same run
loads the vectors into a pgvector table too and interleaves its searches with simsql's:
exact ``<=>`` scan, HNSW on ``vector``, ``binary_quantize`` + HNSW (Hamming) re-ranked by ``<=>``
(:mod:`benchmarks.vectors_pgvector`); without it (or with ``--no-pgvector``, or on MySQL) they are
skipped with a message on stderr.

Then near copies: stored rows turned by exactly arccos(0.95) as queries; the share of the rows
at cosine >= 0.95 each search returns (10 asked), and its p50: ``most_similar`` (exact),
``most_similar(exact=False)``, the wide signature's margin-directed block probes
(``simsql.queries.wide.wide_search``), :func:`simsql.near_copy_vectors` (the same probes, then
the exact cosine of 50 candidates), and pgvector's searches when it is there.

``--offline`` runs no database: recall@10 of the exact Hamming top-N re-ranked by cosine, in
numpy, for N up to 20,000, 64 and 256 bits, with and without the centre (the floor the searches
above cannot beat).

Run (scikit-learn is the ``bench`` extra)::

    python -m benchmarks.vectors --rows 20000 [--url postgresql+psycopg://...]
    python -m benchmarks.vectors --rows 1000000 --queries 200 --offline

Without ``--url``: ``DATABASE_URL``, else the embedded PostgreSQL. The tables are dropped after.
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
import simsql.store
from simsql.queries.wide import wide_distance, wide_search
from simsql.text.vectors import hyperplanes

from . import vectors_pgvector as pgvector
from .corpus import CACHE_DIR, english_documents, paragraphs

DIMENSIONS = 256
TOP = 10
CANDIDATES = (50, 200, 1000, 5000)
"""Rows fetched by signature and re-ranked by exact cosine: more candidates, more recall, more rows read."""
WIDE_CANDIDATES = (50, 200, 1000)
FIT_ROWS = 20_000
"""Rows (a random sample) the centre is fitted on: the mean of their unit vectors."""
VECTOR = LargeBinary().with_variant(ARRAY(REAL()), "postgresql") if os.environ.get("SIMSQL_BENCH_VECTOR") == "array" else LargeBinary()
"""float32 little-endian bytes (``bytea`` / BLOB) by default: PostgreSQL returns a ``real[]`` as text
that the driver parses number by number, several times slower to fetch for re-ranking
(``SIMSQL_BENCH_VECTOR=array`` measures it)."""


class _Base(DeclarativeBase):
    pass


class VectorDoc(simsql.SimHashMixin, _Base):
    """The first version: no centre, 64 bits."""

    __tablename__ = "bench_vectors"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = simsql.VectorFingerprinter(DIMENSIONS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(VECTOR)


class CentredDoc(simsql.WideSimHashMixin, _Base):
    """Centred (its fingerprinter is fitted in :func:`main`), 64 bits in ``simhash`` and 256 in all four words."""

    __tablename__ = "bench_vectors_centred"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = simsql.VectorFingerprinter(DIMENSIONS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(VECTOR)


def _signer(model: type) -> simsql.VectorFingerprinter:
    fingerprinter = model.__simhash_fingerprinter__  # type: ignore[attr-defined]
    assert isinstance(fingerprinter, simsql.VectorFingerprinter)
    return fingerprinter


def texts(count: int) -> list[str]:
    """Up to ``count`` distinct English paragraphs (the cached corpus read directly when present)."""
    cached = CACHE_DIR / "manpages-en.jsonl"
    if cached.exists():
        from .corpus import Document

        with cached.open(encoding="utf-8") as f:
            docs = [Document(d["doc_id"], d["title"], d["text"]) for d in map(json.loads, f)]
    else:
        docs = english_documents()
    found = paragraphs(docs)
    order = np.random.default_rng(0).permutation(len(found))[: min(count, len(found))]
    return [found[i] for i in order]


def embed(corpus: Sequence[str], dimensions: int) -> np.ndarray:
    """TF-IDF (sublinear counts, words seen twice or more) then truncated SVD, unit rows."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    tfidf = TfidfVectorizer(sublinear_tf=True, min_df=2, max_features=100_000, dtype=np.float32).fit_transform(corpus)
    reduced = TruncatedSVD(dimensions, algorithm="randomized", n_iter=4, random_state=0).fit_transform(tfidf)
    reduced /= np.maximum(np.linalg.norm(reduced, axis=1, keepdims=True), 1e-12)
    return reduced.astype(np.float32)


def grow(real: np.ndarray, rows: int, seed: int = 1) -> np.ndarray:
    """``rows`` unit vectors: ``real`` first, then real rows each turned by an angle uniform in
    15-60 degrees towards another real row (its part orthogonal to the first)."""
    if rows <= len(real):
        return real[:rows]
    rng = np.random.default_rng(seed)
    extra = rows - len(real)
    a = real[rng.integers(0, len(real), extra)].astype(np.float64)
    b = real[rng.integers(0, len(real), extra)].astype(np.float64)
    b -= (b * a).sum(axis=1, keepdims=True) * a
    b /= np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    angle = np.radians(rng.uniform(15.0, 60.0, extra))[:, None]
    return np.vstack([real, (np.cos(angle) * a + np.sin(angle) * b).astype(np.float32)])


def cached_embeddings(rows: int, queries: int, dimensions: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(held-out queries, stored vectors, real rows among them): :func:`texts` embedded in
    ``dimensions`` (:func:`embed`), the stored ones grown to ``rows`` (:func:`grow`); cached in
    benchmarks/.cache. Needs no pgvector, so the vector benchmarks of any server share it."""
    cache = CACHE_DIR / f"vectors-{dimensions}-{rows}-{queries}.npz"
    if cache.exists():
        found = np.load(cache)
        return found["queries"], found["vectors"], int(found["real"])
    embedded = embed(texts(rows + queries), dimensions)
    held, vectors = embedded[:queries], grow(embedded[queries:], rows)
    np.savez(cache, queries=held, vectors=vectors, real=min(rows, len(embedded) - queries))
    return held, vectors, min(rows, len(embedded) - queries)


def balance(words: np.ndarray) -> float:
    """Mean over bits of |share of rows with the bit set - 0.5| (0 is balanced)."""
    bits = np.unpackbits(words.astype("<u8").view(np.uint8).reshape(len(words), -1), axis=1, bitorder="little")
    return float(np.abs(bits.mean(axis=0) - 0.5).mean())


def load(engine: Engine, model: type, vectors: np.ndarray) -> tuple[float, float]:
    """``model``'s table filled in batches (Core inserts: what a bulk loader would do), the
    signatures computed by one matrix product per batch. (seconds, bit balance)."""
    model.__table__.drop(engine, checkfirst=True)  # type: ignore[attr-defined]
    model.__table__.create(engine)  # type: ignore[attr-defined]
    as_bytes = not (engine.dialect.name == "postgresql" and os.environ.get("SIMSQL_BENCH_VECTOR") == "array")
    fingerprinter = _signer(model)
    wide = issubclass(model, simsql.WideSimHashMixin)
    names = simsql.store.binding_for(model).names
    columns = names.signature_words if wide else (names.fingerprint,)
    signed = []
    started = time.perf_counter()
    with engine.begin() as connection:
        for start in range(0, len(vectors), 2000):
            batch = vectors[start : start + 2000]
            if wide:
                words = [s.words for s in fingerprinter.signatures_many(batch)]
            else:
                words = [(s,) for s in fingerprinter.fingerprint_many(batch)]
            signed.extend(words)
            rows = [
                {"id": start + i + 1, "embedding": v.astype("<f4").tobytes() if as_bytes else v.tolist(), **dict(zip(columns, w))}
                for i, (v, w) in enumerate(zip(batch, words))
            ]
            connection.execute(insert(model), rows)
    return time.perf_counter() - started, balance(np.array(signed, dtype=np.uint64))


def _stored(value: Any) -> np.ndarray:
    return np.frombuffer(value, dtype="<f4") if isinstance(value, bytes) else np.asarray(value, dtype=np.float32)


def systems(session: Session, with_raw: bool) -> dict[str, Callable[[np.ndarray], list[int]]]:
    def hamming_top(model: type) -> Callable[[np.ndarray], list[int]]:
        return lambda q: [row[0].id for row in session.execute(simsql.most_similar(select(model), q, limit=TOP, probe_radius=0))]

    def reranked(model: type, candidates: int) -> Callable[[np.ndarray], list[int]]:
        return lambda q: [m.row.id for m in simsql.most_similar_vectors(session, select(model), q, limit=TOP, candidates=candidates)]

    def wide_scan(candidates: int) -> Callable[[np.ndarray], list[int]]:
        binding = simsql.store.binding_for(CentredDoc)
        signer = _signer(CentredDoc)

        def run(q: np.ndarray) -> list[int]:
            distance = wide_distance(binding, signer.signatures_many([q])[0])
            rows = session.execute(
                select(CentredDoc.id, CentredDoc.embedding).order_by(distance, CentredDoc.id).limit(candidates)
            ).all()
            stored = np.stack([_stored(row.embedding) for row in rows])
            return [rows[i].id for i in np.argsort(-(stored @ q), kind="stable")[:TOP]]

        return run

    found: dict[str, Callable[[np.ndarray], list[int]]] = {}
    if with_raw:
        found["raw: most_similar top-10"] = hamming_top(VectorDoc)
        found["raw: most_similar_vectors candidates=200"] = reranked(VectorDoc, 200)
    found["centred: most_similar top-10"] = hamming_top(CentredDoc)
    found |= {f"centred: most_similar_vectors candidates={n}": reranked(CentredDoc, n) for n in CANDIDATES}
    found |= {f"centred wide 256: scan top-{n} + rerank": wide_scan(n) for n in WIDE_CANDIDATES}
    return found


def measure(
    engine: Engine, vectors: np.ndarray, queries: np.ndarray, with_raw: bool,
    others: dict[str, Callable[[np.ndarray], list[int]]] | None = None,
) -> dict[str, dict[str, float]]:  # fmt: skip
    """recall@10 against the exact cosine top-10 and p50/p90 latency of each system (simsql's,
    then ``others``: pgvector's); each query runs every system in turn (interleaved, so load
    drifts hit all alike), the first two queries once to warm."""
    truth = [set((np.argpartition(-(vectors @ q), TOP)[:TOP] + 1).tolist()) for q in queries]
    results: dict[str, dict[str, list[float]]] = {}
    with Session(engine) as session:
        runners = systems(session, with_raw) | (others or {})
        for q in queries[:2]:
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


def difficulty(vectors: np.ndarray, queries: np.ndarray) -> list[float]:
    """Mean cosine of each query's 1st, 10th, 100th and 1000th neighbour."""
    ranks = [r for r in (1, 10, 100, 1000) if r <= len(vectors)]
    found = []
    for q in queries:
        cosines = vectors @ q
        top = np.sort(cosines[np.argpartition(-cosines, ranks[-1] - 1)[: ranks[-1]]])[::-1]
        found.append([float(top[r - 1]) for r in ranks])
    return [round(float(x), 3) for x in np.mean(found, axis=0)]


def near_copies(
    engine: Engine, vectors: np.ndarray, count: int, cosine: float = 0.95,
    others: dict[str, Callable[[np.ndarray], list[int]]] | None = None,
) -> dict[str, dict[str, float]]:  # fmt: skip
    """Near-duplicate lookups on the centred table: ``count`` stored rows, each turned by exactly
    ``arccos(cosine)`` in a random direction, as queries. The truth of a query is every row at
    cosine >= ``cosine`` to it (the turned row, and any stored row as close), its 10 nearest at
    most; per search (10 rows asked), the share of the truth found, and the p50."""
    rng = np.random.default_rng(7)
    rows = rng.choice(len(vectors), size=min(count, len(vectors)), replace=False)
    angle = float(np.arccos(cosine))
    signer = _signer(CentredDoc)

    def wide(budget: int) -> Callable[[Session, np.ndarray], list[int]]:
        return lambda s, q: [r[0].id for r in s.execute(wide_search(CentredDoc, signer.signatures_many([q])[0], max_distance=64, budget=budget, limit=TOP))]

    searches: dict[str, Callable[[Session, np.ndarray], list[int]]] = {
        "most_similar (exact)": lambda s, q: [r[0].id for r in s.execute(simsql.most_similar(select(CentredDoc), q, limit=TOP))],
        "most_similar exact=False": lambda s, q: [r[0].id for r in s.execute(simsql.most_similar(select(CentredDoc), q, limit=TOP, exact=False))],
        "wide probes budget=64 (256 bits, within 64)": wide(64),
        "wide probes budget=512 (256 bits, within 64)": wide(512),
        "near_copy_vectors min_cosine=0.95 (256-bit probes, 512, checked by cosine)": lambda s, q: [
            m.row.id for m in simsql.near_copy_vectors(s, select(CentredDoc), q, limit=TOP, min_cosine=cosine - 1e-5)
        ],
    }
    searches |= {name: (lambda s, q, run=run: run(q)) for name, run in (others or {}).items()}
    found: dict[str, dict[str, list[float]]] = {name: {"hit": [], "ms": []} for name in searches}
    truths = []
    with Session(engine) as session:
        for row in rows:
            u = vectors[row].astype(np.float64)
            u /= np.linalg.norm(u)
            w = rng.normal(size=len(u))
            w -= (w @ u) * u
            query = np.cos(angle) * u + np.sin(angle) * w / np.linalg.norm(w)
            cosines = vectors @ query.astype(np.float32)  # unit rows
            close = np.flatnonzero(cosines >= cosine - 1e-5)  # float32 rounding; the turned row is one
            truth = {int(row) + 1} | set((close[np.argsort(-cosines[close])][: TOP - 1] + 1).tolist())
            truths.append(len(truth))
            for name, search in searches.items():
                started = time.perf_counter()
                ids = search(session, query)
                found[name]["ms"].append((time.perf_counter() - started) * 1000)
                found[name]["hit"].append(len(truth & set(ids)) / len(truth))
    report = {name: {"recall": statistics.fmean(f["hit"]), "p50_ms": statistics.median(f["ms"])} for name, f in found.items()}
    report["truth rows per query (mean)"] = {"recall": statistics.fmean(truths), "p50_ms": 0.0}
    return report


def analyze(engine: Engine, model: type) -> None:
    """Fresh statistics after the bulk load, as a loader would take (the plans read row estimates)."""
    name = model.__table__.name  # type: ignore[attr-defined]
    with engine.begin() as connection:
        connection.exec_driver_sql(f"ANALYZE TABLE {name}" if engine.dialect.name in ("mysql", "mariadb") else f"ANALYZE {name}")


OFFLINE_CANDIDATES = (10, 50, 200, 1000, 5000, 20000)


def offline(vectors: np.ndarray, queries: np.ndarray, centred: simsql.VectorFingerprinter) -> dict[str, dict[str, float]]:
    """No database: recall@10 of the exact Hamming top-N (numpy, ties broken arbitrarily)
    re-ranked by exact cosine, for 64 and 256 bits, without and with the centre; what any
    search by these signatures can reach at best with N candidates (the floor of the database
    runs, whose latency is another matter)."""
    truth = [set(np.argpartition(-(vectors @ q), TOP)[:TOP].tolist()) for q in queries]
    raw = simsql.VectorFingerprinter(centred.dimensions, seed=centred.seed)
    report: dict[str, dict[str, float]] = {}
    for bits in (64, 256):
        for name, signer in (("raw", raw), ("centred", centred)):
            def packed(batch: np.ndarray, signer: simsql.VectorFingerprinter = signer) -> np.ndarray:
                projections = signer.centred(signer.check(batch)) @ hyperplanes(signer.dimensions, signer.seed, bits)
                return np.packbits(projections > 0.0, axis=1, bitorder="little").view("<u8")

            rows = np.vstack([packed(vectors[i : i + 50_000]) for i in range(0, len(vectors), 50_000)])
            found: dict[int, list[float]] = {}
            for q, expected, words in zip(queries, truth, packed(queries)):
                distances = np.bitwise_count(rows ^ words).sum(axis=1)
                for n in (n for n in OFFLINE_CANDIDATES if n < len(vectors)):
                    chosen = np.argpartition(distances, n)[:n]
                    top = chosen[np.argsort(-(vectors[chosen] @ q))[:TOP]]
                    found.setdefault(n, []).append(len(expected & set(top.tolist())) / TOP)
            report[f"{bits} bits {name}"] = {"bit_balance": round(balance(rows), 4)} | {f"N={n}": round(statistics.fmean(v), 3) for n, v in found.items()}
    return report


def _orthogonal(u: np.ndarray) -> np.ndarray:
    """A unit vector orthogonal to the unit vector ``u`` (fixed seed)."""
    w = np.random.default_rng(9).normal(size=len(u))
    w -= (w @ u) * u / (u @ u)
    return w / np.linalg.norm(w)


def server_times(engine: Engine, query: np.ndarray, near: np.ndarray, with_pgvector: bool) -> dict[str, Any]:
    """PostgreSQL only: each search's own time in the server (``EXPLAIN ANALYZE``, median of 5)
    and what it reads, for one top-10 query and one near copy: the floor under the p50s above,
    which add the round trips, the driver and Python."""
    if engine.dialect.name != "postgresql":
        return {}
    dialect = engine.dialect
    signer = _signer(CentredDoc)
    binding = simsql.store.binding_for(CentredDoc)
    scan = select(CentredDoc.id, CentredDoc.embedding).order_by(wide_distance(binding, signer.signatures_many([query])[0]), CentredDoc.id)
    statements = {
        "centred: most_similar top-10 (probe_radius=0)": simsql.most_similar(select(CentredDoc), query, limit=TOP, probe_radius=0),
        "centred wide 256: scan top-1000": scan.limit(1000),
        "near copy: wide probes budget=512": wide_search(CentredDoc, signer.signatures_many([near])[0], max_distance=64, budget=512, limit=TOP),
    }
    sql = {name: str(s.compile(dialect=dialect, compile_kwargs={"literal_binds": True})) for name, s in statements.items()}
    settings: dict[str, str | None] = dict.fromkeys(sql)
    if with_pgvector:
        for name, text_ in pgvector.searches_sql(query.shape[0], TOP, query).items():
            sql[name], settings[name] = text_, "SET hnsw.ef_search = 1000" if "top-1000" in name else None
        sql["near copy: pgvector HNSW ef_search=40"] = pgvector.searches_sql(near.shape[0], TOP, near)["pgvector HNSW vector_cosine_ops ef_search=40"]
        settings["near copy: pgvector HNSW ef_search=40"] = None
    return {name: pgvector.explain_analyze(engine, text_, setting=settings[name]) for name, text_ in sql.items()}


def pgvector_systems(
    engine: Engine, vectors: np.ndarray, queries: np.ndarray, report: dict[str, Any], *, skip: bool
) -> tuple[dict[str, Callable[[np.ndarray], list[int]]], list[Any]]:
    """pgvector's table loaded and indexed and its searches (:mod:`benchmarks.vectors_pgvector`),
    or none, with the reason printed, when the extension is missing or ``--no-pgvector``."""
    reason = "pgvector systems skipped: --no-pgvector" if skip else pgvector.available(engine)
    if reason is not None:
        print(reason, file=sys.stderr, flush=True)
        report["pgvector_skipped"] = reason
        return {}, []
    report["pgvector"] = {"load_seconds": pgvector.load(engine, vectors)}
    report["pgvector"]["plans"] = pgvector.plans(engine, queries[0], vectors.shape[1], TOP)
    with engine.connect() as connection:
        report["pgvector"]["version"] = connection.exec_driver_sql("SELECT extversion FROM pg_extension WHERE extname = 'vector'").scalar()
    return pgvector.systems(engine, vectors.shape[1], TOP)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.vectors", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dimensions", type=int, default=DIMENSIONS)
    parser.add_argument("--no-raw", action="store_true", help="leave out the uncentred table (halves the load)")
    parser.add_argument("--offline", action="store_true", help="no database: recall@10 against N candidates by signature, in numpy")
    parser.add_argument("--no-pgvector", action="store_true", help="leave out pgvector's systems (run when the extension is there)")
    parser.add_argument("--url", default=None)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    corpus = texts(args.rows + args.queries)
    embedded = embed(corpus, args.dimensions)
    embed_seconds = time.perf_counter() - started
    queries, vectors = embedded[: args.queries], grow(embedded[args.queries :], args.rows)
    VectorDoc.__simhash_fingerprinter__ = simsql.VectorFingerprinter(args.dimensions)
    sample = np.random.default_rng(2).choice(len(vectors), size=min(FIT_ROWS, len(vectors)), replace=False)
    CentredDoc.__simhash_fingerprinter__ = simsql.VectorFingerprinter.fit(vectors[np.sort(sample)])
    if args.offline:
        found = {"rows": len(vectors), "queries": args.queries, "neighbour_cosines_1_10_100_1000": difficulty(vectors, queries)}
        json.dump(found | offline(vectors, queries, _signer(CentredDoc)), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    url = args.url or os.environ.get("DATABASE_URL")
    if url is None:
        from simsql.embedded import embedded_url

        url = embedded_url()
    engine = create_engine(url)
    report: dict[str, Any] = {
        "rows": len(vectors), "real_rows": min(len(vectors), len(embedded) - args.queries), "queries": args.queries,
        "dimensions": args.dimensions, "server": engine.dialect.name, "embed_seconds": round(embed_seconds, 1),
        "neighbour_cosines_1_10_100_1000": difficulty(vectors, queries.astype(np.float32)),
    }  # fmt: skip
    held: list[Any] = []
    try:
        loads = {"centred": load(engine, CentredDoc, vectors)}
        analyze(engine, CentredDoc)
        if not args.no_raw:
            loads["raw"] = load(engine, VectorDoc, vectors)
            analyze(engine, VectorDoc)
        report["load_seconds"] = {k: round(v[0], 1) for k, v in loads.items()}
        report["bit_balance"] = {k: round(v[1], 4) for k, v in loads.items()}
        others, held = pgvector_systems(engine, vectors, queries, report, skip=args.no_pgvector)
        report["load_average"] = [round(x, 2) for x in os.getloadavg()]
        figures = measure(engine, vectors, queries.astype(np.float32), not args.no_raw, others)
        report["load_average_after_top10"] = [round(x, 2) for x in os.getloadavg()]
        report["systems"] = {k: {m: round(v, 3) for m, v in f.items()} for k, f in figures.items()}
        print(json.dumps(report), file=sys.stderr, flush=True)  # kept should the near copies fail
        copies = near_copies(engine, vectors, min(args.queries, 100), others=others)
        report["near_copies_cosine_0.95"] = {k: {m: round(v, 3) for m, v in f.items()} for k, f in copies.items()}
        report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
        near = vectors[0] * 0.95 + np.sqrt(1 - 0.95**2) * _orthogonal(vectors[0])
        try:
            report["server_times"] = server_times(engine, queries[0].astype(np.float64), near, "pgvector" in report)
        except Exception as error:  # noqa: BLE001 - the figures above stand without it
            print(f"server times not measured: {error!r}", file=sys.stderr, flush=True)
    finally:
        for connection in held:
            connection.close()
        _Base.metadata.drop_all(engine)
        if "pgvector" in report:
            pgvector.drop(engine)
        engine.dispose()
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
