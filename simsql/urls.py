"""Database URLs as users write them, made to run on the driver simsql installs.

SQLAlchemy reads a plain ``postgresql://`` URL as psycopg2, which simsql does not install (it
depends on psycopg 3), and does not know Heroku's ``postgres://`` at all. Every entry point that
takes a URL (the command line, the demo, :func:`simsql.backfill`, :mod:`simsql.alembic` and its
migration environment) goes through :func:`normalise_url`, so the same URL works everywhere.
Plain ``mysql://`` and ``mariadb://`` would mean mysqlclient, which needs a compiler and the
client library's headers to install; they run on PyMySQL (``pip install simsql[mysql]``).
An explicit driver (``postgresql+psycopg2://``, ``mysql+mysqldb://``) is the user's choice and is kept.
"""

from __future__ import annotations

from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import URL, make_url

__all__ = ["engine_for", "normalise_url"]

#: Scheme names that mean "PostgreSQL, whatever driver SQLAlchemy picks by default".
_PLAIN_POSTGRESQL = frozenset({"postgresql", "postgres"})
_DRIVER = "postgresql+psycopg"
#: MySQL/MariaDB schemes without a driver: PyMySQL (pure Python, installs anywhere).
_PLAIN_MYSQL = frozenset({"mysql", "mariadb"})


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


def engine_for(url: str | URL, **kwargs: object) -> Engine:
    """``create_engine`` on the normalised URL: for functions that accept a URL in place of an
    engine and own the engine they create (the caller disposes of it)."""
    return create_engine(normalise_url(url), **kwargs)  # type: ignore[arg-type]
