"""pgvector beside simsql's vector signatures (issue 25), for :mod:`benchmarks.vectors`.

The same vectors loaded into a pgvector table ``bench_vectors_pgv (id, embedding vector(d))``
with two HNSW indexes: ``embedding vector_cosine_ops`` and, on an expression,
``(binary_quantize(embedding)::bit(d)) bit_hamming_ops``. The systems, each on its own
connection so its ``hnsw.ef_search`` stays set (no ``SET`` inside the timed query):

- ``pgvector exact <=> scan``: ``ORDER BY embedding <=> q`` with the distance written as
  ``(embedding <=> q) + 0`` so the planner cannot use the index (the exact answer, every row read);
- ``pgvector HNSW ef_search=E``: ``ORDER BY embedding <=> q LIMIT 10`` through the index;
- ``pgvector binary_quantize HNSW top-N + rerank <=>``: the ``N`` nearest by the Hamming
  distance of the sign bits (HNSW on the bits, ``ef_search = N`` so the index yields ``N``
  rows), re-ranked by ``<=>`` in SQL.

pgvector is built and installed outside this repository (``CREATE EXTENSION vector`` in the
benchmark's database); without it the systems are skipped with a message on stderr.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np
from sqlalchemy import Connection, text
from sqlalchemy.engine import Engine

TABLE = "bench_vectors_pgv"
HNSW_EF_SEARCH = (40, 200)
"""``hnsw.ef_search`` of the plain HNSW searches: pgvector's default (40), and a wider one."""
BINARY_CANDIDATES = (200, 1000)
"""Rows taken by the Hamming distance of ``binary_quantize`` before re-ranking by ``<=>``."""
BUILD_MEMORY = "2GB"
"""``maintenance_work_mem`` of the index builds (the graph must fit or the build slows a lot)."""


def available(engine: Engine) -> str | None:
    """None when pgvector can be used in ``engine``'s database, else why not (the benchmark prints it)."""
    if engine.dialect.name != "postgresql":
        return f"pgvector systems skipped: the server is {engine.dialect.name}, not PostgreSQL"
    with engine.begin() as connection:
        if connection.exec_driver_sql("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").first() is None:
            return "pgvector systems skipped: the extension 'vector' is not installed on this server (CREATE EXTENSION vector needs it built)"
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS vector")
    except Exception as error:  # noqa: BLE001 - the reason is printed, the run goes on without pgvector
        return f"pgvector systems skipped: CREATE EXTENSION vector failed ({str(error).splitlines()[0]})"
    return None


def literal(vector: np.ndarray) -> str:
    """pgvector's text form of ``vector``: ``[x1,x2,...]`` (float32 values, shortest repr)."""
    return "[" + ",".join(map(repr, vector.astype(np.float32).tolist())) + "]"


def load(engine: Engine, vectors: np.ndarray) -> dict[str, float]:
    """The table filled by COPY (ids 1..n as in simsql's tables), then the two HNSW indexes built
    one after the other; seconds of each step."""
    d = vectors.shape[1]
    seconds: dict[str, float] = {}
    with engine.begin() as connection:
        connection.exec_driver_sql(f"DROP TABLE IF EXISTS {TABLE}")
        connection.exec_driver_sql(f"CREATE TABLE {TABLE} (id integer PRIMARY KEY, embedding vector({d}) NOT NULL)")
        started = time.perf_counter()
        cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
        with cursor.copy(f"COPY {TABLE} (id, embedding) FROM STDIN") as copy:
            for i, v in enumerate(vectors):
                copy.write_row((i + 1, literal(v)))
        seconds["copy"] = time.perf_counter() - started
    statements = {
        "hnsw_vector": f"CREATE INDEX bench_pgv_hnsw ON {TABLE} USING hnsw (embedding vector_cosine_ops)",
        "hnsw_binary": f"CREATE INDEX bench_pgv_hnsw_bits ON {TABLE} USING hnsw ((binary_quantize(embedding)::bit({d})) bit_hamming_ops)",
    }
    for name, statement in statements.items():
        with engine.begin() as connection:
            connection.exec_driver_sql(f"SET LOCAL maintenance_work_mem = '{BUILD_MEMORY}'")
            started = time.perf_counter()
            connection.exec_driver_sql(statement)
            seconds[name] = time.perf_counter() - started
            print(f"pgvector: {name} built in {seconds[name]:.1f} s", file=sys.stderr, flush=True)
    with engine.begin() as connection:
        connection.exec_driver_sql(f"ANALYZE {TABLE}")
    return {k: round(v, 1) for k, v in seconds.items()}


def drop(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.exec_driver_sql(f"DROP TABLE IF EXISTS {TABLE}")


def _searcher(connection: Connection, sql: str) -> Callable[[np.ndarray], list[int]]:
    statement = text(sql)
    return lambda q: [row[0] for row in connection.execute(statement, {"q": literal(q)})]


def systems(engine: Engine, dimensions: int, top: int) -> tuple[dict[str, Callable[[np.ndarray], list[int]]], list[Connection]]:
    """The pgvector searches by name, and the connections they hold (the caller closes them)."""
    d = dimensions
    found: dict[str, Callable[[np.ndarray], list[int]]] = {}
    held: list[Connection] = []

    def connect(ef_search: int | None) -> Connection:
        connection = engine.connect()
        if ef_search is not None:
            connection.exec_driver_sql(f"SET hnsw.ef_search = {ef_search}")
        connection.commit()
        held.append(connection)
        return connection

    exact = f"SELECT id FROM {TABLE} ORDER BY (embedding <=> CAST(:q AS vector({d}))) + 0, id LIMIT {top}"
    found["pgvector exact <=> scan"] = _searcher(connect(None), exact)
    for ef in HNSW_EF_SEARCH:
        indexed = f"SELECT id FROM {TABLE} ORDER BY embedding <=> CAST(:q AS vector({d})) LIMIT {top}"
        found[f"pgvector HNSW vector_cosine_ops ef_search={ef}"] = _searcher(connect(ef), indexed)
    for n in BINARY_CANDIDATES:
        reranked = (
            f"SELECT id FROM (SELECT id, embedding FROM {TABLE} "
            f"ORDER BY binary_quantize(embedding)::bit({d}) <~> binary_quantize(CAST(:q AS vector({d})))::bit({d}) LIMIT {n}) c "
            f"ORDER BY embedding <=> CAST(:q AS vector({d})), id LIMIT {top}"
        )
        found[f"pgvector binary_quantize HNSW top-{n} + rerank <=>"] = _searcher(connect(max(n, 40)), reranked)
    return found, held


def plans(engine: Engine, query: np.ndarray, dimensions: int, top: int) -> dict[str, str]:
    """The first line of each search's plan: that the exact scan reads the table and the others the index."""
    d = dimensions
    shapes = {
        "exact": f"SELECT id FROM {TABLE} ORDER BY (embedding <=> CAST(:q AS vector({d}))) + 0, id LIMIT {top}",
        "hnsw": f"SELECT id FROM {TABLE} ORDER BY embedding <=> CAST(:q AS vector({d})) LIMIT {top}",
        "binary": f"SELECT id FROM {TABLE} ORDER BY binary_quantize(embedding)::bit({d}) <~> binary_quantize(CAST(:q AS vector({d})))::bit({d}) LIMIT 200",
    }
    found = {}
    with engine.connect() as connection:
        for name, sql in shapes.items():
            lines = [row[0] for row in connection.execute(text("EXPLAIN " + sql), {"q": literal(query)})]
            found[name] = " / ".join(line.strip() for line in lines if "Scan" in line)
    return found


def explain_analyze(engine: Engine, sql: str, runs: int = 5, setting: str | None = None) -> dict[str, object]:
    """What the server itself spends on ``sql`` (PostgreSQL, after ``setting``, a ``SET``): the median ``Execution Time`` of
    ``EXPLAIN (ANALYZE, BUFFERS)`` over ``runs`` runs (no network, no driver, no Python), the
    plan's scan nodes (what is read: the table, which index) and the buffers touched."""
    times, plan = [], None
    with engine.connect() as connection:
        if setting is not None:
            connection.exec_driver_sql(setting)
        for _ in range(runs):
            found = connection.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql.replace("%", "%%")).scalar()
            times.append(found[0]["Execution Time"])
            plan = found[0]["Plan"]
    nodes: list[str] = []

    def walk(node: dict[str, object]) -> None:
        if "Scan" in str(node["Node Type"]):
            where = node.get("Index Name") or node.get("Relation Name") or ""
            nodes.append(f"{node['Node Type']} {where} (rows {node.get('Actual Rows')} x{node.get('Actual Loops')})")
        for child in node.get("Plans", []):  # type: ignore[union-attr]
            walk(child)

    assert plan is not None
    walk(plan)
    return {
        "execution_ms_p50": round(sorted(times)[len(times) // 2], 2),
        "scans": nodes,
        "shared_buffers_hit_read": [plan.get("Shared Hit Blocks"), plan.get("Shared Read Blocks")],
    }


def searches_sql(dimensions: int, top: int, query: np.ndarray) -> dict[str, str]:
    """pgvector's searches with the query written in (for :func:`explain_analyze`)."""
    q = f"CAST('{literal(query)}' AS vector({dimensions}))"
    d = dimensions
    return {
        "pgvector exact <=> scan": f"SELECT id FROM {TABLE} ORDER BY (embedding <=> {q}) + 0, id LIMIT {top}",
        "pgvector HNSW vector_cosine_ops ef_search=40": f"SELECT id FROM {TABLE} ORDER BY embedding <=> {q} LIMIT {top}",
        "pgvector binary_quantize HNSW top-1000 + rerank <=>": (
            f"SELECT id FROM (SELECT id, embedding FROM {TABLE} ORDER BY binary_quantize(embedding)::bit({d}) <~> "
            f"binary_quantize({q})::bit({d}) LIMIT 1000) c ORDER BY embedding <=> {q}, id LIMIT {top}"
        ),
    }


def indexed_searcher(
    connection: Connection, table: str, dimensions: int, top: int, column: str = "embedding", columns: str = "id"
) -> Callable[[np.ndarray], list[int]]:
    """pgvector's own search on ``connection`` (its ``hnsw.ef_search`` as set there): ``SELECT
    columns ... ORDER BY column <=> q LIMIT top`` through the HNSW index, keys only by default
    (issue 44's baseline); ``columns`` the first of them the key, rows as the driver returns them."""
    return _searcher(connection, f"SELECT {columns} FROM {table} ORDER BY {column} <=> CAST(:q AS vector({dimensions})) LIMIT {top}")


def exact_searcher(connection: Connection, table: str, dimensions: int, top: int, column: str = "embedding") -> Callable[[np.ndarray], list[int]]:
    """pgvector's exact answer: ``<=> + 0`` so the index cannot serve it, every row read."""
    return _searcher(connection, f"SELECT id FROM {table} ORDER BY ({column} <=> CAST(:q AS vector({dimensions}))) + 0, id LIMIT {top}")
