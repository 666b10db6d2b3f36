"""Partition lists awaited (issue 34): the twins of simsql.asyncio fit, place and drop the
lists, and the vector query with ``probes`` (its centres read by a step of its own) gives the
sync answer, on psycopg async, asyncpg and aiomysql."""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy import JSON, Double, Engine, select, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
from simsql import asyncio as simsql_async
from simsql.lists import ListsMixin
from tests.test_asyncio import async_case, driver, on  # noqa: F401 - the fixtures

SIGNER = simsql.VectorFingerprinter(16, seed=5)
VECTOR = ARRAY(Double()).with_variant(JSON(), "mysql", "mariadb")  # as docs/vectors.md declares it


class Base(DeclarativeBase):
    pass


class Vec(ListsMixin, simsql.SimHashMixin, Base):
    __tablename__ = "async_listed_vectors"
    __simhash_source__ = ("embedding",)
    __simhash_fingerprinter__ = SIGNER
    id: Mapped[int] = mapped_column(primary_key=True)
    embedding: Mapped[list[float]] = mapped_column(VECTOR)


def _vectors() -> np.ndarray:
    generator = np.random.default_rng(8)
    centres = generator.normal(size=(6, 16))
    return np.asarray([centres[i % 6] + 0.4 * generator.normal(size=16) for i in range(240)])


def _load(engine: Engine) -> None:
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        session.add_all(Vec(id=i + 1, embedding=[float(x) for x in v]) for i, v in enumerate(_vectors()))
        session.commit()


def _answer(found: list[Any]) -> list[tuple[int, float]]:
    return [(match.row.id, round(match.cosine, 9)) for match in found]


def test_the_twins_fit_query_place_and_drop_as_the_sync_api(async_case: tuple[Engine, str]) -> None:
    engine, driver_name = async_case
    _load(engine)
    queries = [_vectors()[i] + 0.05 for i in (0, 7, 100)]
    fitted = simsql.lists.fit_lists(engine, Vec.__tablename__, lists=6, seed=2)
    with Session(engine) as session:
        wanted = [_answer(simsql.most_similar_vectors(session, select(Vec), q, limit=5, candidates=20, probes=2)) for q in queries]
    assert all(len(found) == 5 for found in wanted)
    with engine.begin() as connection:  # a row left behind, which the awaited place_lists places
        connection.execute(text(f"UPDATE {Vec.__tablename__} SET simhash_part = NULL WHERE id = 3"))

    async def work(async_engine: AsyncEngine) -> tuple[Any, ...]:
        refit = await simsql_async.fit_lists(async_engine, Vec.__tablename__, lists=6, seed=2)
        async with AsyncSession(async_engine) as session:
            found = [
                _answer(await simsql_async.most_similar_vectors(session, select(Vec), q, limit=5, candidates=20, probes=2))
                for q in queries
            ]
        async with async_engine.begin() as connection:
            await connection.execute(text(f"UPDATE {Vec.__tablename__} SET simhash_part = NULL WHERE id = 3"))
        placed = await simsql_async.place_lists(async_engine, Vec.__tablename__)
        dropped = await simsql_async.drop_lists(async_engine, Vec.__tablename__)
        return refit, found, placed, dropped

    refit, found, placed, dropped = on(engine, driver_name, work)
    assert (refit.generation, refit.lists, refit.left_behind) == (fitted.generation + 1, 6, 0)
    assert found == wanted  # a refit on the same sample and seed: the same centres, the same answers
    assert (placed, dropped) == (1, True)
