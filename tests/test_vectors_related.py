"""``simsql.queries.related_vectors`` (issue 44): the nearest *stories*, near copies collapsed
into one entry and the target's own copies left out. A planted set (stories, some republished
several times a few degrees apart) checked against numpy: the stories returned are the true
top-``limit`` distinct stories, each listed once at its member nearest the target, with its
other members as copies; on every server, and ranked by pgvector where it runs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sqlalchemy import JSON, Double, Engine, Integer, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.lifecycle
from simsql.queries import related_vectors
from tests.test_vectors_hnsw import _has_pgvector

DIMENSIONS = 24
SIGNER = simsql.VectorFingerprinter(DIMENSIONS, seed=4)
VECTOR = ARRAY(Double()).with_variant(JSON(), "mysql", "mariadb")


class Base(DeclarativeBase):
    pass


class Article(simsql.SimHashMixin, Base):
    __tablename__ = "rel_articles"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(VECTOR)


class WideArticle(simsql.WideSimHashMixin, Base):
    __tablename__ = "rel_wide_articles"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(VECTOR)


def planted(stories: int = 80, seed: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """Vectors and the story of each: ``stories`` originals leaning one way (so many are
    related), every third republished 1-6 times, each copy a turn of 2-6 degrees."""
    rng = np.random.default_rng(seed)
    originals = rng.normal(size=(stories, DIMENSIONS)) + 0.9
    vectors, story = [], []
    for s, v in enumerate(originals):
        copies = int(rng.integers(1, 7)) if s % 3 == 0 else 0
        for _ in range(1 + copies):
            turn = rng.normal(size=DIMENSIONS)
            turn -= (turn @ v) / (v @ v) * v
            angle = np.radians(rng.uniform(2.0, 6.0)) if _ else 0.0
            unit = v / np.linalg.norm(v)
            vectors.append(np.cos(angle) * unit + np.sin(angle) * turn / np.linalg.norm(turn))
            story.append(s)
    return np.array(vectors).astype(np.float32).astype(np.float64), np.array(story)


def _cosines(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    return vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))


def distinct_top(vectors: np.ndarray, story: np.ndarray, query: np.ndarray, limit: int, skip_story: int | None = None) -> list[int]:
    """numpy's answer: per story its member nearest ``query`` (key), stories by that cosine."""
    cosines = _cosines(vectors, query)
    best: dict[int, int] = {}
    for i in np.argsort(-cosines, kind="stable"):
        if int(story[i]) != skip_story:
            best.setdefault(int(story[i]), int(i) + 1)
    return list(best.values())[:limit]


def _load(engine: Engine, model: type, vectors: np.ndarray) -> None:
    Base.metadata.create_all(engine, tables=[model.__table__])
    with Session(engine) as session:
        session.add_all(model(id=i + 1, embedding=v.tolist()) for i, v in enumerate(vectors))
        session.commit()


@pytest.mark.parametrize("model", [Article, WideArticle], ids=["64-bit", "256-bit"])
def test_related_lists_each_story_once_against_numpy(any_engine: Engine, model: type) -> None:
    vectors, story = planted()
    _load(any_engine, model, vectors)
    rng = np.random.default_rng(3)
    n = len(vectors)
    collapsed = 0
    with Session(any_engine) as session:
        for original in [0, 3, 9, 30]:  # stories with copies, as targets by vector
            query = vectors[int(np.flatnonzero(story == original)[0])] + 0.05 * rng.normal(size=DIMENSIONS)
            found = related_vectors(session, select(model), query, limit=10, candidates=n)
            own = [int(k) + 1 for k in np.flatnonzero(story == original)]
            assert [m.row.id for m in found] == distinct_top(vectors, story, query, 10, skip_story=original)
            for match in found:  # the copies are exactly the story's other members in the pool
                members = {int(k) + 1 for k in np.flatnonzero(story == story[match.row.id - 1])}
                assert {c.row.id for c in match.copies} <= members - {match.row.id}
                assert match.cosine == pytest.approx(float(_cosines(vectors[[match.row.id - 1]], query)[0]))
            assert not {m.row.id for m in found} & set(own)  # the target's own copies are left out
            collapsed += sum(len(m.copies) for m in found)
            plain = simsql.most_similar_vectors(session, select(model), query, limit=10, candidates=n)
            assert len({story[m.row.id - 1] for m in plain}) < 10  # without collapsing, copies crowd the list
        assert collapsed > 0  # entries did hold copies
        row = session.get(model, int(np.flatnonzero(story == 6)[0]) + 1)  # a row as the target
        by_row = related_vectors(session, select(model), row, limit=5, candidates=n)
        assert [m.row.id for m in by_row] == distinct_top(vectors, story, vectors[row.id - 1], 5, skip_story=6)


def test_related_through_pgvector(engine: Engine) -> None:
    if not _has_pgvector(engine):
        pytest.skip("pgvector is not installed on the test server (the embedded PostgreSQL ships it)")
    vectors, story = planted(seed=13)
    _load(engine, Article, vectors)
    simsql.lifecycle.add_vector_index(engine, Article)
    query = vectors[0] + 0.01
    with Session(engine) as session:
        found = related_vectors(session, select(Article), query, limit=10, ef_search=400)
        assert [m.row.id for m in found] == distinct_top(vectors, story, query, 10, skip_story=0)
        with pytest.raises(ValueError, match=r"copy_cosine must be a number in \(0, 1\]"):
            related_vectors(session, select(Article), query, copy_cosine=1.5)
