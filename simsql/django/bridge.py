"""The SQLAlchemy side of a Django database: the URL, engine and dialect simsql's own API takes.

simsql's lifecycle (attach, detach, backfill, status), its originality check and its
deduplication are written once, over SQLAlchemy. The Django front end reaches them through an
engine on the same database as a ``DATABASES`` alias, built from that alias's settings (the
test runner's ``test_`` name included, since it is read when called). One engine per URL, kept
until :func:`dispose_engines`.

Only the server families simsql supports map: ``postgresql`` (psycopg 3) and ``mysql`` (MySQL
and MariaDB, PyMySQL); any other vendor is refused with
:class:`~simsql.errors.UnsupportedDatabase`, as ``simsql.dialects.backend`` refuses one.
"""

from __future__ import annotations

import threading
from typing import Any

from django.db import connections
from sqlalchemy import Engine, create_engine
from sqlalchemy.dialects import mysql, postgresql
from sqlalchemy.engine import URL, Dialect

import simsql
from simsql.dialects import SUPPORTED
from simsql.errors import UnsupportedDatabase

DRIVERS = {"postgresql": "postgresql+psycopg", "mysql": "mysql+pymysql"}
"""Django's ``connection.vendor`` -> the SQLAlchemy driver simsql runs on for it."""

_DIALECTS: dict[str, Dialect] = {"postgresql": postgresql.psycopg.dialect(), "mysql": mysql.pymysql.dialect()}
_ENGINES: dict[str, Engine] = {}
_MODELS: dict[tuple[str, str], type] = {}
_LOCK = threading.Lock()


def check_vendor(vendor: str, alias: str = "default") -> str:
    """``vendor`` if simsql serves it, else :class:`~simsql.errors.UnsupportedDatabase`."""
    if vendor not in DRIVERS:
        raise UnsupportedDatabase(
            f"simsql needs {SUPPORTED}; the Django database {alias!r} is {vendor} "
            f"(ENGINE {connections[alias].settings_dict.get('ENGINE')!r})"
        )
    return vendor


def dialect_for(vendor: str) -> Dialect:
    """A SQLAlchemy dialect of ``vendor``'s family, to compile simsql's SQL constructs without a server."""
    return _DIALECTS[check_vendor(vendor)]


def url_for(alias: str = "default") -> URL:
    """The SQLAlchemy URL of the Django database ``alias`` (its current settings)."""
    connection = connections[alias]
    settings = connection.settings_dict
    vendor = check_vendor(connection.vendor, alias)
    options: dict[str, Any] = settings.get("OPTIONS") or {}
    query = {"charset": str(options.get("charset", "utf8mb4"))} if vendor == "mysql" else {}
    port = settings.get("PORT")
    return URL.create(
        DRIVERS[vendor],
        username=settings.get("USER") or None,
        password=settings.get("PASSWORD") or None,
        host=settings.get("HOST") or None,
        port=int(port) if port else None,
        database=settings.get("NAME") or None,
        query=query,
    )


def engine_for(alias: str = "default") -> Engine:
    """The SQLAlchemy engine on the Django database ``alias`` (one per URL)."""
    url = url_for(alias)
    key = url.render_as_string(hide_password=False)
    with _LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            engine = _ENGINES[key] = create_engine(url, pool_size=2, max_overflow=3)
        return engine


def model_for(alias: str, table: str) -> type:
    """simsql's mapped class of the attached ``table`` (:func:`simsql.reflect`), kept per
    database; :func:`forget` drops it once attach or detach changed the table."""
    engine = engine_for(alias)
    key = (engine.url.render_as_string(hide_password=False), table)
    found = _MODELS.get(key)
    if found is None:
        with engine.connect() as connection:
            found = _MODELS[key] = simsql.reflect(connection, table)
    return found


def forget(table: str | None = None) -> None:
    """Forget reflected tables (``table``, or all of them)."""
    for key in [key for key in _MODELS if table is None or key[1] == table]:
        _MODELS.pop(key, None)


def dispose_engines() -> None:
    """Close every engine's pooled connections (before a test database is dropped, say)."""
    forget()
    with _LOCK:
        for engine in _ENGINES.values():
            engine.dispose()
        _ENGINES.clear()
