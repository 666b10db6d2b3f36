"""Concurrent upgrades of simsql's own objects (issue 21, item 13).

Several deployments starting at once each run ``simsql db upgrade``: the losers of the race to
create the version table and the registry got raw driver errors ("already exists", a unique
violation in the catalog). They wait for the winner instead (an advisory lock around the
upgrade) and find the revision applied: every process exits 0.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

from sqlalchemy import Connection, Engine, text

import simsql.alembic
from simsql.store import registry

from .command_line import command, environment

PROCESSES = 6


def _start(url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command(url, "db", "upgrade"), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=environment(),
    )  # fmt: skip


def _all_succeeded(runs: list[subprocess.Popen[str]]) -> None:
    results = [(run.wait(timeout=120), *run.communicate()) for run in runs]
    failures = [f"exit {code}: {err.strip()[-400:]}" for code, _, err in results if code != 0]
    assert not failures, "\n".join(failures)
    assert all(out.split() == ["simsql_0002"] for _, out, _ in results)


def test_concurrent_db_upgrades_all_succeed(any_engine: Engine, any_url: str) -> None:
    """A race (it failed most runs before the fix on both servers, not every run)."""
    _all_succeeded([_start(any_url) for _ in range(PROCESSES)])
    assert simsql.alembic.current(any_engine) == ("simsql_0002",)
    with any_engine.connect() as connection:
        assert registry.registry_exists(connection) and registry.entries(connection) == []


def blocked_behind(holder: Connection, pid: int) -> int:
    """How many sessions wait, directly or through another waiter, for the session ``pid``."""
    waiting = holder.execute(text(
        "SELECT pid, pg_blocking_pids(pid) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )).all()  # fmt: skip
    behind, grown = {pid}, True
    while grown:
        grown = False
        for waiter, blockers in waiting:
            if waiter not in behind and behind & set(blockers):
                behind.add(waiter)
                grown = True
    return len(behind) - 1


def released_at_the_version_table(engine: Engine, start: Callable[[], subprocess.Popen[str]]) -> list[subprocess.Popen[str]]:
    """PROCESSES runs of ``start()``, all held at the same point by an uncommitted CREATE TABLE of
    simsql's version table (waited for until every one is blocked behind it), then released at
    once by its rollback."""
    holder = engine.connect()
    try:
        holder.execute(text("CREATE TABLE simsql_alembic_version (version_num varchar(32) PRIMARY KEY)"))
        pid = holder.execute(text("SELECT pg_backend_pid()")).scalar_one()
        runs = [start() for _ in range(PROCESSES)]
        deadline = time.monotonic() + 60
        with engine.connect() as watcher:
            while blocked_behind(watcher, pid) < PROCESSES and time.monotonic() < deadline:
                watcher.rollback()
                time.sleep(0.2)
            assert blocked_behind(watcher, pid) == PROCESSES
    finally:
        holder.rollback()
        holder.close()
    return runs


def test_db_upgrades_that_all_reach_the_version_table_at_once_all_succeed(engine: Engine, url: str) -> None:
    """Deterministic on PostgreSQL: an uncommitted CREATE TABLE of the version table holds
    every upgrade at the same point; when it is rolled back they all go at once. Before the
    advisory lock, one won and the others failed on the catalog's unique index."""
    _all_succeeded(released_at_the_version_table(engine, lambda: _start(url)))
    assert simsql.alembic.current(engine) == ("simsql_0002",)
