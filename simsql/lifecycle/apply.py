"""Run a :class:`~simsql.lifecycle.ddl.Plan`, every statement bounded in time.

A statement on a user's table can wait behind another session's lock forever; queued behind
it, every other query on that table waits too. So each one runs under a bound on how long to
wait for a lock and how long to run, and a timeout becomes a
:class:`~simsql.errors.LockTimeout` that says which step waited, on whom, and what state the
table was left in.

The bounds are PostgreSQL durations (``"5s"``, ``"10min"``) on every server. PostgreSQL
applies them as ``lock_timeout`` / ``statement_timeout``; MySQL and MariaDB as
``lock_wait_timeout`` and ``innodb_lock_wait_timeout`` (whole seconds, rounded up) and
``max_statement_time`` (MariaDB, every statement) or ``max_execution_time`` (MySQL, SELECTs
only). MySQL has no transaction-scoped settings: there the session's own values come back
when the bound ends, or when the connection returns to its pool. The server-specific SQL is in
:mod:`simsql.dialects`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from ..dialects import backend, mysql, postgresql
from ..errors import LockTimeout
from .ddl import Plan, Step

TIMEOUT_STATES = postgresql.TIMEOUT_STATES
"""SQLSTATEs of ``lock_not_available`` and ``query_canceled``."""


@dataclass(frozen=True)
class Timeouts:
    """PostgreSQL duration strings (``"5s"``, ``"10min"``) on every server; ``None`` or ``"0"``
    leaves one unbounded.

    Defaults suit DDL on a live table: a lock that is not granted within seconds means another
    transaction holds the table, and waiting longer would block everyone queued behind.
    """

    lock: str | None = "5s"
    statement: str | None = "10min"


DDL = Timeouts()
INDEX_BUILD = Timeouts(lock="10min", statement=None)
"""A concurrent build may run for hours on a big table, and before it starts it waits for every
transaction in the database that is older than it: harmless to others (it blocks no reader or
writer), so that wait is bounded generously; the build itself is not bounded."""


def is_autocommit(connection: Connection) -> bool:
    """Whether each statement commits on its own (needed by ``CONCURRENTLY``)."""
    if connection.get_execution_options().get("isolation_level") == "AUTOCOMMIT":
        return True
    return bool(getattr(connection.connection.dbapi_connection, "autocommit", False))


def set_timeouts(connection: Connection, timeouts: Timeouts, *, local: bool = True) -> None:
    """Bound the statements that follow (``local``: until the transaction ends; on MySQL,
    which cannot scope a setting to a transaction, until the connection returns to its pool)."""
    backend(connection.dialect).set_timeouts(connection, timeouts.lock, timeouts.statement, local)


def reset_timeouts(connection: Connection) -> None:
    """Back to the session's defaults, before a connection returns to its pool."""
    backend(connection.dialect).reset_timeouts(connection)


def timeout_kind(error: BaseException) -> str | None:
    """``"lock"`` or ``"statement"`` when ``error`` is a timeout of a server simsql supports,
    else None."""
    return postgresql.timeout_kind(error) or mysql.timeout_kind(error)


def blockers(connection: Connection, relations: Sequence[str]) -> str:
    """Sessions holding locks on ``relations`` (``schema.table`` text, quoted) or idle in a
    transaction: who a DDL waits on."""
    return str(backend(connection.dialect).blockers(connection, relations))


class _StepTimeout(Exception):
    """Internal: which step timed out, on which kind of wait, and the steps that ran before it."""

    def __init__(self, step: Step, kind: str, error: DBAPIError, done: Sequence[Step]) -> None:
        super().__init__(step.what)
        self.step, self.kind, self.error, self.done = step, kind, error, list(done)


def _message(
    timeout: _StepTimeout, timeouts: Timeouts, committed: Sequence[Step], waited_on: str, transactional: bool = True
) -> LockTimeout:
    bound = timeouts.lock if timeout.kind == "lock" else timeouts.statement
    waited = "a lock" if timeout.kind == "lock" else "the statement to finish"
    finished = ", ".join(s.what for s in committed) or "nothing"
    if timeout.step.concurrently:
        left = "A concurrent index build that gave up leaves an INVALID index; the next run drops and rebuilds it."
    elif transactional:
        left = "Nothing of the failed transaction was kept."
    else:
        left = "The statement that gave up changed nothing (MySQL/MariaDB keep each DDL statement before it)."
    return LockTimeout(
        f"{timeout.step.what}: gave up after waiting {bound} for {waited} (held by: {waited_on}). "
        f"Already committed: {finished}. {left} End or wait for the blocking transaction, then run the "
        "same command again."
    )


def _run_steps(connection: Connection, steps: Sequence[Step], autocommit: bool) -> None:
    done: list[Step] = []
    for step in steps:
        if step.concurrently and not autocommit:
            raise RuntimeError(f"{step.what} must run outside a transaction block (autocommit)")
        try:
            if step.params:
                connection.execute(text(step.sql), dict(step.params))
            else:  # no bind parsing: a quoted identifier may contain ":name"
                connection.exec_driver_sql(step.sql)
        except DBAPIError as error:
            kind = timeout_kind(error)
            if kind is None:
                raise
            raise _StepTimeout(step, kind, error, done) from error
        done.append(step)


def _kept(server: Any, timeout: _StepTimeout, before: Sequence[Step]) -> list[Step]:
    """What a failed run left committed: on PostgreSQL the steps committed before this
    transaction; where DDL commits at once (MySQL), every step that ran before the failed one."""
    return list(before) if server.TRANSACTIONAL_DDL else [*before, *timeout.done]


def run(connection: Connection, plan: Plan, timeouts: Timeouts = DDL) -> None:
    """Run ``plan`` on ``connection`` inside its current transaction (Alembic's, or the
    caller's); the caller's own timeouts are restored afterwards. Statements marked
    ``concurrently`` need the connection in autocommit mode. On MySQL/MariaDB each DDL
    statement commits on its own, whatever the transaction."""
    server = backend(connection.dialect)
    autocommit = is_autocommit(connection)
    with bounded(connection, timeouts):
        try:
            _run_steps(connection, plan.steps, autocommit)
        except _StepTimeout as timeout:
            raise _message(
                timeout, timeouts, _kept(server, timeout, []), f"see {server.ACTIVITY_VIEW}", server.TRANSACTIONAL_DDL
            ) from timeout.error


@contextmanager
def bounded(connection: Connection, timeouts: Timeouts) -> Iterator[None]:
    """Statements inside run under ``timeouts``; the previous settings come back after
    (on PostgreSQL unless the transaction failed, which ends ``SET LOCAL`` settings anyway)."""
    server = backend(connection.dialect)
    if not server.SCOPED_TIMEOUTS:
        previous = server.read_timeouts(connection)
        set_timeouts(connection, timeouts, local=False)
        try:
            yield
        finally:
            server.restore_timeouts(connection, previous)
        return
    autocommit = is_autocommit(connection)
    previous = server.read_timeouts(connection)
    set_timeouts(connection, timeouts, local=not autocommit)
    try:
        yield
    finally:
        if autocommit:
            reset_timeouts(connection)
    if not autocommit:
        set_timeouts(connection, Timeouts(previous[0], previous[1]))


def run_on_engine(
    engine: Engine,
    plan: Plan,
    timeouts: Timeouts = DDL,
    *,
    relations: Sequence[str] = (),
    concurrent_timeouts: Timeouts = INDEX_BUILD,
) -> None:
    """Run ``plan``: its transactional steps as one transaction, then each ``concurrently``
    step on its own in autocommit mode. A timeout names the sessions that held the lock
    (``relations``: the tables the plan works on, as ``schema.table`` text). On MySQL/MariaDB
    DDL is not transactional: the steps before a failed one stay done, and the error says which."""
    transactional = [s for s in plan.steps if not s.concurrently]
    committed: list[Step] = []
    bound = timeouts
    server = backend(engine.dialect)
    try:
        if transactional:
            with engine.begin() as connection:
                set_timeouts(connection, timeouts)
                _run_steps(connection, transactional, autocommit=False)
            committed.extend(transactional)
        bound = concurrent_timeouts
        for step in (s for s in plan.steps if s.concurrently):
            with engine.connect() as connection:
                connection = connection.execution_options(isolation_level="AUTOCOMMIT")
                set_timeouts(connection, concurrent_timeouts, local=False)
                try:
                    _run_steps(connection, [step], autocommit=True)
                finally:
                    reset_timeouts(connection)
            committed.append(step)
    except _StepTimeout as timeout:
        with engine.connect() as connection:
            waited_on = blockers(connection, relations)
        raise _message(
            timeout, bound, _kept(server, timeout, committed), waited_on, server.TRANSACTIONAL_DDL
        ) from timeout.error
