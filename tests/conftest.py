"""A real PostgreSQL for every database test, never a mock; a real MySQL/MariaDB when one answers.

PostgreSQL, in order of preference: ``SIMSQL_TEST_DATABASE_URL``; a testcontainers PostgreSQL
when a Docker daemon answers; the embedded PostgreSQL wheel. Each test gets its own schema (set
as the connection's ``search_path``) and drops it afterwards, so tests cannot see each other's
tables.

MySQL/MariaDB, in the same order: ``SIMSQL_TEST_MYSQL_URL``; a testcontainers MySQL 8.0 when
Docker answers; the local service at ``mysql+pymysql://root@127.0.0.1:3306/test``. With none,
the MySQL tests are skipped with one line saying so, never failed. Each test gets its own
database (MySQL's schema), dropped afterwards.

The URL given names a server, not a place to work in: the session makes a database of its own
there (``simsql_test_<random>``, tests/databases.py), which ``database_url`` and ``mysql_url``
name, and drops it at the end, as Django's test runner does. What the given database already
holds (simsql's registry from an earlier ``simsql attach``, say) is never read nor changed;
``given_database_url`` and ``given_mysql_url`` are the URLs as given, for the tests that check so.

A behaviour that runs on every server is one test taking ``any_engine`` (or ``tables``, the
shared models created there, or ``any_url``, the same database as a user types its URL): pytest
runs it once per server, ``test_x[postgresql]`` and ``test_x[mysql]``. A test that only means
something on one server takes ``engine``/``url`` or ``mysql_engine``/``mysql_cli_url``.
Builders and comparisons shared by the modules are in tests/tables.py, the command line runner
in tests/command_line.py, the ORM models in tests/models.py.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from tests.databases import own_citus_database, own_database

LOCAL_MYSQL_URL = "mysql+pymysql://root@127.0.0.1:3306/test"
MYSQL_SKIP = "MySQL/MariaDB tests skipped"
CITUS_SKIP = "Citus tests skipped"  # tests/test_citus.py, without SIMSQL_TEST_CITUS_URL


def _docker_answers() -> bool:
    try:
        import docker

        client = docker.from_env(timeout=2)
        client.ping()
        return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def given_database_url() -> Iterator[str]:
    """The PostgreSQL server's URL as given (or started): only the door to the server."""
    url = os.environ.get("SIMSQL_TEST_DATABASE_URL")
    if url:
        yield url
        return
    if _docker_answers():
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("postgres:16", driver="psycopg") as container:
            yield container.get_connection_url()
        return
    from simsql.embedded import embedded_url, stop_embedded
    from tests.pg_dirs import cluster_parent

    with cluster_parent() as parent:
        data_dir = parent / "pg"
        yield embedded_url(data_dir)
        stop_embedded(data_dir)


@pytest.fixture(scope="session")
def database_url(given_database_url: str) -> Iterator[str]:
    """The session's own PostgreSQL database on the given server, dropped at the end."""
    with own_database(given_database_url) as url:
        yield url


@pytest.fixture(scope="session")
def admin_engine(database_url: str) -> Iterator[Engine]:
    engine = create_engine(database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def schema(admin_engine: Engine) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    with admin_engine.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{name}"'))
    yield name
    with admin_engine.begin() as connection:
        connection.execute(text(f'DROP SCHEMA "{name}" CASCADE'))


@pytest.fixture
def engine(database_url: str, schema: str) -> Iterator[Engine]:
    """An engine whose connections resolve unqualified names in this test's own schema."""
    engine = create_engine(database_url, connect_args={"options": f"-csearch_path={schema},public"})
    yield engine
    engine.dispose()


def _mysql_answers(url: str) -> str | None:
    """None when a server answers at ``url``, else why not (one line)."""
    try:
        probe = create_engine(url, connect_args={"connect_timeout": 3})
        with probe.connect():
            pass
        probe.dispose()
        return None
    except Exception as error:  # noqa: BLE001 - any failure means "not available here"
        return f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"


@pytest.fixture(scope="session")
def given_mysql_url() -> Iterator[str]:
    """The MySQL/MariaDB server's URL as given (or started): only the door to the server."""
    url = os.environ.get("SIMSQL_TEST_MYSQL_URL")
    if url:
        from simsql.urls import normalise_url

        yield normalise_url(url).render_as_string(hide_password=False)
        return
    if _docker_answers():
        from testcontainers.mysql import MySqlContainer

        with MySqlContainer("mysql:8.0", root_password="simsql", dialect="pymysql") as container:
            host, port = container.get_container_host_ip(), container.get_exposed_port(3306)
            yield f"mysql+pymysql://root:simsql@{host}:{port}/{container.dbname}"
        return
    why = _mysql_answers(LOCAL_MYSQL_URL)
    if why is not None:
        pytest.skip(
            f"{MYSQL_SKIP}: no SIMSQL_TEST_MYSQL_URL, no Docker, no server at {LOCAL_MYSQL_URL} ({why})"
        )
    yield LOCAL_MYSQL_URL


@pytest.fixture(scope="session")
def mysql_url(given_mysql_url: str) -> Iterator[str]:
    """The session's own MySQL/MariaDB database on the given server, dropped at the end."""
    with own_database(given_mysql_url) as url:
        yield url


@pytest.fixture(scope="session")
def mysql_admin_engine(mysql_url: str) -> Iterator[Engine]:
    engine = create_engine(mysql_url)
    yield engine
    engine.dispose()


@pytest.fixture
def mysql_engine(mysql_url: str, mysql_admin_engine: Engine) -> Iterator[Engine]:
    """An engine on a database of its own (MySQL's schema), dropped after the test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with mysql_admin_engine.begin() as connection:
        connection.execute(text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
    engine = create_engine(make_url(mysql_url).set(database=name))
    yield engine
    engine.dispose()
    with mysql_admin_engine.begin() as connection:
        connection.execute(text(f"DROP DATABASE `{name}`"))


@pytest.fixture(scope="session")
def given_citus_url() -> str:
    """A Citus cluster's coordinator as given (``SIMSQL_TEST_CITUS_URL``), for tests/test_citus.py:
    only the door to the cluster. Without it the Citus tests skip with one line."""
    url = os.environ.get("SIMSQL_TEST_CITUS_URL")
    if not url:
        pytest.skip(f"{CITUS_SKIP}: no SIMSQL_TEST_CITUS_URL (start a cluster with .ci/citus-cluster)")
    return url


@pytest.fixture(scope="session")
def citus_url(given_citus_url: str) -> Iterator[str]:
    """The session's own database on the cluster (on every node, the extension in each), dropped at the end."""
    with own_citus_database(given_citus_url) as url:
        yield url


@pytest.fixture
def url(database_url: str, schema: str) -> str:
    """The test's PostgreSQL database with its schema as search_path, as a user would pass it."""
    separator = "&" if "?" in database_url else "?"
    return f"{database_url}{separator}options=-csearch_path%3D{schema}"


@pytest.fixture
def mysql_cli_url(mysql_engine: Engine) -> str:
    """The test's MySQL database as a user writes it: a plain ``mysql://`` URL (no driver named)."""
    return mysql_engine.url.set(drivername="mysql").render_as_string(hide_password=False)


SERVERS = ["postgresql", "mysql"]


@pytest.fixture(params=SERVERS)
def any_engine(request: pytest.FixtureRequest) -> Engine:
    """The test's engine on each database simsql supports: PostgreSQL, then MySQL/MariaDB."""
    return request.getfixturevalue("engine" if request.param == "postgresql" else "mysql_engine")  # type: ignore[no-any-return]


@pytest.fixture
def any_url(any_engine: Engine, request: pytest.FixtureRequest) -> str:
    """``any_engine``'s database as a user passes it to the command line."""
    mysql = any_engine.dialect.name in ("mysql", "mariadb")
    return request.getfixturevalue("mysql_cli_url" if mysql else "url")  # type: ignore[no-any-return]


@pytest.fixture
def tables(any_engine: Engine) -> Engine:
    """``any_engine`` with the shared models' tables (tests/models.py) created."""
    from tests.models import Base

    Base.metadata.create_all(any_engine)
    return any_engine


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Every MySQL (or Citus) test skipped for want of a server reports the same place, so ``-ra`` folds
    them into one line ("SKIPPED [n] tests/conftest.py: MySQL/MariaDB tests skipped: ...")."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped and isinstance(report.longrepr, tuple) and any(m in str(report.longrepr[2]) for m in (MYSQL_SKIP, CITUS_SKIP)):
        report.longrepr = (__file__, 0, report.longrepr[2])


def reaches_suite_fixture(item: pytest.Item) -> bool:
    """Whether ``item`` takes a fixture the suite defines (``tests/``: any of them may reach a
    server), directly or through another fixture, or ``request`` itself (it may ask for any).
    pytest's own fixtures (``tmp_path`` takes ``request``) and a test's own parametrized
    arguments do not; an item whose fixtures cannot be read is kept."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None or "request" in info.argnames:  # a test's own request may ask for any fixture
        return True
    for name in getattr(item, "fixturenames", ()):
        for fixturedef in info.name2fixturedefs.get(name, ()):
            module = str(getattr(fixturedef.func, "__module__", ""))
            if module == "tests" or module.startswith("tests."):
                return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``SIMSQL_TEST_SERVER_TESTS_ONLY=1`` leaves out the tests that take no fixture of the
    suite's own (:func:`reaches_suite_fixture`), and the smoke runs of benchmark and research
    scripts (marked ``harness``: they check that a script's harness runs and measures what it
    says, which one server shows as well as two).

    For a second run on other servers right after a full run on the same checkout (CI runs the
    suite against the PostgreSQL and MySQL services, and side by side against the embedded
    PostgreSQL and MariaDB): such a test (the fingerprint rules, the type check, the package's
    shape, the docs' generated parts, the embedded server's own clusters) answers the same on any
    server, so the first run's answer stands. The rule is conservative: any other fixture (a
    module's own, ``request``) keeps the test, since it may reach a server. Unset, as a user runs
    ``pytest``, every test runs."""
    if os.environ.get("SIMSQL_TEST_SERVER_TESTS_ONLY") != "1":
        return
    kept, dropped = [], []
    for item in items:
        (kept if reaches_suite_fixture(item) and not item.get_closest_marker("harness") else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
