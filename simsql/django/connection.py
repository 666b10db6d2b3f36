"""simsql's SQLAlchemy work on the Django alias's own connection, inside its transaction.

simsql's queries and lifecycle are written once, over SQLAlchemy. Django reaches them here,
with no connection or pool of simsql's own: an :class:`~sqlalchemy.engine.Engine` per alias
whose only "connection" is Django's DBAPI connection of the calling thread
(``connections[alias].connection``), wrapped in :class:`Borrowed`, whose ``commit``,
``rollback`` and ``close`` do nothing: the transaction and the connection's life are Django's
(``TestCase``, ``atomic``, ``ATOMIC_REQUESTS``, a migration's). So simsql sees the rows the open
transaction wrote, and the number of connections is the number Django opens.

The SQLAlchemy dialect is the one of Django's driver (psycopg 3 or psycopg2, mysqlclient or
PyMySQL, named by the module of the DBAPI connection, so PyMySQL installed as ``MySQLdb`` is
PyMySQL). Django's connections are per thread (and per async context); so is the SQLAlchemy
``Connection`` :func:`borrowed` keeps on the ``DatabaseWrapper`` of that thread, made again
whenever Django reconnected. Outside an atomic block :func:`borrowed` opens one for work that
writes (``transaction.atomic(using=alias, savepoint=False)``: all or nothing); queries
(:func:`session`) run as Django's own do there, statement by statement; inside one it adds
nothing. What must commit on its own (a backfill's batches, a concurrent index build) asks
:func:`refuse_in_atomic` first.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from django.db import connections, transaction
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, Connection, Dialect
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from ..dialects.base import supported
from ..schema.urls import SYNC_DRIVERS, normalise_url
from ..text.errors import SimsqlError, UnsupportedDatabase

_DIALECTS: dict[str, Dialect] = {}
_ENGINES: dict[tuple[str, str, str], Engine] = {}
_LOCK = threading.Lock()
_KEPT = "simsql_borrowed"
"""The attribute of Django's ``DatabaseWrapper`` holding (DBAPI connection, SQLAlchemy Connection)."""


class InsideAtomicBlock(SimsqlError):
    """Work that commits on its own was asked for inside an atomic block."""


class Borrowed:
    """Django's DBAPI connection as SQLAlchemy sees it: every attribute is the connection's,
    but ending the transaction or the connection is Django's business, so ``commit``,
    ``rollback`` and ``close`` do nothing here. Attributes are read, never set (autocommit is
    Django's)."""

    __slots__ = ("dbapi_connection",)

    def __init__(self, dbapi_connection: Any) -> None:
        object.__setattr__(self, "dbapi_connection", dbapi_connection)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.dbapi_connection, name)

    def __setattr__(self, name: str, value: Any) -> None:
        pass

    def commit(self) -> None:
        pass

    def rollback(self) -> None:
        pass

    def close(self) -> None:
        pass

    def cursor(self, *args: Any, **kwargs: Any) -> Any:
        """The connection's cursor, reading JSON as SQLAlchemy's psycopg dialects expect it
        (decoded by the driver), where Django has the driver hand it over as text."""
        return decoding_json(self.dbapi_connection.cursor(*args, **kwargs))


def decoding_json(cursor: Any) -> Any:
    """``cursor`` with the driver's own JSON decoding, for this cursor only: Django's PostgreSQL
    backend turns it off on its connections (its ``JSONField`` decodes), simsql's registry reads
    JSON through SQLAlchemy, which leaves it to psycopg. Other drivers' cursors as they are."""
    adapters = getattr(cursor, "adapters", None)
    if adapters is not None:  # psycopg 3: a map of this cursor's own
        from psycopg.types.json import JsonbLoader, JsonLoader

        adapters.register_loader("json", JsonLoader)
        adapters.register_loader("jsonb", JsonbLoader)
    elif type(cursor).__module__.startswith("psycopg2"):
        from psycopg2.extras import register_default_json, register_default_jsonb  # type: ignore[import-untyped]

        register_default_json(cursor)
        register_default_jsonb(cursor)
    return cursor


def check_vendor(vendor: str, alias: str = "default") -> str:
    """``vendor`` if simsql serves it, else :class:`~simsql.text.errors.UnsupportedDatabase`."""
    if not serves(vendor):
        raise UnsupportedDatabase(
            f"simsql needs {supported()}; the Django database {alias!r} is {vendor} "
            f"(ENGINE {connections[alias].settings_dict.get('ENGINE')!r})"
        )
    return vendor


def serves(vendor: str) -> bool:
    """Whether simsql serves Django databases of ``vendor``."""
    return vendor in SYNC_DRIVERS


def dialect_for(vendor: str) -> Dialect:
    """A SQLAlchemy dialect of ``vendor``'s family, to compile simsql's SQL constructs without a server."""
    found = _DIALECTS.get(vendor)
    if found is None:
        found = _DIALECTS[vendor] = normalise_url(URL.create(check_vendor(vendor))).get_dialect()()
    return found


def driver_of(alias: str) -> str:
    """SQLAlchemy's name of the driver of Django's connection (connected first): ``psycopg``,
    ``psycopg2``, ``mysqldb`` (mysqlclient) or ``pymysql`` (also when installed as ``MySQLdb``)."""
    wrapper = connections[alias]
    wrapper.ensure_connection()
    return str(type(wrapper.connection).__module__).split(".")[0].lower()


def engine_for(alias: str = "default") -> Engine:
    """The SQLAlchemy engine of the Django database ``alias``: Django's connection of the calling
    thread, borrowed (no pool of its own). One per alias, database name and driver."""
    wrapper = connections[alias]
    vendor = check_vendor(wrapper.vendor, alias)
    driver = driver_of(alias)
    key = (alias, str(wrapper.settings_dict.get("NAME") or ""), driver)
    with _LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            url = URL.create(f"{vendor}+{driver}", database=key[1] or None)
            engine = _ENGINES[key] = borrowing_engine(url, alias)
        return engine


def borrowing_engine(url: URL, alias: str) -> Engine:
    """An engine whose every checkout is Django's connection of ``alias`` in the calling thread.

    The dialect still reads the server once (its version, MariaDB or MySQL), but its set-up of
    each new connection (the driver's adapters, a notice handler, ``SET NAMES``) is for
    connections SQLAlchemy opens: Django set its own up, so that listener is removed; psycopg's
    dialects would also look ``hstore`` up through the driver's own connection class: off."""
    options: dict[str, Any] = {"creator": lambda: Borrowed(connections[alias].connection), "poolclass": NullPool}
    try:
        engine = create_engine(url, pool_reset_on_return=None, use_native_hstore=False, **options)
    except TypeError:  # a dialect without hstore
        engine = create_engine(url, pool_reset_on_return=None, **options)
    for listener in [fn for fn in engine.pool.dispatch.connect if getattr(fn, "__name__", "") == "on_connect"]:
        event.remove(engine.pool, "connect", listener)
    return engine


def sqlalchemy_connection(alias: str) -> Connection:
    """The SQLAlchemy ``Connection`` on Django's connection of this thread (kept while Django's
    DBAPI connection stays the same)."""
    wrapper = connections[alias]
    engine = engine_for(alias)
    kept = getattr(wrapper, _KEPT, None)
    if kept is not None and kept[0] is wrapper.connection and kept[1].engine is engine and not kept[1].invalidated:
        return kept[1]
    connection = engine.connect()
    setattr(wrapper, _KEPT, (wrapper.connection, connection))
    return connection


@contextmanager
def borrowed(alias: str = "default", *, atomic: bool = True) -> Iterator[Connection]:
    """A SQLAlchemy connection on Django's connection of ``alias``, in its open transaction, or
    (``atomic``, outside one) in one opened for the block."""
    check_vendor(connections[alias].vendor, alias)
    opened = transaction.atomic(using=alias, savepoint=False) if atomic else nullcontext()
    with opened:
        bound = sqlalchemy_connection(alias)
        try:
            yield bound
        except BaseException:
            if bound.in_transaction():
                bound.rollback()
            raise
        if bound.in_transaction():  # SQLAlchemy's bookkeeping, and what waits on it (a named lock's
            bound.commit()  # release on MySQL/MariaDB); the DBAPI commit is Django's, a no-op here


@contextmanager
def session(alias: str = "default") -> Iterator[Session]:
    """A SQLAlchemy ``Session`` for simsql's query functions on ``alias``'s own connection: in
    its open transaction, else as Django's own queries run outside one (each statement on its
    own: a query writes nothing, and a transaction would cost two more round trips)."""
    with borrowed(alias, atomic=False) as connection, Session(bind=connection) as opened:
        yield opened


def refuse_in_atomic(alias: str, what: str, instead: str) -> None:
    """:class:`InsideAtomicBlock` when ``alias`` is inside an atomic block: ``what`` commits on
    its own; the message says so and what to run instead."""
    if connections[alias].in_atomic_block:
        raise InsideAtomicBlock(
            f"{what} commits on its own and cannot run inside an atomic block (a TestCase, "
            f"transaction.atomic(), ATOMIC_REQUESTS, an atomic migration) of the database {alias!r}: {instead}"
        )


def url_for(alias: str = "default") -> URL:
    """The SQLAlchemy URL of the Django database ``alias`` built from its settings, for
    simsql's command line (``manage.py simsql``), which runs as a program of its own."""
    wrapper = connections[alias]
    settings = wrapper.settings_dict
    vendor = check_vendor(wrapper.vendor, alias)
    options: dict[str, Any] = settings.get("OPTIONS") or {}
    query = {"charset": str(options["charset"])} if "charset" in options else {}
    host = settings.get("HOST") or None
    if host is not None and host.startswith("/"):  # a Unix socket's directory (libpq's host= parameter)
        query, host = {**query, "host": host}, None
    port = settings.get("PORT")
    url = URL.create(
        vendor,
        username=settings.get("USER") or None,
        password=settings.get("PASSWORD") or None,
        host=host,
        port=int(port) if port else None,
        database=settings.get("NAME") or None,
        query=query,
    )
    return normalise_url(url)


__all__ = [
    "Borrowed", "InsideAtomicBlock", "borrowed", "check_vendor", "dialect_for", "driver_of", "engine_for",
    "refuse_in_atomic", "serves", "session", "sqlalchemy_connection", "url_for",
]  # fmt: skip
