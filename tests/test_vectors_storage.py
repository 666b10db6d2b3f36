"""Vector signatures stored by the mixin on every server (PostgreSQL ``double precision[]`` /
``real[]``, MySQL/MariaDB JSON / float32 BLOB), and the unchanged queries over them, checked
against numpy's exact Hamming ranking of the same signatures."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sqlalchemy import JSON, REAL, Double, Engine, Integer, LargeBinary, String, func, select, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.queries
from simsql import Fingerprinter, SimHashMixin, VectorFingerprinter
from simsql.bits import hamming
from simsql.errors import ConfigMismatch
from simsql.schema.names import metadata as simsql_metadata
from simsql.store import registry

DIMENSIONS = 24
SIGNER = VectorFingerprinter(DIMENSIONS, seed=7)
FLOAT64_VECTOR = ARRAY(Double()).with_variant(JSON(), "mysql", "mariadb")
FLOAT32_VECTOR = ARRAY(REAL()).with_variant(LargeBinary(), "mysql", "mariadb")


class Base(DeclarativeBase):
    pass


class Doc(SimHashMixin, Base):
    """double precision[] on PostgreSQL, JSON on MySQL/MariaDB."""

    __tablename__ = "vec_docs"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(FLOAT64_VECTOR, nullable=True)


class Doc32(SimHashMixin, Base):
    """real[] on PostgreSQL, a float32 BLOB on MySQL/MariaDB."""

    __tablename__ = "vec_docs32"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(FLOAT32_VECTOR, nullable=True)


class Note(SimHashMixin, Base):
    """A text model beside them."""

    __tablename__ = "vec_notes"
    __simhash_source__ = "body"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    body: Mapped[str] = mapped_column(String(200))


def _is_mysql(engine: Engine) -> bool:
    return engine.dialect.name in ("mysql", "mariadb")


def _vectors(n: int, seed: int = 1) -> np.ndarray:
    """``n`` vectors in 12 clusters, and every tenth a near copy of the one before (so there
    are near-duplicates to find), rounded to float32 so both column types hold them exactly."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(12, DIMENSIONS))
    vectors = centres[rng.integers(0, 12, n)] + 0.6 * rng.normal(size=(n, DIMENSIONS))
    vectors[9::10] = vectors[8::10][: len(vectors[9::10])] + 0.001 * rng.normal(size=(len(vectors[9::10]), DIMENSIONS))
    return vectors.astype(np.float32).astype(np.float64)


def _stored(engine: Engine, model: type, vector: np.ndarray) -> Any:
    if model is Doc32 and _is_mysql(engine):
        return vector.astype("<f4").tobytes()
    return [float(x) for x in vector]


def _load(engine: Engine, model: type, vectors: np.ndarray) -> None:
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        session.add_all(model(id=i + 1, embedding=_stored(engine, model, v)) for i, v in enumerate(vectors))
        session.commit()


def _signatures(engine: Engine, model: type) -> dict[int, int | None]:
    with Session(engine) as session:
        return {row.id: row.simhash for row in session.execute(select(model.id, model.simhash))}


@pytest.mark.parametrize("model", [Doc, Doc32], ids=["float64", "float32"])
def test_rows_are_signed_on_insert_and_the_queries_rank_like_numpy(any_engine: Engine, model: type) -> None:
    vectors = _vectors(300)
    _load(any_engine, model, vectors)
    expected = SIGNER.fingerprint_many(vectors)
    assert _signatures(any_engine, model) == {i + 1: fp for i, fp in enumerate(expected)}

    rng = np.random.default_rng(2)
    with Session(any_engine) as session:
        for query in [rng.normal(size=DIMENSIONS), vectors[17] + 0.05 * rng.normal(size=DIMENSIONS)]:
            target = SIGNER.fingerprint(query)
            exact = sorted(hamming(target, fp) for fp in expected)
            rows = session.execute(simsql.most_similar(select(model), list(query), limit=10)).all()
            assert [row.distance for row in rows] == exact[:10]
            assert all(hamming(target, expected[row[0].id - 1]) == row.distance for row in rows)
            array_rows = session.execute(simsql.most_similar(select(model), query, limit=10)).all()
            assert [row.distance for row in array_rows] == exact[:10]
            within = session.scalars(select(model.id).where(simsql.similar_to(model, query, max_distance=8))).all()
            assert sorted(within) == [i + 1 for i, fp in enumerate(expected) if hamming(target, fp) <= 8]


def test_near_duplicates_and_groups_match_brute_force(any_engine: Engine) -> None:
    vectors = _vectors(200)
    _load(any_engine, Doc, vectors)
    fps = SIGNER.fingerprint_many(vectors)
    brute = sorted(
        (a + 1, b + 1) for a in range(len(fps)) for b in range(a + 1, len(fps)) if hamming(fps[a], fps[b]) <= 3
    )
    assert len(brute) >= 15  # the planted near copies
    with Session(any_engine) as session:
        pairs = simsql.near_duplicates(session, Doc, max_distance=3)
        assert sorted((p.a, p.b) for p in pairs) == brute
        groups = simsql.duplicate_groups(session, Doc, max_distance=3)
        assert sum(len(g) for g in groups) == len({k for pair in brute for k in pair})
        row = session.get(Doc, 10)
        assert row is not None
        nearest = session.execute(simsql.most_similar(select(Doc), row, limit=1)).one()
        assert nearest.distance == min(hamming(fps[9], fp) for i, fp in enumerate(fps) if i != 9)
        many = simsql.queries.most_similar_many(session, Doc, [vectors[9], vectors[19]], limit=5, max_distance=3)
        for index, found in zip((9, 19), many):
            within = sorted((hamming(fps[index], fp), i + 1) for i, fp in enumerate(fps) if hamming(fps[index], fp) <= 3)
            assert sorted((d, k) for k, d in found) == within[:5]


def test_updates_resign_and_raw_writes_drop_a_stale_signature(any_engine: Engine) -> None:
    vectors = _vectors(3)
    _load(any_engine, Doc, vectors)
    with Session(any_engine) as session:
        row = session.get(Doc, 1)
        assert row is not None
        row.embedding = [float(x) for x in vectors[2] * -1.0]
        session.commit()
    assert _signatures(any_engine, Doc)[1] == SIGNER.fingerprint(vectors[2] * -1.0)
    with Session(any_engine) as session:  # blocks follow the new signature: an exact match finds it
        found = session.scalars(select(Doc.id).where(simsql.similar_to(Doc, vectors[2] * -1.0, max_distance=0))).all()
        assert found == [1]
    with any_engine.begin() as connection:  # a writer that bypasses the ORM changes the vector
        connection.execute(update(Doc.__table__).where(Doc.__table__.c.id == 2).values(embedding=[1.0] * DIMENSIONS))
    assert _signatures(any_engine, Doc)[2] is None
    with Session(any_engine) as session:  # NULL vector: NULL signature, never a match
        session.add(Doc(id=9, embedding=None))
        session.commit()
    assert _signatures(any_engine, Doc)[9] is None


@pytest.mark.parametrize(
    ("embedding", "error", "message"),
    [
        ([0.0] * DIMENSIONS, ValueError, "all zeros"),
        ([1.0] * (DIMENSIONS - 1), ValueError, f"expected vectors of {DIMENSIONS} numbers"),
        ([float("nan")] + [1.0] * (DIMENSIONS - 1), ValueError, "NaN or infinity"),
        (["x"] * DIMENSIONS, TypeError, "real numbers"),
    ],
)
def test_bad_vectors_are_refused_and_nothing_is_written(
    any_engine: Engine, embedding: list[Any], error: type[Exception], message: str
) -> None:
    Base.metadata.create_all(any_engine)
    with Session(any_engine) as session:
        session.add(Doc(id=1, embedding=embedding))
        with pytest.raises(error, match=message):
            session.commit()
    with any_engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(Doc.__table__)) == 0


def test_text_targets_and_other_configurations_are_refused(any_engine: Engine) -> None:
    _load(any_engine, Doc, _vectors(5))
    with Session(any_engine) as session:
        with pytest.raises(TypeError, match="fingerprinted from vectors"):
            simsql.most_similar(select(Doc), "some text")
        with pytest.raises(ValueError, match=f"expected vectors of {DIMENSIONS} numbers"):
            simsql.most_similar(select(Doc), [1.0, 2.0])



@pytest.mark.parametrize(
    "recorded",
    [VectorFingerprinter(DIMENSIONS, seed=8), VectorFingerprinter(DIMENSIONS, seed=7, center=[0.1] * DIMENSIONS), Fingerprinter()],
    ids=["other seed", "with a centre", "text"],
)
def test_a_table_recorded_with_another_configuration_is_refused(any_engine: Engine, recorded: object) -> None:
    simsql_metadata.create_all(any_engine)
    Base.metadata.create_all(any_engine)
    with any_engine.begin() as connection:
        registry.remove(connection, "vec_docs")
        registry.record(connection, "vec_docs", None, recorded, ("embedding",), "columns")  # type: ignore[arg-type]
    with Session(any_engine) as session:
        session.add(Doc(id=1, embedding=[1.0] * DIMENSIONS))
        with pytest.raises(ConfigMismatch, match="vec_docs"):
            session.commit()
        session.rollback()
        with pytest.raises(ConfigMismatch):
            session.execute(simsql.most_similar(select(Doc), [1.0] * DIMENSIONS)).all()
    with any_engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(Doc.__table__)) == 0


def _reranked(vectors: np.ndarray, query: np.ndarray, limit: int, candidates: int, skip: int | None = None) -> list[tuple[int, int]]:
    """numpy's answer: the ``candidates`` nearest by (distance, key), ordered by exact cosine
    (then distance, then key); (key, distance) pairs."""
    target = SIGNER.fingerprint(query)
    nearest = sorted((hamming(target, fp), i + 1) for i, fp in enumerate(SIGNER.fingerprint_many(vectors)) if i + 1 != skip)
    chosen = nearest[:candidates]
    cosine = {key: float(vectors[key - 1] @ query / np.linalg.norm(vectors[key - 1]) / np.linalg.norm(query)) for _, key in chosen}
    ranked = sorted(chosen, key=lambda pair: (-cosine[pair[1]], pair[0], pair[1]))
    return [(key, distance) for distance, key in ranked[:limit]]


@pytest.mark.parametrize("model", [Doc, Doc32], ids=["float64", "float32"])
def test_most_similar_vectors_reranks_the_signature_candidates_by_exact_cosine(any_engine: Engine, model: type) -> None:
    vectors = _vectors(300)
    _load(any_engine, model, vectors)
    rng = np.random.default_rng(6)
    with Session(any_engine) as session:
        for query in [rng.normal(size=DIMENSIONS), vectors[40] + 0.3 * rng.normal(size=DIMENSIONS)]:
            for candidates in (5, 40):
                found = simsql.most_similar_vectors(session, select(model), query, limit=5, candidates=candidates)
                assert [(m.row.id, m.distance) for m in found] == _reranked(vectors, query, 5, candidates)
                assert all(m.cosine == pytest.approx(_reranked_cosine(vectors, m.row.id, query)) for m in found)
            # every row a candidate: the exact cosine top-5
            everything = simsql.most_similar_vectors(session, select(model), list(query), limit=5, candidates=300)
            exact = np.argsort(-(vectors @ query) / np.linalg.norm(vectors, axis=1), kind="stable")[:5] + 1
            assert [m.row.id for m in everything] == exact.tolist()
        row = session.get(model, 41)
        assert row is not None
        by_row = simsql.most_similar_vectors(session, select(model).where(model.id <= 200), row, limit=3, candidates=20)
        assert 41 not in [m.row.id for m in by_row]
        assert [(m.row.id, m.distance) for m in by_row] == _reranked(vectors[:200], vectors[40], 3, 20, skip=41)


def _reranked_cosine(vectors: np.ndarray, key: int, query: np.ndarray) -> float:
    return float(vectors[key - 1] @ query / np.linalg.norm(vectors[key - 1]) / np.linalg.norm(query))


def test_most_similar_vectors_refuses_text_models_and_bad_arguments(any_engine: Engine) -> None:
    _load(any_engine, Doc, _vectors(5))

    with Session(any_engine) as session:
        with pytest.raises(TypeError, match="fingerprinted from text"):
            simsql.most_similar_vectors(session, select(Note), 12345)
        with pytest.raises(ValueError, match="candidates must be at least limit"):
            simsql.most_similar_vectors(session, select(Doc), [1.0] * DIMENSIONS, limit=10, candidates=5)
        with pytest.raises(TypeError, match="fingerprinted from vectors"):
            simsql.most_similar_vectors(session, select(Doc), "text")
        with pytest.raises(ValueError, match="limit"):
            simsql.most_similar_vectors(session, select(Doc), [1.0] * DIMENSIONS, limit=0)


def test_stored_vectors_read_in_one_call_equal_those_read_one_by_one() -> None:
    """``vectors_of`` (the re-ranking's read of every candidate at once: BLOBs joined, JSON
    texts parsed together) gives what ``vector_of`` gives row by row, and a bad value still gets
    ``vector_of``'s error naming the column."""
    import json

    from simsql.text.vectors import vector_of, vectors_of

    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(5, 6)).astype(np.float32)
    one_by_one = np.stack([np.asarray(vector_of(v.astype("<f4").tobytes()), dtype=np.float64) for v in vectors])
    assert np.array_equal(vectors_of([v.astype("<f4").tobytes() for v in vectors]), one_by_one)
    assert np.array_equal(vectors_of([bytearray(v.astype("<f4").tobytes()) for v in vectors]), one_by_one)
    texts = [json.dumps(v.astype(np.float64).tolist()) for v in vectors]
    assert np.array_equal(vectors_of(texts), np.stack([np.asarray(json.loads(t)) for t in texts]))
    lists = [v.astype(np.float64).tolist() for v in vectors]
    assert np.array_equal(vectors_of(lists), np.array(lists))
    with pytest.raises(ValueError, match="Doc.embedding holds 7 bytes, not a whole number of float32 values"):
        vectors_of([vectors[0].tobytes(), b"\x00" * 7], "Doc.embedding")
    with pytest.raises(TypeError, match="Doc.embedding holds text that is not a JSON array of numbers"):
        vectors_of([texts[0], "[1, 2"], "Doc.embedding")
