"""simsql.asyncio on the async drivers: the same answers as the sync API, on PostgreSQL
(psycopg's async driver and asyncpg) and MySQL/MariaDB (aiomysql).

Each test builds its data with the sync engine of tests/conftest.py, then asks the same question
through an ``AsyncEngine`` on the same database (the same schema / MySQL database) and through the
sync API, and compares. ``asyncio.run`` drives each coroutine: no event-loop plugin needed.
"""

from __future__ import annotations

import asyncio
import random
import sys
import types
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.orm import Session

import simsql
import simsql.alembic
import simsql.errors
import simsql.queries
from simsql import asyncio as simsql_async
from simsql.dialects import backend
from tests.models import Article, Doc
from tests.tables import (
    WORDS,
    build_docs,
    check_fingerprints,
    check_model,
    create_models,
    holder_sql,
    insert_rows,
    is_mysql,
    progress,
    rewrite,
    run,
    state,
    texts,
)

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


# -- queries: the same steps, driven sync and async -----------------------------------------

def _corpus() -> list[dict[str, Any]]:
    """Articles with copies: exact, one word changed, a paragraph appended; the rest unrelated."""
    rng = random.Random(11)
    originals = [" ".join(rng.choice(WORDS) if rng.random() < 0.3 else f"w{rng.randrange(10**6)}" for _ in range(80)) for _ in range(40)]
    rows = [{"id": i + 1, "title": f"article {i + 1}", "body": body} for i, body in enumerate(originals)]
    for n, body in enumerate(originals[:12]):
        copy = body if n % 3 == 0 else body.replace(body.split()[5], "changed", 1) if n % 3 == 1 else body + " and one more line"
        rows.append({"id": 100 + n, "title": f"article {n + 1}", "body": copy})
    return rows


PROBES = ["w1 w2 w3 nothing like it at all here in this text", "index query planner vacuum"]


def _sync_answers(engine: Engine) -> dict[str, Any]:
    rows = _corpus()
    probes = [r["title"] + "\n" + r["body"] for r in rows[:15]] + PROBES
    with Session(engine) as session:
        return {
            "find_original": [_key(simsql.find_original(session, Article, p)) for p in probes],
            "fingerprints_only": [_key(simsql.find_original(session, Article, p, min_containment=None)) for p in probes],
            "near_duplicates": simsql.near_duplicates(session, Article, 3),
            "duplicate_groups": simsql.duplicate_groups(session, Article, 3),
            "most_similar_many": simsql.queries.most_similar_many(session, Article, probes, limit=3),
            "most_similar": [(r[0].id, r[1]) for r in session.execute(simsql.most_similar(select(Article), probes[1], limit=5))],
            "similar_to": sorted(session.scalars(select(Article.id).where(simsql.similar_to(Article, probes[1], 3)))),
        }


async def _async_answers(session: AsyncSession) -> dict[str, Any]:
    rows = _corpus()
    probes = [r["title"] + "\n" + r["body"] for r in rows[:15]] + PROBES
    return {
        "find_original": [_key(await simsql_async.find_original(session, Article, p)) for p in probes],
        "fingerprints_only": [_key(await simsql_async.find_original(session, Article, p, min_containment=None)) for p in probes],
        "near_duplicates": await simsql_async.near_duplicates(session, Article, 3),
        "duplicate_groups": await simsql_async.duplicate_groups(session, Article, 3),
        "most_similar_many": await simsql_async.most_similar_many(session, Article, probes, limit=3),
        "most_similar": [(r[0].id, r[1]) for r in await session.execute(simsql.most_similar(select(Article), probes[1], limit=5))],
        "similar_to": sorted(await session.scalars(select(Article.id).where(simsql.similar_to(Article, probes[1], 3)))),
    }


def _key(match: simsql.Match | None) -> tuple[int, int] | None:
    return None if match is None else (match.row.id, match.distance)


def _articles(engine: Engine) -> None:
    create_models(engine, Article)
    with Session(engine) as session:
        session.add_all(Article(**row) for row in _corpus())
        session.commit()


def test_queries_give_the_sync_answers(async_case: tuple[Engine, str]) -> None:
    engine, driver = async_case
    _articles(engine)
    wanted = _sync_answers(engine)
    assert wanted["near_duplicates"] and wanted["duplicate_groups"] and any(wanted["find_original"])
    assert wanted["find_original"][-2:] == [None, None]

    async def answers(async_engine: AsyncEngine) -> dict[str, Any]:
        async with AsyncSession(async_engine) as session:
            return await _async_answers(session)

    assert on(engine, driver, answers) == wanted


def test_every_async_bind_is_taken_and_a_sync_one_is_refused(async_case: tuple[Engine, str]) -> None:
    """AsyncSession, AsyncConnection and AsyncEngine give the same rows; a sync Session is
    refused with a TypeError naming what to use instead."""
    engine, driver = async_case
    _articles(engine)
    probe = _corpus()[0]["title"] + "\n" + _corpus()[0]["body"]

    async def three(async_engine: AsyncEngine) -> list[Any]:
        async with AsyncSession(async_engine) as session, async_engine.connect() as connection:
            return [
                _key(await simsql_async.find_original(bind, Article, probe))
                for bind in (session, connection, async_engine)
            ] + [await simsql_async.duplicate_groups(connection, Article)]

    found = on(engine, driver, three)
    assert found[0] == found[1] == found[2] == (1, 0)
    assert found[3] == _sync_answers(engine)["duplicate_groups"]
    with Session(engine) as session, pytest.raises(TypeError, match="sync Session"):
        asyncio.run(simsql_async.find_original(session, Article, probe))  # type: ignore[arg-type]


# -- lifecycle: attach, status, backfill, detach --------------------------------------------

@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_attach_backfill_status_detach_give_the_sync_answers(async_case: tuple[Engine, str], side_table: bool) -> None:
    """The async lifecycle on a live table, then the sync one on the same data: the same
    attachment, the same counts before and after, the same fingerprints; detach restores the
    table exactly."""
    engine, driver = async_case
    build_docs(engine, 400)
    simsql.alembic.upgrade(engine)
    before = state(engine)

    async def lifecycle(async_engine: AsyncEngine) -> tuple[Any, ...]:
        entry = await simsql_async.attach_table(async_engine, "docs", ["title", "body"], side_table=side_table)
        pending = await simsql_async.status(async_engine)
        seen: list[tuple[int, int]] = []
        result = await simsql_async.backfill(async_engine, "docs", batch_size=64, progress=lambda d, t: seen.append((d, t)))
        done = await simsql_async.status(async_engine)
        assert done == simsql.status(engine)  # the sync status of what the async run left
        fingerprints = check_fingerprints(engine, holder_sql(side_table))
        removed = await simsql_async.detach_table(async_engine, "docs")
        return entry, pending, result, done, fingerprints, removed, seen

    entry, pending, result, done, fingerprints, removed, seen = on(engine, driver, lifecycle)
    assert state(engine) == before
    assert removed == entry
    with_text, fingerprinted = fingerprints
    assert fingerprinted == with_text > 300 and done[0].rows_missing == 0 and done[0].rows_fingerprinted == fingerprinted
    assert seen and seen[-1][0] == result.rows_read and result.batches > 1

    sync_entry = simsql.attach_table(engine, "docs", ["title", "body"], side_table=side_table)
    assert simsql.status(engine) == pending and sync_entry == entry
    sync_result = simsql.backfill(engine, "docs", batch_size=64, workers=0)
    assert simsql.status(engine) == done
    assert check_fingerprints(engine, holder_sql(side_table)) == fingerprints
    assert (result.rows_read, result.rows_fingerprinted, result.rows_empty, result.batches, result.resumed) == (
        sync_result.rows_read, sync_result.rows_fingerprinted, sync_result.rows_empty, sync_result.batches, sync_result.resumed
    )


def test_backfill_of_a_model_and_a_cancelled_backfill_resumes(async_case: tuple[Engine, str]) -> None:
    """A mapped class as the target; a run cancelled after two batches keeps them and the next
    run (async) resumes after them."""
    engine, driver = async_case
    create_models(engine, Doc)
    insert_rows(engine, Doc, texts(500))

    async def cancelled_then_resumed(async_engine: AsyncEngine) -> tuple[int, Any]:
        batches = 0
        task: asyncio.Task[Any]

        def count(done: int, total: int) -> None:
            nonlocal batches
            batches += 1
            if batches == 2:
                task.cancel()

        task = asyncio.ensure_future(simsql_async.backfill(async_engine, Doc, batch_size=50, progress=count))
        with pytest.raises(asyncio.CancelledError):
            await task
        return batches, await simsql_async.backfill(async_engine, Doc, batch_size=50)

    batches, resumed = on(engine, driver, cancelled_then_resumed)
    assert batches >= 2 and resumed.resumed and resumed.rows_read < 500
    assert check_model(engine, Doc) == check_model(engine, Doc)
    with_text, fingerprinted = check_model(engine, Doc)
    assert with_text == fingerprinted


class Stop(Exception):
    """Raised by a progress callback: the run stops there, its committed batches kept."""


@pytest.mark.parametrize("driver", ["psycopg_async", "aiomysql"], indirect=True)
def test_a_backfill_stopped_in_its_catch_up_resumes_it_from_the_first_key(async_case: tuple[Engine, str]) -> None:
    """As tests/test_faults.py's sync test (issue 33, part 5): a run stopped during its catch-up
    pass, a fingerprint cleared below the pass's saved cursor, and the next run to the end must
    fill it. 60 rows in batches of 10: the scan is 6 batches, the 7th the catch-up's first."""
    engine, driver = async_case
    build_docs(engine, 60)
    simsql.alembic.upgrade(engine)
    simsql.attach_table(engine, "docs", source=["title", "body"])
    calls: list[int] = []

    def step(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 2:  # the scan's cursor is at row 20: a writer changes rows 1 and 15 behind it
            rewrite(engine, (1, 15))
        if len(calls) == 7:  # the catch-up has stored rows 1 and 15 and saved its cursor
            raise Stop

    async def stopped(async_engine: AsyncEngine) -> None:
        with pytest.raises(Stop):
            await simsql_async.backfill(async_engine, "docs", batch_size=10, progress=step)

    on(engine, driver, stopped)
    _, last_key, phase = progress(engine, "docs")  # type: ignore[misc]
    assert phase == "catchup" and last_key is not None and last_key[0] >= 15
    rewrite(engine, (5,))  # nothing runs; a writer clears a row below the saved cursor
    resumed = on(engine, driver, lambda async_engine: simsql_async.backfill(async_engine, "docs", batch_size=10))
    assert resumed.resumed
    with_text, fingerprinted = check_fingerprints(engine, holder_sql(False))
    assert with_text == fingerprinted == 60


@pytest.mark.parametrize("driver", ["psycopg_async", "asyncpg", "aiomysql"], indirect=True)
def test_attach_waiting_for_a_lock_leaves_the_event_loop_free(async_case: tuple[Engine, str]) -> None:
    """While attach waits for a lock another session holds, the event loop runs other tasks:
    one sees attach waiting (from the server's own list of sessions) and ends the transaction
    holding the lock, and attach then finishes. Were the loop blocked for the whole call, the
    holder could never let go and attach would give up (LockTimeout). (No index builds here: a
    concurrent build waits for every older transaction in the database, other tests' too.)"""
    engine, driver = async_case
    build_docs(engine, 20)
    simsql.alembic.upgrade(engine)
    waiting_sql = (
        "SELECT count(*) FROM information_schema.processlist WHERE db = DATABASE() AND state LIKE 'Waiting for table metadata lock'"
        if is_mysql(engine) else
        "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
        "WHERE NOT l.granted AND c.relname = 'docs' AND c.relnamespace = CAST(current_schema() AS regnamespace)"
    )  # fmt: skip

    async def contend(async_engine: AsyncEngine) -> tuple[bool, Any]:
        async with async_engine.connect() as holder, async_engine.connect() as watcher:
            await holder.execute(text("SELECT count(*) FROM docs"))  # an open transaction that read the table
            attach = asyncio.ensure_future(simsql_async.attach_table(async_engine, "docs", ["body"], indexes=False, lock_timeout="60s"))
            while not (await watcher.execute(text(waiting_sql))).scalar_one():
                await watcher.rollback()
                await asyncio.sleep(0.02)
            still_waiting = not attach.done()
            await holder.rollback()
            return still_waiting, await attach

    still_waiting, entry = on(engine, driver, contend)
    assert still_waiting and entry.table_name == "docs"


def test_the_example_of_docs_async_runs_twice(async_case: tuple[Engine, str], capsys: pytest.CaptureFixture[str]) -> None:
    """docs/async.md's example, on each driver, twice in a row (it recreates its table)."""
    engine, driver = async_case
    page = (Path(__file__).resolve().parent.parent / "docs" / "async.md").read_text(encoding="utf-8")
    code = page.split("```python\n", 1)[1].split("```", 1)[0]
    module = types.ModuleType(f"docs_async_{driver}")  # a module: the ORM resolves annotations in it
    sys.modules[module.__name__] = module
    try:
        exec(compile(code, "docs/async.md", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    namespace = module.__dict__
    # the example's engine on the test's own schema (a URL carries no asyncpg search_path): its
    # create_all installs simsql where it runs, which must not be the database's public schema
    namespace["create_async_engine"] = lambda url: async_engine_for(engine, driver)
    for _ in range(2):
        on(engine, driver, lambda async_engine: namespace["main"](async_engine.url.render_as_string(hide_password=False)))
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "copy of 1 at 0 bits" and printed[-1] == "groups: [[1, 2]]"
    assert printed == printed[len(printed) // 2 :] * 2


def test_the_configuration_check_of_a_filter_runs_on_every_async_driver(async_case: tuple[Engine, str]) -> None:
    """``similar_to`` checks the table's configuration from inside the statement's execution
    (on the driver's own cursor); on a fresh engine that check is the first thing to run. It
    used the sync drivers' cursor API and their ``%s`` placeholders (asyncpg has neither)."""
    engine, driver = async_case
    _articles(engine)
    probe = _corpus()[0]["title"] + "\n" + _corpus()[0]["body"]
    statement = select(Article.id).where(simsql.similar_to(Article, probe, 3)).order_by(Article.id)
    with Session(engine) as session:
        wanted = list(session.scalars(statement))

    async def filtered(async_engine: AsyncEngine) -> list[int]:
        async with AsyncSession(async_engine) as session:
            return list(await session.scalars(statement))

    assert on(engine, driver, filtered) == wanted == [1, 100]
    run(engine, "UPDATE simsql_registry SET config_id = 'sh2-000000000000'")
    with pytest.raises(simsql.text.errors.ConfigMismatch, match="sh2-000000000000"):
        on(engine, driver, filtered)


def test_models_written_through_an_async_session_get_the_sync_fingerprints(async_case: tuple[Engine, str]) -> None:
    """SimHashMixin rows added through an AsyncSession: fingerprinted at flush (the table claimed
    in simsql's registry on the way), exactly as Python computes them."""
    engine, driver = async_case
    create_models(engine, Article)

    async def write(async_engine: AsyncEngine) -> None:
        async with AsyncSession(async_engine) as session:
            session.add_all(Article(**row) for row in _corpus())
            await session.commit()

    on(engine, driver, write)
    with_text, fingerprinted = check_fingerprints(engine, "SELECT id, title, body, simhash FROM articles")
    assert with_text == fingerprinted == len(_corpus())
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM simsql_registry WHERE table_name = 'articles'")).scalar_one() == 1


def test_attach_table_installs_simsqls_objects_when_needed(async_case: tuple[Engine, str]) -> None:
    """As the sync attach_table and ``simsql attach`` do (issue 23 item 5): the async one on a
    database where simsql was never installed installs it, then attaches."""
    engine, driver = async_case
    build_docs(engine, 20)

    async def attach(async_engine: AsyncEngine) -> Any:
        return await simsql_async.attach_table(async_engine, "docs", ["title", "body"], indexes=False)

    entry = on(engine, driver, attach)
    assert [s.table.split(".")[-1] for s in simsql.status(engine)] == ["docs"] and entry.table_name == "docs"
