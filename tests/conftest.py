"""A real PostgreSQL for every database test, never a mock.

Order of preference: ``SIMSQL_TEST_DATABASE_URL``; a testcontainers PostgreSQL when a Docker
daemon answers; the embedded PostgreSQL wheel. Each test gets its own schema (set as the
connection's ``search_path``) and drops it afterwards, so tests cannot see each other's tables.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine, text


def _docker_answers() -> bool:
    try:
        import docker

        client = docker.from_env(timeout=2)
        client.ping()
        return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
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
