"""The only async-aware code below the front ends, and the one way to reach a connection.

Each operation is written once, as a sync function on a ``Session`` or ``Connection``. The async
API (:mod:`simsql.asyncio`) runs that same function through SQLAlchemy's greenlet bridge, each
statement awaited; :func:`off_loop` (CPU work: fingerprinting a long text, comparing candidate
texts) and :func:`wait_for` (a wait on worker processes) are the two places where the bridge
hands work to a thread or the event loop instead of blocking it. :func:`connection_of` is the
connection a ``Session`` (or one of its proxies) is using, in its transaction.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

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


def connection_of(bind: Session | Connection | Any) -> Connection:
    """The ``Connection`` ``bind`` runs on: itself, or what a ``Session`` hands out through
    ``connection()`` (and the proxies of one that are not ``Session`` instances:
    ``scoped_session``, Flask-SQLAlchemy's ``db.session``), in its transaction."""
    return bind if isinstance(bind, Connection) else bind.connection()


__all__ = ["connection_of", "off_loop", "wait_for"]
