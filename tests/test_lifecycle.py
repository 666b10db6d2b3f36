"""attach -> backfill -> query -> detach on a real PostgreSQL: nothing lost, nothing stale.

Each test reproduces one way the lifecycle used to lose data or answer wrong (issue 9).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from sqlalchemy import Engine, String, Text, select, text, update
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.alembic
from simsql import operations
from simsql.errors import ConfigMismatch, SchemaError

from .test_migrations import build_legacy, snapshot


def _attach(engine: Engine, table: str = "articles", source: tuple[str, ...] = ("title", "body"), **options: Any) -> None:
    simsql.alembic.upgrade(engine)
    with engine.begin() as connection:
        operations.add_simhash(connection, table, list(source), **options)


def _fingerprints(engine: Engine, sql: str) -> dict[Any, int | None]:
    with engine.connect() as connection:
        return {row[0]: None if row[1] is None else simsql.to_unsigned(row[1]) for row in connection.execute(text(sql))}


# -- 1. never adopt, never drop a user's object ----------------------------------------------


@pytest.mark.parametrize("column_type", ["bigint", "text"])
def test_a_users_own_simhash_column_is_never_adopted(engine: Engine, column_type: str) -> None:
    build_legacy(engine, rows=20)
    with engine.begin() as connection:
        connection.execute(text(f"ALTER TABLE articles ADD COLUMN simhash {column_type}"))
        connection.execute(text("UPDATE articles SET simhash = CAST(id * 7 AS " + column_type + ")"))
    simsql.alembic.upgrade(engine)
    before = snapshot(engine)
    with engine.begin() as connection, pytest.raises(SchemaError, match=r"column articles\.simhash .*another column prefix"):
        operations.add_simhash(connection, "articles", ["title", "body"])
    assert snapshot(engine) == before

    # Another prefix attaches beside it; detaching takes away only what simsql added.
    _attach(engine, prefix="sim")
    simsql.backfill(engine, "articles", workers=0)
    with engine.begin() as connection:
        connection.execute(text("UPDATE articles SET body = body || ' more' WHERE id = 3"))  # trigger fires
        operations.drop_simhash(connection, "articles")
    after = snapshot(engine)
    assert after["columns"] == before["columns"] and after["triggers"] == before["triggers"]
    with engine.connect() as connection:
        kept = connection.execute(text("SELECT count(*) FROM articles WHERE CAST(simhash AS text) = CAST(id * 7 AS text)")).scalar()
    assert kept == 20


# -- 2, 3. no stored fingerprint describes text the row no longer holds --------------------


class Base(DeclarativeBase):
    pass


class Doc(simsql.SimHashMixin, Base):
    __tablename__ = "docs"
    __simhash_source__ = ("body",)
    id: Mapped[int] = mapped_column(primary_key=True)
    body: Mapped[str | None] = mapped_column(Text)


class Note(Base):
    __tablename__ = "notes"
    id: Mapped[int] = mapped_column(primary_key=True)
    body: Mapped[str | None] = mapped_column(Text)


simsql.attach(Note, source=("body",))

OLD = "the quick brown fox jumps over the lazy dog near the river bank today"
NEW = "completely different words about databases indexes and query planners"


def _holder_sql(model: type) -> str:
    return f"SELECT id, simhash FROM {simsql.binding_for(model).table.name}"


@pytest.mark.parametrize("model", [Doc, Note], ids=["mixin", "orm_side_table"])
@pytest.mark.parametrize("writer", ["orm_bulk", "core", "raw_sql"])
def test_text_changed_by_any_writer_never_keeps_its_old_fingerprint(engine: Engine, model: type, writer: str) -> None:
    Base.metadata.create_all(engine)
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
        stored = _fingerprints(engine, _holder_sql(model)).get(1)
        assert stored in (None, simsql.simhash(NEW))
        assert session.execute(select(model.id).where(simsql.similar_to(model, OLD, 0))).all() == []  # type: ignore[attr-defined]
    simsql.backfill(engine, model, workers=0)
    assert _fingerprints(engine, _holder_sql(model))[1] == simsql.simhash(NEW)


def test_a_recomputed_equal_fingerprint_is_kept(engine: Engine) -> None:
    """Editing punctuation changes the text, not its fingerprint: the ORM's correct value
    must survive on a table attached in place (it used to be nulled as 'stale' because it
    equalled the old one)."""
    from .test_migrations import LegacyArticle

    build_legacy(engine, rows=5)
    _attach(engine)
    with Session(engine) as session:
        article = session.get(LegacyArticle, 2)
        assert article is not None
        article.body = "hello world again and again"
        session.commit()
        article.body = "hello, world! again and again..."
        session.commit()
    assert simsql.simhash("title 2\nhello, world! again and again...") == simsql.simhash("title 2\nhello world again and again")
    stored = _fingerprints(engine, "SELECT id, simhash FROM articles")[2]
    assert stored == simsql.simhash("title 2\nhello world again and again")


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_backfill_racing_a_writer_keeps_no_stale_fingerprint(engine: Engine, side_table: bool) -> None:
    """A writer changes a row after backfill read it and commits after backfill wrote it."""
    build_legacy(engine, rows=40)
    _attach(engine, side_table=side_table)
    writer = engine.connect()
    writer.execute(text("UPDATE articles SET body = :b WHERE id = 7"), {"b": NEW})  # not committed yet
    outcome: dict[str, Any] = {}

    def run() -> None:
        outcome["result"] = simsql.backfill(engine, "articles", workers=0)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(1.5)  # backfill has read the old text by now; it may wait for the writer's lock
    writer.commit()
    writer.close()
    thread.join(30)
    assert not thread.is_alive()
    holder = "articles_simhash" if side_table else "articles"
    stored = _fingerprints(engine, f"SELECT id, simhash FROM {holder}").get(7)
    assert stored in (None, simsql.simhash(f"title 7\n{NEW}"))
    simsql.backfill(engine, "articles", workers=0)
    assert _fingerprints(engine, f"SELECT id, simhash FROM {holder}")[7] == simsql.simhash(f"title 7\n{NEW}")


# -- 4. re-attach ----------------------------------------------------------------------------


def test_attaching_again_with_other_settings_is_refused_and_same_settings_change_nothing(engine: Engine) -> None:
    build_legacy(engine, rows=20)
    _attach(engine, source=("body",))
    simsql.backfill(engine, "articles", workers=0)
    before = snapshot(engine)
    with engine.begin() as connection:
        operations.add_simhash(connection, "articles", ["body"])  # same settings: nothing to do
    assert snapshot(engine) == before
    for options in ({"source": ["title", "body"]}, {"source": ["body"], "side_table": True}):
        with engine.begin() as connection, pytest.raises(SchemaError, match="already attached.*detach"):
            operations.add_simhash(connection, "articles", **options)  # type: ignore[arg-type]
    assert snapshot(engine) == before
    with engine.connect() as connection:
        assert connection.execute(text("SELECT to_regclass('articles_simhash')")).scalar() is None


# -- 5. configuration checks -----------------------------------------------------------------


def test_mixin_tables_are_registered_and_checked(engine: Engine) -> None:
    simsql.alembic.upgrade(engine)
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        session.add(Doc(id=1, body=OLD))
        session.commit()
    with engine.connect() as connection:
        entry = simsql.registry.read(connection, "docs")
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


def test_a_registry_dropped_by_hand_is_reported_and_repaired(engine: Engine, schema: str) -> None:
    build_legacy(engine, rows=10)
    _attach(engine)
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE simsql_registry"))
    with engine.connect() as connection, pytest.raises(SchemaError, match="db upgrade"):
        simsql.registry.read(connection, "articles")
    simsql.alembic.upgrade(engine)  # repairs
    with engine.connect() as connection:
        assert connection.execute(text("SELECT to_regclass('simsql_registry')")).scalar() is not None
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE simsql_registry"))
    simsql.alembic.downgrade(engine)  # must not fail on the missing table
    assert simsql.alembic.current(engine) == ()


# -- 8. names are cut by bytes, one rule everywhere -------------------------------------------


def test_long_multibyte_table_names_get_four_distinct_indexes(engine: Engine) -> None:
    name = "文" * 17
    with engine.begin() as connection:
        connection.execute(text(f'CREATE TABLE "{name}" (id int PRIMARY KEY, body text)'))
        connection.execute(text(f'INSERT INTO "{name}" VALUES (1, :b)'), {"b": OLD})
    _attach(engine, table=name, source=("body",))
    with engine.connect() as connection:
        connection = connection.execution_options(isolation_level="AUTOCOMMIT")
        operations.create_simhash_indexes(connection, name, concurrently=True)
        indexes = connection.execute(
            text("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = :t AND indexname <> :pk"),
            {"t": name, "pk": f"{name}_pkey"},
        ).scalars().all()
    assert len(set(indexes)) == 4 and all(len(i.encode()) <= 63 for i in indexes)
    with engine.begin() as connection:
        operations.drop_simhash_indexes(connection, name)
        remaining = connection.execute(
            text("SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND tablename = :t"), {"t": name}
        ).scalar()
    assert remaining == 1  # the primary key


def test_orm_and_migrations_name_long_indexes_alike(engine: Engine) -> None:
    class LongBase(DeclarativeBase):
        pass

    class Long(simsql.SimHashMixin, LongBase):
        __tablename__ = "文" * 18
        __simhash_source__ = ("body",)
        id: Mapped[int] = mapped_column(primary_key=True)
        body: Mapped[str | None] = mapped_column(Text)

    LongBase.metadata.create_all(engine)
    with engine.connect() as connection:
        built = set(
            connection.execute(
                text("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = :t"),
                {"t": Long.__tablename__},
            ).scalars()
        )
    assert set(simsql.binding_for(Long).names.indexes) <= built


# -- 9. composite and binary keys -------------------------------------------------------------


class Part(Base):
    __tablename__ = "parts"
    shelf: Mapped[str] = mapped_column(String(10), primary_key=True)
    slot: Mapped[int] = mapped_column(primary_key=True)
    body: Mapped[str | None] = mapped_column(Text)


simsql.attach(Part, source=("body",))


def test_composite_keys_backfill_reflect_and_query(engine: Engine) -> None:
    simsql.alembic.upgrade(engine)
    Base.metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(
            Part.__table__.insert(),  # type: ignore[attr-defined]
            [{"shelf": f"s{i % 3}", "slot": i, "body": f"{OLD} {i}" if i != 4 else NEW} for i in range(12)],
        )
    result = simsql.backfill(engine, Part, workers=0, batch_size=5)
    assert result.rows_fingerprinted == 12
    with engine.connect() as connection:
        model = simsql.reflect(connection, "parts")
    with Session(engine) as session:
        found = session.execute(select(Part.shelf, Part.slot).where(simsql.similar_to(Part, NEW, 0))).all()
        assert found == [("s1", 4)]
        again = session.execute(select(model).where(simsql.similar_to(model, NEW, 0))).scalars().all()
        assert [(r.shelf, r.slot) for r in again] == [("s1", 4)]


def test_binary_keys_resume_where_they_stopped(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE blobs (id bytea PRIMARY KEY, body text)"))
        connection.execute(
            text("INSERT INTO blobs SELECT decode(lpad(to_hex(i), 4, '0'), 'hex'), :b || i FROM generate_series(0, 99) i"),
            {"b": OLD},
        )
    _attach(engine, table="blobs", source=("body",))
    calls = []

    def stop_after_two(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        simsql.backfill(engine, "blobs", workers=0, batch_size=10, progress=stop_after_two)
    rest = simsql.backfill(engine, "blobs", workers=0, batch_size=10)
    assert rest.resumed and rest.rows_read == 80 and rest.rows_fingerprinted == 80
    fingerprints = _fingerprints(engine, "SELECT body, simhash FROM blobs")
    assert all(fp == simsql.simhash(body) for body, fp in fingerprints.items())


# -- 11. backfill memory is bounded by bytes ----------------------------------------------------


def test_backfill_batches_are_bounded_by_bytes(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE big (id int PRIMARY KEY, body text)"))
        connection.execute(
            text("INSERT INTO big SELECT i, repeat(:w || i || ' ', 60) FROM generate_series(1, 10) i"), {"w": "word"}
        )
    _attach(engine, table="big", source=("body",))
    result = simsql.backfill(engine, "big", workers=0, batch_size=100, max_batch_bytes=1000)
    assert result.rows_fingerprinted == 10
    assert result.batches >= 5  # about 420 bytes a row: at most two rows a batch


# -- detach and status ------------------------------------------------------------------------


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_detach_restores_the_table_exactly(engine: Engine, side_table: bool) -> None:
    build_legacy(engine, rows=60)
    simsql.alembic.upgrade(engine)
    before = snapshot(engine)
    simsql.attach_table(engine, "articles", source=["title", "body"], side_table=side_table)
    simsql.backfill(engine, "articles", workers=0)
    report = {s.table: s for s in simsql.status(engine)}["articles"]
    assert (report.mode, report.rows_fingerprinted, report.rows_missing, report.rows_stale) == (
        "side_table" if side_table else "columns", 59, 0, 0
    )
    removed = simsql.detach(engine, "articles")
    assert removed.table_name == "articles"
    assert snapshot(engine) == before
    assert simsql.status(engine) == []
    with engine.connect() as connection:
        leftovers = connection.execute(
            text(
                "SELECT count(*) FROM pg_class WHERE relnamespace = CAST(current_schema() AS regnamespace) "
                "AND relname LIKE '%simhash%'"
            )
        ).scalar()
        functions = connection.execute(
            text(
                "SELECT count(*) FROM pg_proc WHERE proname LIKE 'simsql_articles%' "
                "AND pronamespace = CAST(current_schema() AS regnamespace)"
            )
        ).scalar()
    assert (leftovers, functions) == (0, 0)


def test_detach_refuses_to_harm_objects_that_depend_on_simsql(engine: Engine) -> None:
    build_legacy(engine, rows=5)
    simsql.alembic.upgrade(engine)
    simsql.attach_table(engine, "articles", source=["body"])
    with engine.begin() as connection:
        connection.execute(text("CREATE VIEW article_prints AS SELECT id, simhash FROM articles"))
    before = snapshot(engine)
    with pytest.raises(SchemaError, match="article_prints"):
        simsql.detach(engine, "articles")
    assert snapshot(engine) == before
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM article_prints")).scalar() == 5


def test_status_counts_stale_rows_written_behind_the_trigger(engine: Engine) -> None:
    build_legacy(engine, rows=30)
    simsql.alembic.upgrade(engine)
    simsql.attach_table(engine, "articles", source=["title", "body"])
    simsql.backfill(engine, "articles", workers=0)
    with engine.begin() as connection:
        connection.execute(text("SET LOCAL session_replication_role = replica"))  # triggers off
        connection.execute(text("UPDATE articles SET body = 'edited behind simsql' WHERE id IN (2, 3)"))
    report = simsql.status(engine)[0]
    assert (report.rows_fingerprinted, report.rows_stale) == (30, 2)


# -- 6. every statement on a user's table is bounded ------------------------------------------


def _holding(engine: Engine, sql: str) -> Any:
    holder = engine.connect()
    holder.execute(text(sql))
    return holder


def _within(seconds: float, work: Any) -> BaseException | None:
    """Run ``work`` in a thread; fail the test if it is still waiting after ``seconds``."""
    outcome: dict[str, BaseException | None] = {"error": None}

    def run() -> None:
        try:
            work()
        except BaseException as error:  # noqa: BLE001 - handed back to the test
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds} s"
    return outcome["error"]


def test_attach_behind_an_exclusive_lock_gives_up_and_changes_nothing(engine: Engine) -> None:
    build_legacy(engine, rows=10)
    simsql.alembic.upgrade(engine)
    before = snapshot(engine)
    holder = _holding(engine, "LOCK TABLE articles IN ACCESS EXCLUSIVE MODE")
    try:
        started = time.monotonic()
        error = _within(
            20, lambda: simsql.attach_table(engine, "articles", source=["body"], lock_timeout="1s")
        )
        assert isinstance(error, simsql.LockTimeout), error
        assert time.monotonic() - started < 15
        assert "held by: pid" in str(error) and "Nothing of the failed transaction was kept" in str(error)
    finally:
        holder.rollback()
        holder.close()
    assert snapshot(engine) == before


def test_concurrent_index_build_behind_an_idle_transaction_gives_up_and_says_so(engine: Engine) -> None:
    build_legacy(engine, rows=10)
    simsql.alembic.upgrade(engine)
    holder = _holding(engine, "BEGIN ISOLATION LEVEL REPEATABLE READ")
    holder.execute(text("SELECT count(*) FROM comments"))  # an old snapshot, idle in transaction
    try:
        error = _within(
            30,
            lambda: simsql.attach_table(engine, "articles", source=["body"], lock_timeout="1s", index_lock_timeout="2s"),
        )
        assert isinstance(error, simsql.LockTimeout), error
        message = str(error)
        assert "idle in transaction" in message and "build index" in message
        assert "next run drops and rebuilds it" in message
    finally:
        holder.rollback()
        holder.close()
    simsql.attach_table(engine, "articles", source=["body"])  # the rerun completes the attachment
    with engine.connect() as connection:
        valid = connection.execute(
            text(
                "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE c.relname LIKE 'ix_articles_simhash_b_' AND i.indisvalid "
                "AND c.relnamespace = CAST(current_schema() AS regnamespace)"
            )
        ).scalar()
    assert valid == 4


def test_backfill_behind_an_exclusive_lock_gives_up(engine: Engine) -> None:
    build_legacy(engine, rows=10)
    _attach(engine)
    holder = _holding(engine, "LOCK TABLE articles IN ACCESS EXCLUSIVE MODE")
    try:
        error = _within(20, lambda: simsql.backfill(engine, "articles", workers=0, lock_timeout="1s"))
        assert isinstance(error, simsql.LockTimeout), error
    finally:
        holder.rollback()
        holder.close()


# -- 7. partitioned tables ----------------------------------------------------------------------


def test_partitioned_tables(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE events (id int, region text, body text, PRIMARY KEY (id, region)) PARTITION BY LIST (region)"))
        connection.execute(text("CREATE TABLE events_eu PARTITION OF events FOR VALUES IN ('eu')"))
        connection.execute(text("CREATE TABLE events_us PARTITION OF events FOR VALUES IN ('us')"))
        connection.execute(
            text("INSERT INTO events SELECT i, CASE WHEN i % 2 = 0 THEN 'eu' ELSE 'us' END, :b || i FROM generate_series(1, 40) i"),
            {"b": OLD},
        )
    simsql.alembic.upgrade(engine)
    simsql.attach_table(engine, "events", source=["body"])  # concurrent builds, per partition
    simsql.backfill(engine, "events", workers=0)
    with engine.connect() as connection:
        valid = connection.execute(
            text(
                "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE c.relnamespace = CAST(current_schema() AS regnamespace) AND i.indisvalid"
                " AND i.indrelid = CAST('events' AS regclass)"
            )
        ).scalar()
        model = simsql.reflect(connection, "events")
    assert valid == 4 + 1  # four block indexes and the primary key, all valid on the parent
    with Session(engine) as session:
        rows = session.execute(select(model).where(simsql.similar_to(model, f"{OLD}17", 0))).scalars().all()
    assert [(r.id, r.region) for r in rows] == [(17, "us")]
    simsql.detach(engine, "events")


def test_a_table_dropped_by_raw_sql_can_be_created_again(engine: Engine) -> None:
    """DROP TABLE takes the trigger but leaves its function; create_all must not then fail on
    simsql's own orphaned function, while a function simsql did not write is never replaced."""
    from .models import Base, Post

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


@pytest.mark.parametrize("side_table", [False, True])
def test_text_in_a_non_utf8_database_keeps_its_fingerprint(admin_engine: Engine, side_table: bool) -> None:
    """The digest is md5 of the text's UTF-8 bytes whatever the database's encoding: in a
    LATIN1 database, ``md5(text)`` hashes LATIN1 bytes, so accented text never matched its
    digest and no fingerprint of it was kept."""
    import uuid

    from sqlalchemy import create_engine

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
        body = "Café au lait, crème brûlée and a naïve façade"
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE notes (id int PRIMARY KEY, body text)"))
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
        assert simsql.to_unsigned(stored) == simsql.Fingerprinter().fingerprint(body)
    finally:
        engine.dispose()
        with admin_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text(f'DROP DATABASE "{name}"'))
