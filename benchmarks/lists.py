"""Partition lists (issue 34): "most similar" by probing a few lists, against the scans and pgvector.

    python -m benchmarks.lists --rows 1000000 --queries 200 \\
        --url postgresql+psycopg://postgres@127.0.0.1:5432/bench_parts \\
        --out benchmarks/results/partitions-postgresql-1000000.json
    python -m benchmarks.lists --rows 20000 --queries 20     # the smoke run, about 2 minutes

Data (:mod:`benchmarks.lists_data`, cached in ``benchmarks/.cache``): 1M real-text article
fingerprints with their text in the row (the articles of :mod:`benchmarks.scale`), and 1M
embeddings of real text (TF-IDF + SVD(256) of man-page paragraphs, grown by turned rows as in
:mod:`benchmarks.vectors`), each with ``--queries`` held-out queries and their exact top-10
(Hamming distance, ties by key; cosine), computed in numpy over every row.

Sets (``--sets``), each in one run, the systems answering the same queries taking turns query by
query in a shuffled order, each on its own connection (so none runs on a cache another warmed):

- ``text``: the plain scan (``ORDER BY distance LIMIT 10``, whole rows and keys only), simsql's
  exact ``most_similar``, and ``most_similar(..., probes=N)`` over the grid ``--probes``; after a
  fit with the default number of lists, then refitted with each of ``--lists`` (the plain
  keys-only scan runs again beside each, for the ratios).
- ``vectors``: simsql's exact path (``most_similar_vectors`` without probes, candidates 200 and
  1000; and the 256-bit scan of the top 1,000 re-ranked, its best recall), ``most_similar_vectors(..., probes=N, candidates=M)`` over the grid, and on PostgreSQL
  with pgvector: its exact ``<=>`` scan, IVFFlat (``lists=1000``, ``ivfflat.probes`` grid) and
  HNSW (``m=16, ef_construction=64``, ``hnsw.ef_search`` grid), each index on its own copy of the
  table; build times and index sizes.
- ``inserts``: ORM inserts of real rows (batches of ``--batch``) into two tables of equal size,
  one with partition lists and one without, batch by batch in alternating order (text and
  vectors; ``--insert-kinds vectors`` times the vector tables only).
- ``refit``: ``fit_lists`` again on the text table while two processes insert and update
  rows; then every row with a fingerprint is checked to be in a current list.

Per system: recall@10 against the exact top-10 (text: a row counts when its distance is within
the true 10th, :func:`benchmarks.timing.topk_recall`'s rule; vectors: the ids), p25/p50/p99 ms and
the ratio of p50s to the scans in the same run; the load average before and after; on PostgreSQL
the server's own plan of one query per simsql system (``EXPLAIN (ANALYZE, BUFFERS)``: what it reads).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Integer, LargeBinary, create_engine, event, select, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Mapped, Session, mapped_column

import simsql
import simsql.bits
import simsql.store
from simsql.lists import ListsMixin

from . import lists_load as load
from .lists_data import TOP, TextSet, VectorSet, text_set, vector_set
from .lists_models import ListsBase, TextDoc, TextLists, TextPlain, VectorDoc, as_dict, lists_status

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bench_parts"
TEXT_PROBES = (8, 16, 32, 64, 128)
VECTOR_PROBES = (8, 16, 32, 64)
VECTOR_CANDIDATES = (200, 1000)
EXACT_CANDIDATES = (200, 1000)
IVF_LISTS = 1000
"""IVFFlat's lists at 1M rows (pgvector's advice: rows / 1000 up to 1M rows); smaller runs take rows / 1000, at least 10."""
IVF_PROBES = (10, 20, 40, 80)
HNSW_M, HNSW_EF_CONSTRUCTION = 16, 64
HNSW_EF_SEARCH = (40, 100, 200)
FIT_SAMPLE = 20_000
"""Rows the vector signatures' centre is fitted on (as :mod:`benchmarks.vectors`)."""


def lists_api() -> Any:
    """``simsql.lists`` (kept as a seam: a run against a simsql without it measured the baselines alone)."""
    from simsql import lists

    return lists


# -- racing systems ------------------------------------------------------------------------------


Runner = Callable[[Any], Any]


def race(systems: dict[str, Runner], queries: Sequence[Any], seed: int) -> tuple[dict[str, list[float]], dict[str, list[Any]]]:
    """Every system on every query, in a shuffled order per query; seconds and answers. The first
    two queries run once untimed for each system (connections and caches warm)."""
    names = list(systems)
    for q in queries[:2]:
        for run in systems.values():
            run(q)
    times: dict[str, list[float]] = {name: [] for name in names}
    answers: dict[str, list[Any]] = {name: [] for name in names}
    order = np.random.default_rng(seed)
    for q in queries:
        for name in order.permutation(names).tolist():
            started = time.perf_counter()
            answers[name].append(systems[name](q))
            times[name].append(time.perf_counter() - started)
    return times, answers


def timing(seconds: list[float]) -> dict[str, float]:
    ms = np.array(seconds) * 1000
    return {f"p{p}_ms": round(float(np.percentile(ms, p)), 2) for p in (25, 50, 99)}


def table(times: dict[str, list[float]], recalls: dict[str, float], baselines: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per system: recall, percentiles, and each baseline's p50 over this p50 (the speed-up)."""
    rows = {name: {"recall@10": round(recalls[name], 4), **timing(seconds)} for name, seconds in times.items()}
    for name, row in rows.items():
        for base in baselines:
            if base in rows:
                row[f"speedup_vs[{base}]"] = round(rows[base]["p50_ms"] / row["p50_ms"], 2)
    return rows


def sessions_for(engine: Engine, names: Sequence[str]) -> dict[str, Session]:
    return {name: Session(engine) for name in names}


def close_all(sessions: dict[str, Session]) -> None:
    for session in sessions.values():
        session.close()


# -- text ----------------------------------------------------------------------------------------


def text_systems(
    sessions: dict[str, Session], probes: Sequence[int], with_scans: bool, by_hand: Sequence[int] = (), generation: int = 0
) -> dict[str, Runner]:
    """Each system by name (its session is ``sessions[name]``); an answer is ``[(id, distance)]``."""
    distance = TextDoc.simhash.hamming_distance
    found: dict[str, Runner] = {}

    def scan(session: Session, whole: bool) -> Runner:
        entity: Any = TextDoc if whole else TextDoc.id
        return lambda q: [(r[0].id if whole else r[0], r[1]) for r in session.execute(select(entity, distance(q)).order_by(distance(q)).limit(TOP))]

    def similar(session: Session, **options: int) -> Runner:
        return lambda q: [(r[0].id, r.distance) for r in session.execute(simsql.most_similar(select(TextDoc), q, limit=TOP, **options))]

    if with_scans:
        found["plain scan (whole rows)"] = scan(sessions["plain scan (whole rows)"], True)
        found["simsql most_similar (exact)"] = similar(sessions["simsql most_similar (exact)"])
    found["plain scan (keys)"] = scan(sessions["plain scan (keys)"], False)
    for n in probes:
        name = f"simsql most_similar probes={n}"
        found[name] = similar(sessions[name], probes=n)
    for n in by_hand:
        name = f"{BY_HAND} probes={n}"
        found[name] = text_by_hand(sessions[name], n, generation)
    return found


def text_names(probes: Sequence[int], with_scans: bool, by_hand: Sequence[int] = ()) -> list[str]:
    names = ["plain scan (whole rows)", "simsql most_similar (exact)"] if with_scans else []
    names += ["plain scan (keys)"] + [f"simsql most_similar probes={n}" for n in probes]
    return names + [f"{BY_HAND} probes={n}" for n in by_hand]


BY_HAND = "by hand: probed lists only"
"""A diagnostic, PostgreSQL only: the rows of the ``probes`` lists nearest the target ranked from
the list index alone, written in SQL by hand *without* the branch for rows left behind (no row is
left behind after a fit without writers, so its answer equals ``most_similar(probes=)``'s): what
the design costs, against what the library's statement costs."""


def text_by_hand(session: Session, probes: int, generation: int) -> Runner:
    statement = text(
        "SELECT t.id, bit_count(CAST((t.simhash # :q) AS bit(64))) AS d FROM parts_text t "
        "WHERE t.simhash_part IN (SELECT c.list_value FROM simsql_partition_centres c WHERE c.table_schema = current_schema() "
        "AND c.table_name = 'parts_text' AND c.generation = :g "
        "ORDER BY bit_count(CAST((c.centre # :q) AS bit(64))), c.list_value LIMIT :probes) "
        "ORDER BY d, t.id LIMIT 10"
    )
    return lambda q: [(r[0], r[1]) for r in session.execute(statement, {"q": simsql.bits.to_signed(q), "g": generation, "probes": probes})]


def text_recalls(answers: dict[str, list[Any]], data: TextSet) -> dict[str, float]:
    out = {}
    for name, found in answers.items():
        hits = sum(sum(1 for _, d in a[:TOP] if d <= kth) for a, kth in zip(found, data.tenth.tolist()))
        out[name] = hits / (TOP * len(found))
    return out


def text_phase(engine: Engine, data: TextSet, probes: Sequence[int], with_scans: bool, seed: int, by_hand: Sequence[int] = ()) -> dict[str, Any]:
    generation = 0
    if by_hand:
        generation = (lists_status(engine, TextDoc.__tablename__) or {}).get("generation", 0)
    names = text_names(probes, with_scans, by_hand)
    sessions = sessions_for(engine, names)
    try:
        systems = text_systems(sessions, probes, with_scans, by_hand, generation)
        before = os.getloadavg()
        times, answers = race(systems, [int(q) for q in data.queries], seed)
        after = os.getloadavg()
        plans = server_plans(engine, {k: v for k, v in systems.items() if k != "plain scan (whole rows)"}, int(data.queries[0]))
    finally:
        close_all(sessions)
    key_recall = {
        name: float(np.mean([len({k for k, _ in a[:TOP]} & set(t.tolist())) / TOP for a, t in zip(found, data.truth)]))
        for name, found in answers.items()
    }
    rows = table(times, text_recalls(answers, data), ["plain scan (whole rows)", "plain scan (keys)", "simsql most_similar (exact)"])
    for name, row in rows.items():
        row["recall@10 by key"] = round(key_recall[name], 4)
    return {"load_average_before": before, "load_average_after": after, "systems": rows, "server_plans_first_query": plans}


# -- vectors -------------------------------------------------------------------------------------


def ivf_lists(rows: int) -> int:
    return max(10, min(IVF_LISTS, rows // 1000))


def pgvector_systems(engine: Engine, d: int, lists: int, held: list[Connection], with_exact: bool) -> dict[str, Runner]:
    """pgvector's searches, each on its own connection with its setting made once."""
    from .vectors_pgvector import literal

    def searcher(setting: str | None, sql: str) -> Runner:
        connection = engine.connect()
        if setting is not None:
            connection.exec_driver_sql(setting)
        connection.commit()
        held.append(connection)
        statement = text(sql)
        return lambda q: [row[0] for row in connection.execute(statement, {"q": literal(q)})]

    ivf, hnsw = load.PGV_TABLES["ivfflat"], load.PGV_TABLES["hnsw"]
    q = f"CAST(:q AS vector({d}))"
    found: dict[str, Runner] = {}
    if with_exact:
        found["pgvector exact <=> scan"] = searcher(None, f"SELECT id FROM {hnsw} ORDER BY (embedding <=> {q}) + 0, id LIMIT {TOP}")
    for p in IVF_PROBES:
        found[f"pgvector IVFFlat lists={lists} probes={p}"] = searcher(
            f"SET ivfflat.probes = {p}", f"SELECT id FROM {ivf} ORDER BY embedding <=> {q} LIMIT {TOP}"
        )
    for ef in HNSW_EF_SEARCH:
        found[f"pgvector HNSW ef_search={ef}"] = searcher(f"SET hnsw.ef_search = {ef}", f"SELECT id FROM {hnsw} ORDER BY embedding <=> {q} LIMIT {TOP}")
    return found


WIDE_SCAN = "simsql 256-bit scan top-1000 + rerank"
"""simsql's best exact-path recall (issue 25): ``ORDER BY`` the 256-bit distance ``LIMIT 1000`` (every
row read), re-ranked by exact cosine in numpy."""


def vector_names(grid: Sequence[tuple[int, int]], exact: bool) -> list[str]:
    names = [f"simsql most_similar_vectors candidates={m} (exact path)" for m in EXACT_CANDIDATES] + [WIDE_SCAN] if exact else []
    return names + [f"simsql most_similar_vectors probes={n} candidates={m}" for n, m in grid]


def wide_scan(session: Session, candidates: int = 1000) -> Runner:
    from simsql.queries.wide import wide_distance

    binding = simsql.store.binding_for(VectorDoc)
    signer: Any = VectorDoc.__simhash_fingerprinter__

    def run(q: np.ndarray) -> list[int]:
        distance = wide_distance(binding, signer.signatures_many([q])[0])
        rows = session.execute(select(VectorDoc.id, VectorDoc.embedding).order_by(distance, VectorDoc.id).limit(candidates)).all()
        stored = np.stack([np.frombuffer(row.embedding, dtype="<f4") for row in rows])
        return [rows[i].id for i in np.argsort(-(stored @ q), kind="stable")[:TOP]]

    return run


def vector_by_hand(session: Session, probes: int, candidates: int) -> Runner:
    """:data:`BY_HAND` for vectors: the lists nearest by cosine (the library's own
    :meth:`~simsql.text.lists.Centres.nearest`), the ``candidates`` nearest of their rows by the
    256-bit distance from the list index alone, their vectors fetched by key, re-ranked by cosine."""
    from simsql.queries.wide import wide_distance
    from simsql.store import lists

    binding = simsql.store.binding_for(VectorDoc)
    signer: Any = VectorDoc.__simhash_fingerprinter__
    with session.bind.connect() as connection:  # type: ignore[union-attr]
        schema = connection.exec_driver_sql("SELECT current_schema()").scalar()
        centres = lists.live_centres(connection, str(schema), VectorDoc.__tablename__)[-1]
    part = VectorDoc.__table__.c.simhash_part  # type: ignore[attr-defined]

    def run(q: np.ndarray) -> list[int]:
        distance = wide_distance(binding, signer.signatures_many([q])[0])
        lists = centres.nearest(q, probes)
        top = select(VectorDoc.id).where(part.in_(lists)).order_by(distance, VectorDoc.id).limit(candidates).subquery()
        rows = session.execute(select(VectorDoc.id, VectorDoc.embedding).join(top, VectorDoc.id == top.c.id)).all()
        stored = np.stack([np.frombuffer(row.embedding, dtype="<f4") for row in rows])
        return [rows[i].id for i in np.argsort(-(stored @ q), kind="stable")[:TOP]]

    return run


def vector_systems(
    sessions: dict[str, Session], grid: Sequence[tuple[int, int]], exact: bool, by_hand: Sequence[tuple[int, int]] = ()
) -> dict[str, Runner]:
    found: dict[str, Runner] = {}
    for n, m in by_hand:
        name = f"{BY_HAND} probes={n} candidates={m}"
        found[name] = vector_by_hand(sessions[name], n, m)

    def search(session: Session, **options: int) -> Runner:
        return lambda q: [m.row.id for m in simsql.most_similar_vectors(session, select(VectorDoc), q, limit=TOP, **options)]

    if exact:
        for m in EXACT_CANDIDATES:
            name = f"simsql most_similar_vectors candidates={m} (exact path)"
            found[name] = search(sessions[name], candidates=m)
        found[WIDE_SCAN] = wide_scan(sessions[WIDE_SCAN])
    for n, m in grid:
        name = f"simsql most_similar_vectors probes={n} candidates={m}"
        found[name] = search(sessions[name], probes=n, candidates=m)
    return found


def vector_phase(
    engine: Engine, data: VectorSet, grid: Sequence[tuple[int, int]], pgvector: bool, seed: int, by_hand: Sequence[tuple[int, int]] = ()
) -> dict[str, Any]:
    names = vector_names(grid, exact=True) + [f"{BY_HAND} probes={n} candidates={m}" for n, m in by_hand]
    sessions = sessions_for(engine, names)
    held: list[Connection] = []
    try:
        systems = vector_systems(sessions, grid, exact=True, by_hand=by_hand)
        if pgvector:
            systems |= pgvector_systems(engine, data.vectors.shape[1], ivf_lists(len(data.vectors)), held, with_exact=True)
        before = os.getloadavg()
        times, answers = race(systems, list(data.queries), seed)
        after = os.getloadavg()
        plans = server_plans(engine, {k: v for k, v in systems.items() if k.startswith("simsql")}, data.queries[0])
    finally:
        close_all(sessions)
        for connection in held:
            connection.close()
    truth = [set(t.tolist()) for t in data.truth]
    recalls = {name: float(np.mean([len(set(a[:TOP]) & t) / TOP for a, t in zip(found, truth)])) for name, found in answers.items()}
    baselines = [f"simsql most_similar_vectors candidates={m} (exact path)" for m in EXACT_CANDIDATES] + [WIDE_SCAN, "pgvector exact <=> scan"]
    rows = table(times, recalls, baselines)
    return {"load_average_before": before, "load_average_after": after, "systems": rows, "server_plans_first_query": plans}


# -- what the server reads -----------------------------------------------------------------------


def server_plans(engine: Engine, runners: dict[str, Runner], query: Any) -> dict[str, Any]:
    """PostgreSQL: each runner's statements for one query, captured as sent, then run again under
    ``EXPLAIN (ANALYZE, BUFFERS)``: execution time, the scan nodes with their rows, buffers."""
    if engine.dialect.name != "postgresql":
        return {}
    out: dict[str, Any] = {}
    for name, run in runners.items():
        captured: list[tuple[str, Any]] = []

        def hook(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
            captured.append((statement, parameters))

        event.listen(engine, "before_cursor_execute", hook)
        try:
            run(query)
        finally:
            event.remove(engine, "before_cursor_execute", hook)
        plans = []
        with engine.connect() as connection:
            raw: Any = connection.connection.driver_connection
            for statement, parameters in captured:
                if not statement.lstrip().upper().startswith(("SELECT", "WITH")):
                    continue
                cursor = raw.cursor()
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement, parameters)
                plans.append(_plan_summary(cursor.fetchone()[0][0]))
            raw.rollback()
        out[name] = plans
    return out


def _plan_summary(found: dict[str, Any]) -> dict[str, Any]:
    nodes: list[str] = []

    def walk(node: dict[str, Any]) -> None:
        if "Scan" in str(node["Node Type"]) and not str(node.get("Index Name") or node.get("Relation Name") or "").startswith("pg_"):
            where = node.get("Index Name") or node.get("Relation Name") or ""
            nodes.append(
                f"{node['Node Type']} {where} (rows {node.get('Actual Rows')} x{node.get('Actual Loops')}, {node.get('Actual Total Time')} ms)"
            )
        for child in node.get("Plans", []):
            walk(child)

    plan = found["Plan"]
    walk(plan)
    jit = found.get("JIT", {}).get("Timing", {}).get("Total")
    return {
        "execution_ms": round(found["Execution Time"], 2), "planning_ms": round(found["Planning Time"], 2), "jit_ms": jit, "scans": nodes,
        "shared_buffers_hit_read": [plan.get("Shared Hit Blocks"), plan.get("Shared Read Blocks")],
    }  # fmt: skip


# -- insert cost ---------------------------------------------------------------------------------


class VectorLists(ListsMixin, simsql.WideSimHashMixin, ListsBase):
    """Insert cost of vectors: a smaller table with lists ..."""

    __tablename__ = "parts_vins_lists"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = simsql.VectorFingerprinter(256)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[bytes] = mapped_column(LargeBinary)


class VectorPlain(simsql.WideSimHashMixin, ListsBase):
    """... and its twin without."""

    __tablename__ = "parts_vins_plain"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = simsql.VectorFingerprinter(256)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[bytes] = mapped_column(LargeBinary)


def timed_inserts(engine: Engine, models: Sequence[type], rows: list[dict[str, Any]], batch: int, seed: int) -> dict[str, Any]:
    """ORM inserts of ``rows`` into each model's table, batch by batch, the tables taking turns in
    a shuffled order per batch (so load drifts hit both); the first batch of each untimed. Each
    table's median batch too, as the load of a shared machine comes in bursts that a few
    batches of one table can catch."""
    seconds: dict[str, float] = {m.__tablename__: 0.0 for m in models}  # type: ignore[attr-defined]
    batches: dict[str, list[float]] = {name: [] for name in seconds}
    statements: dict[str, int] = dict.fromkeys(seconds, 0)
    order = np.random.default_rng(seed)
    timed = 0
    sent: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        sent.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        for start in range(0, len(rows), batch):
            chunk = rows[start : start + batch]
            for i in order.permutation(len(models)).tolist():
                model = models[i]
                sent.clear()
                started = time.perf_counter()
                with Session(engine) as session:
                    session.add_all([model(**row) for row in chunk])
                    session.commit()
                if start > 0:
                    seconds[model.__tablename__] += time.perf_counter() - started  # type: ignore[attr-defined]
                    batches[model.__tablename__].append((time.perf_counter() - started) / len(chunk))  # type: ignore[attr-defined]
                    statements[model.__tablename__] += len(sent)  # type: ignore[attr-defined]
            timed += len(chunk) if start > 0 else 0
    finally:
        event.remove(engine, "before_cursor_execute", count)
    out: dict[str, Any] = {"rows_timed": timed, "batch": batch}
    for name, spent in seconds.items():
        out[name] = {
            "seconds": round(spent, 2), "rows_per_second": round(timed / spent, 1), "us_per_row": round(1e6 * spent / timed, 1),
            "statements_per_batch": round(statements[name] * batch / timed, 1),
            "us_per_row_median_batch": round(1e6 * float(np.median(batches[name])), 1), "us_per_row_batches": [round(1e6 * b, 1) for b in batches[name]],
        }  # fmt: skip
    return out


def extra_cost(report: dict[str, Any], with_lists: str, without: str) -> None:
    """The cost of the lists in ``report`` (of :func:`timed_inserts`): of the total time, of the
    median batches, and the median of the batches' own ratios (each batch of one table beside
    the same batch of the other, a few ms apart: the least touched by the machine's bursts)."""
    lists, plain = report[with_lists], report[without]
    report["extra_cost"] = round(lists["seconds"] / plain["seconds"] - 1, 4)
    report["extra_cost_median_batches"] = round(lists["us_per_row_median_batch"] / plain["us_per_row_median_batch"] - 1, 4)
    pairs = np.array(lists["us_per_row_batches"]) / np.array(plain["us_per_row_batches"])
    report["extra_cost_median_paired"] = round(float(np.median(pairs)) - 1, 4)


def insert_phase(engine: Engine, api: Any, texts: TextSet | None, vectors: VectorSet | None, base: int, count: int, batch: int) -> dict[str, Any]:
    """Insert cost with lists against without, on tables of ``base`` rows each (the lists fitted
    on that table by default), ``count`` new real rows inserted into each."""
    from . import scale

    report: dict[str, Any] = {"base_rows": base}
    if texts is not None:
        for model in (TextLists, TextPlain):
            load.load_text(engine, model.__table__, texts, base)  # type: ignore[attr-defined]
        report["text_fit"] = as_dict(api.fit_lists(engine, TextLists.__tablename__))
        rows = [{"id": k, "body": scale.article_text(texts.paragraphs, texts.members[k - 1])} for k in range(base + 1, base + count + 1)]
        report["text"] = timed_inserts(engine, (TextLists, TextPlain), rows, batch, seed=base)
        extra_cost(report["text"], TextLists.__tablename__, TextPlain.__tablename__)
    if vectors is not None:
        for model in (VectorLists, VectorPlain):
            load.load_vectors(engine, model.__table__, vectors.vectors[:base], VectorDoc.__simhash_fingerprinter__)  # type: ignore[attr-defined]
        report["vectors_fit"] = as_dict(api.fit_lists(engine, VectorLists.__tablename__))
        rows = [{"id": k, "embedding": vectors.vectors[k - 1].astype("<f4").tobytes()} for k in range(base + 1, base + count + 1)]
        report["vectors"] = timed_inserts(engine, (VectorLists, VectorPlain), rows, batch, seed=base + 1)
        extra_cost(report["vectors"], VectorLists.__tablename__, VectorPlain.__tablename__)
    return report


# -- the run -------------------------------------------------------------------------------------


def _fit(engine: Engine, api: Any, table: str, lists: int | None) -> dict[str, Any]:
    started = time.perf_counter()
    result = api.fit_lists(engine, table, lists=lists, seed=0)
    found = {"seconds": round(time.perf_counter() - started, 1), "result": as_dict(result)}
    started = time.perf_counter()
    load.analyze(engine, table)  # the fit rewrote every row: what autovacuum would do (it is off on the benchmark's server)
    found["vacuum_analyze_seconds"] = round(time.perf_counter() - started, 1)
    found["status"] = lists_status(engine, table)
    found["index_bytes"] = load.index_sizes(engine, table)
    print(f"fitted {table} lists={lists}: {found['seconds']} s", file=sys.stderr, flush=True)
    return found


def run_text(engine: Engine, args: argparse.Namespace, api: Any, report: dict[str, Any]) -> TextSet:
    data = text_set(args.rows, args.queries, documents=args.documents)
    section: dict[str, Any] = report.setdefault("text", {})
    section["tenth_distance_p50"] = float(np.median(data.tenth))
    if not (args.reuse and load.loaded(engine, TextDoc.__tablename__, args.rows)):
        section["load_seconds"] = {k: round(v, 3) for k, v in load.load_text(engine, TextDoc.__table__, data, args.rows).items()}  # type: ignore[attr-defined]
    section["index_bytes_before_lists"] = load.index_sizes(engine, TextDoc.__tablename__)
    probes = args.text_probes if api is not None else ()
    phases = [None, *args.lists] if api is not None else [None]
    for number, lists in enumerate(phases):
        name = f"lists={lists or 'default'}"
        if api is not None:
            section.setdefault("fits", {})[name] = _fit(engine, api, TextDoc.__tablename__, lists)
        by_hand = args.by_hand if api is not None and engine.dialect.name == "postgresql" else ()
        phase = text_phase(engine, data, probes, with_scans=number == 0, seed=args.rows + number, by_hand=by_hand)
        section.setdefault("phases", {})[name] = phase
        print(json.dumps({name: phase}), file=sys.stderr, flush=True)
    return data


def vectors_for(args: argparse.Namespace) -> VectorSet:
    """The vector set of ``--rows`` with ``--held-out`` queries held out (the stored rows depend on
    it: tables loaded with one cannot be reused with another), the first ``--queries`` of them asked."""
    data = vector_set(args.rows, args.held_out)
    return VectorSet(data.vectors, data.queries[: args.queries], data.truth[: args.queries], data.real_rows, data.seconds)


def run_vectors(engine: Engine, args: argparse.Namespace, api: Any, report: dict[str, Any]) -> VectorSet:
    data = vectors_for(args)
    section: dict[str, Any] = report.setdefault("vectors", {})
    section["real_rows"] = data.real_rows
    if not (args.reuse and load.loaded(engine, VectorDoc.__tablename__, args.rows) and load.same_vector(engine, VectorDoc.__tablename__, data.vectors[0])):
        section["load_seconds"] = {k: round(v, 3) for k, v in load.load_vectors(engine, VectorDoc.__table__, data.vectors, VectorDoc.__simhash_fingerprinter__).items()}  # type: ignore[attr-defined]
    reason = "--no-pgvector" if args.no_pgvector else load.pgvector_available(engine)
    if reason is None:
        if args.reuse and load.pgvector_loaded(engine, args.rows, data.vectors[0]):
            section["pgvector"] = json.loads(Path(args.pgvector_report).read_text()) if args.pgvector_report else "reused"
        else:
            section["pgvector"] = load.load_pgvector(engine, data.vectors, ivf_lists(args.rows), HNSW_M, HNSW_EF_CONSTRUCTION)
        with engine.connect() as connection:
            section["pgvector_version"] = connection.exec_driver_sql("SELECT extversion FROM pg_extension WHERE extname = 'vector'").scalar()
    else:
        section["pgvector_skipped"] = reason
        print(f"pgvector systems skipped: {reason}", file=sys.stderr, flush=True)
    grid: list[tuple[int, int]] = []
    if api is not None:
        section["fit"] = _fit(engine, api, VectorDoc.__tablename__, None)
        grid = [(n, m) for n in args.vector_probes for m in args.vector_candidates]
    by_hand = [(n, m) for n in args.by_hand for m in args.vector_candidates] if api is not None and engine.dialect.name == "postgresql" else []
    section["phase"] = vector_phase(engine, data, grid, reason is None, seed=args.rows, by_hand=by_hand)
    return data


def run(args: argparse.Namespace) -> dict[str, Any]:
    engine = create_engine(args.url, pool_size=40, max_overflow=10)  # a connection per system
    api = lists_api()
    report: dict[str, Any] = {
        "command": "python -m benchmarks.lists " + " ".join(sys.argv[1:]), "rows": args.rows, "queries": args.queries,
        "server": engine.dialect.name, "load_average_start": os.getloadavg(), "lists_api": api is not None,
    }  # fmt: skip
    with engine.connect() as connection:
        report["server_version"] = connection.exec_driver_sql("SELECT version()").scalar()
    if api is None:
        print("simsql.lists not found: the partition systems are skipped", file=sys.stderr, flush=True)
    vectors: VectorSet | None = None
    texts: TextSet | None = None
    if "vectors" in args.sets or "inserts" in args.sets:
        sample_from = vectors_for(args).vectors
        sample = np.random.default_rng(2).choice(len(sample_from), size=min(FIT_SAMPLE, len(sample_from)), replace=False)
        fitted = simsql.VectorFingerprinter.fit(sample_from[np.sort(sample)])
        for model in (VectorDoc, VectorLists, VectorPlain):
            model.__simhash_fingerprinter__ = fitted  # type: ignore[attr-defined]
    if "text" in args.sets:
        texts = run_text(engine, args, api, report)
    if "vectors" in args.sets:
        vectors = run_vectors(engine, args, api, report)
    if "inserts" in args.sets and api is not None:
        texts = (texts or text_set(args.rows, args.queries, documents=args.documents)) if "text" in args.insert_kinds else None
        vectors = (vectors or vectors_for(args)) if "vectors" in args.insert_kinds else None
        base = min(args.insert_base, args.rows - args.insert_rows)
        report["inserts"] = insert_phase(engine, api, texts, vectors, base, args.insert_rows, args.batch)
    if "refit" in args.sets and api is not None:
        from .lists_refit import refit_under_writers

        texts = texts or text_set(args.rows, args.queries, documents=args.documents)
        report["refit"] = refit_under_writers(engine, args.url, api, texts, args.rows, TextDoc, writer_pause=args.refit_writer_pause)
    report["load_average_end"] = os.getloadavg()
    if not args.keep:
        ListsBase.metadata.drop_all(engine)
        load.drop_pgvector(engine)
    engine.dispose()
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lists", description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--held-out", type=int, default=200, help="vectors held out of the stored rows as queries (--queries of them asked)")
    parser.add_argument("--sets", default="text,vectors,inserts,refit", help="comma-separated: text, vectors, inserts, refit")
    parser.add_argument("--documents", type=int, default=None, help="articles from the first N man pages of each language only (smoke runs; default: all)")
    parser.add_argument("--refit-writer-pause", type=float, default=0.0, help="seconds each refit writer waits between commits (0: as fast as it can)")
    parser.add_argument("--lists", default="", help="list counts to refit the text table with after the default (comma-separated)")
    parser.add_argument("--text-probes", default=",".join(map(str, TEXT_PROBES)))
    parser.add_argument("--vector-probes", default=",".join(map(str, VECTOR_PROBES)))
    parser.add_argument("--vector-candidates", default=",".join(map(str, VECTOR_CANDIDATES)))
    parser.add_argument("--by-hand", default="", help=f"probes of the diagnostic '{BY_HAND}' systems (PostgreSQL; comma-separated)")
    parser.add_argument("--insert-base", type=int, default=100_000, help="rows in each insert-cost table before the inserts")
    parser.add_argument("--insert-rows", type=int, default=5_000)
    parser.add_argument("--batch", type=int, default=100, help="rows per ORM insert (one commit)")
    parser.add_argument("--insert-kinds", default="text,vectors", help="the tables the inserts set times (comma-separated: text, vectors)")
    parser.add_argument("--no-pgvector", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="tables left by a --keep run with --rows rows are not loaded again")
    parser.add_argument("--pgvector-report", default=None, help="with --reuse: a JSON file of the pgvector build (times, sizes) to copy in")
    parser.add_argument("--keep", action="store_true", help="leave the tables (for --reuse)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    args.sets, args.insert_kinds = args.sets.split(","), args.insert_kinds.split(",")
    ints = lambda value: [int(x) for x in value.split(",") if x]  # noqa: E731
    args.lists, args.text_probes, args.vector_probes, args.vector_candidates, args.by_hand = (
        ints(args.lists), ints(args.text_probes), ints(args.vector_probes), ints(args.vector_candidates), ints(args.by_hand)
    )  # fmt: skip
    args.insert_rows = min(args.insert_rows, args.rows // 10)
    if args.queries > args.held_out:
        parser.error("--queries must be at most --held-out")
    report = run(args)
    out = args.out or RESULTS / f"partitions-{report['server']}-{args.rows}.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
