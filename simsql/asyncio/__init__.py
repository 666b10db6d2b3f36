"""simsql for asyncio applications: the operations that run statements, awaited.

Every function takes an ``AsyncSession``, ``AsyncConnection`` or ``AsyncEngine``
(``sqlalchemy.ext.asyncio``) where the sync API takes a ``Session`` or ``Engine``, and gives
the same answer::

    from simsql import asyncio as simsql_async

    match = await simsql_async.find_original(session, Article, text)
    groups = await simsql_async.duplicate_groups(session, Article)
    await simsql_async.attach_table(engine, "articles", ["title", "body"])
    await simsql_async.backfill(engine, "articles")

``simsql.most_similar`` and ``simsql.similar_to`` build statements: run them with
``await session.execute(...)``; nothing async-specific is needed.

Nothing here is a sync function wrapped whole: the queries are the sync API's own steps
(:mod:`simsql.steps`) driven by an async runner, statements awaited and CPU work
(fingerprints, text comparison) in a worker thread; backfill awaits batch after batch;
attach and detach await each DDL statement. Drivers tested: ``postgresql+psycopg_async``,
``postgresql+asyncpg``, ``mysql+aiomysql``. Install with ``pip install "simsql[async]"``
(SQLAlchemy's asyncio extra brings greenlet, which SQLAlchemy 2.1 no longer installs itself).
"""

from __future__ import annotations

from .backfill import backfill
from .lifecycle import attach_table, detach_table, status
from .queries import (
    duplicate_groups,
    find_original,
    most_similar_many,
    most_similar_vectors,
    near_copy_vectors,
    near_duplicates,
)
from .runner import run_async_steps

__all__ = [
    "attach_table",
    "backfill",
    "detach_table",
    "duplicate_groups",
    "find_original",
    "most_similar_many",
    "most_similar_vectors",
    "near_copy_vectors",
    "near_duplicates",
    "run_async_steps",
    "status",
]
