"""Issue 21 leftovers, on every server.

* Detaching a table dropped (or replaced) behind simsql's back removes everything simsql created
  for it that the drop left behind: the side table, and on PostgreSQL the trigger functions
  (``DROP TABLE`` takes the triggers, never their functions). The schema ends as it was before
  attach.
* A PostgreSQL backfill whose role defaults to ``REPEATABLE READ`` runs (it sets its own
  isolation level) instead of failing with a serialization error under concurrent writers.
"""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import Engine, create_engine, text

import simsql
import simsql.alembic
from simsql.schema.names import Names

from .tables import build_docs, check_fingerprints, is_mysql, run, writer


def _objects(engine: Engine) -> set[tuple[str, str]]:
    """Tables and (PostgreSQL) functions in the test's schema."""
    with engine.connect() as connection:
        if is_mysql(engine):
            tables = connection.execute(text("SELECT table_name FROM information_schema.tables WHERE table_schema = database()"))
            return {("table", t) for t in tables.scalars()}
        tables = connection.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"))
        functions = connection.execute(
            text("SELECT proname FROM pg_proc WHERE pronamespace = to_regnamespace(current_schema())")
        )
        return {("table", t) for t in tables.scalars()} | {("function", f) for f in functions.scalars()}


@pytest.mark.parametrize(
    ("side_table", "how"), [(False, "dropped"), (True, "dropped"), (False, "replaced")], ids=["columns", "side_table", "replaced"]
)
def test_detaching_a_dropped_table_leaves_nothing_of_simsql(any_engine: Engine, side_table: bool, how: str) -> None:
    simsql.alembic.upgrade(any_engine)
    run(any_engine, "CREATE TABLE lost (id INT PRIMARY KEY, body TEXT)", "INSERT INTO lost VALUES (1, 'some words here')")
    before = _objects(any_engine)
    simsql.attach_table(any_engine, "lost", ["body"], side_table=side_table)
    simsql.backfill(any_engine, "lost", workers=0)
    assert _objects(any_engine) > before or (is_mysql(any_engine) and not side_table)  # (MySQL: columns, triggers)
    if is_mysql(any_engine):  # (a side table's foreign key would refuse a plain DROP)
        run(any_engine, "SET FOREIGN_KEY_CHECKS = 0", "DROP TABLE lost")
    else:
        run(any_engine, "DROP TABLE lost CASCADE")
    if how == "replaced":
        run(any_engine, "CREATE TABLE lost (id INT PRIMARY KEY, body TEXT)")
    simsql.detach_table(any_engine, "lost")
    expected = before if how == "replaced" else before - {("table", "lost")}
    assert _objects(any_engine) == expected
    assert simsql.status(any_engine) == []


def test_detaching_a_dropped_table_keeps_a_side_table_others_depend_on(engine: Engine) -> None:
    """What simsql did not create stays, and so does what it needs: a refusal, nothing changed."""
    simsql.alembic.upgrade(engine)
    run(engine, "CREATE TABLE lost (id INT PRIMARY KEY, body TEXT)", "INSERT INTO lost VALUES (1, 'some words here')")
    simsql.attach_table(engine, "lost", ["body"], side_table=True)
    side = simsql.status(engine)[0]
    run(engine, "DROP TABLE lost CASCADE")
    side_table = Names.for_table("lost", mode="side_table").side
    run(engine, f'CREATE VIEW user_view AS SELECT * FROM "{side_table}"')
    objects = _objects(engine)
    with pytest.raises(simsql.text.errors.SchemaError, match="user_view"):
        simsql.detach_table(engine, "lost")
    assert _objects(engine) == objects and [s.table for s in simsql.status(engine)] == [side.table]


def test_backfill_under_a_repeatable_read_default_with_writers(database_url: str, schema: str, engine: Engine) -> None:
    simsql.alembic.upgrade(engine)
    build_docs(engine, 3000)
    simsql.attach_table(engine, "docs", ["title", "body"])
    options = f"-csearch_path={schema},public -cdefault_transaction_isolation=repeatable\\ read"
    strict = create_engine(database_url, connect_args={"options": options})
    try:
        with strict.connect() as connection:
            assert connection.execute(text("SHOW transaction_isolation")).scalar() == "repeatable read"
        stop, counts = threading.Event(), {"writes": 0}
        writers = [threading.Thread(target=writer, args=(engine, seed, stop, counts)) for seed in (1, 2)]
        for thread in writers:
            thread.start()
        try:
            simsql.backfill(strict, "docs", batch_size=50, workers=0)
        finally:
            stop.set()
            for thread in writers:
                thread.join()
        assert counts["writes"] > 0
        simsql.backfill(strict, "docs", workers=0)  # rows the writers changed behind the cursor
    finally:
        strict.dispose()
    with_text, fingerprinted = check_fingerprints(engine, "SELECT id, title, body, simhash FROM docs")
    assert fingerprinted == with_text > 0
