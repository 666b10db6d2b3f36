"""Operations written as steps, apart from the I/O that runs them ("sans-IO").

An operation that talks to the database more than once (the originality check: a search, then
the texts of its candidates; the duplicate groups: a configuration check, a session setting,
the self-joins) is a generator. It *yields* what it needs next and *receives* the answer:

- :class:`Execute`: a statement to run; the operation receives its rows (a list);
- :class:`Call`: a short step on the connection itself (a registry check, a catalog read, a
  session setting), written as an ordinary function of a sync ``Connection``;
- :class:`Compute`: CPU work without I/O (fingerprinting a long text, comparing candidate
  texts); the operation receives what the function returns.

Its ``return`` value is the operation's answer. :func:`run_sync_steps` drives such a generator
on a ``Session`` or ``Connection``. The async API (:mod:`simsql.asyncio`) is the sync API run
through SQLAlchemy's greenlet bridge, each statement awaited; :func:`off_loop` and
:func:`wait_for` are the two places where that bridge hands CPU work to a worker thread and a
wait on worker processes to the event loop, so they are the only async-aware code below it.

An error raised while answering a step is thrown into the generator at that ``yield``, so an
operation may handle it (or let it propagate, the usual case).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, Union

from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

R = TypeVar("R")
T = TypeVar("T")


def _in_async_greenlet() -> bool:
    """True inside SQLAlchemy's greenlet bridge (``greenlet_spawn``), where :mod:`simsql.asyncio`
    runs the sync API: a wait there may be handed to the event loop. False without greenlet."""
    try:
        from sqlalchemy.util.concurrency import in_greenlet
    except ImportError:  # pragma: no cover - SQLAlchemy without its asyncio support
        return False
    try:
        return bool(in_greenlet())
    except Exception:  # noqa: BLE001 - greenlet not installed: never in one
        return False


def off_loop(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)``: CPU work without I/O (fingerprinting a long text, comparing
    candidate texts, a batch of a backfill). Called in place by the sync API; when the sync API
    runs awaited (:mod:`simsql.asyncio`), in a worker thread while the event loop serves other
    tasks. ``function`` must not touch the database."""
    if _in_async_greenlet():
        from sqlalchemy.util.concurrency import await_only

        return await_only(asyncio.to_thread(function, *args))
    return function(*args)


def wait_for(future: Future[T]) -> T:
    """``future.result()``, or, when the sync API runs awaited (:mod:`simsql.asyncio`), the
    same result awaited, so a backfill waiting for its worker processes holds no event loop."""
    if _in_async_greenlet():
        from sqlalchemy.util.concurrency import await_only

        return await_only(asyncio.wrap_future(future))
    return future.result()


@dataclass(frozen=True)
class Execute:
    """Run ``statement`` with ``params``; the operation receives every row (``.all()``)."""

    statement: Any
    params: Any = None


@dataclass(frozen=True)
class Call(Generic[R]):
    """Run ``function(connection)`` on the connection in use (a ``Session``'s connection, in its
    transaction); the operation receives its return value. For short steps made of a few
    statements that already exist as sync functions (registry checks, catalog reads, session
    settings): the async driver runs it through SQLAlchemy's ``run_sync``, where each of its
    statements is awaited on the event loop like any other."""

    function: Callable[[Connection], R]


@dataclass(frozen=True)
class Compute(Generic[R]):
    """CPU work without I/O; the operation receives ``function()``. The sync driver calls it in
    place, the async driver in a worker thread (``asyncio.to_thread``), so a long text's
    fingerprint does not hold up the event loop. ``function`` must not touch the database."""

    function: Callable[[], R]


Step = Union[Execute, Call[Any], Compute[Any]]
Steps = Generator[Step, Any, R]
"""An operation: yields :data:`Step` s, receives their answers, returns its result."""


def answer_sync(bind: Session | Connection, step: Step) -> Any:
    """What ``step`` asks for, on a sync ``Connection`` or anything that hands one out through
    ``connection()``: a ``Session``, and the proxies of one that are not ``Session`` instances
    (``scoped_session``, Flask-SQLAlchemy's ``db.session``)."""
    if isinstance(step, Execute):
        return list(bind.execute(step.statement, step.params).all())
    if isinstance(step, Call):
        return step.function(bind if isinstance(bind, Connection) else bind.connection())
    if isinstance(step, Compute):
        return off_loop(step.function)
    raise TypeError(f"not a step: {step!r}")


def run_sync_steps(bind: Session | Connection, steps: Steps[R]) -> R:
    """Drive ``steps`` to its result on ``bind``, answering each step as it is yielded."""
    answer: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.send(answer) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        answer, error = None, None
        try:
            answer = answer_sync(bind, step)
        except Exception as raised:  # noqa: BLE001 - handed to the operation at its yield
            error = raised


__all__ = ["Call", "Compute", "Execute", "Step", "Steps", "answer_sync", "off_loop", "run_sync_steps", "wait_for"]
