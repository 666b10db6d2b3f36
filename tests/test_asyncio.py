"""simsql.asyncio on the async drivers: the same answers as the sync API, on PostgreSQL
(psycopg's async driver and asyncpg) and MySQL/MariaDB (aiomysql).

Each test builds its data with the sync engine of tests/conftest.py, then asks the same question
through an ``AsyncEngine`` on the same database (the same schema / MySQL database) and through the
sync API, and compares. ``asyncio.run`` drives each coroutine: no event-loop plugin needed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from simsql.dialects import backend
from tests.tables import is_mysql, run

T = TypeVar("T")

ASYNC_DRIVERS = {"postgresql": ("psycopg_async", "asyncpg"), "mysql": ("aiomysql",)}


def async_engine_for(engine: Engine, driver: str) -> AsyncEngine:
    """An AsyncEngine on the same database (and PostgreSQL schema) as the test's sync ``engine``."""
    url = engine.url.set(drivername=f"{'mysql' if is_mysql(engine) else 'postgresql'}+{driver}")
    with engine.connect() as connection:
        schema = backend(connection).current_schema(connection)
    if driver == "asyncpg":
        return create_async_engine(url, connect_args={"server_settings": {"search_path": f"{schema},public"}})
    if driver == "psycopg_async":
        return create_async_engine(url, connect_args={"options": f"-csearch_path={schema},public"})
    return create_async_engine(url)


def on(engine: Engine, driver: str, work: Callable[[AsyncEngine], Awaitable[T]]) -> T:
    """``work(async_engine)`` to the end on a fresh event loop; the engine disposed after."""

    async def main() -> T:
        async_engine = async_engine_for(engine, driver)
        try:
            return await work(async_engine)
        finally:
            await async_engine.dispose()

    return asyncio.run(main())


@pytest.fixture(params=["psycopg_async", "asyncpg", "aiomysql"])
def driver(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def async_case(request: pytest.FixtureRequest, driver: str) -> Iterator[tuple[Engine, str]]:
    """(the test's sync engine, an async driver for its server): PostgreSQL with psycopg_async
    and asyncpg, MySQL/MariaDB with aiomysql."""
    name = "mysql_engine" if driver == "aiomysql" else "engine"
    yield request.getfixturevalue(name), driver


@pytest.mark.parametrize("driver", ["asyncpg"], indirect=True)
def test_asyncpg_reads_the_one_byte_char_catalog_columns_as_text(async_case: tuple[Engine, str]) -> None:
    """pg_class.relkind and pg_type.typcategory are PostgreSQL's one-byte ``"char"``: asyncpg
    hands them back as bytes, so a table read ``b'r'``, not ``'r'``, and was "not found"."""
    engine, driver = async_case
    run(engine, "CREATE TABLE docs (id int PRIMARY KEY, title text, n int)")

    async def facts(async_engine: AsyncEngine) -> Any:
        async with async_engine.connect() as connection:
            schema = await connection.run_sync(lambda c: backend(c).current_schema(c))
            return await connection.run_sync(lambda c: backend(c).table_facts(c, schema, "docs"))

    found = on(engine, driver, facts)
    assert found is not None and found.kind == "r"
    assert found.columns["title"].is_text and not found.columns["n"].is_text
