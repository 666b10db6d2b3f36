"""simsql.asyncio's vector queries (``most_similar_vectors``, ``near_copy_vectors``) on the async
drivers (psycopg's async driver and asyncpg, aiomysql): the same steps as the sync API, so the
same answers, compared on the same data."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.orm import Session

import simsql
import simsql.store
from simsql import asyncio as simsql_async
from tests.test_asyncio import async_case, driver, on  # noqa: F401 - the fixtures are used by name
from tests.test_vectors_wide import DIMENSIONS, WideDoc, _load, _vectors


def _queries(vectors: np.ndarray) -> list[np.ndarray]:
    rng = np.random.default_rng(4)
    near = [vectors[i] + 0.05 * np.linalg.norm(vectors[i]) / np.sqrt(DIMENSIONS) * rng.normal(size=DIMENSIONS) for i in (3, 28, 53)]
    return [*near, rng.normal(size=DIMENSIONS)]


def _pairs(matches: list[simsql.VectorMatch]) -> list[tuple[int, float, int]]:
    return [(m.row.id, round(m.cosine, 9), m.distance) for m in matches]


def test_vector_queries_give_the_sync_answers(async_case: tuple[Engine, str]) -> None:  # noqa: F811
    engine, driver = async_case
    vectors = _vectors(150)
    _load(engine, WideDoc, vectors)
    queries = _queries(vectors)
    with Session(engine) as session:
        wanted: dict[str, Any] = {
            "most_similar_vectors": [_pairs(simsql.most_similar_vectors(session, select(WideDoc), q, limit=5, candidates=40)) for q in queries],
            "near_copy_vectors": [_pairs(simsql.near_copy_vectors(session, select(WideDoc), q, min_cosine=0.97)) for q in queries],
            "filtered": _pairs(simsql.most_similar_vectors(session, select(WideDoc).where(WideDoc.id > 50), queries[0], limit=3)),
        }
    assert any(wanted["near_copy_vectors"]) and all(wanted["most_similar_vectors"])

    async def answers(async_engine: AsyncEngine) -> dict[str, Any]:
        async with AsyncSession(async_engine) as session, async_engine.connect() as connection:
            return {
                "most_similar_vectors": [
                    _pairs(await simsql_async.most_similar_vectors(session, select(WideDoc), q, limit=5, candidates=40)) for q in queries
                ],
                "near_copy_vectors": [
                    _pairs(await simsql_async.near_copy_vectors(connection, select(WideDoc), q, min_cosine=0.97)) for q in queries
                ],
                "filtered": _pairs(
                    await simsql_async.most_similar_vectors(async_engine, select(WideDoc).where(WideDoc.id > 50), queries[0], limit=3)
                ),
            }

    assert on(engine, driver, answers) == wanted


@pytest.mark.parametrize(
    ("target", "error", "message"),
    [
        ([1.0] * (DIMENSIONS + 2), ValueError, f"expected vectors of {DIMENSIONS} numbers"),
        ([float("nan")] * DIMENSIONS, ValueError, "NaN or infinity"),
        ([0.0] * DIMENSIONS, ValueError, "all zeros"),
        (np.array(["a"] * DIMENSIONS), TypeError, "real numbers"),
    ],
    ids=["dimension", "nan", "zero", "dtype"],
)
def test_a_bad_target_is_refused_by_the_async_queries(
    async_case: tuple[Engine, str], target: Any, error: type[Exception], message: str  # noqa: F811
) -> None:
    engine, driver = async_case
    _load(engine, WideDoc, _vectors(5))

    async def ask(async_engine: AsyncEngine) -> None:
        async with AsyncSession(async_engine) as session:
            with pytest.raises(error, match=message):
                await simsql_async.most_similar_vectors(session, select(WideDoc), target)
            with pytest.raises(error, match=message):
                await simsql_async.near_copy_vectors(session, select(WideDoc), target)

    on(engine, driver, ask)
    with Session(engine) as session, pytest.raises(TypeError, match="sync Session"):
        asyncio.run(simsql_async.most_similar_vectors(session, select(WideDoc), [1.0] * DIMENSIONS))  # type: ignore[arg-type]


def test_the_async_backfill_signs_a_vector_model(async_case: tuple[Engine, str]) -> None:  # noqa: F811
    """Rows written without the ORM, signed by ``simsql.asyncio.backfill`` with their wide words."""
    engine, driver = async_case
    vectors = _vectors(9)
    _load(engine, WideDoc, vectors)
    names = simsql.store.binding_for(WideDoc).names
    table = WideDoc.__table__  # type: ignore[attr-defined]
    with engine.begin() as connection:  # as a raw writer leaves them: no signature
        connection.execute(table.update().values(dict.fromkeys(names.signature_words)))

    async def fill(async_engine: AsyncEngine) -> simsql.BackfillResult:
        return await simsql_async.backfill(async_engine, WideDoc, batch_size=4)

    assert on(engine, driver, fill).rows_fingerprinted == 9
    with engine.connect() as connection:
        rows = connection.execute(select(*[table.c[w] for w in names.signature_words]).order_by(table.c.id)).all()
    assert [tuple(w % 2**64 for w in row) for row in rows] == [s.words for s in WideDoc.__simhash_fingerprinter__.signatures_many(vectors)]
