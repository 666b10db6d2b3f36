"""Database URLs as users write them, made to run on the driver simsql installs.

SQLAlchemy reads a plain ``postgresql://`` URL as psycopg2 (2.0) and does not know Heroku's
``postgres://`` at all; simsql depends on psycopg 3. Every entry point that takes a URL (the
command line, the demo, :func:`simsql.backfill`, :mod:`simsql.alembic` and its migration
environment) goes through :func:`normalise_url`, so the same URL works everywhere. Plain
``mysql://`` and ``mariadb://`` would mean mysqlclient, which needs a compiler and the client
library's headers to install; they run on PyMySQL, which simsql installs. An explicit driver
(``postgresql+psycopg2://``, ``mysql+mysqldb://``) is the user's choice and is kept.

The synchronous entry points make their engine with :func:`engine_for`, which first checks the
driver (:func:`check_driver`): an asyncio driver (``postgresql+asyncpg``, ``mysql+aiomysql``,
...) cannot serve a synchronous call, and a driver whose package is missing would otherwise
fail as SQLAlchemy's bare ``ModuleNotFoundError``; both are refused with the drivers that work
and the ``pip install`` that adds one. docs/drivers.md lists what is tested.
"""

from __future__ import annotations

from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import URL, make_url

from ..text.errors import MissingDependency, UnsupportedDatabase

__all__ = ["SYNC_DRIVERS", "check_driver", "engine_for", "normalise_url"]

#: Scheme names that mean "PostgreSQL, whatever driver SQLAlchemy picks by default".
_PLAIN_POSTGRESQL = frozenset({"postgresql", "postgres"})
_DRIVER = "postgresql+psycopg"
#: MySQL/MariaDB schemes without a driver: PyMySQL (pure Python, installs anywhere).
_PLAIN_MYSQL = frozenset({"mysql", "mariadb"})

SYNC_DRIVERS: dict[str, tuple[str, ...]] = {
    "postgresql": ("psycopg", "psycopg2", "pg8000"),
    "mysql": ("pymysql", "mysqldb"),
    "mariadb": ("pymysql", "mysqldb"),
}
"""The synchronous drivers simsql is tested with (tests/test_drivers.py), per URL scheme, the one
a plain scheme runs on first. Other synchronous drivers are not refused, only untested."""

_PACKAGES = {
    "psycopg": ("psycopg", '"psycopg[binary]"'),
    "psycopg2": ("psycopg2", "psycopg2-binary"),
    "pg8000": ("pg8000", "pg8000"),
    "pymysql": ("PyMySQL", "PyMySQL"),
    "mysqldb": (
        "mysqlclient",
        "mysqlclient (it compiles against the MySQL/MariaDB client library: install its headers "
        "first, e.g. `apt-get install default-libmysqlclient-dev pkg-config`)",
    ),
}
"""Driver name -> (the distribution that provides it, what to ``pip install``)."""


def normalise_url(url: str | URL) -> URL:
    """``url`` with a plain PostgreSQL scheme replaced by ``postgresql+psycopg`` and a plain
    MySQL/MariaDB one by ``+pymysql``; anything else unchanged. Raises
    :class:`sqlalchemy.exc.ArgumentError` for text that is not a URL."""
    parsed = make_url(url)
    if parsed.drivername in _PLAIN_POSTGRESQL:
        return parsed.set(drivername=_DRIVER)
    if parsed.drivername in _PLAIN_MYSQL:
        return parsed.set(drivername=f"{parsed.drivername}+pymysql")
    return parsed


def _tested(family: str) -> str:
    drivers = SYNC_DRIVERS[family]
    named = [f"{family}+{driver}" + (" (the default)" if i == 0 else "") for i, driver in enumerate(drivers)]
    return ", ".join(named)


def check_driver(url: str | URL) -> URL:
    """The normalised ``url``, once its driver is known to serve synchronous calls here.

    For PostgreSQL and MySQL/MariaDB URLs: an asyncio driver raises
    :class:`~simsql.text.errors.UnsupportedDatabase`, a driver whose package is not installed raises
    :class:`~simsql.text.errors.MissingDependency`; both messages name the drivers simsql is tested
    with. Nothing is connected. Other schemes are left to the server check that follows the
    first connection, and an unknown driver name to SQLAlchemy's own ``ArgumentError``."""
    parsed = normalise_url(url)
    family = parsed.get_backend_name()
    if family not in SYNC_DRIVERS:
        return parsed
    dialect = parsed.get_dialect()
    if getattr(dialect, "is_async", False):
        raise UnsupportedDatabase(
            f"{parsed.drivername} is an asyncio driver, and this is simsql's synchronous API. For "
            f"{'PostgreSQL' if family == 'postgresql' else 'MySQL/MariaDB'}, use a synchronous "
            f"driver: {_tested(family)} (docs/drivers.md)"
        )
    try:
        dialect.import_dbapi()
    except ImportError as error:
        driver = parsed.get_driver_name()
        distribution, pip = _PACKAGES.get(driver, (error.name or driver, error.name or driver))
        raise MissingDependency(
            f"{parsed.drivername} needs the {distribution} package: pip install {pip}. "
            f"Drivers simsql is tested with: {_tested(family)}",
            name=error.name,
        ) from error
    return parsed


def engine_for(url: str | URL, **kwargs: object) -> Engine:
    """``create_engine`` on the normalised URL once :func:`check_driver` accepts it: for
    functions that accept a URL in place of an engine and own the engine they create (the
    caller disposes of it)."""
    return create_engine(check_driver(url), **kwargs)  # type: ignore[arg-type]
