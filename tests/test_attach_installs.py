"""``simsql.attach_table`` does what ``simsql attach`` does (issue 23 item 5): on a database
where simsql's objects are not installed yet it installs them (simsql's revision, recorded in
its own version table), then attaches; a typo in the table or a column leaves the database as
it was, simsql's objects not installed."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, inspect, text

import simsql
import simsql.alembic
import simsql.store.registry
from simsql.errors import SchemaError


def _notes(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE notes (id int PRIMARY KEY, body text)"))
        connection.execute(text("INSERT INTO notes VALUES (1, 'the harvest came in late this year')"))


def test_attach_table_installs_simsqls_objects_when_needed(any_engine: Engine) -> None:
    _notes(any_engine)
    assert simsql.alembic.current(any_engine) == ()
    entry = simsql.attach_table(any_engine, "notes", ["body"], concurrently=False)
    assert (entry.table_name, entry.source) == ("notes", ("body",))
    assert simsql.alembic.current(any_engine) == ("simsql_0002",)
    assert [s.table for s in simsql.status(any_engine)] == ["notes"]
    simsql.backfill(any_engine, "notes")
    assert simsql.status(any_engine)[0].rows_fingerprinted == 1


def test_a_typo_installs_nothing(any_engine: Engine) -> None:
    _notes(any_engine)
    with pytest.raises(SchemaError):
        simsql.attach_table(any_engine, "notes", ["bdoy"], concurrently=False)
    with pytest.raises(SchemaError):
        simsql.attach_table(any_engine, "nots", ["body"], concurrently=False)
    with any_engine.connect() as connection:
        here = simsql.store.registry.current_schema(connection)
    assert set(inspect(any_engine).get_table_names(schema=here)) == {"notes"}
