"""Storage on every server: column types, blocks kept in step with the fingerprint, the side
table following its rows, the registry and its configuration check, and the invariant every
write keeps (no stored fingerprint describes text its row no longer holds), whoever the writer.
Query answers: tests/test_queries.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import Connection, Engine, Text, create_engine, select, text, update
from sqlalchemy.dialects import mysql, postgresql
from sqlalchemy.engine import make_url
from sqlalchemy.exc import StatementError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.schema import CreateTable

import simsql
import simsql.alembic
import simsql.bits
import simsql.store
import simsql.text.fingerprint
from simsql import Fingerprinter
from simsql.errors import ConfigMismatch
from simsql.schema.names import metadata as simsql_metadata
from simsql.schema.names import progress_table, registry_table
from simsql.store import registry

from .models import MODELS, Article, Base, Comment, Post
from .tables import add_simhash, fingerprints_by, is_mysql, run, unsigned
from .test_migrations import build_legacy

MODES = sorted(MODELS)


def _search_path(connection: Connection) -> str:
    return str(connection.execute(text("SELECT current_schema()")).scalar_one())


def _triggers(engine: Engine) -> list[str]:
    sql = (
        "SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()" if is_mysql(engine)
        else "SELECT trigger_name FROM information_schema.triggers WHERE trigger_schema = current_schema()"
    )
    with engine.connect() as connection:
        return sorted(connection.execute(text(sql)).scalars())


# -- types, blocks and the side table --------------------------------------------------------------


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


def test_fingerprints_past_64_bits_are_refused_before_any_sql(tables: Engine) -> None:
    with Session(tables) as session:
        for bad in (2**64, -1):
            with pytest.raises(StatementError, match="unsigned 64-bit"):  # SQLAlchemy wraps the ValueError
                session.execute(select(Article.id).where(Article.simhash == bad)).all()
        with pytest.raises(ValueError):
            simsql.most_similar(select(Article), 2**64)


def test_registry_round_trip_and_configuration_check(tables: Engine) -> None:
    simsql_metadata.create_all(tables)
    other = Fingerprinter(shingle_size=2)
    with tables.begin() as connection:
        database = registry.current_schema(connection)
        # MySQL's schema is the URL's database; PostgreSQL's the first of the search_path
        assert database == (make_url(str(tables.url)).database if is_mysql(connection) else _search_path(connection))
        registry.remove(connection, "articles")  # what create_all recorded with the model's configuration
        registry.record(connection, "articles", None, other, ("title", "body"), "columns")
        registry.record(connection, "articles", None, other, ("title", "body"), "columns")  # idempotent
        entry = registry.read(connection, "articles")
    assert entry is not None and entry.config_id == other.config_id
    assert entry.source == ("title", "body") and entry.settings == dict(other.settings)
    with Session(tables) as session:
        session.add(Article(title="t", body="words written with another configuration"))
        with pytest.raises(ConfigMismatch, match="articles"):
            session.commit()
        session.rollback()
        with pytest.raises(ConfigMismatch):
            session.execute(simsql.most_similar(select(Article), "some text")).all()
    with tables.begin() as connection:
        with pytest.raises(ConfigMismatch):
            registry.record(connection, "articles", None, Fingerprinter(), ("title", "body"), "columns")
        registry.remove(connection, "articles")
        assert registry.read(connection, "articles") is None


def test_side_table_attach_records_and_follows_writes(tables: Engine) -> None:
    simsql_metadata.create_all(tables)
    binding = simsql.store.binding_for(Post)
    with tables.begin() as connection:
        registry.record(connection, "posts", None, binding.fingerprinter, binding.source, "side_table", binding.table.name)
    with Session(tables) as session:
        post = Post(title="Shakespeare", body="Shakespeare produced most of his known work between 1589 and 1613")
        session.add(post)
        session.commit()
        post.body = "Shakespeare produced most of his work after 1589"
        session.commit()  # the upsert path: ON DUPLICATE KEY UPDATE, ON CONFLICT DO UPDATE
        stored = session.execute(select(binding.fingerprint, *binding.blocks).where(binding.table_keys[0] == post.id)).one()
        assert stored[0] == binding.fingerprinter.fingerprint("Shakespeare\nShakespeare produced most of his work after 1589")
        assert tuple(stored[1:]) == simsql.bits.blocks(stored[0])
        found = simsql.find_original(session, Post, "Shakespeare\nShakespeare produced most of his work after 1589")
        assert found is not None and found.row.id == post.id and found.distance == 0


def test_raw_sql_text_changes_drop_stale_fingerprints_in_both_modes(tables: Engine) -> None:
    """The digest invariant (simsql.store.storage), kept by the server's triggers: a writer that
    changes the text behind simsql's back leaves no fingerprint describing the old text."""
    with Session(tables) as session:
        article = Article(title="Shakespeare", body="Shakespeare produced most of his known work between 1589 and 1613")
        post = Post(title="Shakespeare", body="Shakespeare produced most of his known work between 1589 and 1613")
        session.add_all([article, post])
        session.commit()
        ids = article.id, post.id
    with tables.begin() as connection:
        connection.execute(text("UPDATE articles SET category = 'other' WHERE id = :i"), {"i": ids[0]})
        kept = connection.execute(text("SELECT simhash IS NOT NULL FROM articles WHERE id = :i"), {"i": ids[0]}).scalar_one()
        assert kept, "a write that leaves the text alone keeps the fingerprint"
        connection.execute(text("UPDATE articles SET body = 'rewritten by raw SQL' WHERE id = :i"), {"i": ids[0]})
        connection.execute(text("UPDATE posts SET body = 'rewritten by raw SQL' WHERE id = :i"), {"i": ids[1]})
        stale = connection.execute(text("SELECT simhash, simhash_src FROM articles WHERE id = :i"), {"i": ids[0]}).one()
        assert tuple(stale) == (None, None)
        assert connection.execute(text("SELECT COUNT(*) FROM posts_simhash WHERE id = :i"), {"i": ids[1]}).scalar_one() == 0
    with Session(tables) as session:  # ORM writes keep fingerprint and digest together
        article = session.get(Article, ids[0])
        assert article is not None
        article.body = "written through the ORM again"
        session.commit()
        assert session.execute(select(Article.simhash).where(Article.id == ids[0])).scalar_one() == (
            simsql.store.binding_for(Article).fingerprinter.fingerprint("Shakespeare\nwritten through the ORM again")
        )
    Base.metadata.drop_all(tables)
    assert _triggers(tables) == []


@pytest.mark.parametrize("mode", MODES)
def test_orm_rows_fingerprinted_and_blocks_follow(tables: Engine, mode: str) -> None:
    model = MODELS[mode]
    binding = simsql.store.binding_for(model)
    with Session(tables) as session:
        row = model(title="Shakespeare", body="Shakespeare produced most of his known work between 1589 and 1613")
        empty = model(title="  ", body=None)
        session.add_all([row, empty])
        session.commit()
        stored = session.execute(select(binding.fingerprint, *binding.blocks).where(binding.table_keys[0] == row.id)).one()
        assert stored[0] == binding.fingerprinter.fingerprint("Shakespeare\nShakespeare produced most of his known work between 1589 and 1613")
        assert tuple(stored[1:]) == simsql.bits.blocks(stored[0])
        assert session.execute(select(binding.fingerprint).where(binding.table_keys[0] == empty.id)).scalar() is None

        row.body = "A completely different text about databases and indexes"
        session.commit()
        updated = session.execute(select(binding.fingerprint, *binding.blocks).where(binding.table_keys[0] == row.id)).one()
        assert updated[0] == binding.fingerprinter.fingerprint("Shakespeare\nA completely different text about databases and indexes")
        assert tuple(updated[1:]) == simsql.bits.blocks(updated[0])

        # NULL fingerprints never match, even a fingerprint of all zeros or all ones.
        for probe in (0, 2**64 - 1):
            ids = session.scalars(select(model.id).where(simsql.similar_to(model, probe, 64))).all()
            assert empty.id not in ids

        session.delete(row)
        session.commit()
        assert session.execute(select(binding.table_keys[0]).where(binding.table_keys[0] == row.id)).first() is None


def test_raw_sql_update_keeps_blocks_in_sync(tables: Engine) -> None:
    stored_all_ones = 2**64 - 1 if is_mysql(tables) else -1  # the same 64 bits, as each database stores them
    with tables.begin() as connection:
        connection.execute(text(f"INSERT INTO articles (id, title, category, simhash) VALUES (1, 'x', 'a', {stored_all_ones})"))
        connection.execute(text("UPDATE articles SET simhash = 81985529216486895 WHERE id = 1"))
        row = connection.execute(text("SELECT simhash_b0, simhash_b1, simhash_b2, simhash_b3 FROM articles")).one()
    assert tuple(row) == simsql.bits.blocks(81985529216486895)


def test_side_table_rows_cascade_with_their_model(tables: Engine) -> None:
    with Session(tables) as session:
        post = Post(title="t", body="some words to fingerprint")
        session.add(post)
        session.commit()
        session.add(Comment(post_id=post.id))
        session.commit()
        session.delete(post)
        session.commit()
        assert session.execute(text("SELECT count(*) FROM posts_simhash")).scalar() == 0


# -- no stored fingerprint describes text the row no longer holds ---------------------------------


class WriterBase(DeclarativeBase):
    pass


class Doc(simsql.SimHashMixin, WriterBase):
    __tablename__ = "docs"
    __simhash_source__ = ("body",)
    id: Mapped[int] = mapped_column(primary_key=True)
    body: Mapped[str | None] = mapped_column(Text)


class Note(WriterBase):
    __tablename__ = "notes"
    id: Mapped[int] = mapped_column(primary_key=True)
    body: Mapped[str | None] = mapped_column(Text)


simsql.attach_model(Note, source=("body",))

OLD = "the quick brown fox jumps over the lazy dog near the river bank today"
NEW = "completely different words about databases indexes and query planners"


def _holder_sql(model: type) -> str:
    return f"SELECT id, simhash FROM {simsql.store.binding_for(model).table.name}"


@pytest.mark.parametrize("model", [Doc, Note], ids=["mixin", "orm_side_table"])
@pytest.mark.parametrize("writer", ["orm_bulk", "core", "raw_sql"])
def test_text_changed_by_any_writer_never_keeps_its_old_fingerprint(any_engine: Engine, model: type, writer: str) -> None:
    engine = any_engine
    WriterBase.metadata.create_all(engine)
    with Session(engine) as session:
        session.add(model(id=1, body=OLD))
        session.commit()
        if writer == "orm_bulk":
            session.execute(update(model).where(model.id == 1).values(body=NEW))  # type: ignore[attr-defined]
        elif writer == "core":
            session.connection().execute(update(model.__table__).values(body=NEW))  # type: ignore[attr-defined]
        else:
            session.execute(text(f"UPDATE {model.__tablename__} SET body = :b", ), {"b": NEW})  # type: ignore[attr-defined]
        session.commit()
        stored = fingerprints_by(engine, _holder_sql(model)).get(1)
        assert stored in (None, simsql.text.fingerprint.simhash(NEW))
        assert session.execute(select(model.id).where(simsql.similar_to(model, OLD, 0))).all() == []  # type: ignore[attr-defined]
    simsql.backfill(engine, model, workers=0)
    assert fingerprints_by(engine, _holder_sql(model))[1] == simsql.text.fingerprint.simhash(NEW)


def test_a_recomputed_equal_fingerprint_is_kept(engine: Engine) -> None:
    """Editing punctuation changes the text, not its fingerprint: the ORM's correct value
    must survive on a table attached in place (it used to be nulled as 'stale' because it
    equalled the old one)."""
    from .test_migrations import LegacyArticle

    build_legacy(engine, rows=5)
    add_simhash(engine, "articles")
    with Session(engine) as session:
        article = session.get(LegacyArticle, 2)
        assert article is not None
        article.body = "hello world again and again"
        session.commit()
        article.body = "hello, world! again and again..."
        session.commit()
    assert simsql.text.fingerprint.simhash("title 2\nhello, world! again and again...") == simsql.text.fingerprint.simhash("title 2\nhello world again and again")
    stored = fingerprints_by(engine, "SELECT id, simhash FROM articles")[2]
    assert stored == simsql.text.fingerprint.simhash("title 2\nhello world again and again")


def test_mixin_tables_are_registered_and_checked(any_engine: Engine) -> None:
    engine = any_engine
    simsql.alembic.upgrade(engine)
    WriterBase.metadata.create_all(engine)
    with Session(engine) as session:
        session.add(Doc(id=1, body=OLD))
        session.commit()
    with engine.connect() as connection:
        entry = simsql.store.registry.read(connection, "docs")
    assert entry is not None and entry.config_id == simsql.Fingerprinter().config_id and entry.mode == "columns"

    class OtherBase(DeclarativeBase):
        pass

    class OtherDoc(simsql.SimHashMixin, OtherBase):
        __tablename__ = "docs"
        __simhash_source__ = ("body",)
        __simhash_fingerprinter__ = simsql.Fingerprinter(shingle_size=2)
        id: Mapped[int] = mapped_column(primary_key=True)
        body: Mapped[str | None] = mapped_column(Text)

    with Session(engine) as session:
        session.add(OtherDoc(id=2, body=NEW))
        with pytest.raises(ConfigMismatch):
            session.commit()
        session.rollback()
        with pytest.raises(ConfigMismatch):
            session.execute(select(OtherDoc.id).where(simsql.similar_to(OtherDoc, OLD))).all()


def test_a_table_dropped_by_raw_sql_can_be_created_again(engine: Engine) -> None:
    """DROP TABLE takes the trigger but leaves its function; create_all must not then fail on
    simsql's own orphaned function, while a function simsql did not write is never replaced."""
    Base.metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE posts_simhash, comments, posts, articles"))
    Base.metadata.create_all(engine)  # failed: function simsql_articles_blocks already exists
    with Session(engine) as session:
        session.add(Post(id=1, title="Harvest", body="A wet spring delayed the wheat harvest."))
        session.commit()
        session.execute(text("UPDATE posts SET body = 'Something else entirely' WHERE id = 1"))
        session.commit()
        assert session.execute(text("SELECT count(*) FROM posts_simhash")).scalar_one() == 0

    with engine.begin() as connection:
        connection.execute(text("DROP TABLE posts_simhash, comments, posts, articles"))
        connection.execute(text(
            "CREATE OR REPLACE FUNCTION simsql_articles_blocks() RETURNS trigger LANGUAGE plpgsql "
            "AS $$ BEGIN RETURN NEW; END $$"
        ))
    with pytest.raises(Exception, match="simsql_articles_blocks"):
        Base.metadata.create_all(engine)
    with engine.connect() as connection:
        source = connection.execute(text(
            "SELECT prosrc FROM pg_proc WHERE proname = 'simsql_articles_blocks' "
            "AND pronamespace = current_schema()::regnamespace"
        )).scalar_one()
    assert source.strip() == "BEGIN RETURN NEW; END"


@contextmanager
def _latin1_database(admin_engine: Engine) -> Iterator[Engine]:
    """A PostgreSQL database of its own in the LATIN1 encoding, dropped afterwards."""
    name = f"latin1_{uuid.uuid4().hex[:10]}"
    with admin_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        # PostgreSQL 17+ clusters may default to the builtin C.UTF-8 locale, which no LATIN1
        # database can use: name libc's C locale (LOCALE_PROVIDER exists from PostgreSQL 15)
        modern = connection.dialect.server_version_info >= (15,)
        provider = "LOCALE_PROVIDER libc " if modern else ""
        connection.execute(
            text(f"CREATE DATABASE \"{name}\" ENCODING 'LATIN1' {provider}LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
        )
    engine = create_engine(admin_engine.url.set(database=name))
    try:
        yield engine
    finally:
        engine.dispose()
        with admin_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text(f'DROP DATABASE "{name}"'))


@contextmanager
def _latin1_notes(any_engine: Engine, request: pytest.FixtureRequest) -> Iterator[Engine]:
    """A ``notes (id, body)`` table whose text is stored in LATIN1: a latin1 column on MySQL, a
    LATIN1 database on PostgreSQL."""
    if is_mysql(any_engine):
        run(any_engine, "CREATE TABLE notes (id INT PRIMARY KEY, body TEXT CHARACTER SET latin1)")
        yield any_engine
        return
    with _latin1_database(request.getfixturevalue("admin_engine")) as engine:
        run(engine, "CREATE TABLE notes (id int PRIMARY KEY, body text)")
        yield engine


@pytest.mark.parametrize("side_table", [False, True])
def test_text_in_a_non_utf8_encoding_keeps_its_fingerprint(any_engine: Engine, side_table: bool, request: pytest.FixtureRequest) -> None:
    """The digest is md5 of the text's UTF-8 bytes on every server, whatever the column's or the
    database's encoding: text stored in LATIN1 used to be hashed as LATIN1 bytes, so no
    fingerprint of accented text was ever kept (backfill counted it "changed" on every run)."""
    body = "Café au lait, crème brûlée and a naïve façade"
    with _latin1_notes(any_engine, request) as engine:
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO notes VALUES (1, :b)"), {"b": body})
        simsql.alembic.upgrade(engine)
        simsql.attach_table(engine, "notes", source=["body"], side_table=side_table)
        result = simsql.backfill(engine, "notes")
        assert (result.rows_fingerprinted, result.rows_skipped_changed) == (1, 0)
        (status,) = simsql.status(engine)
        assert (status.rows_fingerprinted, status.rows_missing, status.rows_stale) == (1, 0, 0)
        holder = "notes_simhash" if side_table else "notes"
        with engine.connect() as connection:
            stored = connection.execute(text(f"SELECT simhash FROM {holder} WHERE id = 1")).scalar_one()
        assert unsigned(engine, stored) == Fingerprinter().fingerprint(body)
