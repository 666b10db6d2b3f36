"""pgvector's ``vector`` column as the source of vector signatures on PostgreSQL (issue 25): the
ORM signs it, ``simsql.backfill`` reads it (as the text ``[1,2,3]`` the server sends when the
pgvector Python package is not registered on the connection), the trigger's digest follows it,
and ``most_similar_vectors`` re-ranks on it. Skipped where the extension is not installed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, Integer, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.types import UserDefinedType

import simsql
import simsql.store
from simsql import VectorFingerprinter
from simsql.schema.names import metadata as simsql_metadata

DIMENSIONS = 12
SIGNER = VectorFingerprinter(DIMENSIONS, seed=21)


class PgVector(UserDefinedType[Any]):
    """pgvector's ``vector(n)`` as the pgvector package's ``Vector`` declares it, without the
    package: the driver sends and returns its text form."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return f"vector({DIMENSIONS})"

    def bind_processor(self, dialect: Any) -> Any:
        def process(value: Any) -> Any:
            return None if value is None else "[" + ",".join(repr(float(x)) for x in value) + "]"

        return process


class Base(DeclarativeBase):
    pass


class Post(simsql.SimHashMixin, Base):
    __tablename__ = "pgv_posts"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(PgVector(), nullable=True)


class WidePost(simsql.WideSimHashMixin, Base):
    __tablename__ = "pgv_wide_posts"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(PgVector(), nullable=True)


@pytest.fixture
def pg(engine: Engine) -> Engine:
    """``engine`` with pgvector's ``vector`` type visible, or the test skipped saying why. The
    database is the session's own (tests/conftest.py), so the extension is created in it when the
    server has pgvector's package."""
    with engine.connect() as connection:
        available = connection.execute(text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).scalar()
    if available is None:
        pytest.skip("pgvector is not installed on the test server (its package, e.g. postgresql-15-pgvector)")
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public"))
    except DBAPIError as error:
        pytest.skip(f"pgvector could not be created in the test database: {str(error.orig).splitlines()[0]}")
    simsql_metadata.create_all(engine)
    Base.metadata.create_all(engine)
    return engine


def _vectors(n: int, seed: int = 6) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, DIMENSIONS)).astype(np.float32).astype(np.float64)


def _raw_load(engine: Engine, table: str, vectors: list[Any]) -> None:
    with engine.begin() as connection:
        connection.execute(
            text(f"INSERT INTO {table} (id, embedding) VALUES (:id, CAST(:v AS vector))"),
            [{"id": i + 1, "v": None if v is None else str([float(x) for x in v])} for i, v in enumerate(vectors)],
        )


def _signatures(engine: Engine, table: str) -> dict[int, int | None]:
    with engine.connect() as connection:
        return {k: None if s is None else s % 2**64 for k, s in connection.execute(text(f"SELECT id, simhash FROM {table} ORDER BY id"))}


def test_backfill_signs_a_pgvector_column(pg: Engine) -> None:
    vectors = _vectors(15)
    loaded: list[Any] = list(vectors)
    loaded[4] = None
    _raw_load(pg, "pgv_posts", loaded)
    result = simsql.backfill(pg, Post, batch_size=4, workers=0)
    assert (result.rows_read, result.rows_fingerprinted) == (14, 14)
    signed = _signatures(pg, "pgv_posts")
    assert signed.pop(5) is None
    assert list(signed.values()) == SIGNER.fingerprint_many(np.delete(vectors, 4, axis=0))
    status = next(s for s in simsql.status(pg) if s.table == "pgv_posts")
    assert (status.rows_missing, status.rows_stale, status.rows_fingerprinted) == (0, 0, 14)
    with pg.begin() as connection:  # a raw write of the vector drops its signature (the trigger's digest)
        connection.execute(text("UPDATE pgv_posts SET embedding = CAST(:v AS vector) WHERE id = 2"), {"v": str([1.0] * DIMENSIONS)})
    assert _signatures(pg, "pgv_posts")[2] is None
    simsql.backfill(pg, Post, batch_size=4, workers=0)
    assert _signatures(pg, "pgv_posts")[2] == SIGNER.fingerprint([1.0] * DIMENSIONS)


def test_backfill_writes_the_wide_words_of_a_pgvector_column(pg: Engine) -> None:
    vectors = _vectors(9, seed=7)
    _raw_load(pg, "pgv_wide_posts", list(vectors))
    simsql.backfill(pg, WidePost, batch_size=4, workers=0)
    names = simsql.store.binding_for(WidePost).names
    with pg.connect() as connection:
        rows = connection.execute(select(WidePost.id, *[getattr(WidePost, w) for w in names.signature_words]).order_by(WidePost.id)).all()
    assert [tuple(w % 2**64 for w in row[1:]) for row in rows] == [s.words for s in SIGNER.signatures_many(vectors)]


def test_the_orm_signs_a_pgvector_column_and_reranks_on_it(pg: Engine) -> None:
    vectors = _vectors(20, seed=8)
    with Session(pg) as session:
        session.add_all(Post(id=i + 1, embedding=[float(x) for x in v]) for i, v in enumerate(vectors))
        session.commit()
        assert list(_signatures(pg, "pgv_posts").values()) == SIGNER.fingerprint_many(vectors)
        query = vectors[3] + 0.01
        found = simsql.most_similar_vectors(session, select(Post), query, limit=3, candidates=20)
    cosines = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
    assert [m.row.id for m in found] == [int(i) + 1 for i in np.argsort(-cosines)[:3]]
