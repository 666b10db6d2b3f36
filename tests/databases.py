"""The suite's own databases, on the servers the test URLs name (issue 33, part 5).

``pytest`` never depends on nor disturbs what is already in the database it is given: like
Django's test runner, the session fixtures (tests/conftest.py) create a database of their own on
the server the URL names (``simsql_test_<random>``), hand out URLs on it, and drop it at the end.
The given database is only the door to the server: simsql's registry, tables or schemas already
in it (a ``public.simsql_registry`` a user's ``simsql attach`` left, say) are never read, since
PostgreSQL resolves unqualified names in the connection's own database only, and MySQL/MariaDB
keep the registry in the database (MySQL's schema) the connection is on.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

PREFIX = "simsql_test_"
"""Every database the suite creates for a session starts with this."""


def own_name() -> str:
    return f"{PREFIX}{uuid.uuid4().hex[:12]}"


@contextmanager
def own_database(given: str) -> Iterator[str]:
    """A database of the suite's own on the server ``given`` names, as a URL like ``given``
    (driver, credentials, query) naming it; dropped on exit, with whatever is still connected.

    PostgreSQL: ``CREATE DATABASE`` from the server's template; MySQL/MariaDB: ``CREATE
    DATABASE ... CHARACTER SET utf8mb4``. ``given``'s own database is connected to and nothing
    else: nothing is read from it, nothing written."""
    url = make_url(given)
    name = own_name()
    mysql = url.get_backend_name() in ("mysql", "mariadb")
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4" if mysql else f'CREATE DATABASE "{name}"'))
        try:
            yield url.set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as connection:
                connection.execute(text(f"DROP DATABASE `{name}`" if mysql else f'DROP DATABASE "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()
