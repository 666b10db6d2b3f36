"""Run a :class:`~simsql.dialects.ddl_plan.DDLPlan`, every statement bounded in time.

A statement on a user's table can wait behind another session's lock forever; queued behind
it, every other query on that table waits too. So each one runs under a bound on how long to
wait for a lock and how long to run, and a timeout becomes a
:class:`~simsql.text.errors.LockTimeout` that says which step waited, on whom, and what state the
table was left in.

The bounds are PostgreSQL durations (``"5s"``, ``"10min"``) on every server. PostgreSQL
applies them as ``lock_timeout`` / ``statement_timeout``; MySQL and MariaDB as
``lock_wait_timeout`` and ``innodb_lock_wait_timeout`` (whole seconds, rounded up) and
``max_statement_time`` (MariaDB, every statement) or ``max_execution_time`` (MySQL, SELECTs
only). MySQL has no transaction-scoped settings: there the session's own values come back
when the bound ends, or when the connection returns to its pool. The server-specific SQL is the
backend's (:class:`simsql.dialects.Backend`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from ..dialects import Backend, backend, describe_server, timeout_kind
from ..dialects.ddl_plan import DDLPlan, Step
from ..dialects.sqltext import execute_sql, is_autocommit
from ..text.errors import LockTimeout, SchemaError, UnsupportedDatabase, WouldLockTable


@dataclass(frozen=True)
class Timeouts:
    """PostgreSQL duration strings (``"5s"``, ``"10min"``) on every server; ``None`` or ``"0"``
    leaves one unbounded.

    Defaults suit DDL on a live table: a lock that is not granted within seconds means another
    transaction holds the table, and waiting longer would block everyone queued behind.
    """

    lock: str | None = "5s"
    statement: str | None = "10min"


DDL_TIMEOUTS = Timeouts()
INDEX_BUILD = Timeouts(lock="10min", statement=None)
"""A concurrent build may run for hours on a big table, and before it starts it waits for every
transaction in the database that is older than it: harmless to others (it blocks no reader or
writer), so that wait is bounded generously; the build itself is not bounded."""


def set_timeouts(connection: Connection, timeouts: Timeouts, *, local: bool = True) -> None:
    """Bound the statements that follow (``local``: until the transaction ends; on MySQL,
    which cannot scope a setting to a transaction, until the connection returns to its pool)."""
    backend(connection).set_timeouts(connection, timeouts.lock, timeouts.statement, local)


def reset_timeouts(connection: Connection) -> None:
    """Back to the session's defaults, before a connection returns to its pool."""
    backend(connection).reset_timeouts(connection)


def blockers(connection: Connection, relations: Sequence[str]) -> str:
    """Sessions holding locks on ``relations`` (``schema.table`` text, quoted) or idle in a
    transaction: who a DDL waits on."""
    return backend(connection).blockers(connection, relations)


class _StepTimeout(Exception):
    """Internal: which step timed out, and on which kind of wait."""

    def __init__(self, step: Step, kind: str, error: DBAPIError) -> None:
        super().__init__(step.what)
        self.step, self.kind, self.error = step, kind, error


@dataclass(frozen=True)
class _Undone:
    """Where DDL is not transactional: what a failed plan's undo took back, what it left."""

    undone: tuple[Step, ...]
    left: tuple[Step, ...]
    error: BaseException | None = None

    @property
    def note(self) -> str:
        if not self.left:
            taken = f"its {len(self.undone)} earlier statement(s) were undone" if self.undone else "nothing ran before it"
            return f"Nothing was changed ({taken})."
        why = f" ({_reason(self.error)})" if self.error is not None else ""
        return (
            f"MySQL/MariaDB commit each DDL statement at once, and taking them back stopped{why}: "
            f"{', '.join(s.what for s in self.left)} stay(s) in place, recorded in the registry; "
            "run the same command again to finish, or detach to remove them."
        )


def _reason(error: BaseException) -> str:
    orig = getattr(error, "orig", None)
    return str(orig if orig is not None else error).strip().splitlines()[0]


def _message(
    timeout: _StepTimeout,
    timeouts: Timeouts,
    committed: Sequence[Step],
    waited_on: str,
    undone: _Undone | None = None,
) -> LockTimeout:
    bound = timeouts.lock if timeout.kind == "lock" else timeouts.statement
    waited = "a lock" if timeout.kind == "lock" else "the statement to finish"
    finished = ", ".join(s.what for s in committed) or "nothing"
    if timeout.step.concurrently:
        left = "A concurrent index build that gave up leaves an INVALID index; the next run drops and rebuilds it."
    elif undone is None:
        left = "Nothing of the failed transaction was kept."
    else:
        left = undone.note
    return LockTimeout(
        f"{timeout.step.what}: gave up after waiting {bound} for {waited} (held by: {waited_on}). "
        f"Already committed: {finished}. {left} End or wait for the blocking transaction, then run the "
        "same command again."
    )


def _execute(connection: Connection, sql: str, params: Any) -> None:
    execute_sql(connection, sql, dict(params) if params else None)


def _execute_step(connection: Connection, step: Step) -> None:
    """``step.sql``; where the server refuses its online algorithm, ``step.fallback``; where it
    refuses both, :class:`WouldLockTable` (the failed statements changed nothing)."""
    server = backend(connection)
    try:
        _execute(connection, step.sql, step.params)
        return
    except DBAPIError as error:
        reason = server.online_ddl_refused(error)
        if reason is None:
            raise
        if not step.fallback:
            raise _would_lock(connection, step, reason) from error
    try:
        _execute(connection, step.fallback, step.params)
    except DBAPIError as error:
        reason = server.online_ddl_refused(error)
        if reason is None:
            raise
        raise _would_lock(connection, step, reason) from error


def _would_lock(connection: Connection, step: Step, reason: str) -> WouldLockTable:
    return WouldLockTable(
        f"{step.what}: {describe_server(connection.dialect)} cannot do this online ({reason}); it would copy "
        "the table or lock out its writers while it runs, so simsql refused it."
    )


@contextmanager
def _step_bounds(connection: Connection, step: Step, timeouts: Timeouts | None) -> Iterator[None]:
    """An ``online`` step runs with no statement bound (it blocks nobody while it runs), its
    lock waits bounded as before."""
    if not step.online or timeouts is None or timeouts.statement is None:
        yield
        return
    set_timeouts(connection, Timeouts(timeouts.lock, None), local=False)
    try:
        yield
    finally:
        set_timeouts(connection, timeouts, local=False)


def _run_steps(
    connection: Connection,
    steps: Sequence[Step],
    autocommit: bool,
    done: list[Step] | None = None,
    timeouts: Timeouts | None = None,
) -> None:
    """Run ``steps`` in order; each one that finished is appended to ``done``."""
    for step in steps:
        if step.concurrently and not autocommit:
            raise RuntimeError(f"{step.what} must run outside a transaction block (autocommit)")
        try:
            with _step_bounds(connection, step, timeouts):
                _execute_step(connection, step)
        except DBAPIError as error:
            kind = timeout_kind(error)
            if kind is None:
                raise
            raise _StepTimeout(step, kind, error) from error
        if done is not None:
            done.append(step)


def _undo(connection: Connection, done: Sequence[Step]) -> _Undone:
    """Take back ``done``, newest first, each by its ``undo`` statement (bounded like the
    plan), each committed at once. Stops at the first step that has none or whose undo fails.
    Only where DDL is not transactional (MySQL/MariaDB)."""
    left = list(done)
    undone: list[Step] = []
    while left:
        step = left[-1]
        if not step.undo:
            return _Undone(tuple(undone), tuple(left))
        try:
            _execute(connection, step.undo, step.params)
            # at once, as the DDL it takes back did (an undone registry row must not come back
            # with the caller's rollback)
            connection.exec_driver_sql("COMMIT")
        except DBAPIError as error:
            return _Undone(tuple(undone), tuple(left), error)
        undone.append(left.pop())
    return _Undone(tuple(undone), ())


def _failed(error: BaseException, undone: _Undone) -> BaseException:
    """The error a plan that failed and was taken back raises: its own, with what the undo did."""
    if isinstance(error, WouldLockTable):
        return WouldLockTable(f"{error} {undone.note}")
    if undone.left:
        return SchemaError(f"{_reason(error)}. {undone.note}")
    return error


def _check_plan(server: Backend, connection: Connection, plan: DDLPlan) -> None:
    if plan.dialect is not None and plan.dialect != server.name and plan.steps:
        raise UnsupportedDatabase(
            f"{plan.steps[0].what}: simsql describes this operation in {plan.dialect}'s DDL only; it does not "
            f"run it on {describe_server(connection.dialect)} yet"
        )


def run(connection: Connection, plan: DDLPlan, timeouts: Timeouts = DDL_TIMEOUTS) -> None:
    """Run ``plan`` on ``connection`` inside its current transaction (Alembic's, or the
    caller's); the caller's own timeouts are restored afterwards. Statements marked
    ``concurrently`` need the connection in autocommit mode.

    On MySQL/MariaDB each DDL statement commits on its own, whatever the transaction: when a
    statement fails, the ones before it are undone (their ``undo``), so a failed plan leaves
    the database as it found it; the error says so, or what the undo could not take back."""
    server = backend(connection)
    _check_plan(server, connection, plan)
    autocommit = is_autocommit(connection)
    done: list[Step] = []
    with bounded(connection, timeouts):
        try:
            _run_steps(connection, plan.steps, autocommit, done, timeouts)
        except _StepTimeout as timeout:
            undone = None if server.transactional_ddl else _undo(connection, done)
            left = list(undone.left) if undone else []
            raise _message(timeout, timeouts, left, f"see {server.activity_view}", undone) from timeout.error
        except (DBAPIError, WouldLockTable) as error:
            if server.transactional_ddl:
                raise
            raise _failed(error, _undo(connection, done)) from error


@contextmanager
def bounded(connection: Connection, timeouts: Timeouts) -> Iterator[None]:
    """Statements inside run under ``timeouts``; the previous settings come back after
    (on PostgreSQL unless the transaction failed, which ends ``SET LOCAL`` settings anyway)."""
    with backend(connection).bounded(connection, timeouts.lock, timeouts.statement):
        yield


def run_on_engine(
    engine: Engine,
    plan: DDLPlan,
    timeouts: Timeouts = DDL_TIMEOUTS,
    *,
    relations: Sequence[str] = (),
    concurrent_timeouts: Timeouts = INDEX_BUILD,
) -> None:
    """Run ``plan``: its transactional steps as one transaction, then each ``concurrently``
    step on its own in autocommit mode. A timeout names the sessions that held the lock
    (``relations``: the tables the plan works on, as ``schema.table`` text).

    On MySQL/MariaDB, where DDL is not transactional, a statement that fails (a timeout, an
    online change the server refuses) makes the ones before it be undone, newest first, so
    the plan changes all or nothing; the error says which, or what could not be undone."""
    server = backend(engine)
    if not server.transactional_ddl:
        _run_undoable(engine, server, plan, timeouts, relations)
        return
    transactional = [s for s in plan.steps if not s.concurrently]
    committed: list[Step] = []
    bound = timeouts
    try:
        if transactional:
            with engine.begin() as connection:
                _check_plan(server, connection, plan)
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


def _run_undoable(engine: Engine, server: Backend, plan: DDLPlan, timeouts: Timeouts, relations: Sequence[str]) -> None:
    """:func:`run_on_engine` where each DDL statement commits at once: one statement at a
    time, each committed, and on failure the finished ones undone."""
    done: list[Step] = []
    with engine.connect() as connection:
        _check_plan(server, connection, plan)
        with bounded(connection, timeouts):
            try:
                for step in plan.steps:
                    _run_steps(connection, [step], autocommit=False, done=done, timeouts=timeouts)
                    connection.commit()
            except _StepTimeout as timeout:
                connection.rollback()
                waited_on = blockers(connection, relations)
                undone = _undo(connection, done)
                raise _message(timeout, timeouts, list(undone.left), waited_on, undone) from timeout.error
            except (DBAPIError, WouldLockTable) as error:
                connection.rollback()
                raise _failed(error, _undo(connection, done)) from error
