"""The SQLAlchemy side of a Django database: the URL, engine and dialect simsql's own API takes.

simsql's lifecycle (attach, detach, backfill, status), its originality check and its
deduplication are written once, over SQLAlchemy. The Django front end reaches them through an
engine on the same database as a ``DATABASES`` alias, built from that alias's settings (the
test runner's ``test_`` name included, since it is read when called). One engine per URL, kept
until :func:`dispose_engines`, which runs too whenever Django connects to no database in
particular to create or drop one (``manage.py test``): PostgreSQL drops no database while a
connection, a pooled one of simsql's included, is open on it.

Django's ``connection.vendor`` is the scheme of a plain URL (``postgresql``, ``mysql`` for MySQL
and MariaDB), so :func:`simsql.schema.urls.normalise_url` picks the driver simsql runs on for it
(psycopg 3, PyMySQL), as for a URL a user types. A vendor simsql has no driver for (SQLite,
Oracle) is refused with :class:`~simsql.text.errors.UnsupportedDatabase`.
"""

from __future__ import annotations

import threading
from typing import Any

from django.db import connections
from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.signals import connection_created
from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import URL, Dialect

import simsql

from ..dialects.base import supported
from ..schema.urls import SYNC_DRIVERS, normalise_url
from ..text.errors import UnsupportedDatabase

_DIALECTS: dict[str, Dialect] = {}
_ENGINES: dict[str, Engine] = {}
_MODELS: dict[tuple[str, str], type] = {}
_LOCK = threading.Lock()


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


def url_for(alias: str = "default") -> URL:
    """The SQLAlchemy URL of the Django database ``alias`` (its current settings)."""
    connection = connections[alias]
    settings = connection.settings_dict
    vendor = check_vendor(connection.vendor, alias)
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


def engine_for(alias: str = "default") -> Engine:
    """The SQLAlchemy engine on the Django database ``alias`` (one per URL)."""
    url = url_for(alias)
    key = url.render_as_string(hide_password=False)
    with _LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            engine = _ENGINES[key] = create_engine(url, pool_size=5, max_overflow=10)
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


def _on_connection_created(sender: Any, connection: Any, **kwargs: Any) -> None:
    """Django's connection to no database in particular is the one it creates and drops
    databases on (the test runner's): simsql's pooled connections go first."""
    if connection.alias == NO_DB_ALIAS:
        dispose_engines()


connection_created.connect(_on_connection_created, dispatch_uid="simsql.django.bridge.dispose_engines")
