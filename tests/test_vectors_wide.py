"""The 256-bit signature of a vector model (``WideSimHashMixin`` with a ``VectorFingerprinter``):
the ORM writes its four words on insert and on a change of the vector, a raw write drops them,
and :func:`simsql.near_copy_vectors` finds near copies through the wide block probes, checked
against numpy's brute force over the same vectors, on every server."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sqlalchemy import JSON, Double, Engine, Integer, LargeBinary, String, func, select, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.bits
import simsql.store
from simsql import VectorFingerprinter
from simsql.errors import NotAttached

DIMENSIONS = 32
SIGNER = VectorFingerprinter(DIMENSIONS, seed=11)
VECTOR = ARRAY(Double()).with_variant(JSON(), "mysql", "mariadb")


class Base(DeclarativeBase):
    pass


class WideDoc(simsql.WideSimHashMixin, Base):
    """A vector model with the wide signature: ``double precision[]`` / JSON."""

    __tablename__ = "vec_wide_docs"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(VECTOR, nullable=True)


class WideBlobDoc(simsql.WideSimHashMixin, Base):
    """The same with float32 bytes (``bytea`` / BLOB)."""

    __tablename__ = "vec_wide_blobs"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(LargeBinary, nullable=True)


class NarrowDoc(simsql.SimHashMixin, Base):
    """A vector model without the wide signature."""

    __tablename__ = "vec_narrow_docs"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(VECTOR, nullable=True)


class WideNote(simsql.WideSimHashMixin, Base):
    """A text model with the wide signature."""

    __tablename__ = "vec_wide_notes"
    __simhash_source__ = "body"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    body: Mapped[str] = mapped_column(String(200))


def _vectors(n: int, seed: int = 3) -> np.ndarray:
    """``n`` vectors in 10 clusters; every fifth a near copy (cosine about 0.99) of the one
    before it; float32 values so both column types hold them exactly."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(10, DIMENSIONS))
    vectors = centres[rng.integers(0, 10, n)] + 0.8 * rng.normal(size=(n, DIMENSIONS))
    copies = vectors[3::5][: len(vectors[4::5])]
    vectors[4::5] = copies + 0.12 * np.linalg.norm(copies, axis=1, keepdims=True) / np.sqrt(DIMENSIONS) * rng.normal(size=copies.shape)
    return vectors.astype(np.float32).astype(np.float64)


def _stored(model: type, vector: np.ndarray) -> Any:
    return vector.astype("<f4").tobytes() if model is WideBlobDoc else [float(x) for x in vector]


def _load(engine: Engine, model: type, vectors: np.ndarray) -> None:
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        session.add_all(model(id=i + 1, embedding=_stored(model, v)) for i, v in enumerate(vectors))
        session.commit()


def _words(engine: Engine, model: type) -> dict[int, tuple[int | None, ...]]:
    names = simsql.store.binding_for(model).names
    columns = [getattr(model, name) for name in names.signature_words]
    with Session(engine) as session:
        return {row[0]: tuple(row[1:]) for row in session.execute(select(model.id, *columns))}


def _cosines(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    return (vectors @ query) / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))


@pytest.mark.parametrize("model", [WideDoc, WideBlobDoc], ids=["array", "float32 bytes"])
def test_the_orm_writes_the_four_words_of_a_vector_on_insert(any_engine: Engine, model: type) -> None:
    vectors = _vectors(60)
    _load(any_engine, model, vectors)
    expected = {i + 1: s.words for i, s in enumerate(SIGNER.signatures_many(vectors))}
    assert _words(any_engine, model) == expected
    assert all(words[0] == fp for words, fp in zip(expected.values(), SIGNER.fingerprint_many(vectors)))


def test_a_changed_vector_gets_new_words_and_a_raw_write_drops_them(any_engine: Engine) -> None:
    vectors = _vectors(3)
    _load(any_engine, WideDoc, vectors)
    turned = vectors[2] * -1.0
    with Session(any_engine) as session:
        row = session.get(WideDoc, 1)
        assert row is not None
        row.embedding = [float(x) for x in turned]
        session.commit()
    assert _words(any_engine, WideDoc)[1] == SIGNER.signatures_many([turned])[0].words
    with Session(any_engine) as session:  # the wide blocks follow: the probes find it
        found = simsql.near_copy_vectors(session, select(WideDoc), turned, limit=1, min_cosine=0.999)
        assert [m.row.id for m in found] == [1]
    with any_engine.begin() as connection:  # a writer that bypasses the ORM changes the vector
        connection.execute(update(WideDoc.__table__).where(WideDoc.__table__.c.id == 2).values(embedding=[1.0] * DIMENSIONS))
    assert _words(any_engine, WideDoc)[2] == (None, None, None, None)
    with Session(any_engine) as session:  # a NULL vector: no words, never a match
        session.add(WideDoc(id=9, embedding=None))
        session.commit()
    assert _words(any_engine, WideDoc)[9] == (None, None, None, None)


def _brute_force(vectors: np.ndarray, query: np.ndarray, limit: int, min_cosine: float, skip: int | None = None) -> list[int]:
    """numpy's answer: every row at cosine >= ``min_cosine``, highest first, ``limit`` at most."""
    cosines = _cosines(vectors, query)
    keys = [int(i) + 1 for i in np.argsort(-cosines, kind="stable") if cosines[i] >= min_cosine and int(i) + 1 != skip]
    return keys[:limit]


@pytest.mark.parametrize("model", [WideDoc, WideBlobDoc], ids=["array", "float32 bytes"])
def test_near_copy_vectors_finds_what_brute_force_finds(any_engine: Engine, model: type) -> None:
    vectors = _vectors(400)
    _load(any_engine, model, vectors)
    rng = np.random.default_rng(8)
    signatures = SIGNER.signatures_many(vectors)
    checked = 0
    with Session(any_engine) as session:
        for source in range(3, 400, 25):  # near copies of stored rows, and of rows with a stored near copy
            query = vectors[source] + 0.05 * np.linalg.norm(vectors[source]) / np.sqrt(DIMENSIONS) * rng.normal(size=DIMENSIONS)
            expected = _brute_force(vectors, query, 5, 0.97)
            found = simsql.near_copy_vectors(session, select(model), query, limit=5, min_cosine=0.97)
            assert [m.row.id for m in found] == expected
            target = SIGNER.signatures_many([query])[0]
            for match in found:
                assert match.cosine == pytest.approx(_cosines(vectors[match.row.id - 1 : match.row.id], query)[0])
                assert match.distance == simsql.bits.hamming(target.words[0], signatures[match.row.id - 1].words[0]) + sum(
                    simsql.bits.hamming(a, b) for a, b in zip(target.words[1:], signatures[match.row.id - 1].words[1:])
                )
            checked += len(expected)
        assert checked >= 16  # the copies were there to find
        # a row as the target: itself excluded, its stored vector the query; the statement's filters apply
        row = session.get(model, 4)
        assert row is not None
        by_row = simsql.near_copy_vectors(session, select(model).where(model.id < 200), row, min_cosine=0.97)
        assert [m.row.id for m in by_row] == _brute_force(vectors[:199], vectors[3], 10, 0.97, skip=4)
        assert by_row  # row 5 is its near copy
        lonely = rng.normal(size=DIMENSIONS)
        far = simsql.near_copy_vectors(session, select(model), lonely, min_cosine=0.999)
        assert [m.row.id for m in far] == _brute_force(vectors, lonely, 10, 0.999)


@pytest.mark.parametrize(
    ("target", "error", "message"),
    [
        ([1.0] * (DIMENSIONS - 1), ValueError, f"expected vectors of {DIMENSIONS} numbers"),
        ([float("nan")] + [1.0] * (DIMENSIONS - 1), ValueError, "NaN or infinity"),
        ([float("inf")] + [1.0] * (DIMENSIONS - 1), ValueError, "NaN or infinity"),
        ([0.0] * DIMENSIONS, ValueError, "all zeros"),
        (np.array(["1"] * DIMENSIONS), TypeError, "real numbers"),
        (np.ones(DIMENSIONS, dtype=complex), TypeError, "real numbers"),
        ("some text", TypeError, "vector"),
    ],
    ids=["dimension", "nan", "inf", "zero", "str dtype", "complex dtype", "text"],
)
def test_near_copy_vectors_refuses_a_bad_target(any_engine: Engine, target: Any, error: type[Exception], message: str) -> None:
    _load(any_engine, WideDoc, _vectors(5))
    with Session(any_engine) as session:
        with pytest.raises(error, match=message):
            simsql.near_copy_vectors(session, select(WideDoc), target)


def test_near_copy_vectors_refuses_bad_arguments_and_models(any_engine: Engine) -> None:
    _load(any_engine, WideDoc, _vectors(5))
    good = [1.0] * DIMENSIONS
    with Session(any_engine) as session:
        for bad in (1.5, -1.5, float("nan")):
            with pytest.raises(ValueError, match="min_cosine"):
                simsql.near_copy_vectors(session, select(WideDoc), good, min_cosine=bad)
        with pytest.raises(ValueError, match="candidates must be at least limit"):
            simsql.near_copy_vectors(session, select(WideDoc), good, limit=10, candidates=5)
        with pytest.raises(ValueError, match="limit"):
            simsql.near_copy_vectors(session, select(WideDoc), good, limit=0)
        with pytest.raises(NotAttached, match="no wide signature"):
            simsql.near_copy_vectors(session, select(NarrowDoc), good)
        with pytest.raises(TypeError, match="fingerprinted from text"):
            simsql.near_copy_vectors(session, select(WideNote), good)


@pytest.mark.parametrize(
    ("embedding", "error", "message"),
    [
        ([0.0] * DIMENSIONS, ValueError, "all zeros"),
        ([1.0] * (DIMENSIONS + 1), ValueError, f"expected vectors of {DIMENSIONS} numbers"),
        ([float("nan")] + [1.0] * (DIMENSIONS - 1), ValueError, "NaN or infinity"),
        ([float("-inf")] + [1.0] * (DIMENSIONS - 1), ValueError, "NaN or infinity"),
        (["x"] * DIMENSIONS, TypeError, "real numbers"),
        ([True] * DIMENSIONS, TypeError, "real numbers"),
    ],
    ids=["zero", "dimension", "nan", "inf", "str", "bool"],
)
def test_a_bad_vector_writes_no_row_and_no_words(any_engine: Engine, embedding: list[Any], error: type[Exception], message: str) -> None:
    Base.metadata.create_all(any_engine)
    with Session(any_engine) as session:
        session.add(WideDoc(id=1, embedding=embedding))
        with pytest.raises(error, match=message):
            session.commit()
    _load(any_engine, WideDoc, _vectors(2))
    with Session(any_engine) as session:  # an update to a bad vector: refused, the old words stay
        row = session.get(WideDoc, 1)
        assert row is not None
        row.embedding = embedding
        with pytest.raises(error, match=message):
            session.commit()
    assert _words(any_engine, WideDoc)[1] == SIGNER.signatures_many(_vectors(2)[:1])[0].words
    with any_engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(WideDoc.__table__)) == 2


def test_a_bad_float32_blob_writes_nothing(any_engine: Engine) -> None:
    Base.metadata.create_all(any_engine)
    with Session(any_engine) as session:
        session.add(WideBlobDoc(id=1, embedding=b"\x00\x00\x80?" * DIMENSIONS + b"\x00"))
        with pytest.raises(ValueError, match="not a whole number of float32"):
            session.commit()
    with any_engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(WideBlobDoc.__table__)) == 0
