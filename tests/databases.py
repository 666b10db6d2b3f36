"""The suite's own databases, on the servers the test URLs name (issue 33, part 5).

``pytest`` never depends on nor disturbs what is already in the database it is given: like
Django's test runner, the session fixtures (tests/conftest.py) create a database of their own on
the server the URL names (``simsql_test_<random>``), hand out URLs on it, and drop it at the end.
The given database is only the door to the server: simsql's registry, tables or schemas already
in it (a ``public.simsql_registry`` a user's ``simsql attach`` left, say) are never read, since
PostgreSQL resolves unqualified names in the connection's own database only, and MySQL/MariaDB
keep the registry in the database (MySQL's schema) the connection is on.

A Citus cluster (tests/test_citus.py) is a database per node: :func:`own_citus_database` makes
the database on the coordinator and on every worker the given database's coordinator knows,
with the extension in each, and adds the workers to it, as ``.ci/citus-cluster`` does for
``postgres``.
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


def _nodes(given: str) -> tuple[tuple[str, int], list[tuple[str, int]]]:
    """(the coordinator, the active primary workers) as the given database's Citus metadata has them."""
    engine = create_engine(given)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                text("SELECT groupid, nodename, nodeport FROM pg_dist_node WHERE noderole = 'primary' AND isactive ORDER BY nodeid")
            ).all()
    finally:
        engine.dispose()
    url = make_url(given)
    coordinator = next(((r.nodename, r.nodeport) for r in rows if r.groupid == 0), (url.host or "127.0.0.1", url.port or 5432))
    return coordinator, [(r.nodename, r.nodeport) for r in rows if r.groupid != 0]


@contextmanager
def own_citus_database(given: str) -> Iterator[str]:
    """:func:`own_database` on a Citus cluster: the database is made on every node (workers
    first), each gets the extension, and the coordinator's gets the workers; dropped on every
    node on exit. Only the given database's node list is read."""
    coordinator, workers = _nodes(given)
    url = make_url(given)
    name = own_name()
    made: list[str] = []

    def on(host: str, port: int, database: str | None) -> str:
        return url.set(host=host, port=port, database=database).render_as_string(hide_password=False)

    try:
        for host, port in [*workers, coordinator]:
            _autocommit(on(host, port, url.database), f'CREATE DATABASE "{name}"')
            made.append(on(host, port, url.database))
            _autocommit(on(host, port, name), "CREATE EXTENSION citus")
        host, port = coordinator
        statements = [f"SELECT citus_set_coordinator_host('{host}', {port})"]
        statements += [f"SELECT citus_add_node('{worker}', {worker_port})" for worker, worker_port in workers]
        _autocommit(on(host, port, name), *statements)
        yield on(host, port, name)
    finally:
        for server in reversed(made):  # the coordinator first: it holds connections to the workers
            _autocommit(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _autocommit(url: str, *statements: str) -> None:
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            for statement in statements:
                connection.execute(text(statement))
    finally:
        engine.dispose()
