"""Partition lists through Alembic and the command line (issue 34): ``op.add_simhash_lists``
in an application's migration on a fresh table, ``simsql lists fit`` on its rows, queries
with ``probes``, and the downgrade leaving the table as it was, on PostgreSQL and MySQL/MariaDB."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from sqlalchemy import Engine, inspect, select, text
from sqlalchemy.orm import Session

import simsql
import simsql.alembic
from simsql.errors import WouldLockTable
from simsql.lifecycle import catalog
from simsql.lists import fit_lists
from simsql.schema.names import Names

from .command_line import cli
from .tables import run, texts


def _migrate(connection: Any, code: str) -> None:
    """Migration code run as Alembic runs a revision's body, online."""
    from alembic.operations import Operations
    from alembic.runtime.migration import MigrationContext

    with Operations.context(MigrationContext.configure(connection)):
        from alembic import op

        exec(compile(code, "<migration>", "exec"), {"op": op})  # noqa: S102


def _columns(engine: Engine, table: str) -> list[str]:
    return sorted(column["name"] for column in inspect(engine).get_columns(table))


def _lists_recorded(engine: Engine, table: str) -> int:
    with engine.connect() as connection:
        return int(connection.execute(
            text("SELECT count(*) FROM simsql_partitions WHERE table_name = :t"), {"t": table}
        ).scalar_one())  # fmt: skip


def test_a_migration_adds_the_lists_the_cli_fits_them_and_the_downgrade_removes_them(any_engine: Engine, any_url: str) -> None:
    engine = any_engine
    run(engine, "CREATE TABLE notes (id integer PRIMARY KEY, title varchar(200), body text)")
    before = _columns(engine, "notes")
    with engine.begin() as connection:
        _migrate(connection, 'op.upgrade_simsql()\nop.add_simhash("notes", source=["title", "body"])\nop.add_simhash_lists("notes")')
    assert "simhash_part" in _columns(engine, "notes")
    with engine.connect() as connection:
        schema = simsql.store.registry.current_schema(connection)
        assert Names("notes").part_index in catalog.index_names(connection, schema, "notes")
    rows = texts(300)
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO notes (id, title, body) VALUES (:id, :title, :body)"), rows)
    assert cli("backfill", "--table", "notes", url=any_url).returncode == 0
    fitted = cli("lists", "fit", "--table", "notes", "--lists", "6", url=any_url)
    assert fitted.returncode == 0, fitted.stderr
    assert "fitted 6 lists" in fitted.stdout
    status = cli("status", "--format", "csv", url=any_url)
    (record,) = csv.DictReader(io.StringIO(status.stdout))
    assert (record["lists"], record["left_behind"]) == ("6", "0")
    with engine.connect() as connection:
        model = simsql.reflect(connection, "notes")
    with Session(engine) as session:
        target = rows[10]["title"] + "\n" + rows[10]["body"]
        exact = session.execute(simsql.most_similar(select(model), target, limit=5)).all()
        every = session.execute(simsql.most_similar(select(model), target, limit=5, probes=6)).all()
        assert [(r.id, d) for r, d, _ in every] == [(r.id, d) for r, d, _ in exact]
    with engine.begin() as connection:
        _migrate(connection, 'op.drop_simhash_lists("notes")\nop.drop_simhash("notes")')
    assert _columns(engine, "notes") == before
    assert _lists_recorded(engine, "notes") == 0


def test_fit_adds_the_column_to_an_attached_table_and_detach_removes_it(any_engine: Engine, any_url: str) -> None:
    """A table attached by the CLI: the fit adds the column (where the server can online) and
    records it as simsql's, so `simsql detach` takes it away with everything else."""
    engine = any_engine
    run(engine, "CREATE TABLE docs (id integer PRIMARY KEY, body text)")
    before = _columns(engine, "docs")
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO docs (id, body) VALUES (:id, :body)"), [{"id": r["id"], "body": r["body"]} for r in texts(120)])
    assert cli("attach", "--table", "docs", "--text-column", "body", "--yes", url=any_url).returncode == 0
    simsql.backfill(engine, "docs")
    mariadb = engine.dialect.name != "postgresql" and bool(getattr(engine.dialect, "is_mariadb", False))
    if mariadb:  # no column added online beside indexed generated columns: refused, nothing changed
        with pytest.raises(WouldLockTable, match="ADD COLUMN simhash_part INT NULL"):
            fit_lists(engine, "docs", lists=4)
        assert "simhash_part" not in _columns(engine, "docs") and _lists_recorded(engine, "docs") == 0
        return
    fitted = fit_lists(engine, "docs", lists=4)
    with engine.connect() as connection:
        fingerprinted = connection.execute(text("SELECT count(simhash) FROM docs")).scalar_one()
    assert fingerprinted > 60 and (fitted.rows_placed, fitted.left_behind) == (fingerprinted, 0)
    assert cli("detach", "--table", "docs", url=any_url).returncode == 0
    assert _columns(engine, "docs") == before
    assert _lists_recorded(engine, "docs") == 0


def test_a_database_installed_by_simsql_0_3_gets_the_lists_tables_on_its_next_install(any_engine: Engine) -> None:
    """simsql 0.3 installed revision simsql_0001 only: the next attach (or create_all, or fit)
    applies simsql_0002 under the migration lock, and the registry's rows are untouched."""
    simsql.alembic.upgrade(any_engine, "simsql_0001")
    assert simsql.alembic.current(any_engine) == ("simsql_0001",)
    run(any_engine, "CREATE TABLE notes (id integer PRIMARY KEY, body text)")
    simsql.attach_table(any_engine, "notes", ["body"])
    assert simsql.alembic.current(any_engine) == ("simsql_0002",)
    assert [found.table for found in simsql.status(any_engine)] == ["notes"]
    assert _lists_recorded(any_engine, "notes") == 0
