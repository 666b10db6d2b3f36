"""Every statement simsql runs on a user's table is bounded in time (issue 9, 6): behind a lock
holder, attach, detach and backfill give up after their timeout, name who holds the lock, and
say what they kept; on MySQL/MariaDB the bounds are translated into the server's own session
settings and handed back afterwards.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from sqlalchemy import Engine, text

import simsql
import simsql.alembic
import simsql.errors
from simsql.dialects.ddl_plan import DDLPlan, Step
from simsql.dialects.mysql import session as my
from simsql.dialects.mysql.ddl import quote
from simsql.lifecycle import apply, catalog

from .models import Doc
from .tables import (
    build_live_docs,
    check_model,
    create_models,
    fingerprint_by_hand,
    insert_rows,
    is_mysql,
    run,
    state,
    stored,
    within,
)
from .test_migrations import build_legacy, snapshot


def _holding(engine: Engine, sql: str) -> Any:
    """A connection whose open transaction ran ``sql`` (and so holds its locks)."""
    holder = engine.connect()
    holder.execute(text(sql))
    return holder


# -- attach, detach, backfill behind a lock holder --------------------------------------------


def test_attach_behind_an_exclusive_lock_gives_up_and_changes_nothing(engine: Engine) -> None:
    build_legacy(engine, rows=10)
    simsql.alembic.upgrade(engine)
    before = snapshot(engine)
    holder = _holding(engine, "LOCK TABLE articles IN ACCESS EXCLUSIVE MODE")
    try:
        started = time.monotonic()
        error = within(
            20, lambda: simsql.attach_table(engine, "articles", source=["body"], lock_timeout="1s")
        )
        assert isinstance(error, simsql.text.errors.LockTimeout), error
        assert time.monotonic() - started < 15
        assert "held by: pid" in str(error) and "Nothing of the failed transaction was kept" in str(error)
    finally:
        holder.rollback()
        holder.close()
    assert snapshot(engine) == before


def test_attach_behind_a_held_lock_gives_up_names_the_holder_and_changes_nothing(any_engine: Engine) -> None:
    """A reader's transaction left open (a shared lock on MySQL's table metadata, ACCESS SHARE
    on PostgreSQL's): attach waits no longer than its lock timeout, and what it did first is undone."""
    build_live_docs(any_engine)
    simsql.alembic.upgrade(any_engine)
    before = state(any_engine)
    holder = _holding(any_engine, "SELECT count(*) FROM docs")
    try:
        started = time.monotonic()
        error = within(20, lambda: simsql.attach_table(any_engine, "docs", ["body"], lock_timeout="1s"))
        assert isinstance(error, simsql.text.errors.LockTimeout), error
        assert time.monotonic() - started < 15
        message = str(error)
        if is_mysql(any_engine):
            holder_id = holder.connection.dbapi_connection.thread_id()
            assert f"session {holder_id} (idle in transaction" in message
            assert "gave up after waiting 1s for a lock" in message
            assert "Nothing was changed (its 1 earlier statement(s) were undone)" in message
        else:
            assert f"held by: pid {holder.connection.dbapi_connection.info.backend_pid}" in message
            assert "idle in transaction" in message and "Nothing of the failed transaction was kept" in message
    finally:
        holder.rollback()
        holder.close()
    assert state(any_engine) == before


def test_concurrent_index_build_behind_an_idle_transaction_gives_up_and_says_so(engine: Engine) -> None:
    build_legacy(engine, rows=10)
    simsql.alembic.upgrade(engine)
    holder = _holding(engine, "BEGIN ISOLATION LEVEL REPEATABLE READ")
    holder.execute(text("SELECT count(*) FROM comments"))  # an old snapshot, idle in transaction
    try:
        error = within(
            30,
            lambda: simsql.attach_table(engine, "articles", source=["body"], lock_timeout="1s", index_lock_timeout="2s"),
        )
        assert isinstance(error, simsql.text.errors.LockTimeout), error
        message = str(error)
        assert "idle in transaction" in message and "build index" in message
        assert "next run drops and rebuilds it" in message
    finally:
        holder.rollback()
        holder.close()
    simsql.attach_table(engine, "articles", source=["body"])  # the rerun completes the attachment
    with engine.connect() as connection:
        valid = connection.execute(
            text(
                "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE c.relname LIKE 'ix_articles_simhash_b_' AND i.indisvalid "
                "AND c.relnamespace = CAST(current_schema() AS regnamespace)"
            )
        ).scalar()
    assert valid == 4


def test_detach_behind_a_held_lock_gives_up_and_keeps_the_attachment(any_engine: Engine) -> None:
    build_live_docs(any_engine)
    simsql.alembic.upgrade(any_engine)
    simsql.attach_table(any_engine, "docs", ["title", "body"])
    fingerprint_by_hand(any_engine)
    attached = state(any_engine)
    holder = _holding(any_engine, "SELECT count(*) FROM docs")  # a reader in an open transaction
    try:
        started = time.monotonic()
        error = within(30, lambda: simsql.detach_table(any_engine, "docs", lock_timeout="1s"))
        assert isinstance(error, simsql.text.errors.LockTimeout), error
        assert time.monotonic() - started < 15
        gave_up = "drop trigger simsql_docs_blocks_ins: gave up" if is_mysql(any_engine) else "held by: pid"
        assert gave_up in str(error)
    finally:
        holder.rollback()
        holder.close()
    assert state(any_engine) == attached
    assert [(s.table, s.rows_fingerprinted) for s in simsql.status(any_engine)] == [("docs", 4)]
    simsql.detach_table(any_engine, "docs")
    assert simsql.status(any_engine) == []


def test_backfill_behind_an_exclusive_lock_gives_up(engine: Engine) -> None:
    from .tables import add_simhash

    build_legacy(engine, rows=10)
    add_simhash(engine, "articles")
    holder = _holding(engine, "LOCK TABLE articles IN ACCESS EXCLUSIVE MODE")
    try:
        error = within(20, lambda: simsql.backfill(engine, "articles", workers=0, lock_timeout="1s"))
        assert isinstance(error, simsql.text.errors.LockTimeout), error
    finally:
        holder.rollback()
        holder.close()


def test_a_held_row_lock_gives_up_naming_the_holder_and_keeps_earlier_batches(any_engine: Engine) -> None:
    create_models(any_engine, Doc)
    insert_rows(any_engine, Doc, [{"id": i, "title": f"title {i}", "body": f"some words {i}"} for i in range(1, 31)])
    holder = _holding(any_engine, "SELECT id FROM docs WHERE id = 25 FOR UPDATE")  # an open transaction holds row 25
    outcome: dict[str, Any] = {}

    def backfill() -> None:
        try:
            simsql.backfill(any_engine, Doc, workers=0, batch_size=10, lock_timeout="1s")
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome["error"] = error

    try:
        thread = threading.Thread(target=backfill, daemon=True)
        thread.start()
        thread.join(30)
        assert not thread.is_alive(), "backfill still waiting after 30 s despite lock_timeout=1s"
    finally:
        holder.rollback()
        holder.close()
    error = outcome.get("error")
    assert isinstance(error, simsql.text.errors.LockTimeout), error
    message = str(error)
    assert "gave up after waiting 1s for a lock" in message and "idle in transaction" in message
    assert "run the same backfill again to resume" in message
    fingerprints = {row[0]: row[-2] for row in stored(any_engine, Doc)}
    missing = sorted(k for k, v in fingerprints.items() if v is None)
    assert all(fingerprints[i] is not None for i in range(1, 21)) and all(fingerprints[i] is None for i in range(21, 31)), missing
    rest = simsql.backfill(any_engine, Doc, workers=0, batch_size=10)
    assert rest.resumed and rest.rows_fingerprinted == 10
    check_model(any_engine, Doc)


# -- MySQL/MariaDB: time bounds as the server's session settings -------------------------------


def test_durations_translate_to_seconds() -> None:
    assert my.interval_seconds("5s") == 5
    assert my.interval_seconds("10min") == 600
    assert my.interval_seconds("1500ms") == 1.5
    assert my.interval_seconds("250") == 0.25  # PostgreSQL's unit for a bare timeout: milliseconds
    assert my.interval_seconds("0") is None and my.interval_seconds(None) is None
    with pytest.raises(ValueError, match="not a duration"):
        my.interval_seconds("five seconds")


def _session_bounds(connection: Any) -> tuple[Any, ...]:
    """Lock waits in seconds; the statement bound in seconds as MariaDB's ``max_statement_time``
    holds it, or MySQL's ``max_execution_time`` (milliseconds) in seconds."""
    mariadb = bool(getattr(connection.dialect, "is_mariadb", False))
    statement = "@@SESSION.max_statement_time" if mariadb else "@@SESSION.max_execution_time / 1000"
    lock, row_lock, bound = connection.execute(text(
        f"SELECT @@SESSION.lock_wait_timeout, @@SESSION.innodb_lock_wait_timeout, {statement}"
    )).one()
    return lock, row_lock, float(bound)


def test_bounds_apply_inside_and_the_session_gets_its_own_back(mysql_engine: Engine) -> None:
    with mysql_engine.connect() as connection:
        own = _session_bounds(connection)
        with apply.bounded(connection, apply.Timeouts("1500ms", "2min")):
            assert _session_bounds(connection) == (2, 2, 120)  # whole seconds, rounded up
            with apply.bounded(connection, apply.Timeouts(None, None)):
                assert _session_bounds(connection) == (my.UNBOUNDED_LOCK_WAIT, my.UNBOUNDED_ROW_LOCK_WAIT, 0)
            assert _session_bounds(connection) == (2, 2, 120)
            with apply.bounded(connection, apply.Timeouts("1s", "250ms")):
                assert _session_bounds(connection) == (1, 1, 0.25)  # a statement bound keeps its fraction
        assert _session_bounds(connection) == own
        # a bound meant to last a transaction lasts until the connection goes back to its pool
        apply.set_timeouts(connection, apply.Timeouts("3s", "1s"))
        assert _session_bounds(connection) == (3, 3, 1)
        thread_id = connection.connection.dbapi_connection.thread_id()  # type: ignore[union-attr]
    with mysql_engine.connect() as connection:
        assert connection.connection.dbapi_connection.thread_id() == thread_id  # type: ignore[union-attr]  # the same session
        assert _session_bounds(connection) == own


def test_a_statement_over_its_bound_is_a_statement_timeout(mysql_engine: Engine) -> None:
    # Two rows: MySQL ends a lone SLEEP() at max_execution_time as if it had finished (it returns
    # 1, no error); a query that sleeps per row is stopped with ER_QUERY_TIMEOUT there too.
    plan = DDLPlan((Step("SELECT SLEEP(5) FROM (SELECT 1 UNION ALL SELECT 2) AS two", "sleep"),))
    with mysql_engine.connect() as connection:
        error = within(15, lambda: apply.run(connection, plan, apply.Timeouts("1s", "300ms")))
    assert isinstance(error, simsql.text.errors.LockTimeout), error
    assert "sleep: gave up after waiting 300ms for the statement to finish" in str(error)


def test_ddl_behind_a_held_metadata_lock_gives_up_and_names_the_holder(mysql_engine: Engine) -> None:
    run(mysql_engine, "CREATE TABLE docs (id INT PRIMARY KEY, body TEXT)", "INSERT INTO docs VALUES (1, 'a')")
    holder = mysql_engine.connect()
    try:
        holder.execute(text("SELECT body FROM docs"))  # the transaction stays open: a shared metadata lock
        holder_id = holder.connection.dbapi_connection.thread_id()  # type: ignore[union-attr]
        schema = holder.execute(text("SELECT DATABASE()")).scalar_one()
        plan = DDLPlan((
            Step("ALTER TABLE docs ADD COLUMN first INT", "add column first"),
            Step("ALTER TABLE docs ADD COLUMN second INT", "add column second"),
        ))
        relation = f"{quote(schema)}.{quote('docs')}"
        # the first statement must wait: run it behind the lock
        error = within(20, lambda: apply.run_on_engine(mysql_engine, DDLPlan(plan.steps[:1]), apply.Timeouts("1s"), relations=[relation]))
        assert isinstance(error, simsql.text.errors.LockTimeout), error
        message = str(error)
        assert f"session {holder_id} (idle in transaction" in message
        assert "add column first: gave up after waiting 1s for a lock" in message
        assert "Already committed: nothing" in message
    finally:
        holder.rollback()
        holder.close()
    with mysql_engine.connect() as connection:
        facts = catalog.table_facts(connection, "docs", connection.execute(text("SELECT DATABASE()")).scalar_one())
    assert facts is not None and list(facts.columns) == ["id", "body"]


def test_a_plan_that_stops_halfway_on_mysql_is_undone_or_says_what_it_kept(mysql_engine: Engine) -> None:
    run(mysql_engine, "CREATE TABLE docs (id INT PRIMARY KEY, body TEXT)", "CREATE TABLE other (id INT PRIMARY KEY)")
    blocked = Step("ALTER TABLE other ADD COLUMN second INT", "add column second")
    undoable = Step("ALTER TABLE docs ADD COLUMN first INT", "add column first", undo="ALTER TABLE docs DROP COLUMN first")
    holder = mysql_engine.connect()
    try:
        holder.execute(text("SELECT id FROM other"))
        error = within(20, lambda: apply.run_on_engine(mysql_engine, DDLPlan((undoable, blocked)), apply.Timeouts("1s")))
        assert isinstance(error, simsql.text.errors.LockTimeout), error
        assert "Already committed: nothing. Nothing was changed (its 1 earlier statement(s) were undone)" in str(error)
        assert _columns(mysql_engine, "docs") == ["id", "body"]
        # a statement without an undo stays, and the error says so
        kept = Step("ALTER TABLE docs ADD COLUMN first INT", "add column first")
        error = within(20, lambda: apply.run_on_engine(mysql_engine, DDLPlan((kept, blocked)), apply.Timeouts("1s")))
        assert isinstance(error, simsql.text.errors.LockTimeout), error
        assert "Already committed: add column first." in str(error) and "add column first stay(s) in place" in str(error)
        assert _columns(mysql_engine, "docs") == ["id", "body", "first"]
    finally:
        holder.rollback()
        holder.close()


def _columns(engine: Engine, table: str) -> list[str]:
    with engine.connect() as connection:
        facts = catalog.table_facts(connection, table, connection.execute(text("SELECT DATABASE()")).scalar_one())
    assert facts is not None
    return list(facts.columns)


def test_a_postgresql_plan_never_runs_on_mysql(mysql_engine: Engine) -> None:
    from simsql.dialects.postgresql.ddl import POSTGRES_DDL
    from simsql.schema.names import Names

    plan = POSTGRES_DDL.drop_indexes("test", Names("docs"))
    with pytest.raises(simsql.text.errors.UnsupportedDatabase, match=r"in postgresql's DDL only; it does not run it on (MariaDB|MySQL) \d+\.\d+\.\d+ yet"):
        apply.run_on_engine(mysql_engine, plan)


def test_unsupported_servers_are_refused_with_the_version_found() -> None:
    from sqlalchemy import create_engine

    engine = create_engine("sqlite://")
    with engine.connect() as connection, pytest.raises(simsql.text.errors.UnsupportedDatabase, match=r"'sqlite' database \(3\."):
        apply.set_timeouts(connection, apply.DDL_TIMEOUTS)


