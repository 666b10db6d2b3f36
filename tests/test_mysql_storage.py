"""Storage on MySQL/MariaDB: column types, generated blocks, covering indexes, the registry and its
configuration check. (Query answers on both databases: tests/test_queries.py.)"""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.dialects import mysql, postgresql
from sqlalchemy.engine import make_url
from sqlalchemy.exc import StatementError
from sqlalchemy.orm import Session
from sqlalchemy.schema import CreateTable

import simsql
import simsql.alembic
from simsql import ConfigMismatch, Fingerprinter, registry
from simsql.schema import metadata as simsql_metadata
from simsql.schema import progress_table, registry_table

from .models import Article, Base, Post


def test_registry_tables_keep_postgres_types_and_get_portable_ones_on_mysql() -> None:
    pg = str(CreateTable(registry_table).compile(dialect=postgresql.psycopg.dialect()))
    assert "table_schema TEXT NOT NULL" in pg and "settings JSONB NOT NULL" in pg and "source TEXT[] NOT NULL" in pg
    assert "last_key JSONB" in str(CreateTable(progress_table).compile(dialect=postgresql.psycopg.dialect()))
    my = str(CreateTable(registry_table).compile(dialect=mysql.pymysql.dialect()))
    assert "table_schema VARCHAR(64) NOT NULL" in my and "settings JSON NOT NULL" in my and "source JSON NOT NULL" in my


def _columns(engine: Engine, table: str) -> dict[str, tuple[str, str]]:
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT COLUMN_NAME, COLUMN_TYPE, EXTRA FROM information_schema.COLUMNS "
                "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = :t"
            ),
            {"t": table},
        )
        return {name: (kind, extra) for name, kind, extra in rows}


def _index_columns(engine: Engine, table: str) -> dict[str, list[str]]:
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
                "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = :t ORDER BY INDEX_NAME, SEQ_IN_INDEX"
            ),
            {"t": table},
        )
        out: dict[str, list[str]] = {}
        for index, column in rows:
            out.setdefault(index, []).append(column)
        return out


@pytest.mark.parametrize(("table", "key"), [("articles", "id"), ("posts_simhash", "id")])
def test_unsigned_fingerprint_virtual_blocks_and_covering_indexes(mysql_engine: Engine, table: str, key: str) -> None:
    Base.metadata.create_all(mysql_engine)
    columns = _columns(mysql_engine, table)
    assert columns["simhash"][0].startswith("bigint") and "unsigned" in columns["simhash"][0]
    for block in ("simhash_b0", "simhash_b1", "simhash_b2", "simhash_b3"):
        assert columns[block][1] == "VIRTUAL GENERATED"
    indexes = _index_columns(mysql_engine, table)
    for block in ("simhash_b0", "simhash_b1", "simhash_b2", "simhash_b3"):
        # InnoDB appends the primary key to every secondary index: (block, simhash) + id covers a lookup
        assert indexes[f"ix_{table}_{block}"] == [block, "simhash"]
    assert indexes["PRIMARY"] == [key]


def test_fingerprints_past_64_bits_are_refused_before_any_sql(mysql_engine: Engine) -> None:
    Base.metadata.create_all(mysql_engine)
    with Session(mysql_engine) as session:
        for bad in (2**64, -1):
            with pytest.raises(StatementError, match="unsigned 64-bit"):  # SQLAlchemy wraps the ValueError
                session.execute(select(Article.id).where(Article.simhash == bad)).all()
        with pytest.raises(ValueError):
            simsql.most_similar(select(Article), 2**64)


def test_registry_round_trip_and_configuration_check(mysql_engine: Engine) -> None:
    simsql_metadata.create_all(mysql_engine)
    Base.metadata.create_all(mysql_engine)
    other = Fingerprinter(shingle_size=2)
    with mysql_engine.begin() as connection:
        database = registry.current_schema(connection)
        assert database == make_url(str(mysql_engine.url)).database
        registry.record(connection, "articles", None, other, ("title", "body"), "columns")
        registry.record(connection, "articles", None, other, ("title", "body"), "columns")  # idempotent
        entry = registry.read(connection, "articles")
    assert entry is not None and entry.config_id == other.config_id
    assert entry.source == ("title", "body") and entry.settings == dict(other.settings)
    with Session(mysql_engine) as session:
        session.add(Article(title="t", body="words written with another configuration"))
        with pytest.raises(ConfigMismatch, match="articles"):
            session.commit()
        session.rollback()
        with pytest.raises(ConfigMismatch):
            session.execute(simsql.most_similar(select(Article), "some text")).all()
    with mysql_engine.begin() as connection:
        with pytest.raises(ConfigMismatch):
            registry.record(connection, "articles", None, Fingerprinter(), ("title", "body"), "columns")
        registry.remove(connection, "articles")
        assert registry.read(connection, "articles") is None


def test_side_table_attach_records_and_follows_writes(mysql_engine: Engine) -> None:
    simsql_metadata.create_all(mysql_engine)
    Base.metadata.create_all(mysql_engine)
    binding = simsql.binding_for(Post)
    with mysql_engine.begin() as connection:
        registry.record(connection, "posts", None, binding.fingerprinter, binding.source, "side_table", binding.table.name)
    with Session(mysql_engine) as session:
        post = Post(title="Shakespeare", body="Shakespeare produced most of his known work between 1589 and 1613")
        session.add(post)
        session.commit()
        post.body = "Shakespeare produced most of his work after 1589"
        session.commit()  # the upsert path: ON DUPLICATE KEY UPDATE
        stored = session.execute(select(binding.fingerprint, *binding.blocks).where(binding.table_keys[0] == post.id)).one()
        assert stored[0] == binding.fingerprinter.fingerprint("Shakespeare\nShakespeare produced most of his work after 1589")
        assert tuple(stored[1:]) == simsql.blocks(stored[0])
        found = simsql.find_original(session, Post, "Shakespeare\nShakespeare produced most of his work after 1589")
        assert found is not None and found.row.id == post.id and found.distance == 0


def test_live_server_passes_the_version_check_under_both_dialect_names(mysql_engine: Engine) -> None:
    from sqlalchemy import create_engine

    from simsql.dialects import check_server

    url = make_url(str(mysql_engine.url.render_as_string(hide_password=False)))
    for name in ("mysql+pymysql", "mariadb+pymysql") if mysql_engine.dialect.is_mariadb else ("mysql+pymysql",):
        engine = create_engine(url.set(drivername=name))
        try:
            Base.metadata.create_all(engine)
            with engine.connect() as connection:
                check_server(connection)
                connection.execute(select(Article.id).where(simsql.similar_to(Article, 5, 3))).all()
        finally:
            engine.dispose()


def test_raw_sql_text_changes_drop_stale_fingerprints_in_both_modes(mysql_engine: Engine) -> None:
    """The digest invariant (simsql.storage), kept by MySQL triggers: a writer that changes the
    text behind simsql's back leaves no fingerprint describing the old text."""
    Base.metadata.create_all(mysql_engine)
    with Session(mysql_engine) as session:
        article = Article(title="Shakespeare", body="Shakespeare produced most of his known work between 1589 and 1613")
        post = Post(title="Shakespeare", body="Shakespeare produced most of his known work between 1589 and 1613")
        session.add_all([article, post])
        session.commit()
        ids = article.id, post.id
    with mysql_engine.begin() as connection:
        connection.execute(text("UPDATE articles SET category = 'other' WHERE id = :i"), {"i": ids[0]})
        kept = connection.execute(text("SELECT simhash IS NOT NULL FROM articles WHERE id = :i"), {"i": ids[0]}).scalar_one()
        assert kept, "a write that leaves the text alone keeps the fingerprint"
        connection.execute(text("UPDATE articles SET body = 'rewritten by raw SQL' WHERE id = :i"), {"i": ids[0]})
        connection.execute(text("UPDATE posts SET body = 'rewritten by raw SQL' WHERE id = :i"), {"i": ids[1]})
        stale = connection.execute(text("SELECT simhash, simhash_src FROM articles WHERE id = :i"), {"i": ids[0]}).one()
        assert tuple(stale) == (None, None)
        assert connection.execute(text("SELECT COUNT(*) FROM posts_simhash WHERE id = :i"), {"i": ids[1]}).scalar_one() == 0
    with Session(mysql_engine) as session:  # ORM writes keep fingerprint and digest together
        article = session.get(Article, ids[0])
        assert article is not None
        article.body = "written through the ORM again"
        session.commit()
        assert session.execute(select(Article.simhash).where(Article.id == ids[0])).scalar_one() == (
            simsql.binding_for(Article).fingerprinter.fingerprint("Shakespeare\nwritten through the ORM again")
        )
    Base.metadata.drop_all(mysql_engine)
    with mysql_engine.connect() as connection:
        assert connection.execute(text("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()")).scalar_one() == 0


def test_refingerprint_not_built_for_mysql_is_refused_clearly_not_half_run(mysql_engine: Engine) -> None:
    """Refingerprint (not yet on MySQL) says so before any of its DDL runs; attach, detach,
    status (tests/test_mysql_lifecycle.py) and backfill (tests/test_mysql_backfill.py) run."""
    from simsql import UnsupportedDatabase

    _run_raw(mysql_engine, "CREATE TABLE docs (id INT PRIMARY KEY, body TEXT)")
    simsql.alembic.upgrade(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", source=["body"])
    with mysql_engine.connect() as connection:
        before = connection.execute(text("SHOW CREATE TABLE docs")).one()[1]
    with pytest.raises(UnsupportedDatabase, match="does not run it on (MySQL|MariaDB)"):
        simsql.refingerprint(mysql_engine, "docs", to=Fingerprinter(shingle_size=2))
    with mysql_engine.connect() as connection:
        assert connection.execute(text("SHOW CREATE TABLE docs")).one()[1] == before


def _run_raw(engine: Engine, sql: str) -> None:
    with engine.begin() as connection:
        connection.execute(text(sql))


@pytest.mark.parametrize("side_table", [False, True])
def test_text_in_a_non_utf8_column_keeps_its_fingerprint(mysql_engine: Engine, side_table: bool) -> None:
    """The digest is md5 of the text's UTF-8 bytes on every server, whatever the column's
    character set: a latin1 column used to be hashed in latin1, so no fingerprint of accented
    text was ever kept (backfill counted it "changed" on every run)."""
    body = "Café au lait, crème brûlée and a naïve façade"
    _run_raw(mysql_engine, "CREATE TABLE notes (id INT PRIMARY KEY, body TEXT CHARACTER SET latin1)")
    with mysql_engine.begin() as connection:
        connection.execute(text("INSERT INTO notes VALUES (1, :b)"), {"b": body})
    simsql.alembic.upgrade(mysql_engine)
    simsql.attach_table(mysql_engine, "notes", source=["body"], side_table=side_table)
    result = simsql.backfill(mysql_engine, "notes")
    assert (result.rows_fingerprinted, result.rows_skipped_changed) == (1, 0)
    (status,) = simsql.status(mysql_engine)
    assert (status.rows_fingerprinted, status.rows_missing, status.rows_stale) == (1, 0, 0)
    holder = "notes_simhash" if side_table else "notes"
    with mysql_engine.connect() as connection:
        stored = connection.execute(text(f"SELECT simhash FROM {holder} WHERE id = 1")).scalar_one()
    assert stored == Fingerprinter().fingerprint(body)
