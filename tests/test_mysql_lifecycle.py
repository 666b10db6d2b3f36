"""The live-table lifecycle on MySQL/MariaDB: catalog, time bounds and who holds a lock (the
seam backfill and attach share), then attach / detach / status on a real server."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine, text

import simsql
from simsql.dialects import mysql as my
from simsql.lifecycle import apply, catalog
from simsql.lifecycle.ddl import Plan, Step


def _run(engine: Engine, *statements: str) -> None:
    with engine.begin() as connection:
        for statement in statements:
            connection.execute(text(statement))


def _within(seconds: float, work: Callable[[], Any]) -> BaseException | None:
    """Run ``work`` in a thread; fail the test if it is still waiting after ``seconds``."""
    outcome: dict[str, BaseException | None] = {"error": None}

    def run() -> None:
        try:
            work()
        except BaseException as error:  # noqa: BLE001 - handed back to the test
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds} s"
    return outcome["error"]


# -- the seam: catalog ------------------------------------------------------------------------


def test_catalog_facts_of_a_real_table(mysql_engine: Engine) -> None:
    _run(
        mysql_engine,
        "CREATE TABLE docs (region VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, n BIGINT UNSIGNED NOT NULL, "
        "title VARCHAR(200), body MEDIUMTEXT, views INT, PRIMARY KEY (region, n))",
        "CREATE TRIGGER docs_audit BEFORE INSERT ON docs FOR EACH ROW SET NEW.views = 0",
        "CREATE VIEW doc_titles AS SELECT title FROM docs",
    )
    with mysql_engine.connect() as connection:
        schema = connection.execute(text("SELECT DATABASE()")).scalar_one()
        facts = catalog.table_facts(connection, "docs", schema)
        assert facts is not None
        assert (facts.schema, facts.name, facts.kind) == (schema, "docs", "r")
        assert list(facts.columns) == ["region", "n", "title", "body", "views"]
        assert {name for name, column in facts.columns.items() if column.is_text} == {"region", "title", "body"}
        assert facts.keys == ("region", "n")
        # key types are spelled so a side table's key can reference them (charset and collation included)
        assert facts.key_types == ("varchar(8) CHARACTER SET ascii COLLATE ascii_bin", "bigint(20) unsigned")
        assert facts.triggers == ("docs_audit",)
        assert catalog.table_facts(connection, "doc_titles", schema) is None  # a view is not a table
        assert catalog.table_facts(connection, "Docs", schema) is None  # names are exact
        assert catalog.table_facts(connection, "missing", schema) is None
        target = catalog.describe(connection, "docs", ["title", "body"])
        assert (target.schema, target.keys, target.source) == (schema, ("region", "n"), ("title", "body"))
        with pytest.raises(simsql.SchemaError, match=r"docs\.views is int\(11\), not text"):
            catalog.describe(connection, "docs", ["views"])
        with pytest.raises(simsql.SchemaError, match="does not exist"):
            catalog.describe(connection, "missing", ["body"])


def test_catalog_names_what_depends_on_columns(mysql_engine: Engine) -> None:
    _run(
        mysql_engine,
        "CREATE TABLE docs (id INT PRIMARY KEY, body TEXT, fp BIGINT UNSIGNED, fp_b0 INT AS ((fp >> 48) & 65535) VIRTUAL, "
        "fp_twice BIGINT UNSIGNED AS (fp * 2) VIRTUAL)",
        "CREATE INDEX ix_mine ON docs (id, fp)",
        "CREATE INDEX ix_simsql ON docs (fp_b0, fp)",
        "CREATE VIEW fps AS SELECT id, fp FROM docs",
        "CREATE VIEW bodies AS SELECT id, body FROM docs",
    )
    with mysql_engine.connect() as connection:
        schema = connection.execute(text("SELECT DATABASE()")).scalar_one()
        found = catalog.dependents(connection, schema, "docs", ["fp", "fp_b0"], own=["ix_simsql"])
    assert found == ["generated column docs.fp_twice", "index ix_mine on table docs", f"view {schema}.fps"]


# -- the seam: time bounds --------------------------------------------------------------------


def test_durations_translate_to_seconds() -> None:
    assert my.interval_seconds("5s") == 5
    assert my.interval_seconds("10min") == 600
    assert my.interval_seconds("1500ms") == 1.5
    assert my.interval_seconds("250") == 0.25  # PostgreSQL's unit for a bare timeout: milliseconds
    assert my.interval_seconds("0") is None and my.interval_seconds(None) is None
    with pytest.raises(ValueError, match="not a duration"):
        my.interval_seconds("five seconds")


def _session_bounds(connection: Any) -> tuple[Any, ...]:
    return tuple(connection.execute(text(
        "SELECT @@SESSION.lock_wait_timeout, @@SESSION.innodb_lock_wait_timeout, @@SESSION.max_statement_time"
    )).one())


def test_bounds_apply_inside_and_the_session_gets_its_own_back(mysql_engine: Engine) -> None:
    with mysql_engine.connect() as connection:
        own = _session_bounds(connection)
        with apply.bounded(connection, apply.Timeouts("1500ms", "2min")):
            assert _session_bounds(connection) == (2, 2, 120)  # whole seconds, rounded up
            with apply.bounded(connection, apply.Timeouts(None, None)):
                assert _session_bounds(connection) == (my.UNBOUNDED_LOCK_WAIT, my.UNBOUNDED_ROW_LOCK_WAIT, 0)
            assert _session_bounds(connection) == (2, 2, 120)
        assert _session_bounds(connection) == own
        # a bound meant to last a transaction lasts until the connection goes back to its pool
        apply.set_timeouts(connection, apply.Timeouts("3s", "1s"))
        assert _session_bounds(connection) == (3, 3, 1)
        thread_id = connection.connection.dbapi_connection.thread_id()  # type: ignore[union-attr]
    with mysql_engine.connect() as connection:
        assert connection.connection.dbapi_connection.thread_id() == thread_id  # type: ignore[union-attr]  # the same session
        assert _session_bounds(connection) == own


def test_a_statement_over_its_bound_is_a_statement_timeout(mysql_engine: Engine) -> None:
    plan = Plan((Step("SELECT SLEEP(5)", "sleep"),))
    with mysql_engine.connect() as connection:
        error = _within(15, lambda: apply.run(connection, plan, apply.Timeouts("1s", "300ms")))
    assert isinstance(error, simsql.LockTimeout), error
    assert "sleep: gave up after waiting 300ms for the statement to finish" in str(error)


def test_ddl_behind_a_held_metadata_lock_gives_up_and_names_the_holder(mysql_engine: Engine) -> None:
    _run(mysql_engine, "CREATE TABLE docs (id INT PRIMARY KEY, body TEXT)", "INSERT INTO docs VALUES (1, 'a')")
    holder = mysql_engine.connect()
    try:
        holder.execute(text("SELECT body FROM docs"))  # the transaction stays open: a shared metadata lock
        holder_id = holder.connection.dbapi_connection.thread_id()  # type: ignore[union-attr]
        schema = holder.execute(text("SELECT DATABASE()")).scalar_one()
        plan = Plan((
            Step("ALTER TABLE docs ADD COLUMN first INT", "add column first"),
            Step("ALTER TABLE docs ADD COLUMN second INT", "add column second"),
        ))
        relation = f"{my.quote(schema)}.{my.quote('docs')}"
        # the first statement must wait: run it behind the lock
        error = _within(20, lambda: apply.run_on_engine(mysql_engine, Plan(plan.steps[:1]), apply.Timeouts("1s"), relations=[relation]))
        assert isinstance(error, simsql.LockTimeout), error
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


def test_a_plan_that_stops_halfway_on_mysql_says_what_it_kept(mysql_engine: Engine) -> None:
    _run(mysql_engine, "CREATE TABLE docs (id INT PRIMARY KEY, body TEXT)", "CREATE TABLE other (id INT PRIMARY KEY)")
    holder = mysql_engine.connect()
    try:
        holder.execute(text("SELECT id FROM other"))
        plan = Plan((
            Step("ALTER TABLE docs ADD COLUMN first INT", "add column first"),
            Step("ALTER TABLE other ADD COLUMN second INT", "add column second"),
        ))
        error = _within(20, lambda: apply.run_on_engine(mysql_engine, plan, apply.Timeouts("1s")))
        assert isinstance(error, simsql.LockTimeout), error
        assert "Already committed: add column first." in str(error)
        assert "MySQL/MariaDB keep each DDL statement before it" in str(error)
    finally:
        holder.rollback()
        holder.close()


def test_unsupported_servers_are_refused_with_the_version_found() -> None:
    from sqlalchemy import create_engine

    engine = create_engine("sqlite://")
    with engine.connect() as connection, pytest.raises(simsql.UnsupportedDatabase, match=r"'sqlite' database \(3\."):
        apply.set_timeouts(connection, apply.DDL)
