"""Issue 21 item 1: ``simsql backfill`` killed with SIGKILL while its fingerprinting workers run
leaves no session behind (no transaction, no row lock), so the table can be written at once and
the next backfill finishes; on PostgreSQL and MariaDB.

Before the fix the forked workers outlived their parent holding copies of its database sockets:
the server saw the sessions open, ``idle in transaction`` with the batch's row locks, for ever on
PostgreSQL (eight hours on MariaDB).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid

import psutil
from sqlalchemy import Engine, create_engine, make_url, text

from .command_line import cli, command, environment, ok
from .tables import build_docs, check_fingerprints, is_mysql, progress

ROWS = 20_000
GRACE_S = 10.0  # how long a killed backfill's sessions may take to go (they go in milliseconds)


def _sessions(engine: Engine, tag: str) -> list[tuple[object, ...]]:
    """The server sessions of the killed backfill: on PostgreSQL those with its application
    name; on MariaDB those on the test's own database (the test's engine is disposed first)."""
    with engine.connect() as connection:
        if is_mysql(engine):
            return [tuple(r) for r in connection.execute(
                text("SELECT id, command, state FROM information_schema.processlist WHERE db = :db "
                     "AND id <> connection_id()"), {"db": tag})]  # fmt: skip
        return [tuple(r) for r in connection.execute(
            text("SELECT pid, state, xact_start FROM pg_stat_activity WHERE application_name = :tag"), {"tag": tag})]


def _kill_mid_run(engine: Engine, url: str) -> list[int]:
    """Start a backfill with two workers, SIGKILL its main process once batches are committing
    and its workers exist; returns the workers' pids."""
    backfill = subprocess.Popen(
        command(url, "backfill", "--table", "docs", "--batch-size", "200", "--workers", "2", "--no-progress"),
        # No pipe: a surviving worker would hold its write end, and reading it would never end.
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment(),
    )
    try:
        deadline = time.monotonic() + 60
        while (state := progress(engine, "docs")) is None or state[0] < 1000:
            assert backfill.poll() is None, "backfill ended before it could be killed"
            assert time.monotonic() < deadline, "backfill made no progress"
            time.sleep(0.01)
        workers = [child.pid for child in psutil.Process(backfill.pid).children(recursive=True)]
        os.kill(backfill.pid, signal.SIGKILL)
    finally:
        if backfill.poll() is None:
            backfill.kill()
        backfill.wait(timeout=30)
    assert backfill.returncode == -signal.SIGKILL
    assert workers, "the backfill had no worker processes to test"
    return workers


def _gone(pids: list[int]) -> bool:
    return not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids)


def _check_killed_backfill_leaves_nothing(engine: Engine, url: str, observer: Engine, tag: str) -> None:
    build_docs(engine, ROWS)
    ok(cli("attach", "--table", "docs", "--text-column", "title", "--text-column", "body", "--no-backfill", url=url))
    workers = _kill_mid_run(engine, url)
    engine.dispose()  # the test's own sessions must not count
    deadline = time.monotonic() + GRACE_S
    try:
        while (left := _sessions(observer, tag)) or not _gone(workers):
            alive = [p for p in workers if psutil.pid_exists(p)]
            assert time.monotonic() < deadline, f"{GRACE_S} s after SIGKILL: sessions {left}, workers alive {alive}"
            time.sleep(0.05)
    finally:  # never leave them to block the schema's teardown (and every other test's DDL)
        for pid in workers:
            if psutil.pid_exists(pid):
                os.kill(pid, signal.SIGKILL)
    with engine.begin() as connection:  # every row, locked by no one
        connection.execute(text("SET innodb_lock_wait_timeout = 2" if is_mysql(engine) else "SET lock_timeout = '2s'"))
        assert connection.execute(text("UPDATE docs SET title = title")).rowcount == ROWS
    ok(cli("backfill", "--table", "docs", "--workers", "2", "--no-progress", url=url, timeout=120))
    with_text, fingerprinted = check_fingerprints(engine, "SELECT id, title, body, simhash FROM docs")
    assert fingerprinted == with_text > 0


def test_killed_backfill_leaves_no_session_on_postgresql(engine: Engine, url: str, admin_engine: Engine) -> None:
    tag = f"simsql-kill-{uuid.uuid4().hex[:8]}"
    _check_killed_backfill_leaves_nothing(engine, f"{url}&application_name={tag}", admin_engine, tag)


def test_killed_backfill_leaves_no_session_on_mariadb(mysql_engine: Engine, mysql_cli_url: str, mysql_admin_engine: Engine) -> None:
    database = make_url(mysql_cli_url).database
    assert database is not None
    observer = create_engine(mysql_admin_engine.url)  # a pool of its own, on another database
    try:
        _check_killed_backfill_leaves_nothing(mysql_engine, mysql_cli_url, observer, database)
    finally:
        observer.dispose()
