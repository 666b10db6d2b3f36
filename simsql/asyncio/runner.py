"""The async runner of :mod:`simsql.steps`, and the binds the async API accepts.

:func:`run_async_steps` answers an operation's steps on an ``AsyncSession`` or
``AsyncConnection``: a statement is awaited (``await session.execute(...)``), a short step on
the connection runs through SQLAlchemy's ``run_sync`` (whose statements are awaited on the event
loop like any other; only Python code between them holds the loop, and these steps hold
little), and CPU work (:class:`~simsql.steps.Compute`: fingerprints, text comparison) runs in a
worker thread, so a long text does not stall the application's other tasks.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Union

from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession
from sqlalchemy.orm import Session

from ..steps import Call, Compute, Execute, R, Step, Steps

AsyncBind = Union[AsyncSession, AsyncConnection, AsyncEngine]
"""What every function of :mod:`simsql.asyncio` takes as its first argument."""


async def answer_async(bind: AsyncSession | AsyncConnection, step: Step) -> Any:
    """What ``step`` asks for, on an ``AsyncSession`` or ``AsyncConnection``."""
    if isinstance(step, Execute):
        return list((await bind.execute(step.statement, step.params)).all())
    if isinstance(step, Call):
        function = step.function
        if isinstance(bind, AsyncSession):
            return await bind.run_sync(lambda session: function(session.connection()))
        return await bind.run_sync(function)
    if isinstance(step, Compute):
        return await asyncio.to_thread(step.function)
    raise TypeError(f"not a step: {step!r}")


async def run_async_steps(bind: AsyncSession | AsyncConnection, steps: Steps[R]) -> R:
    """Drive ``steps`` to its result on ``bind``, awaiting each step: the async twin of
    :func:`simsql.steps.run_sync_steps`, driving the same operations."""
    answer: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.send(answer) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        answer, error = None, None
        try:
            answer = await answer_async(bind, step)
        except Exception as raised:  # noqa: BLE001 - handed to the operation at its yield
            error = raised


def engine_of(bind: AsyncBind) -> AsyncEngine:
    """The ``AsyncEngine`` behind ``bind``: lifecycle operations (attach, detach, backfill,
    status) open connections of their own, as the sync API does on an ``Engine``."""
    if isinstance(bind, AsyncEngine):
        return bind
    if isinstance(bind, AsyncConnection):
        return bind.engine
    if isinstance(bind, AsyncSession) and isinstance(bind.bind, (AsyncEngine, AsyncConnection)):
        return engine_of(bind.bind)
    raise TypeError(
        "simsql.asyncio takes an AsyncSession, AsyncConnection or AsyncEngine (sqlalchemy.ext.asyncio), "
        f"got {_described(bind)}; with a sync Session or Engine use the functions of simsql itself"
    )


def _described(bind: object) -> str:
    if isinstance(bind, AsyncSession):
        return "an AsyncSession bound to no engine"
    if isinstance(bind, (Session, Connection)) or type(bind).__name__ == "Engine":
        return f"a sync {type(bind).__name__}"
    return type(bind).__name__


@asynccontextmanager
async def session_for(bind: AsyncBind) -> AsyncIterator[AsyncSession]:
    """``bind`` itself when it is an ``AsyncSession`` (the caller's transaction); otherwise a
    session of its own on the connection (joining its transaction) or engine, closed after.
    Queries run in a session, as the sync API's do, so ORM rows come back as instances."""
    if isinstance(bind, AsyncSession):
        yield bind
        return
    if not isinstance(bind, (AsyncEngine, AsyncConnection)):
        engine_of(bind)  # raises the TypeError that names what was passed
    async with AsyncSession(bind, expire_on_commit=False) as session:
        yield session
