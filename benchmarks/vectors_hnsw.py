"""By meaning with pgvector (issue 44): simsql's API beside raw pgvector on one HNSW index, and
related articles that are not copies, on the embedded PostgreSQL.

Data: man-page paragraphs (:func:`benchmarks.vectors.texts`), TF-IDF + SVD to 256 dimensions
(:func:`benchmarks.vectors.embed`), the first ``--queries`` held out as queries, the rest grown
to ``--rows`` (:func:`benchmarks.vectors.grow`: each extra row a real one turned 15-60 degrees).
Ground truth: numpy's exact cosine top-10.

1. **Top-10.** A ``SimHashMixin`` model whose source is a pgvector ``vector(256)`` column,
   filled by COPY, then ``simsql.lifecycle.add_vector_index`` (HNSW, m=16, ef_construction=64).
   Per ``hnsw.ef_search`` E, interleaved per query in a shuffled order, p50 and recall@10:
   ``raw pgvector`` (``SELECT id ... ORDER BY embedding <=> q LIMIT 10``, ``SET hnsw.ef_search``
   on its connection); ``pgvector-python ORM`` (``select(Model).order_by(cosine_distance)``,
   whole rows: what an application writes without simsql); ``simsql ef_search=E``
   (``most_similar_vectors`` with ``ef_search=E`` in one long transaction: its ``SET LOCAL`` is
   sent once per transaction); ``simsql ef_search=E, a transaction per query`` (committed after
   each: the ``SET LOCAL`` and the commit are two more round trips); ``simsql, server's
   ef_search`` (the connection's setting, one round trip), and the same with
   ``select(Model).options(load_only(Model.id))`` (keys only, as the raw query); ``simsql
   columns(id)`` (``most_similar_vectors`` of ``select(Model.id)``: plain rows, no ORM
   instance, at the server's ``ef_search`` and with ``ef_search=E`` in one transaction). Then
   the exact scans.
2. **Related, not copies.** Real vectors de-duplicated (no two at cosine >= 0.95), the first
   ``--stories`` kept, every fourth republished 1-8 times (each copy turned 2-8 degrees), in a
   second table with its own index. Per query (held out, then rows of stories with copies as
   targets): distinct stories in the top-10 and recall of the true top-10 distinct stories
   (a story's cosine is its nearest member's), for ``most_similar_vectors`` and ``related_vectors``.

    python -m benchmarks.vectors_hnsw --rows 200000 --queries 200

Without ``--url``: the embedded PostgreSQL (``--data-dir``: its own cluster, which no other
process stops meanwhile). Tables dropped after; JSON on stdout.
``--before PACKAGE``: an older simsql importable under another name (a ``git archive`` of a
commit's ``simsql/`` with the package renamed, BENCHMARKS.md gives the command), whose
``most_similar_vectors`` runs beside the current one in the same shuffled run, on the same table
and index. ``--stories 0`` leaves part 2 out.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pgvector.sqlalchemy import Vector
from sqlalchemy import Integer, create_engine, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, load_only, mapped_column

import simsql
from simsql.lifecycle import add_vector_index
from simsql.queries import related_vectors

from . import vectors_pgvector as pgvector
from .vectors import cached_embeddings

DIMENSIONS = 256
TOP = 10
EF_SEARCH = (40, 100, 200)
BUILD_OPTIONS = "-c maintenance_work_mem=2GB"
"""The benchmark's connections build the graph in memory (pgvector slows a lot past it)."""


class _Base(DeclarativeBase):
    pass


class MeaningDoc(simsql.SimHashMixin, _Base):
    __tablename__ = "bench_meaning"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = simsql.VectorFingerprinter(DIMENSIONS)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(Vector(DIMENSIONS))


WHOLE_ROW = ", ".join(column.name for column in MeaningDoc.__table__.columns)
"""What ``select(MeaningDoc)`` loads, for the raw query of whole rows."""


class StoryDoc(simsql.SimHashMixin, _Base):
    __tablename__ = "bench_meaning_stories"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = simsql.VectorFingerprinter(DIMENSIONS)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(Vector(DIMENSIONS))


def embeddings(rows: int, queries: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(held-out queries, stored vectors, real rows among them) of :data:`DIMENSIONS`,
    :func:`benchmarks.vectors.cached_embeddings`."""
    return cached_embeddings(rows, queries, DIMENSIONS)


def load(engine: Engine, model: type, vectors: np.ndarray) -> dict[str, float]:
    """``model``'s table filled by COPY (no signatures: pgvector needs none), then simsql's HNSW index."""
    model.__table__.drop(engine, checkfirst=True)  # type: ignore[attr-defined]
    model.__table__.create(engine)  # type: ignore[attr-defined]
    started = time.perf_counter()
    with engine.begin() as connection:
        cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
        with cursor.copy(f"COPY {model.__tablename__} (id, embedding) FROM STDIN") as copy:  # type: ignore[attr-defined]
            for i, v in enumerate(vectors):
                copy.write_row((i + 1, pgvector.literal(v)))
    copied = time.perf_counter() - started
    started = time.perf_counter()
    add_vector_index(engine, model, m=16, ef_construction=64)
    built = time.perf_counter() - started
    with engine.begin() as connection:
        connection.exec_driver_sql(f"ANALYZE {model.__tablename__}")  # type: ignore[attr-defined]
    return {"copy_seconds": round(copied, 1), "hnsw_build_seconds": round(built, 1)}


def loaded(engine: Engine, vectors: np.ndarray) -> bool:
    """``--reuse``: the top-10 table there with these rows (count, first and last) and simsql's valid index."""
    with engine.connect() as connection:
        if connection.exec_driver_sql(f"SELECT to_regclass('{MeaningDoc.__tablename__}')").scalar() is None:
            return False
        ends = connection.execute(select(MeaningDoc.id, MeaningDoc.embedding).where(MeaningDoc.id.in_([1, len(vectors)]))).all()
        count = connection.exec_driver_sql(f"SELECT count(*) FROM {MeaningDoc.__tablename__}").scalar()
    stored = {row.id: np.asarray(row.embedding, dtype=np.float32) for row in ends}
    same = len(stored) == 2 and np.array_equal(stored[1], vectors[0]) and np.array_equal(stored[len(vectors)], vectors[-1])
    return bool(count == len(vectors) and same and add_vector_index(engine, MeaningDoc, m=16, ef_construction=64) is False)


def api_systems(api: Any, model: Any, engine: Engine, raw: Any, ef: int, held: list[Any], label: str = "") -> dict[str, Callable[[np.ndarray], list[int]]]:
    """``api.most_similar_vectors`` (simsql, or an older one under another name) on ``model``:
    whole rows in one long transaction with ``ef_search=ef``, a transaction per query, the
    connection's setting (``raw``'s), and keys only (``load_only``)."""
    session, fresh, keys_only, on_raw = Session(engine), Session(engine), Session(bind=raw), Session(bind=raw)
    held += [session, fresh, keys_only, on_raw]

    def committed(q: np.ndarray) -> list[int]:
        found = [m.row.id for m in api.most_similar_vectors(fresh, select(model), q, limit=TOP, ef_search=ef)]
        fresh.commit()
        return found

    name = f"{label}simsql most_similar_vectors"
    columns = {} if label else column_systems(model, engine, raw, ef, held, name)
    return columns | {
        f"{name} ef_search={ef}": lambda q: [m.row.id for m in api.most_similar_vectors(session, select(model), q, limit=TOP, ef_search=ef)],
        f"{name} ef_search={ef}, a transaction per query": committed,
        f"{name} load_only(id), server's ef_search={ef}": lambda q: [
            m.row.id for m in api.most_similar_vectors(keys_only, select(model).options(load_only(model.id)), q, limit=TOP)
        ],
        f"{name}, server's ef_search={ef}": lambda q: [m.row.id for m in api.most_similar_vectors(on_raw, select(model), q, limit=TOP)],
    }


def column_systems(model: Any, engine: Engine, raw: Any, ef: int, held: list[Any], name: str) -> dict[str, Callable[[np.ndarray], list[int]]]:
    """``most_similar_vectors`` of a statement of columns, ``select(model.id)``: plain rows, no
    ORM instance (what the raw keys query returns), at the connection's ``ef_search`` (``raw``'s)
    and with ``ef_search=ef`` in one long transaction."""
    on_raw, session = Session(bind=raw), Session(engine)
    held += [on_raw, session]
    return {
        f"{name} columns(id), server's ef_search={ef}": lambda q: [
            m.row.id for m in simsql.most_similar_vectors(on_raw, select(model.id), q, limit=TOP)
        ],
        f"{name} columns(id) ef_search={ef}": lambda q: [
            m.row.id for m in simsql.most_similar_vectors(session, select(model.id), q, limit=TOP, ef_search=ef)
        ],
    }


def before_model(api: Any) -> Any:
    """``MeaningDoc``'s table mapped on an older simsql's mixin (its own registry and events)."""

    class Before(DeclarativeBase):
        pass

    return type("MeaningDocBefore", (api.SimHashMixin, Before), {
        "__tablename__": MeaningDoc.__tablename__, "__simhash_source__": "embedding",
        "__simhash_fingerprinter__": api.VectorFingerprinter(DIMENSIONS),
        "__annotations__": {"id": Mapped[int], "embedding": Mapped[Any]},
        "id": mapped_column(Integer, primary_key=True, autoincrement=False), "embedding": mapped_column(Vector(DIMENSIONS)),
    })  # fmt: skip


def top10_systems(engine: Engine, held: list[Any], before: Any = None) -> dict[str, Callable[[np.ndarray], list[int]]]:
    """Each system by name; the connections and sessions it holds are appended to ``held``."""
    found: dict[str, Callable[[np.ndarray], list[int]]] = {}
    old = None if before is None else before_model(before)
    table = MeaningDoc.__tablename__
    for ef in EF_SEARCH:
        raw = engine.connect()
        raw.exec_driver_sql(f"SET hnsw.ef_search = {ef}")
        raw.commit()
        found[f"raw pgvector ef_search={ef}"] = pgvector.indexed_searcher(raw, table, DIMENSIONS, TOP)
        found[f"raw pgvector whole rows ef_search={ef}"] = pgvector.indexed_searcher(raw, table, DIMENSIONS, TOP, columns=WHOLE_ROW)
        orm = Session(bind=raw)
        found[f"pgvector-python ORM ef_search={ef}"] = lambda q, s=orm: [
            row.id for row in s.scalars(select(MeaningDoc).order_by(MeaningDoc.embedding.cosine_distance(q)).limit(TOP))
        ]
        found |= api_systems(simsql, MeaningDoc, engine, raw, ef, held)
        if before is not None:
            found |= api_systems(before, old, engine, raw, ef, held, "before: ")
        held += [raw, orm]
    return found


def exact_systems(engine: Engine, held: list[Any]) -> dict[str, Callable[[np.ndarray], list[int]]]:
    raw = engine.connect()
    session = Session(engine)
    held += [raw, session]
    return {
        "raw pgvector exact <=> scan": pgvector.exact_searcher(raw, MeaningDoc.__tablename__, DIMENSIONS, TOP),
        "simsql most_similar_vectors exact=True": lambda q: [
            m.row.id for m in simsql.most_similar_vectors(session, select(MeaningDoc), q, limit=TOP, exact=True)
        ],
    }


def measure(
    systems: dict[str, Callable[[np.ndarray], list[int]]], queries: np.ndarray, truth: list[set[int]],
    score: Callable[[list[int], int], dict[str, float]] | None = None,
) -> dict[str, dict[str, float]]:  # fmt: skip
    """p50/p90 and recall@10 (or ``score(found, query index)``) of each system, interleaved per
    query in an order shuffled per query (the first system to search a neighbourhood reads its
    pages from disk for the others), the first two queries run once before to warm. Also the
    client's own CPU a query (``client_cpu_ms_p50``: this process's CPU time, the server's work
    and the waits left out), which a busy machine disturbs far less than the wall time."""
    for q in queries[:2]:
        for run in systems.values():
            run(q)
    figures: dict[str, dict[str, list[float]]] = {name: {"ms": [], "cpu": []} for name in systems}
    names = list(systems)
    shuffle = np.random.default_rng(44)
    for i, q in enumerate(queries):
        for name in shuffle.permutation(names).tolist():
            run = systems[name]
            started, cpu = time.perf_counter(), time.process_time()
            found = run(q)
            figures[name]["ms"].append((time.perf_counter() - started) * 1000)
            figures[name]["cpu"].append((time.process_time() - cpu) * 1000)
            measured = score(found, i) if score else {"recall@10": len(truth[i] & set(found[:TOP])) / TOP}
            for key, value in measured.items():
                figures[name].setdefault(key, []).append(value)
    return {
        name: {"p50_ms": round(statistics.median(f["ms"]), 2), "p90_ms": round(float(np.percentile(f["ms"], 90)), 2),
               "client_cpu_ms_p50": round(statistics.median(f["cpu"]), 3)}
        | {k: round(statistics.fmean(v), 3) for k, v in f.items() if k not in ("ms", "cpu")}
        for name, f in figures.items()
    }


def ratios(figures: dict[str, dict[str, float]]) -> dict[str, float]:
    """p50 of each simsql and ORM system over raw pgvector's at the same ef_search, like for
    like: keys only (``load_only(id)``) over raw keys, whole rows over raw whole rows (the same
    columns, as the driver returns them); and every system over raw keys as before."""
    found = {}
    for ef in EF_SEARCH:
        raw = figures[f"raw pgvector ef_search={ef}"]["p50_ms"]
        whole = figures[f"raw pgvector whole rows ef_search={ef}"]["p50_ms"]
        for name, f in figures.items():
            if (name.endswith(f"={ef}") or f"={ef}," in name) and not name.startswith("raw pgvector"):
                found[f"{name} / raw keys"] = round(f["p50_ms"] / raw, 2)
                if "load_only" not in name and "columns(id)" not in name:
                    found[f"{name} / raw whole rows"] = round(f["p50_ms"] / whole, 2)
        found[f"raw pgvector whole rows ef_search={ef} / raw keys"] = round(whole / raw, 2)
    return found


def deduplicated(vectors: np.ndarray, count: int, cosine: float = 0.95) -> np.ndarray:
    """The first ``count`` of ``vectors`` at cosine below ``cosine`` to every one kept before
    (real paragraphs repeat: man pages share boilerplate), so the planted copies are the only ones."""
    kept = np.zeros((0, vectors.shape[1]), dtype=np.float32)
    for start in range(0, len(vectors), 1000):
        batch = vectors[start : start + 1000]
        if len(kept):
            batch = batch[(batch @ kept.T).max(axis=1) < cosine]
        near = batch @ batch.T >= cosine
        chosen: list[int] = []
        for i in range(len(batch)):
            if not near[i, chosen].any():
                chosen.append(i)
        kept = np.vstack([kept, batch[chosen]])
        if len(kept) >= count:
            break
    return kept[:count]


def planted(stories: np.ndarray, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """``stories``, every fourth republished 1-8 times (each copy turned 2-8 degrees); (vectors, story of each)."""
    rng = np.random.default_rng(seed)
    vectors, story = [], []
    for s, v in enumerate(stories.astype(np.float64)):
        for c in range(1 + (int(rng.integers(1, 9)) if s % 4 == 0 else 0)):
            turn = rng.normal(size=v.shape[0])
            turn -= (turn @ v) * v
            angle = np.radians(rng.uniform(2.0, 8.0)) if c else 0.0
            vectors.append(np.cos(angle) * v + np.sin(angle) * turn / np.linalg.norm(turn))
            story.append(s)
    return np.array(vectors, dtype=np.float32), np.array(story)


def related_figures(engine: Engine, real: np.ndarray, queries: np.ndarray, count: int, ef: int) -> dict[str, Any]:
    """Part 2 (module docstring): distinct stories and their recall in the top-10."""
    vectors, story = planted(deduplicated(real, count))
    report: dict[str, Any] = {"stories": count, "rows": len(vectors), "copies": int(len(vectors) - count)} | load(engine, StoryDoc, vectors)
    targets = [int(i) for i in np.flatnonzero(np.bincount(story)[story] > 1)[::37][: len(queries) // 2]]
    sets = {"held-out queries": (queries.astype(np.float64), None), "targets with copies (by row)": (vectors[targets].astype(np.float64), targets)}
    with Session(engine) as session:
        for label, (qs, rows) in sets.items():
            truth = [_distinct_truth(vectors, story, q, None if rows is None else int(story[rows[i]])) for i, q in enumerate(qs)]

            def target(i: int, rows: list[int] | None = rows, qs: np.ndarray = qs) -> Any:
                return qs[i] if rows is None else session.get(StoryDoc, rows[i] + 1)

            systems = {
                f"most_similar_vectors ef_search={ef}": lambda i: [m.row.id for m in simsql.most_similar_vectors(session, select(StoryDoc), target(i), limit=TOP, ef_search=ef)],
                f"related_vectors ef_search={ef}": lambda i: [m.row.id for m in related_vectors(session, select(StoryDoc), target(i), limit=TOP, ef_search=ef)],
                "related_vectors (default ef_search: twice the pool, >= 100)": lambda i: [m.row.id for m in related_vectors(session, select(StoryDoc), target(i), limit=TOP)],
            }
            indexed = {name: (lambda q, run=run: run(int(q[0]))) for name, run in systems.items()}
            order = np.arange(len(qs), dtype=np.float64)[:, None]

            def score(found: list[int], i: int, truth: list[set[int]] = truth) -> dict[str, float]:
                stories = {int(story[k - 1]) for k in found[:TOP]}
                return {"distinct_stories_in_top10": float(len(stories)), "recall_of_distinct_top10": len(stories & truth[i]) / TOP}

            report[label] = measure(indexed, order, [], score)
    return report


def _distinct_truth(vectors: np.ndarray, story: np.ndarray, query: np.ndarray, skip: int | None) -> set[int]:
    """The true top-10 stories: by their nearest member's cosine, the target's own story left out."""
    cosines = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
    found: list[int] = []
    for i in np.argsort(-cosines):
        s = int(story[i])
        if s != skip and s not in found:
            found.append(s)
            if len(found) == TOP:
                break
    return set(found)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.vectors_hnsw", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--stories", type=int, default=20_000, help="distinct stories of part 2 (before copies)")
    parser.add_argument("--url", default=None)
    parser.add_argument("--data-dir", default=None, help="the embedded PostgreSQL's data directory (default: simsql's)")
    parser.add_argument("--before", default=None, help="an older simsql's package name, run beside this one")
    parser.add_argument("--keep", action="store_true", help="leave the top-10 table and its index in place")
    parser.add_argument("--reuse", action="store_true", help="take the top-10 table as it is when it holds these rows")
    args = parser.parse_args(argv)
    queries, vectors, real = embeddings(args.rows, args.queries)
    url = args.url or os.environ.get("DATABASE_URL")
    if url is None:
        from simsql.embedded import embedded_url

        url = embedded_url(args.data_dir)
    engine = create_engine(url, connect_args={"options": BUILD_OPTIONS})
    reason = pgvector.available(engine)
    if reason is not None:
        print(reason, file=sys.stderr)
        return 1
    report: dict[str, Any] = {"rows": len(vectors), "real_rows": real, "queries": len(queries), "dimensions": DIMENSIONS}
    held: list[Any] = []
    try:
        report["load"] = "reused" if args.reuse and loaded(engine, vectors) else load(engine, MeaningDoc, vectors)
        with engine.connect() as connection:
            report["pgvector"] = connection.exec_driver_sql("SELECT extversion FROM pg_extension WHERE extname = 'vector'").scalar()
            report["server"] = connection.exec_driver_sql("SHOW server_version").scalar()
        truth = [set((np.argpartition(-(vectors @ q), TOP)[:TOP] + 1).tolist()) for q in queries]
        report["load_average_before"] = [round(x, 2) for x in os.getloadavg()]
        before = None if args.before is None else importlib.import_module(args.before)
        top10 = measure(top10_systems(engine, held, before), queries, truth)
        report["top10"] = top10 | measure(exact_systems(engine, held), queries[:50], truth[:50])
        report["p50_ratios"] = ratios(top10)
        report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
        print(json.dumps(report), file=sys.stderr, flush=True)
        for thing in held:  # open transactions would hold the next concurrent index build back
            thing.close()
        held.clear()
        if args.stories:
            report["related"] = related_figures(engine, vectors[:real], queries, args.stories, ef=100)
    finally:
        for thing in held:
            thing.close()
        _Base.metadata.drop_all(engine, tables=None if not args.keep else [StoryDoc.__table__])  # type: ignore[list-item]
        engine.dispose()
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
