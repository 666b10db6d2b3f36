"""Run a :class:`~simsql.lifecycle.ddl.Plan`, every statement bounded in time.

A statement on a user's table can wait behind another session's lock forever; queued behind
it, every other query on that table waits too. So each one runs under ``lock_timeout`` (how
long to wait for a lock) and ``statement_timeout`` (how long to run), and a timeout becomes a
:class:`~simsql.errors.LockTimeout` that says which step waited, on whom, and what state the
table was left in.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import Engine, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from ..dialects import refuse_lifecycle
from ..errors import LockTimeout
from .ddl import Plan, Step

TIMEOUT_STATES = {"55P03": "lock", "57014": "statement"}
"""SQLSTATEs of ``lock_not_available`` and ``query_canceled``."""


@dataclass(frozen=True)
class Timeouts:
    """PostgreSQL interval strings (``"5s"``, ``"10min"``); ``None`` or ``"0"`` leaves one unbounded.

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
    """Bound the statements that follow (``local``: until the transaction ends)."""
    refuse_lifecycle(connection.dialect)  # before any PostgreSQL-only SQL
    connection.execute(
        text("SELECT set_config('lock_timeout', :lock, :local), set_config('statement_timeout', :statement, :local)"),
        {"lock": timeouts.lock or "0", "statement": timeouts.statement or "0", "local": local},
    )


def reset_timeouts(connection: Connection) -> None:
    """Back to the session's defaults, before a connection returns to its pool."""
    connection.execute(text("RESET lock_timeout"))
    connection.execute(text("RESET statement_timeout"))


def timeout_kind(error: BaseException) -> str | None:
    """``"lock"`` or ``"statement"`` when ``error`` is a PostgreSQL timeout, else None."""
    code = getattr(getattr(error, "orig", None), "sqlstate", None)
    return TIMEOUT_STATES.get(str(code)) if code else None


def blockers(connection: Connection, relations: Sequence[str]) -> str:
    """Sessions holding locks on ``relations`` or idle in a transaction: who a DDL waits on."""
    rows = connection.execute(
        text(
            "SELECT DISTINCT a.pid, a.state, coalesce(left(a.query, 80), '') AS query, "
            "date_trunc('second', now() - a.xact_start) AS age FROM pg_stat_activity a "
            "LEFT JOIN pg_locks l ON l.pid = a.pid AND l.granted "
            "WHERE a.pid <> pg_backend_pid() AND a.datname = current_database() AND a.xact_start IS NOT NULL "
            "AND (l.relation = ANY(CAST(:relations AS regclass[])) OR a.state LIKE 'idle in transaction%' "
            "OR a.wait_event_type IS NULL AND a.state = 'active') "
            "ORDER BY a.pid"
        ),
        {"relations": list(relations)},
    ).all()
    if not rows:
        return "no session holds it any more"
    return "; ".join(f"pid {r.pid} ({r.state}, transaction open {r.age}: {r.query!r})" for r in rows)


class _StepTimeout(Exception):
    """Internal: which step timed out, and on which kind of wait."""

    def __init__(self, step: Step, kind: str, error: DBAPIError) -> None:
        super().__init__(step.what)
        self.step, self.kind, self.error = step, kind, error


def _message(timeout: _StepTimeout, timeouts: Timeouts, committed: Sequence[Step], waited_on: str) -> LockTimeout:
    bound = timeouts.lock if timeout.kind == "lock" else timeouts.statement
    waited = "a lock" if timeout.kind == "lock" else "the statement to finish"
    finished = ", ".join(s.what for s in committed) or "nothing"
    if timeout.step.concurrently:
        left = "A concurrent index build that gave up leaves an INVALID index; the next run drops and rebuilds it."
    else:
        left = "Nothing of the failed transaction was kept."
    return LockTimeout(
        f"{timeout.step.what}: gave up after waiting {bound} for {waited} (held by: {waited_on}). "
        f"Already committed: {finished}. {left} End or wait for the blocking transaction, then run the "
        "same command again."
    )


def _run_steps(connection: Connection, steps: Sequence[Step], autocommit: bool) -> None:
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
            raise _StepTimeout(step, kind, error) from error


def run(connection: Connection, plan: Plan, timeouts: Timeouts = DDL) -> None:
    """Run ``plan`` on ``connection`` inside its current transaction (Alembic's, or the
    caller's); the caller's own timeouts are restored afterwards. Statements marked
    ``concurrently`` need the connection in autocommit mode."""
    autocommit = is_autocommit(connection)
    with bounded(connection, timeouts):
        try:
            _run_steps(connection, plan.steps, autocommit)
        except _StepTimeout as timeout:
            raise _message(timeout, timeouts, [], "see pg_stat_activity") from timeout.error


@contextmanager
def bounded(connection: Connection, timeouts: Timeouts) -> Iterator[None]:
    """Statements inside run under ``timeouts``; the previous settings come back after
    (unless the transaction failed, which ends ``SET LOCAL`` settings anyway)."""
    refuse_lifecycle(connection.dialect)  # before any PostgreSQL-only SQL
    autocommit = is_autocommit(connection)
    previous = connection.execute(
        text("SELECT current_setting('lock_timeout'), current_setting('statement_timeout')")
    ).one()
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
    (``relations``: the tables the plan works on, as ``schema.table`` text)."""
    transactional = [s for s in plan.steps if not s.concurrently]
    committed: list[Step] = []
    bound = timeouts
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
        raise _message(timeout, bound, committed, waited_on) from timeout.error
