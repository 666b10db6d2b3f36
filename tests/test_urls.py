"""A plain ``postgresql://`` URL runs on psycopg 3 (the driver simsql installs) at every entry
point, not on SQLAlchemy 2.0's default psycopg2 (which simsql does not install; SQLAlchemy 2.1
picks psycopg 3 by itself), and Heroku's ``postgres://`` works too (no SQLAlchemy knows it).

Every entry point gets the URL exactly as a user would write it.
"""

from __future__ import annotations

import io

import pytest
from alembic import command
from sqlalchemy import Engine, make_url, text

import simsql
import simsql.alembic
import simsql.demo
from simsql.lifecycle import attach
from simsql.urls import normalise_url
from tests.test_cli import cli, ok
from tests.test_migrations import build_legacy


@pytest.mark.parametrize(
    ("given", "driver"),
    [
        ("postgresql://app:s%40cret@db:5433/app", "postgresql+psycopg"),
        ("postgres://app@db/app", "postgresql+psycopg"),  # Heroku-style
        ("postgresql+psycopg://app@db/app", "postgresql+psycopg"),
        ("postgresql+psycopg2://app@db/app", "postgresql+psycopg2"),  # an explicit choice is kept
        ("mysql+pymysql://root@db/test", "mysql+pymysql"),
    ],
)
def test_normalise_url(given: str, driver: str) -> None:
    url = normalise_url(given)
    assert url.drivername == driver
    assert url.host == make_url(given).host
    assert url.password == make_url(given).password
    assert normalise_url(make_url(given)) == url


@pytest.fixture(params=["postgresql", "postgres"])
def plain_url(database_url: str, schema: str, request: pytest.FixtureRequest) -> str:
    """The test's database and schema as a plain postgresql:// (or postgres://) URL."""
    url = make_url(database_url).set(drivername=request.param)
    url = url.update_query_dict({"options": f"-csearch_path={schema}"})
    return url.render_as_string(hide_password=False)


def _version_table_exists(engine: Engine) -> bool:
    with engine.connect() as connection:
        return bool(connection.execute(text("SELECT to_regclass('simsql_alembic_version') IS NOT NULL")).scalar_one())


def test_alembic_upgrade_and_current(plain_url: str, engine: Engine) -> None:
    simsql.alembic.upgrade(plain_url)
    assert simsql.alembic.current(plain_url)
    assert _version_table_exists(engine)


def test_alembic_config_runs_the_environment(plain_url: str, engine: Engine) -> None:
    command.upgrade(simsql.alembic.config(plain_url), "heads")  # migrations/env.py makes the engine
    assert _version_table_exists(engine)


def test_backfill(plain_url: str, engine: Engine) -> None:
    build_legacy(engine, rows=20)
    simsql.alembic.upgrade(engine)
    with engine.begin() as connection:
        attach.add_simhash(connection, "articles", ["title", "body"])
    assert simsql.backfill(plain_url, "articles", workers=0).rows_fingerprinted == 20


def test_cli(plain_url: str) -> None:
    ok(cli("db", "upgrade", url=plain_url))
    assert ok(cli("db", "current", url=plain_url)).stdout.strip()


def test_demo(plain_url: str) -> None:
    out = io.StringIO()
    assert simsql.demo.run_demo(plain_url, out=out, limit=25) == 0
    assert "postgresql+psycopg://" in out.getvalue()
