"""Concurrent ``op.upgrade_simsql()`` (issue 21, item 13's leftover).

Several deployments each run the application's migrations, which call ``op.upgrade_simsql()``:
``simsql db upgrade`` waits for a winner under an advisory lock, but the operation ran
unserialised inside each application's transaction, and the losers failed with the server's
"already exists" (PostgreSQL: a unique violation in the catalog). Now it takes the same lock
for as long as the application's transaction lasts: the losers wait, find simsql's revision
applied and go on.
"""

from __future__ import annotations

import subprocess
import sys

from sqlalchemy import Engine

import simsql.alembic
from simsql.store import registry

from .command_line import environment
from .test_reliability_upgrade import PROCESSES, released_at_the_version_table

MIGRATION = """
import sys
from alembic.migration import MigrationContext
from alembic.operations import Operations
import simsql.alembic
from simsql.urls import engine_for

engine = engine_for(sys.argv[1])
with engine.begin() as connection:  # the application's migration transaction
    with Operations.context(MigrationContext.configure(connection)):
        from alembic import op
        op.upgrade_simsql()
print("migrated")
"""


def _start(url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", MIGRATION, url], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=environment(),
    )  # fmt: skip


def _all_succeeded(runs: list[subprocess.Popen[str]], engine: Engine) -> None:
    results = [(run.wait(timeout=120), *run.communicate()) for run in runs]
    failures = [f"exit {code}: {err.strip()[-400:]}" for code, _, err in results if code != 0]
    assert not failures, "\n".join(failures)
    assert all(out.split() == ["migrated"] for _, out, _ in results)
    assert simsql.alembic.current(engine) == ("simsql_0002",)
    with engine.connect() as connection:
        assert registry.registry_exists(connection) and registry.entries(connection) == []


def test_concurrent_op_upgrade_simsql_all_succeed(any_engine: Engine, any_url: str) -> None:
    """A race (before the fix it failed on most runs, not every run)."""
    _all_succeeded([_start(any_url) for _ in range(PROCESSES)], any_engine)


def test_op_upgrade_simsql_that_all_reach_the_version_table_at_once_all_succeed(engine: Engine, url: str) -> None:
    """Deterministic on PostgreSQL: an uncommitted CREATE TABLE of simsql's version table holds
    every migration at the same point; rolled back, they all go at once."""
    _all_succeeded(released_at_the_version_table(engine, lambda: _start(url)), engine)
