"""The demo's table and what it does to the database: one schema of its own, its table dropped
and created again each run, rows loaded through the ORM, one demo at a time per database.

On PostgreSQL and MySQL/MariaDB alike: the lock, the server's name and the statistics refresh
are the backend's (:func:`simsql.dialects.backend`), never one server's SQL.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence

from sqlalchemy import Engine, MetaData, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.schema import CreateSchema

import simsql

from ..dialects import backend
from .planting import Row

__all__ = ["DEMO_LOCK", "LOAD_BATCH", "SCHEMA", "DemoArticle", "analyze", "insert_rows", "one_demo_at_a_time", "recreate_table"]

SCHEMA = "simsql_demo"
"""The demo's own schema: created if missing; only the demo's table in it is dropped and recreated."""

DEMO_LOCK = 0x73696D73716C
""""simsql": the advisory lock key that lets one demo run at a time."""

LOAD_BATCH = 500
"""Rows per ORM commit when loading."""


class _Base(DeclarativeBase):
    metadata = MetaData(schema=SCHEMA)


class DemoArticle(simsql.SimHashMixin, _Base):
    """An article of the demo corpus; planted copies say what they were copied from."""

    __tablename__ = "demo_articles"
    __simhash_source__ = ("title", "body")

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    title: Mapped[str] = mapped_column(String(200))
    body: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(20))
    planted_from: Mapped[int | None]


@contextlib.contextmanager
def one_demo_at_a_time(engine: Engine, on_wait: Callable[[], None]) -> Iterator[None]:
    """Every run drops and refills the same table, so a second demo on the same database (another
    terminal, a test run) waits for the first instead of colliding with its rows. ``on_wait`` is
    called once before waiting, when another demo holds the lock."""
    with engine.connect() as lock:
        server = backend(lock)
        if not server.try_advisory_lock(lock, DEMO_LOCK):
            on_wait()
            server.advisory_lock(lock, DEMO_LOCK)
        lock.commit()  # the lock belongs to the session; do not sit idle in a transaction
        try:
            yield
        finally:
            server.advisory_unlock(lock, DEMO_LOCK)
            lock.commit()


def recreate_table(engine: Engine) -> str:
    """The demo's schema, and its table dropped and created again (with the mixin's trigger).
    Returns the server's name and version (e.g. ``"PostgreSQL 18.0"``, ``"MariaDB 10.11.6"``)."""
    with engine.begin() as connection:
        server = backend(connection)
        server.check_server(connection)
        connection.execute(CreateSchema(SCHEMA, if_not_exists=True))
        _Base.metadata.drop_all(connection)
        _Base.metadata.create_all(connection)
    return server.describe_server()


def insert_rows(engine: Engine, rows: Sequence[Row], batch: int = LOAD_BATCH) -> Iterator[int]:
    """Insert ``rows`` through the ORM (ids are 1-based positions), committing every ``batch``;
    yields the number of rows each commit stored, so the caller can show progress."""
    with Session(engine) as session:
        for start in range(0, len(rows), batch):
            session.add_all(
                DemoArticle(id=start + i + 1, title=title, body=body, kind=kind, planted_from=source)
                for i, (title, body, kind, source) in enumerate(rows[start : start + batch])
            )
            session.commit()
            yield min(batch, len(rows) - start)


def analyze(engine: Engine) -> None:
    """Refresh the planner's statistics of the demo's table after the load."""
    with engine.begin() as connection:
        server = backend(connection)
        server.analyze(connection, SCHEMA, DemoArticle.__tablename__)
