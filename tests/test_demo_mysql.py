"""``simsql demo --url mysql+pymysql://...`` runs on MySQL/MariaDB too (issue 23 item 7): the
one-demo-at-a-time lock, the server's name and the statistics refresh are the backend's, not
PostgreSQL's. A small run (the full demo is tests/test_demo.py, on PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, text

from simsql.demo import SCHEMA
from tests.command_line import cli, ok


@pytest.fixture
def demo_url(mysql_engine: Engine, mysql_admin_engine: Engine) -> Iterator[str]:
    yield mysql_engine.url.render_as_string(hide_password=False)
    with mysql_admin_engine.begin() as connection:
        connection.execute(text(f"DROP DATABASE IF EXISTS `{SCHEMA}`"))


def test_demo_runs_on_mysql(demo_url: str, mysql_engine: Engine) -> None:
    report = ok(cli("demo", "--url", demo_url, "--limit", "60", timeout=300)).stdout
    assert "MariaDB" in report or "MySQL" in report
    assert "PostgreSQL 1" not in report  # no PostgreSQL version claimed for another server
    with mysql_engine.connect() as connection:
        rows = connection.execute(text(f"SELECT count(*), count(simhash) FROM `{SCHEMA}`.demo_articles")).one()
    assert rows[0] > 60 and rows[0] == rows[1]
