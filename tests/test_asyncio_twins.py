"""Every async twin is its sync function awaited (issue 32): the same parameters, the same
answers, on every signature version and storage mode.

The parameter test reads the two APIs; the others compare answers on the real servers:
PostgreSQL through psycopg's async driver and asyncpg, MySQL/MariaDB through aiomysql.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any

import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

import simsql
import simsql.lists
from simsql import asyncio as simsql_async
from simsql.store.awaiting import off_loop
from tests.tables import build_docs, create_models, is_mysql, texts
from tests.test_asyncio import async_case, driver, on  # noqa: F401 - the fixtures
from tests.wide_models import WIDE_MODELS, WideArticle
from tools import docs_reference

BIND_PARAMETERS = {"bind", "session", "connection", "engine"}


def _runs_statements(function: object) -> bool:
    """A public function of simsql whose first parameter is a Session, Connection or Engine."""
    if not inspect.isfunction(function):
        return False
    parameters = list(inspect.signature(function).parameters)
    return bool(parameters) and parameters[0] in BIND_PARAMETERS


PUBLIC_FUNCTIONS = {
    name.rpartition(".")[2]: docs_reference.resolve(name) for name in docs_reference.api_entries(docs_reference.API_MD.read_text(encoding="utf-8"))
}
"""simsql's public names, by their last part: those of ``simsql.__all__`` and those documented in
docs/api.md in a module of their own (``simsql.lifecycle.refingerprinting.refingerprint``)."""

SYNC_OPERATIONS = sorted(name for name, function in PUBLIC_FUNCTIONS.items() if _runs_statements(function) and name != "reflect")
PARTITION_OPERATIONS = sorted(name for name in simsql.lists.__all__ if _runs_statements(getattr(simsql.lists, name)))
"""The partition lists' operations (:mod:`simsql.lists`), which have twins here too."""
"""``reflect`` describes a table from a ``Connection`` the caller holds: a catalog read inside
a ``run_sync`` of the caller's own, not an operation with an async twin."""


def test_every_operation_that_runs_statements_has_an_async_twin() -> None:
    missing = [name for name in SYNC_OPERATIONS + PARTITION_OPERATIONS if name not in simsql_async.__all__]
    assert PARTITION_OPERATIONS == ["drop_lists", "fit_lists", "place_lists"]
    assert not missing, f"no async twin in simsql.asyncio for {missing}"
    assert {"attach_table", "backfill", "find_original", "refingerprint", "fit_background", "most_similar_many"} <= set(SYNC_OPERATIONS)


@pytest.mark.parametrize("name", SYNC_OPERATIONS + PARTITION_OPERATIONS)
def test_an_async_twin_takes_every_parameter_of_its_sync_function(name: str) -> None:
    function = getattr(simsql.lists, name) if name in PARTITION_OPERATIONS else PUBLIC_FUNCTIONS[name]
    sync, twin = inspect.signature(function), inspect.signature(getattr(simsql_async, name))
    assert list(sync.parameters.values())[1:] == list(twin.parameters.values())[1:]
    assert inspect.iscoroutinefunction(getattr(simsql_async, name))


def _off_loop_thread(connection: Any) -> tuple[str, str]:
    """Where :func:`~simsql.store.awaiting.off_loop` runs CPU work, beside where the statements run."""
    (row,) = connection.execute(text("SELECT 1")).all()
    where = off_loop(lambda: threading.current_thread().name)
    return str(row[0]), str(where)


def test_cpu_work_runs_in_place_sync_and_in_a_worker_thread_awaited(async_case: tuple[Engine, str]) -> None:
    engine, driver = async_case
    with engine.connect() as connection:
        assert _off_loop_thread(connection) == ("1", threading.current_thread().name)

    async def driven(async_engine: AsyncEngine) -> tuple[str, str]:
        async with async_engine.connect() as connection:
            return await connection.run_sync(lambda sync: _off_loop_thread(sync))

    one, where = on(engine, driver, driven)
    assert one == "1" and where != threading.current_thread().name


@pytest.mark.parametrize("mode", sorted(WIDE_MODELS))
def test_find_original_on_a_version_3_table_gives_the_sync_answer(async_case: tuple[Engine, str], mode: str) -> None:
    """It raised NotImplementedError on every version 3 table, the default of ``simsql attach``."""
    engine, driver = async_case
    model = WIDE_MODELS[mode]
    create_models(engine, model)
    rows = texts(40, seed=11)
    with simsql_session(engine) as session:  # through the ORM: fingerprints written on insert
        session.add_all([model(**row) for row in rows])
        session.commit()
    probes = [f"Re: {rows[i - 1]['body']} (forwarded)" for i in (7, 17, 29)] + ["nothing like any stored text at all here"]
    with simsql_session(engine) as session:
        wanted = [_key(simsql.find_original(session, model, p, max_bytes=10_000)) for p in probes]

    async def asked(async_engine: AsyncEngine) -> list[Any]:
        async with AsyncSession(async_engine) as session:
            return [_key(await simsql_async.find_original(session, model, p, max_bytes=10_000)) for p in probes]

    assert on(engine, driver, asked) == wanted
    assert wanted == [7, 17, 29, None]


def test_attach_wide_and_backfill_with_workers_give_the_sync_answers(async_case: tuple[Engine, str]) -> None:
    """``wide``, ``workers``, ``indexes`` reach the async twins (they had none of them)."""
    engine, driver = async_case
    build_docs(engine, 120)

    async def attached(async_engine: AsyncEngine) -> tuple[Any, Any]:
        entry = await simsql_async.attach_table(async_engine, "docs", ["title", "body"], wide=True)
        result = await simsql_async.backfill(async_engine, "docs", workers=2, batch_size=25, indexes=True)
        return entry, result

    entry, result = on(engine, driver, attached)
    assert entry.mode.endswith("+wide") and result.rows_fingerprinted > 0 and result.batches >= 4 and result.indexes_built
    assert [s.rows_missing for s in simsql.status(engine)] == [0]
    with engine.connect() as connection:
        wrong = connection.execute(text("SELECT count(*) FROM docs WHERE simhash IS NULL AND body IS NOT NULL")).scalar_one()
    assert wrong == 0


def _key(match: simsql.Match | None) -> int | None:
    return None if match is None else int(match.row.id)


def simsql_session(engine: Engine) -> Any:
    from sqlalchemy.orm import Session

    return Session(engine)


def test_a_sync_bind_is_refused_by_the_generated_twins(engine: Engine) -> None:
    import asyncio

    with pytest.raises(TypeError, match="AsyncSession, AsyncConnection or AsyncEngine"):
        asyncio.run(simsql_async.refingerprint(engine, "docs"))  # type: ignore[arg-type]
    assert select(WideArticle) is not None and not is_mysql(engine)
