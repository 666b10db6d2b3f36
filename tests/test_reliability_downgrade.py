"""A downgrade of simsql's own objects never strands an attached table (issue 21, item 6).

Removing the registry while tables are attached left their fingerprint columns, triggers and
indexes behind with nothing recording them (``simsql db downgrade`` exited 0 with a warning).
Every way of asking refuses instead, names the attached tables and the command that detaches
them, and removes nothing: ``simsql db downgrade``, :func:`simsql.alembic.downgrade`;
``op.downgrade_simsql()`` inside an application's migration keeps simsql's objects (the
application's own downgrade goes on) and says why.
"""

from __future__ import annotations

import logging

import pytest
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy import Engine

import simsql
import simsql.alembic
from simsql.errors import SchemaError

from .command_line import cli, failed, ok
from .tables import build_live_docs, state

ATTACH = ("attach", "--table", "docs", "--text-column", "title", "--text-column", "body", "--no-backfill")


def _attached(engine: Engine, url: str) -> dict[str, object]:
    build_live_docs(engine)
    ok(cli(*ATTACH, url=url))
    found = state(engine)
    assert found["registry"] == [("docs", "simhash")]
    return found


def test_db_downgrade_refuses_while_tables_are_attached(any_engine: Engine, any_url: str) -> None:
    before = _attached(any_engine, any_url)
    refused = cli("db", "downgrade", url=any_url)
    failed(refused, 1, "simsql detach --table docs")
    assert ".docs" in refused.stderr and "db downgrade" in refused.stderr
    assert state(any_engine) == before  # nothing removed: columns, triggers, indexes, registry
    assert ok(cli("db", "current", url=any_url)).stdout.split() == ["simsql_0002"]
    # Once detached, the same command removes everything of simsql.
    ok(cli("detach", "--table", "docs", url=any_url))
    ok(cli("db", "downgrade", url=any_url))
    assert state(any_engine)["registry"] is None


def test_alembic_downgrade_refuses_while_tables_are_attached(any_engine: Engine, any_url: str) -> None:
    before = _attached(any_engine, any_url)
    with pytest.raises(SchemaError, match=r"docs.*simsql detach --table docs"):
        simsql.alembic.downgrade(any_engine)
    assert state(any_engine) == before
    assert simsql.alembic.current(any_engine) == ("simsql_0002",)


def test_a_downgrade_to_the_applied_revision_changes_nothing_and_is_not_refused(any_engine: Engine, any_url: str) -> None:
    before = _attached(any_engine, any_url)
    simsql.alembic.downgrade(any_engine, "simsql_0002")
    assert state(any_engine) == before


def test_op_downgrade_simsql_keeps_simsqls_objects_while_tables_are_attached(
    any_engine: Engine, any_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    before = _attached(any_engine, any_url)
    with any_engine.begin() as connection, caplog.at_level(logging.WARNING, logger="simsql"):
        with Operations.context(MigrationContext.configure(connection)):
            from alembic import op

            op.downgrade_simsql()  # type: ignore[attr-defined]
    assert state(any_engine) == before
    assert "docs" in caplog.text and "simsql detach --table docs" in caplog.text
