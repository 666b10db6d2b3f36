"""``most_similar_vectors(..., exact=True)`` is the exact cosine top-``limit`` (issue 44): checked
against numpy's brute force on a table where the signature's candidates miss neighbours, on every
server (PostgreSQL ``double precision[]`` / ``real[]``, MySQL/MariaDB JSON / float32 BLOB)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sqlalchemy import JSON, REAL, Double, Engine, Integer, LargeBinary, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
from simsql import SimHashMixin, VectorFingerprinter

DIMENSIONS = 32
SIGNER = VectorFingerprinter(DIMENSIONS, seed=11)


class Base(DeclarativeBase):
    pass


class Item(SimHashMixin, Base):
    __tablename__ = "vec_exact_items"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(ARRAY(Double()).with_variant(JSON(), "mysql", "mariadb"), nullable=True)


class Item32(SimHashMixin, Base):
    __tablename__ = "vec_exact_items32"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(ARRAY(REAL()).with_variant(LargeBinary(), "mysql", "mariadb"), nullable=True)


def _vectors(n: int, seed: int = 3) -> np.ndarray:
    """Vectors that all lean one way (as real embeddings do), where a 64-bit signature ranks
    the neighbours coarsely; float32 values so every column type holds them exactly."""
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, DIMENSIONS)) + 0.8).astype(np.float32).astype(np.float64)


def _load(engine: Engine, model: type, vectors: np.ndarray) -> None:
    Base.metadata.create_all(engine)
    mysql_blob = model is Item32 and engine.dialect.name in ("mysql", "mariadb")
    with Session(engine) as session:
        session.add_all(
            model(id=i + 1, embedding=v.astype("<f4").tobytes() if mysql_blob else [float(x) for x in v]) for i, v in enumerate(vectors)
        )
        session.commit()


def _brute_force(vectors: np.ndarray, query: np.ndarray, limit: int, keys: list[int]) -> list[int]:
    """The exact cosine top-``limit`` among ``keys`` (ties by key)."""
    cosines = {k: float(vectors[k - 1] @ query / np.linalg.norm(vectors[k - 1]) / np.linalg.norm(query)) for k in keys}
    return sorted(keys, key=lambda k: (-cosines[k], k))[:limit]


@pytest.mark.parametrize("model", [Item, Item32], ids=["float64", "float32"])
def test_exact_is_the_exact_cosine_top_k(any_engine: Engine, model: type) -> None:
    vectors = _vectors(400)
    _load(any_engine, model, vectors)
    rng = np.random.default_rng(9)
    every = list(range(1, 401))
    missed = 0
    with Session(any_engine) as session:
        for query in rng.normal(size=(4, DIMENSIONS)) + 0.8:
            truth = _brute_force(vectors, query, 10, every)
            by_signature = simsql.most_similar_vectors(session, select(model), query, limit=10, candidates=10)
            missed += len(set(truth) - {m.row.id for m in by_signature})
            found = simsql.most_similar_vectors(session, select(model), query, limit=10, candidates=10, exact=True)
            assert [m.row.id for m in found] == truth
            expected = [float(vectors[k - 1] @ query / np.linalg.norm(vectors[k - 1]) / np.linalg.norm(query)) for k in truth]
            assert [m.cosine for m in found] == pytest.approx(expected)
    assert missed > 0  # the table is one where the signature's candidates do miss neighbours


def test_exact_keeps_filters_exclusions_and_a_row_target(any_engine: Engine) -> None:
    vectors = _vectors(300, seed=4)
    _load(any_engine, Item, vectors)
    with Session(any_engine) as session:
        row = session.get(Item, 7)
        found = simsql.most_similar_vectors(session, select(Item).where(Item.id > 3), row, limit=5, exclude=[11, 12], exact=True)
    keys = [k for k in range(4, 301) if k not in (7, 11, 12)]
    assert [m.row.id for m in found] == _brute_force(vectors, vectors[6], 5, keys)
