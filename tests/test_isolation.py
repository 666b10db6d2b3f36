"""``pytest`` neither depends on nor disturbs what is already in the database it is given (issue 33,
part 5): a PostgreSQL service used before holds simsql's registry in ``public``, with rows for
tables that are none of the tests' business, and the tests that list the registry failed on it
(``assert ('simsql_0001',) == ()``, ``MultipleResultsFound``).

The check plants such state in a database of its own (a user's table, attached and backfilled
with the public API, as ``simsql attach`` leaves it), hands that database to a run of the
suite's registry tests as ``SIMSQL_TEST_DATABASE_URL`` / ``SIMSQL_TEST_MYSQL_URL`` /
``SIMSQL_TEST_CITUS_URL``, and wants the run to pass and the planted database to read the same
afterwards, row for row.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, inspect, text
from sqlalchemy.engine import make_url

import simsql
import simsql.alembic

from .command_line import environment
from .databases import PREFIX, own_citus_database, own_database

ROOT = Path(__file__).resolve().parent.parent
REGISTRY_TESTS = ("tests/test_create_all_registered.py", "tests/test_attach_installs.py")
"""Tests that read the registry of the database they are on (they failed on a used server)."""
INNER = {
    "postgresql": ("-k", "postgresql", *REGISTRY_TESTS),
    "mysql": ("-k", "mysql", *REGISTRY_TESTS),
    "citus": ("tests/test_citus.py::test_distributed_mixin_table_keeps_fingerprints_honest_on_the_shards",),
}
"""What runs given each server's used database: tests that read the registry (or, on Citus, the
status of "the" table attached), which failed given such a database."""
VARIABLE = {"postgresql": "SIMSQL_TEST_DATABASE_URL", "mysql": "SIMSQL_TEST_MYSQL_URL", "citus": "SIMSQL_TEST_CITUS_URL"}


def plant(url: str) -> None:
    """What a user's earlier ``simsql attach`` leaves: the registry, a table attached and backfilled."""
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE foreign_docs (id int PRIMARY KEY, body text)"))
            connection.execute(text("INSERT INTO foreign_docs VALUES (1, 'a user''s own row, attached before the tests ran')"))
        simsql.alembic.upgrade(engine)
        simsql.attach_table(engine, "foreign_docs", ["body"], concurrently=False)
        simsql.backfill(engine, "foreign_docs")
    finally:
        engine.dispose()


def snapshot(url: str) -> dict[str, list[tuple[object, ...]]]:
    """Every table of every schema of the database ``url`` names, row for row (and its schemas)."""
    engine = create_engine(url)
    try:
        found: dict[str, list[tuple[object, ...]]] = {}
        with engine.connect() as connection:
            mysql = connection.dialect.name in ("mysql", "mariadb")
            schemas = [None] if mysql else [s for s in inspect(connection).get_schema_names() if s != "information_schema"]
            found["schemas"] = [(schema,) for schema in schemas]
            for schema in schemas:
                for table in inspect(connection).get_table_names(schema):
                    name = table if schema is None else f'"{schema}"."{table}"'
                    found[f"{schema}.{table}"] = sorted(map(tuple, connection.execute(text(f"SELECT * FROM {name}"))), key=repr)
        return found
    finally:
        engine.dispose()


@pytest.fixture(params=["postgresql", "mysql", "citus"])
def used_database(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(server, URL) of a database on the test server holding a user's simsql state."""
    if request.param == "citus":
        context = own_citus_database(request.getfixturevalue("given_citus_url"))
    else:
        admin: Engine = request.getfixturevalue("admin_engine" if request.param == "postgresql" else "mysql_admin_engine")
        context = own_database(admin.url.render_as_string(hide_password=False))
    with context as used:
        plant(used)
        yield request.param, used


def test_a_run_given_a_used_database_passes_and_leaves_it_as_it_was(used_database: tuple[str, str]) -> None:
    server, url = used_database
    before = snapshot(url)
    assert any(rows for name, rows in before.items() if name.endswith("simsql_registry")), before
    env = {**environment(), VARIABLE[server]: url}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *INNER[server]],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, f"pytest given a used {server} database failed:\n{run.stdout[-4000:]}\n{run.stderr[-2000:]}"
    assert " passed" in run.stdout and "skipped" not in run.stdout, run.stdout[-2000:]  # the tests ran, none skipped
    assert snapshot(url) == before


def test_the_session_works_in_a_database_of_its_own(database_url: str, admin_engine: Engine) -> None:
    with admin_engine.connect() as connection:
        assert str(connection.execute(text("SELECT current_database()")).scalar_one()).startswith(PREFIX)
    assert make_url(database_url).database == make_url(admin_engine.url).database


@pytest.mark.parametrize("server", ["postgresql", "mysql"])
def test_a_database_of_the_suite_s_own_is_dropped_at_the_end(request: pytest.FixtureRequest, server: str) -> None:
    admin: Engine = request.getfixturevalue("admin_engine" if server == "postgresql" else "mysql_admin_engine")
    listed = "SELECT datname FROM pg_database" if server == "postgresql" else "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA"

    def databases() -> set[str]:
        with admin.connect() as connection:
            return set(connection.execute(text(listed)).scalars())

    with own_database(admin.url.render_as_string(hide_password=False)) as url:
        name = make_url(url).database
        assert name is not None and name.startswith(PREFIX) and name in databases()
        held = create_engine(url)
        held.connect()  # a session still open at the end does not keep it
    assert name not in databases()
    held.dispose()
