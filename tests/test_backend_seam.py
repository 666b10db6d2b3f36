"""The declared database seam: ``simsql.dialects.backend`` picks one ``Backend`` class per server
family, refuses every other database by name, and each backend answers its interface on a real
server."""

from __future__ import annotations

import sqlite3
import uuid

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import Connection, Dialect, make_url

from simsql import Fingerprinter
from simsql.dialects import Backend, backend, type_rules
from simsql.dialects.batch import Job
from simsql.dialects.mysql import MySQLBackend
from simsql.dialects.mysql.backfill import MySQLBatchSQL
from simsql.dialects.postgresql import PostgresBackend
from simsql.dialects.postgresql.backfill import PostgresBatchSQL
from simsql.errors import UnsupportedDatabase
from simsql.schema.names import Names
from simsql.store.storage import text_digest
from simsql.store.types import SimHash


def _dialect(url: str) -> Dialect:
    return make_url(url).get_dialect()()  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("url", "family"),
    [
        ("postgresql+psycopg://", PostgresBackend),
        ("postgresql+psycopg2://", PostgresBackend),
        ("mysql+pymysql://", MySQLBackend),
        ("mariadb+pymysql://", MySQLBackend),
    ],
)
def test_the_registry_picks_the_family_from_the_dialect_name(url: str, family: type[Backend]) -> None:
    dialect = _dialect(url)
    found = backend(dialect)
    assert type(found) is family
    assert backend(dialect) is found  # one instance per dialect (so per engine)
    assert type_rules(dialect) is family


def test_other_databases_are_refused_naming_the_server_found() -> None:
    engine = create_engine("sqlite://")
    with engine.connect() as connection:
        with pytest.raises(UnsupportedDatabase, match=rf"but this is a 'sqlite' database \({sqlite3.sqlite_version}\)"):
            backend(connection)
        with pytest.raises(UnsupportedDatabase, match="PostgreSQL >= 14, MySQL >= 8.0 or MariaDB >= 10.6"):
            backend(engine)
    # what must work anywhere (a column type, a statement printed without a server) is portable
    assert type_rules(engine.dialect) is Backend
    assert SimHash().process_bind_param(2**64 - 1, engine.dialect) == -1


def test_a_variant_is_chosen_from_the_server_not_the_dialect_name(database_url: str) -> None:
    class EveryServer(PostgresBackend):
        """A variant of the PostgreSQL family, recognised from the server (as Citus will be)."""

        @classmethod
        def detect(cls, connection: Connection) -> bool:
            return bool(connection.execute(text("SELECT true")).scalar_one())

    engine = create_engine(database_url)
    try:
        assert PostgresBackend.variants[-1] is EveryServer  # registered by subclassing, as a family is (after Citus)
        assert type(backend(engine.dialect)) is PostgresBackend  # a name alone cannot tell
        with engine.connect() as connection:
            chosen = backend(connection)
        assert type(chosen) is EveryServer
        assert backend(engine) is chosen and backend(engine.dialect) is chosen  # asked once per engine
    finally:
        PostgresBackend.variants.remove(EveryServer)
        engine.dispose()


@pytest.fixture
def docs(any_engine: Engine) -> Engine:
    with any_engine.begin() as connection:
        connection.execute(text("CREATE TABLE docs (id INT PRIMARY KEY, body TEXT)"))
        connection.execute(text("INSERT INTO docs VALUES (1, 'hello'), (2, NULL)"))
    return any_engine


def test_each_backend_answers_its_interface_on_its_server(docs: Engine) -> None:
    server = backend(docs)
    family = PostgresBackend if docs.dialect.name == "postgresql" else MySQLBackend
    assert type(server) is family
    with docs.connect() as connection:
        server.check_server(connection)
        assert server.describe_server().split()[0] in ("PostgreSQL", "MySQL", "MariaDB")
        schema = server.current_schema(connection)
        assert server.relation_exists(connection, "docs") and not server.relation_exists(connection, "no_such_table")
        facts = server.table_facts(connection, schema, "docs")
        assert facts is not None and facts.keys == ("id",) and facts.columns["body"].is_text
        assert server.table_facts(connection, schema, "no_such_table") is None
        digest = connection.execute(text(f"SELECT {server.digest_sql(['body'], 'b.')} FROM docs b WHERE id = 1")).scalar_one()
        assert uuid.UUID(str(digest)) == text_digest("hello")
        counted = connection.execute(text(f"SELECT {server.count_where('body IS NULL')} FROM docs")).scalar_one()
        assert counted == 1
        different = server.distinct_sql("body", "'hello'")
        assert connection.execute(text(f"SELECT id FROM docs WHERE {different} ORDER BY id")).scalars().all() == [2]


def test_time_bounds_apply_inside_and_are_put_back_after(any_engine: Engine) -> None:
    server = backend(any_engine)
    with any_engine.connect() as connection:
        before = server.read_timeouts(connection)
        with server.bounded(connection, "3s", "2min"):
            inside = server.read_timeouts(connection)
            assert inside != before
            assert str(inside[0]) in ("3s", "3")  # PostgreSQL's text, MySQL's whole seconds
        assert server.read_timeouts(connection) == before


def test_session_locks_are_held_by_one_session_at_a_time(any_engine: Engine) -> None:
    server = backend(any_engine)
    key = 0x5EA3
    with any_engine.connect() as first, any_engine.connect() as second:
        assert server.try_advisory_lock(first, key)
        assert not server.try_advisory_lock(second, key)
        server.advisory_unlock(first, key)
        assert server.try_advisory_lock(second, key)
        server.advisory_unlock(second, key)


def test_the_plans_each_family_chooses(any_engine: Engine) -> None:
    server = backend(any_engine)
    job = Job("s", "docs", ("id",), ("integer",), ("body",), Names("docs"), Fingerprinter())
    if isinstance(server, PostgresBackend):
        assert (server.many_targets_plan, server.online_index_builds, server.refingerprints_online) == ("lateral", False, True)
        assert server.transactional_ddl and server.ddl.name == "postgresql"
        assert isinstance(server.batch_sql(job), PostgresBatchSQL)
        assert server.trigger_names(Names("docs")) == ("simsql_docs_blocks",)
    else:
        assert (server.many_targets_plan, server.online_index_builds, server.refingerprints_online) == ("window", True, False)
        assert not server.transactional_ddl and server.ddl.name == "mysql"
        assert isinstance(server.batch_sql(job), MySQLBatchSQL)
        assert server.trigger_names(Names("docs")) == ("simsql_docs_blocks_ins", "simsql_docs_blocks_upd")
