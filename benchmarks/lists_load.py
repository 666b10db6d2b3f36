"""Loading :mod:`benchmarks.lists`' tables: simsql's (text and vectors) and pgvector's.

Bulk loads as a loader would write them, not through the ORM: the table created by the model
(its columns and indexes), the indexes dropped, the rows written (PostgreSQL: ``COPY``, binary for
vectors; MySQL/MariaDB: multi-row ``INSERT``), the indexes built again, then ``VACUUM ANALYZE`` /
``ANALYZE TABLE``. Rows carry what simsql's ORM would have written: the fingerprint (or the
vector's four signature words) and, for text, the md5 digest of the text.
"""

from __future__ import annotations

import hashlib
import sys
import time
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from sqlalchemy import Table, insert, text
from sqlalchemy.engine import Connection, Engine

import simsql
import simsql.bits

from .lists_data import TextSet

BATCH = 2_000
PGV_TABLES = {"ivfflat": "parts_pgv_ivfflat", "hnsw": "parts_pgv_hnsw"}
"""One pgvector table per index, so each search is sure to use its own (both indexes on one column
would leave the choice to the planner)."""
BUILD_MEMORY = "4GB"
"""``maintenance_work_mem`` of the pgvector index builds: HNSW's graph of 1M x 256 floats must fit
(about 1.3 GB) or the build slows by an order of magnitude."""


def _is_postgresql(engine: Engine) -> bool:
    return engine.dialect.name == "postgresql"


def _recreate(engine: Engine, table: Table) -> None:
    with engine.begin() as connection:
        table.drop(connection, checkfirst=True)
        table.create(connection)
        for index in table.indexes:
            connection.execute(text(f"DROP INDEX {connection.dialect.identifier_preparer.quote(str(index.name))}"
                                    + ("" if _is_postgresql(engine) else f" ON {table.name}")))


def _finish(engine: Engine, table: Table) -> dict[str, float]:
    """The model's indexes built again, then the statistics: seconds of each."""
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    with engine.begin() as connection:
        for index in table.indexes:
            index.create(connection)
    seconds["indexes"] = time.perf_counter() - started
    started = time.perf_counter()
    analyze(engine, table.name)
    seconds["analyze"] = time.perf_counter() - started
    if _is_postgresql(engine):  # an index-only scan needs the visibility map set: a long transaction elsewhere leaves it unset
        with engine.connect() as connection:
            visible, pages = connection.exec_driver_sql(f"SELECT relallvisible, relpages FROM pg_class WHERE oid = '{table.name}'::regclass").one()
        seconds["all_visible_share"] = visible / max(pages, 1)
    return seconds


def analyze(engine: Engine, name: str) -> None:
    with engine.connect() as connection:
        if _is_postgresql(engine):
            connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(f"VACUUM ANALYZE {name}")
        else:
            connection.exec_driver_sql(f"ANALYZE TABLE {name}")
            connection.commit()


def digest(body: str) -> uuid.UUID:
    """md5 of the text as simsql stores it (``<prefix>_src``, a uuid)."""
    return uuid.UUID(hashlib.md5(body.encode("utf-8", "surrogatepass")).hexdigest())


def text_rows(data: TextSet, ids: Iterable[int]) -> Iterator[tuple[int, int, uuid.UUID, str]]:
    """``(id, signed fingerprint, digest, text)`` of the stored articles ``ids`` (1-based)."""
    from . import scale

    for key in ids:
        body = scale.article_text(data.paragraphs, data.members[key - 1])
        yield key, simsql.bits.to_signed(int(data.fingerprints[key - 1])), digest(body), body


def load_text(engine: Engine, table: Table, data: TextSet, rows: int, prefix: str = "simhash") -> dict[str, float]:
    """The first ``rows`` articles, their text in the row; seconds of each step."""
    _recreate(engine, table)
    started = time.perf_counter()
    columns = ("id", prefix, f"{prefix}_src", "body")
    if _is_postgresql(engine):
        with engine.begin() as connection:
            raw: Any = connection.connection.driver_connection
            with raw.cursor().copy(f"COPY {table.name} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in text_rows(data, range(1, rows + 1)):
                    copy.write_row(row)
    else:
        unsigned = ((k, simsql.bits.to_unsigned(f), d, b) for k, f, d, b in text_rows(data, range(1, rows + 1)))  # the column type's own form
        _insert_batches(engine, table, (dict(zip(columns, row)) for row in unsigned))
    seconds = {"rows": time.perf_counter() - started}
    return seconds | _finish(engine, table)


def _insert_batches(engine: Engine, table: Table, rows: Iterable[dict[str, Any]], batch: int = 500) -> None:
    pending: list[dict[str, Any]] = []
    with engine.begin() as connection:
        for row in rows:
            pending.append(row)
            if len(pending) == batch:
                connection.execute(insert(table), pending)
                pending = []
        if pending:
            connection.execute(insert(table), pending)


def _binary_copy(connection: Connection, statement: str, block: np.ndarray) -> None:
    """``COPY ... FROM STDIN (FORMAT BINARY)`` of a numpy structured array laid out as the
    format's tuples (each field preceded by its int32 length)."""
    raw: Any = connection.connection.driver_connection
    with raw.cursor().copy(statement + " FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8)
        copy.write(block.tobytes())
        copy.write(b"\xff\xff")


def load_vectors(engine: Engine, table: Table, vectors: np.ndarray, signer: simsql.VectorFingerprinter, prefix: str = "simhash") -> dict[str, float]:
    """Every vector (float32 bytes) with its 256-bit signature in the four words; seconds."""
    _recreate(engine, table)
    d = vectors.shape[1]
    words = (prefix, f"{prefix}_w1", f"{prefix}_w2", f"{prefix}_w3")
    started = time.perf_counter()
    with engine.begin() as connection:
        for lo in range(0, len(vectors), 20_000):
            batch = vectors[lo : lo + 20_000]
            signed = np.array([s.words for s in signer.signatures_many(batch)], dtype=np.uint64).view(np.int64)
            if _is_postgresql(engine):
                layout = [("n", ">i2"), ("l0", ">i4"), ("id", ">i4"), ("l1", ">i4"), ("v", "<f4", (d,))]
                layout += [item for i in range(4) for item in ((f"l{i + 2}", ">i4"), (f"w{i}", ">i8"))]
                block = np.empty(len(batch), dtype=np.dtype(layout))
                block["n"], block["l0"], block["id"], block["l1"] = 6, 4, np.arange(lo + 1, lo + len(batch) + 1), 4 * d
                block["v"] = batch
                for i in range(4):
                    block[f"l{i + 2}"], block[f"w{i}"] = 8, signed[:, i]
                _binary_copy(connection, f"COPY {table.name} (id, embedding, {', '.join(words)})", block)
            else:
                rows = [
                    {"id": lo + i + 1, "embedding": v.astype("<f4").tobytes(), **dict(zip(words, map(int, w)))}
                    for i, (v, w) in enumerate(zip(batch, signed.view(np.uint64)))
                ]
                for start in range(0, len(rows), 500):
                    connection.execute(insert(table), rows[start : start + 500])
    seconds = {"rows": time.perf_counter() - started}
    return seconds | _finish(engine, table)


def relation_bytes(engine: Engine, name: str) -> int:
    """On-disk size of a table (heap only) or an index."""
    with engine.connect() as connection:
        if _is_postgresql(engine):
            return int(connection.exec_driver_sql(f"SELECT pg_relation_size('{name}')").scalar() or 0)
        return 0


def index_sizes(engine: Engine, table: str) -> dict[str, int]:
    """Every index of ``table`` and its size in bytes (PostgreSQL: ``pg_relation_size``;
    MySQL/MariaDB: ``mysql.innodb_index_stats``' pages, after ``ANALYZE TABLE``)."""
    with engine.connect() as connection:
        if _is_postgresql(engine):
            found = connection.exec_driver_sql(
                f"SELECT indexrelid::regclass::text, pg_relation_size(indexrelid) FROM pg_index WHERE indrelid = '{table}'::regclass"
            ).all()
        else:
            found = connection.exec_driver_sql(
                "SELECT index_name, stat_value * @@innodb_page_size FROM mysql.innodb_index_stats "
                f"WHERE database_name = DATABASE() AND table_name = '{table}' AND stat_name = 'size'"
            ).all()
    return {str(name): int(size) for name, size in found}


# -- pgvector ------------------------------------------------------------------------------------


def pgvector_available(engine: Engine) -> str | None:
    """None when ``CREATE EXTENSION vector`` works here, else why not."""
    if not _is_postgresql(engine):
        return f"the server is {engine.dialect.name}, not PostgreSQL"
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS vector")
    except Exception as error:  # noqa: BLE001 - the reason is reported, the run goes on without pgvector
        return f"CREATE EXTENSION vector failed ({str(error).splitlines()[0]})"
    return None


def load_pgvector(engine: Engine, vectors: np.ndarray, ivf_lists: int, hnsw_m: int, hnsw_ef_construction: int) -> dict[str, Any]:
    """Both pgvector tables filled by binary COPY, then IVFFlat on one and HNSW on the other
    (``vector_cosine_ops``); seconds and bytes of each."""
    d = vectors.shape[1]
    layout = np.dtype([("n", ">i2"), ("l0", ">i4"), ("id", ">i4"), ("l1", ">i4"), ("dim", ">i2"), ("unused", ">i2"), ("v", ">f4", (d,))])
    report: dict[str, Any] = {}
    builds = {
        "ivfflat": f"USING ivfflat (embedding vector_cosine_ops) WITH (lists = {ivf_lists})",
        "hnsw": f"USING hnsw (embedding vector_cosine_ops) WITH (m = {hnsw_m}, ef_construction = {hnsw_ef_construction})",
    }
    for kind, table in PGV_TABLES.items():
        with engine.begin() as connection:
            connection.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")
            connection.exec_driver_sql(f"CREATE TABLE {table} (id integer PRIMARY KEY, embedding vector({d}) NOT NULL)")
            started = time.perf_counter()
            for lo in range(0, len(vectors), 50_000):
                batch = vectors[lo : lo + 50_000]
                block = np.empty(len(batch), dtype=layout)
                block["n"], block["l0"], block["id"], block["l1"] = 2, 4, np.arange(lo + 1, lo + len(batch) + 1), 4 + 4 * d
                block["dim"], block["unused"], block["v"] = d, 0, batch
                _binary_copy(connection, f"COPY {table} (id, embedding)", block)
            copy_seconds = time.perf_counter() - started
        analyze(engine, table)
        with engine.begin() as connection:
            connection.exec_driver_sql(f"SET LOCAL maintenance_work_mem = '{BUILD_MEMORY}'")
            started = time.perf_counter()
            connection.exec_driver_sql(f"CREATE INDEX {table}_index ON {table} {builds[kind]}")
            build_seconds = time.perf_counter() - started
        print(f"pgvector: {kind} built in {build_seconds:.1f} s", file=sys.stderr, flush=True)
        analyze(engine, table)
        report[kind] = {
            "copy_seconds": round(copy_seconds, 1), "build_seconds": round(build_seconds, 1),
            "index_bytes": relation_bytes(engine, f"{table}_index"), "heap_bytes": relation_bytes(engine, table),
            "statement": f"CREATE INDEX ON {table} {builds[kind]}",
        }  # fmt: skip
    return report


def loaded(engine: Engine, table: str, rows: int) -> bool:
    """``table`` there with ``rows`` rows (``--reuse``)."""
    try:
        with engine.connect() as connection:
            return connection.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar() == rows
    except Exception:  # noqa: BLE001 - missing table: not loaded
        return False


def same_text(engine: Engine, table: str, data: TextSet) -> bool:
    """The rows of ``table`` are ``data``'s (``--reuse``): the first and last stored rows hold
    its fingerprints, so a table loaded from another source or size is loaded again."""
    last = len(data.fingerprints)
    with engine.connect() as connection:
        stored = dict(connection.exec_driver_sql(f"SELECT id, simhash FROM {table} WHERE id IN (1, {last})").all())
    wanted = {1: int(data.fingerprints[0]), last: int(data.fingerprints[-1])}
    return len(stored) == 2 and all(int(stored[k]) & (2**64 - 1) == v for k, v in wanted.items())  # signed (PostgreSQL) or unsigned


def same_vector(engine: Engine, table: str, first: np.ndarray) -> bool:
    """Row 1 of simsql's vector table holds ``first`` (``--reuse``: the same data set)."""
    with engine.connect() as connection:
        stored = connection.exec_driver_sql(f"SELECT embedding FROM {table} WHERE id = 1").scalar()
    return stored is not None and bool(np.array_equal(np.frombuffer(bytes(stored), dtype="<f4"), first.astype("<f4")))


def pgvector_loaded(engine: Engine, rows: int, first: np.ndarray) -> bool:
    """Both pgvector tables there with ``rows`` rows, row 1 being ``first``, and their index (``--reuse``)."""
    try:
        with engine.connect() as connection:
            for table in PGV_TABLES.values():
                if connection.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar() != rows:
                    return False
                stored = connection.exec_driver_sql(f"SELECT embedding::text FROM {table} WHERE id = 1").scalar()
                if not np.allclose(np.array([float(x) for x in stored.strip("[]").split(",")]), first, atol=1e-6):
                    return False
                if connection.exec_driver_sql(f"SELECT to_regclass('{table}_index')").scalar() is None:
                    return False
    except Exception:  # noqa: BLE001 - missing table: not loaded
        return False
    return True


def drop_pgvector(engine: Engine) -> None:
    with engine.begin() as connection:
        for table in PGV_TABLES.values():
            connection.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")
