"""The dialect seam: version refusal and the compiled Hamming expression."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine, select
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import make_url

import simsql
import simsql.bits
from simsql.dialects import probe_values, radius_for
from simsql.errors import UnsupportedDatabase

from .models import Article


def _compile(dialect: object) -> str:
    return str(select(Article.simhash.hamming_distance(5)).compile(dialect=dialect))


def test_postgres_older_than_14_is_refused_with_its_version() -> None:
    dialect = postgresql.psycopg.dialect()
    dialect.server_version_info = (13, 11)
    with pytest.raises(UnsupportedDatabase, match="PostgreSQL 13.11"):
        _compile(dialect)


def test_postgres_14_compiles_xor_and_bit_count() -> None:
    dialect = postgresql.psycopg.dialect()
    dialect.server_version_info = (14, 0)
    assert "bit_count(CAST((articles.simhash #" in _compile(dialect)


def _mysql(version: tuple[int, ...], mariadb: bool) -> object:
    dialect = mysql.pymysql.dialect()
    dialect.server_version_info = version
    dialect.is_mariadb = mariadb
    return dialect


def test_other_backends_are_refused_by_name() -> None:
    with pytest.raises(UnsupportedDatabase, match="'sqlite' database"):
        _compile(sqlite.dialect())


def test_sqlite_connection_is_refused_with_its_version() -> None:
    from simsql.dialects import backend

    engine = create_engine("sqlite://")
    with engine.connect() as connection, pytest.raises(UnsupportedDatabase) as refused:
        backend(connection).check_server(connection)
    assert "'sqlite'" in str(refused.value) and sqlite3.sqlite_version in str(refused.value)


@pytest.mark.parametrize(
    ("version", "mariadb", "found"),
    [((5, 7, 44), False, "MySQL 5.7.44"), ((10, 5, 22), True, "MariaDB 10.5.22"), ((10, 4), True, "MariaDB 10.4")],
)
def test_old_mysql_and_mariadb_are_refused_with_their_version(version: tuple[int, ...], mariadb: bool, found: str) -> None:
    with pytest.raises(UnsupportedDatabase, match=found):
        _compile(_mysql(version, mariadb))


@pytest.mark.parametrize(
    ("version", "mariadb", "found"),
    [
        ((9, 7, 4, 2), False, "MySQL 9.7.4"),  # Debian's "9.7.4-2": the package revision is not the server's
        ((10, 11, 6, 0), True, "MariaDB 10.11.6"),  # "10.11.6-MariaDB-0+deb12u1"
        ((10, 4), True, "MariaDB 10.4"),
    ],
)
def test_a_server_is_named_by_its_release_not_its_packaging(version: tuple[int, ...], mariadb: bool, found: str) -> None:
    from simsql.dialects import describe_server

    assert describe_server(_mysql(version, mariadb)) == found  # type: ignore[arg-type]


@pytest.mark.parametrize(("version", "mariadb"), [((8, 0, 36), False), ((10, 6, 0), True), ((11, 4, 2), True)])
def test_mysql_8_and_mariadb_10_6_compile_bit_count_over_xor(version: tuple[int, ...], mariadb: bool) -> None:
    assert "BIT_COUNT(articles.simhash ^ " in _compile(_mysql(version, mariadb))


def test_block_generation_and_covering_indexes_per_dialect() -> None:
    from sqlalchemy.schema import CreateIndex, CreateTable

    table = Article.__table__
    pg_table = str(CreateTable(table).compile(dialect=postgresql.psycopg.dialect()))
    assert 'GENERATED ALWAYS AS (CAST(("simhash" >> 48) & 65535 AS INTEGER)) STORED' in pg_table
    my_table = str(CreateTable(table).compile(dialect=_mysql((10, 11), True)))
    assert "simhash BIGINT UNSIGNED" in my_table
    assert "GENERATED ALWAYS AS ((`simhash` >> 48) & 65535) VIRTUAL" in my_table
    index = next(i for i in table.indexes if i.name == "ix_articles_simhash_b0")
    assert str(CreateIndex(index).compile(dialect=postgresql.psycopg.dialect())) == (
        "CREATE INDEX ix_articles_simhash_b0 ON articles (simhash_b0) INCLUDE (simhash, id)"
    )
    assert str(CreateIndex(index).compile(dialect=_mysql((10, 11), True))) == (
        "CREATE INDEX ix_articles_simhash_b0 ON articles (simhash_b0, simhash)"
    )


def test_equals_any_is_one_array_on_postgres_and_an_in_list_on_mysql() -> None:
    from simsql.dialects import equals_any

    statement = select(Article.id).where(equals_any(Article.simhash_b0, [1, 2, 3]))
    compiled_pg = statement.compile(dialect=postgresql.psycopg.dialect())
    # one bind, the array's text literal cast in SQL (psycopg dumps a str at once, a list item by item)
    assert "simhash_b0 = ANY (CAST(%(param_1)s::VARCHAR AS INTEGER[]))" in str(compiled_pg)
    assert list(compiled_pg.construct_params()) == ["param_1"] and compiled_pg.construct_params()["param_1"] == [1, 2, 3]
    compiled = statement.compile(dialect=_mysql((10, 11), True), compile_kwargs={"literal_binds": True})
    assert "simhash_b0 IN (1, 2, 3)" in str(compiled)
    # a predicate, not a value: "IN (...) = 1" would hide the list from the index (full scans)
    assert "= 1" not in str(compiled)


def test_probe_sets_have_the_multi_index_sizes() -> None:
    assert [len(probe_values(0xBEEF, r)) for r in range(4)] == [1, 17, 137, 697]
    assert len(set(probe_values(0xBEEF, 2))) == 137
    assert all(simsql.bits.hamming(v, 0xBEEF) <= 2 for v in probe_values(0xBEEF, 2))
    assert [radius_for(d) for d in (0, 3, 4, 7, 8, 11, 12)] == [0, 0, 1, 1, 2, 2, 3]


def _under_each_name(engine: Engine) -> Iterator[Engine]:
    """``engine``, and on MariaDB the same server reached as ``mariadb+pymysql`` too."""
    if engine.dialect.name == "postgresql":
        yield engine
        return
    url = make_url(str(engine.url.render_as_string(hide_password=False)))
    for name in ("mysql+pymysql", "mariadb+pymysql") if engine.dialect.is_mariadb else ("mysql+pymysql",):  # type: ignore[attr-defined]
        named = create_engine(url.set(drivername=name))
        try:
            yield named
        finally:
            named.dispose()


def test_live_server_is_new_enough_under_every_dialect_name(any_engine: Engine) -> None:
    """The live server passes the version check, and answers a similarity query, under every
    dialect name that reaches it."""
    from simsql.dialects import backend

    from .models import Base

    for engine in _under_each_name(any_engine):
        Base.metadata.create_all(engine)
        with engine.connect() as connection:
            backend(connection).check_server(connection)
            connection.execute(select(Article.id).where(simsql.similar_to(Article, 5, 3))).all()


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(st.integers(0, 2**64 - 1), st.sets(st.integers(0, 63), max_size=3))
def test_pair_masks_catch_every_pair_within_three_bits(a: int, flips: set[int]) -> None:
    from simsql.queries import pair_masks

    b = a
    for bit in flips:
        b ^= 1 << bit
    assert any((a & mask) == (b & mask) for mask in pair_masks())


def test_plain_mysql_urls_run_on_pymysql_and_explicit_drivers_are_kept() -> None:
    from simsql.urls import normalise_url as driver_url

    assert driver_url("mysql://root@127.0.0.1:3306/test").drivername == "mysql+pymysql"
    assert driver_url("mariadb://u:p@h/db").drivername == "mariadb+pymysql"
    assert driver_url("mysql+mysqldb://h/db").drivername == "mysql+mysqldb"
    assert driver_url("postgresql://h/db").drivername == "postgresql+psycopg"


@pytest.mark.parametrize("any_engine", ["postgresql", "mysql"], indirect=True)
def test_row_estimate_reads_the_servers_estimate_for_any_table_name(any_engine) -> None:  # type: ignore[no-untyped-def]
    """The estimate most_similar's budget is read from, on each server, for a name that needs
    quoting (a quote, a percent sign, a backslash) and for a table that is not there (0)."""
    from sqlalchemy import Column, Integer, MetaData, Table, insert, text

    from simsql.dialects import row_estimate

    odd = Table("it's 100% \\odd", MetaData(), Column("id", Integer, primary_key=True))
    missing = Table("simsql_no_such_table", MetaData(), Column("id", Integer, primary_key=True))
    odd.create(any_engine)
    with any_engine.begin() as connection:
        connection.execute(insert(odd), [{"id": i} for i in range(1, 201)])
        quoted = any_engine.dialect.identifier_preparer.quote(odd.name).replace("%%", "%")  # text() doubles it again
        connection.execute(text(f"ANALYZE {'TABLE ' if any_engine.dialect.name != 'postgresql' else ''}{quoted}"))
    with any_engine.connect() as connection:
        estimate, absent = connection.execute(select(row_estimate(odd), row_estimate(missing))).one()
    assert 100 <= estimate <= 400  # a sampled estimate of 200 rows, not exact on InnoDB
    assert absent == 0
