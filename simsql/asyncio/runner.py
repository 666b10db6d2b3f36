"""How :mod:`simsql.asyncio` runs the sync API awaited: the binds it takes, and the one rule that
turns a sync operation into its async twin.

A twin is the sync function itself, run through SQLAlchemy's greenlet bridge
(``greenlet_spawn``, the mechanism behind ``AsyncSession`` and ``run_sync``) on the sync facade
of the async bind: every statement it executes is awaited on the event loop, a lock wait holds
no thread, and the CPU work the sync code marks (:func:`simsql.store.awaiting.off_loop`,
:func:`simsql.store.awaiting.wait_for`) runs in a worker thread. Nothing is written twice, so a parameter,
a default, a check or a server path cannot exist on one side only: the twin's signature *is* the
sync function's, with the first parameter an async bind.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, Concatenate, ParamSpec, TypeVar, Union

from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession
from sqlalchemy.orm import Session
from sqlalchemy.util import greenlet_spawn

P = ParamSpec("P")
R = TypeVar("R")

AsyncBind = Union[AsyncSession, AsyncConnection, AsyncEngine]
"""What every function of :mod:`simsql.asyncio` takes as its first argument."""


def engine_of(bind: AsyncBind) -> AsyncEngine:
    """The ``AsyncEngine`` behind ``bind``: lifecycle operations (attach, detach, backfill,
    status, refingerprint) open connections of their own, as the sync API does on an ``Engine``."""
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


def on_session(function: Callable[Concatenate[Session, P], R]) -> Callable[Concatenate[AsyncBind, P], Coroutine[Any, Any, R]]:
    """The async twin of a query that takes a ``Session``: run on the ``AsyncSession`` given
    (its transaction, its identity map) or on a session of the connection or engine given."""

    async def twin(bind: AsyncBind, /, *args: P.args, **kwargs: P.kwargs) -> R:
        async with session_for(bind) as session:
            return await greenlet_spawn(partial(function, session.sync_session, *args, **kwargs))

    return _named_after(twin, function)


def on_engine(function: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[AsyncBind, P], Coroutine[Any, Any, R]]:
    """The async twin of a lifecycle operation that takes an ``Engine`` (and opens connections
    of its own, as attach, backfill and refingerprint must): run on the ``AsyncEngine`` behind
    the bind given."""

    async def twin(bind: AsyncBind, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await greenlet_spawn(partial(function, engine_of(bind).sync_engine, *args, **kwargs))

    return _named_after(twin, function)


def _named_after(twin: Callable[..., Any], function: Callable[..., Any]) -> Any:
    """``twin`` presented as ``function``'s async twin: its name, its signature (the first
    parameter an :data:`AsyncBind`, the rest ``function``'s own) and its docstring."""
    signature = inspect.signature(function)
    first, *rest = signature.parameters.values()
    twin.__name__ = function.__name__
    twin.__qualname__ = function.__name__
    twin.__module__ = "simsql.asyncio"
    twin.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[first.replace(annotation="AsyncSession | AsyncConnection | AsyncEngine"), *rest],
        return_annotation=f"Coroutine[Any, Any, {signature.return_annotation}]",
    )
    twin.__doc__ = (
        f":func:`simsql.{function.__name__}`, awaited: the sync function itself run through "
        "SQLAlchemy's greenlet bridge, each statement awaited, CPU work in a worker thread.\n\n"
        + (inspect.getdoc(function) or "")
    )
    twin.__wrapped_sync__ = function  # type: ignore[attr-defined]
    return twin
