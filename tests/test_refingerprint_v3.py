"""Moving a version 2 table to algorithm version 3 (the wide signature) with
``simsql.refingerprint`` / ``simsql refingerprint``, on every server, while writers run:
raw SQL writers and a version 2 ORM application, which is refused once the table moved.

On PostgreSQL the move stages a second set (the shadow machinery of tests/test_refingerprint.py)
with the signature; on MySQL/MariaDB it adds the signature in place (simsql.lifecycle.widen).
Every stored word is checked against the signature Python computes for the row's current text.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest
from sqlalchemy import Engine, String, Text, text
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.orm.exc import StaleDataError

import simsql
import simsql.alembic
import simsql.store
from simsql import Fingerprinter
from simsql.dialects import backend
from simsql.errors import ConfigMismatch, SchemaError, UnsupportedDatabase
from simsql.lifecycle.refingerprinting import refingerprint
from simsql.schema.names import Names
from simsql.text.fingerprint import DEFAULT_WIDE

from .command_line import cli, command, kill_when, ok
from .tables import ROWS, build_docs, config_id, is_mysql, random_text, rows_done, run, state, unsigned, writer

V2 = Fingerprinter()
V3 = DEFAULT_WIDE


def _v2_model(side_table: bool) -> type:
    """The application as it was: a version 2 model of ``docs`` (mixin columns, or a side table)."""

    class Base(DeclarativeBase):
        pass

    if side_table:

        class Doc(Base):
            __tablename__ = "docs"
            id: Mapped[int] = mapped_column(primary_key=True)
            title: Mapped[str | None] = mapped_column(String(200))
            body: Mapped[str | None] = mapped_column(Text)

        simsql.attach_model(Doc, ("title", "body"), fingerprinter=V2)
        return Doc

    class MixinDoc(simsql.SimHashMixin, Base):
        __tablename__ = "docs"
        __simhash_source__ = ("title", "body")
        __simhash_fingerprinter__ = V2
        id: Mapped[int] = mapped_column(primary_key=True)
        title: Mapped[str | None] = mapped_column(String(200))
        body: Mapped[str | None] = mapped_column(Text)

    return MixinDoc


def _orm_writer(engine: Engine, model: type, stop: threading.Event, counts: dict[str, int]) -> None:
    """Version 2 ORM updates of random rows until ``stop``; a refusal (the table moved on) is
    rolled back and counted, as an application would see it."""
    rng = random.Random(11)
    while not stop.is_set():
        with Session(engine) as session:
            row = session.get(model, rng.randrange(1, ROWS + 1))
            if row is None:
                continue
            row.body = random_text(rng)  # type: ignore[attr-defined]
            try:
                session.commit()
                counts["orm"] += 1
            except (ConfigMismatch, DBAPIError):  # MySQL may refuse an old snapshot's write itself
                session.rollback()
                counts["refused"] += 1
            except StaleDataError:  # a raw writer deleted the row meanwhile: the application's race, not the move's
                session.rollback()


def _signatures_sql(engine: Engine, side_table: bool, table: str = "docs") -> str:
    names = Names(table, side=f"{table}_simhash" if side_table else None, wide=True)
    words = ", ".join(f"s.{backend(engine).quote(w)}" for w in names.signature_words)
    if side_table:
        return f"SELECT d.id, d.title, d.body, {words} FROM {table} d LEFT JOIN {table}_simhash s ON s.id = d.id"
    return f"SELECT s.id, s.title, s.body, {words} FROM {table} s"


def check_signatures(engine: Engine, sql: str) -> tuple[int, int]:
    """Every stored fingerprint is version 3's of the row's current text, and so are stored
    words 1-3 (words never without their fingerprint). Returns (rows with text, rows whose
    signature is complete)."""
    with engine.connect() as connection:
        rows = connection.execute(text(sql)).all()
    with_text = complete = 0
    for key, title, body, *stored in rows:
        parts = [p for p in (title, body) if p is not None]
        words = [unsigned(engine, w) for w in stored]
        wanted = V3.signature("\n".join(parts)).words if parts else None
        with_text += wanted is not None
        if words[0] is None:
            assert words[1:] == [None] * 3, f"row {key}: words without their fingerprint"
            continue
        assert words[0] == (wanted and wanted[0]), f"row {key}: not the fingerprint of its current text"
        if words[1] is not None:
            assert tuple(words) == wanted, f"row {key}: words 1-3 are not those of its current text"
            complete += 1
    return with_text, complete


def mariadb(engine: Engine) -> bool:
    with engine.connect():  # the dialect learns which server it is on at the first connection
        return bool(getattr(engine.dialect, "is_mariadb", False))


def attach_v2(engine: Engine, table: str = "docs", **options: Any) -> None:
    """Attach ``table`` with version 2, block indexes included (on MariaDB the move sets them
    aside to add its columns: test_an_indexed_table_moves_and_keeps_its_block_indexes_on_mysql)."""
    simsql.attach_table(engine, table, ["title", "body"], fingerprinter=V2, **options)


def _registry(engine: Engine) -> tuple[str, str]:
    with engine.connect() as connection:
        row = connection.execute(text("SELECT config_id, mode FROM simsql_registry WHERE table_name = 'docs'")).one()
    return row.config_id, row.mode


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_a_version_2_table_moves_to_version_3_while_writers_run(any_engine: Engine, side_table: bool) -> None:
    build_docs(any_engine)
    simsql.alembic.upgrade(any_engine)
    attach_v2(any_engine, side_table=side_table)
    simsql.backfill(any_engine, "docs", workers=0)
    model = _v2_model(side_table)
    sql = _signatures_sql(any_engine, side_table)
    checked_midway: list[bool] = []

    def midway(done: int, total: int) -> None:
        """During the fill: still version 2 (and 64-bit only) to everyone; version 3 refused."""
        if checked_midway or done < 500:
            return
        assert _registry(any_engine) == (V2.config_id, "side_table" if side_table else "columns")
        with pytest.raises(ConfigMismatch):
            simsql.backfill(any_engine, "docs", fingerprinter=V3, workers=0)
        checked_midway.append(True)

    stop, counts = threading.Event(), {"writes": 0, "orm": 0, "refused": 0}
    threads = [threading.Thread(target=writer, args=(any_engine, seed, stop, counts)) for seed in range(2)]
    threads.append(threading.Thread(target=_orm_writer, args=(any_engine, model, stop, counts)))
    for thread in threads:
        thread.start()
    try:
        result = refingerprint(any_engine, "docs", to=V3, batch_size=100, workers=2, progress=midway)
        check_signatures(any_engine, sql)  # right after the switch, writers still running
        time.sleep(0.2)  # let the ORM writer meet the moved table
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    assert checked_midway and counts["writes"] > 50 and counts["orm"] > 5, f"the writers barely ran: {counts}"
    assert counts["refused"] > 0, "no version 2 ORM write was refused after the switch"
    assert result.switched and (result.from_config, result.to_config) == (V2.config_id, V3.config_id)
    assert _registry(any_engine) == (V3.config_id, ("side_table" if side_table else "columns") + "+wide")
    simsql.backfill(any_engine, "docs", workers=0)  # rows the raw writers changed after the switch
    with_text, complete = check_signatures(any_engine, sql)
    assert complete == with_text > ROWS // 2
    report = simsql.status(any_engine)[0]
    assert (report.config_id, report.wide, report.rows_missing, report.rows_missing_wide, report.rows_stale) == (
        V3.config_id, True, 0, 0, 0
    )
    # find_original takes the wide path on the moved table, through reflect
    with any_engine.connect() as connection:
        reflected = simsql.reflect(connection, "docs")
        key, title, body = connection.execute(text("SELECT id, title, body FROM docs WHERE body IS NOT NULL ORDER BY id")).first()  # type: ignore[misc]
    with Session(any_engine) as session:
        found = simsql.find_original(session, reflected, f"Header of a copy\n\n{title}\n{body}\n\nfooter")
        assert found is not None and found.row.id == key
    with pytest.raises(ConfigMismatch):
        simsql.backfill(any_engine, "docs", fingerprinter=V2, workers=0)
    _no_leftovers(any_engine)


def _no_leftovers(engine: Engine) -> None:
    """Nothing of the move is left: no cursor, no move trigger, no shadow set."""
    with engine.connect() as connection:
        cursors = connection.execute(text("SELECT table_name FROM simsql_backfill WHERE table_name LIKE '%#refingerprint'")).all()
        assert cursors == []
        if is_mysql(engine):
            triggers = connection.execute(text("SELECT trigger_name FROM information_schema.triggers "
                                               "WHERE trigger_schema = DATABASE() AND trigger_name LIKE '%widen%'")).all()  # fmt: skip
            assert triggers == []
        else:
            columns = connection.execute(text(
                "SELECT attname FROM pg_attribute WHERE attrelid IN (SELECT oid FROM pg_class WHERE relnamespace = "
                "CAST(current_schema() AS regnamespace) AND relkind IN ('r', 'p')) AND attname LIKE '%next%' AND NOT attisdropped"
            )).all()  # fmt: skip
            assert columns == []


# -- killed, then run again -----------------------------------------------------------------

KILL_ROWS = 6000


def _build_articles(engine: Engine) -> None:
    rng = random.Random(3)
    body = "TEXT" if is_mysql(engine) else "text"
    run(engine, f"CREATE TABLE articles (id INT PRIMARY KEY, title VARCHAR(200), body {body})")
    words = [f"w{i}" for i in range(20_000)]
    rows = [{"id": i, "t": f"title {i}", "b": " ".join(rng.choices(words, k=60))} for i in range(1, KILL_ROWS + 1)]
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO articles VALUES (:id, :t, :b)"), rows)


def test_the_move_killed_then_run_again_finishes(any_engine: Engine, any_url: str) -> None:
    _build_articles(any_engine)
    simsql.alembic.upgrade(any_engine)
    no_indexes = ("--no-indexes",) if mariadb(any_engine) else ()  # see attach_v2
    attached = ok(cli("attach", "--table", "articles", "--text-column", "title", "--text-column", "body", "--no-wide",
                      *no_indexes, "--backfill", url=any_url))  # fmt: skip
    assert config_id(any_engine, "articles") == V2.config_id, attached.stdout
    argv = command(any_url, "refingerprint", "--table", "articles", "--batch-size", "100", "--workers", "0", "--no-progress")
    kill_when(argv, lambda: (rows_done(any_engine, "articles#refingerprint") or 0) >= 1000)
    assert config_id(any_engine, "articles") == V2.config_id  # killed mid-fill: still version 2
    done_before = rows_done(any_engine, "articles#refingerprint")
    assert done_before is not None and done_before < KILL_ROWS
    again = ok(cli("refingerprint", "--table", "articles", "--no-progress", "--workers", "0", url=any_url, timeout=600))
    assert "resumed" in again.stdout and V3.config_id in again.stdout
    assert config_id(any_engine, "articles") == V3.config_id
    with_text, complete = check_signatures(any_engine, _signatures_sql(any_engine, False, "articles"))
    assert complete == with_text == KILL_ROWS


# -- what it refuses, and what abandon and detach leave ----------------------------------------


def test_other_moves_are_refused_on_mysql_before_anything_changes(mysql_engine: Engine) -> None:
    build_docs(mysql_engine, rows=20)
    simsql.alembic.upgrade(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", ["title", "body"], fingerprinter=V2)
    before = state(mysql_engine)
    for to in (Fingerprinter(version=3, shingle_size=2), Fingerprinter(shingle_size=2)):
        with pytest.raises(UnsupportedDatabase, match="only from algorithm version 2 to version 3 of the same settings"):
            refingerprint(mysql_engine, "docs", to=to)
    assert state(mysql_engine) == before


def _index_names(engine: Engine, table: str = "docs") -> set[str]:
    with engine.connect() as connection:
        return {i["name"] for i in sa_inspect(connection).get_indexes(table)}


def test_an_indexed_table_moves_and_keeps_its_block_indexes_on_mysql(mysql_engine: Engine) -> None:
    """MariaDB cannot add a stored column, instantly or online, to a table whose virtual block
    columns are indexed: the move sets the four block indexes aside for the instant ADD COLUMN
    and builds them again online at once. MySQL adds the columns beside them. Either way the
    table ends with its four block indexes and the wide ones, and every word is right."""
    build_docs(mysql_engine, rows=300)
    simsql.alembic.upgrade(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", ["title", "body"], fingerprinter=V2)
    simsql.backfill(mysql_engine, "docs")
    names = Names("docs", wide=True)
    assert set(Names("docs").indexes) <= _index_names(mysql_engine)
    result = refingerprint(mysql_engine, "docs", to=V3)
    assert result.switched and config_id(mysql_engine, "docs") == V3.config_id
    assert set(names.indexes) <= _index_names(mysql_engine)
    with_text, complete = check_signatures(mysql_engine, _signatures_sql(mysql_engine, False))
    assert complete == with_text == 300
    _no_leftovers(mysql_engine)


@pytest.mark.parametrize("way", ["resume", "abandon"])
def test_a_move_killed_with_its_block_indexes_set_aside_builds_them_again(mysql_engine: Engine, way: str) -> None:
    """The state a move leaves when killed between setting the block indexes aside and building
    them again (MariaDB): its cursor, the marker row, the columns, no block indexes. Resumed or
    abandoned, the table gets its four block indexes back and the marker goes."""
    build_docs(mysql_engine, rows=300)
    simsql.alembic.upgrade(mysql_engine)
    attach_v2(mysql_engine)
    simsql.backfill(mysql_engine, "docs", workers=0)

    class Stop(Exception):
        pass

    def stop(done: int, total: int) -> None:
        raise Stop

    with pytest.raises(Stop):
        refingerprint(mysql_engine, "docs", to=V3, batch_size=50, workers=0, progress=stop)
    narrow = Names("docs")
    with mysql_engine.begin() as connection:
        drops = ", ".join(f"DROP INDEX {backend(connection).quote(i)}" for i in narrow.indexes)
        connection.execute(text(f"ALTER TABLE docs {drops}"))
        connection.execute(text("INSERT INTO simsql_backfill (table_schema, table_name, config_id, phase) "
                                "VALUES (DATABASE(), :marker, :config, 'done')"),
                           {"marker": narrow.set_aside_marker, "config": V3.config_id})  # fmt: skip
    assert not set(narrow.indexes) & _index_names(mysql_engine)
    if way == "resume":
        assert refingerprint(mysql_engine, "docs", to=V3, workers=0).switched
        assert set(Names("docs", wide=True).indexes) <= _index_names(mysql_engine)
    else:
        refingerprint(mysql_engine, "docs", to=V3, abandon=True)
        assert set(narrow.indexes) <= _index_names(mysql_engine)
        assert config_id(mysql_engine, "docs") == V2.config_id
    with mysql_engine.connect() as connection:
        markers = connection.execute(text("SELECT count(*) FROM simsql_backfill WHERE table_name = :m"), {"m": narrow.set_aside_marker})
        assert markers.scalar_one() == 0
    _no_leftovers(mysql_engine)


@pytest.mark.parametrize("way", ["abandon", "detach"])
def test_an_unfinished_move_is_abandoned_or_detached_cleanly(any_engine: Engine, way: str) -> None:
    build_docs(any_engine, rows=300)
    simsql.alembic.upgrade(any_engine)
    attach_v2(any_engine)
    simsql.backfill(any_engine, "docs", workers=0)  # the move rewrites the same fingerprints: the data stays equal
    attached = state(any_engine)

    class Stop(Exception):
        pass

    def stop(done: int, total: int) -> None:
        raise Stop

    with pytest.raises(Stop):
        refingerprint(any_engine, "docs", to=V3, batch_size=50, workers=0, progress=stop)
    with pytest.raises(SchemaError, match="in progress"):
        refingerprint(any_engine, "docs", to=Fingerprinter(version=3, seed=1))
    if way == "abandon":
        refingerprint(any_engine, "docs", to=V3, abandon=True)
        assert state(any_engine) == attached and config_id(any_engine, "docs") == V2.config_id
        assert refingerprint(any_engine, "docs", to=V3, workers=0).switched
        assert check_signatures(any_engine, _signatures_sql(any_engine, False))[1] > 0
    else:
        simsql.detach_table(any_engine, "docs")
        with any_engine.connect() as connection:
            columns = {c.lower() for c in simsql.lifecycle.catalog.require_table(connection, "docs", None).columns}
        assert columns == {"id", "title", "body"}
    _no_leftovers(any_engine)


def test_a_column_of_the_users_under_a_wide_name_is_refused(any_engine: Engine) -> None:
    build_docs(any_engine, rows=20)
    simsql.alembic.upgrade(any_engine)
    attach_v2(any_engine)
    run(any_engine, "ALTER TABLE docs ADD COLUMN simhash_w1 BIGINT")
    before = state(any_engine)
    with pytest.raises(SchemaError, match="simhash_w1"):
        refingerprint(any_engine, "docs", to=V3)
    assert state(any_engine) == before and config_id(any_engine, "docs") == V2.config_id


def test_a_version_2_mixin_keeps_working_until_moved(any_engine: Engine) -> None:
    """v2 tables keep working unchanged: the default mixin is version 2, a version 3 one is
    refused on it with both configurations named."""
    simsql.alembic.upgrade(any_engine)
    model = _v2_model(False)
    model.metadata.create_all(any_engine)  # type: ignore[attr-defined]
    with Session(any_engine) as session:
        session.add(model(id=1, title="a title", body="some words of text to fingerprint"))
        session.commit()
    assert config_id(any_engine, "docs") == V2.config_id

    class Base(DeclarativeBase):
        pass

    class WideDoc(simsql.WideSimHashMixin, Base):
        __tablename__ = "docs"
        __simhash_source__ = ("title", "body")
        id: Mapped[int] = mapped_column(primary_key=True)
        title: Mapped[str | None] = mapped_column(String(200))
        body: Mapped[str | None] = mapped_column(Text)

    with Session(any_engine) as session, pytest.raises(ConfigMismatch, match=f"{V2.config_id}|{V3.config_id}"):
        session.add(WideDoc(id=2, title="b", body="other words"))
        session.commit()


def test_wide_and_the_configuration_must_agree() -> None:
    with pytest.raises(ValueError, match="part of algorithm version 3"):
        simsql.schema.names.configuration_for(V2, True)
    with pytest.raises(ValueError, match="includes the wide signature"):
        simsql.schema.names.configuration_for(V3, False)
    assert simsql.schema.names.configuration_for(None, True) is V3 and simsql.schema.names.configuration_for(None, None) == V2

    class Base(DeclarativeBase):
        pass

    class Narrow(simsql.WideSimHashMixin, Base):
        __tablename__ = "narrow"
        __simhash_source__ = ("body",)
        __simhash_fingerprinter__ = V2
        id: Mapped[int] = mapped_column(primary_key=True)
        body: Mapped[str | None] = mapped_column(Text)

    with pytest.raises(TypeError, match="__simhash_fingerprinter__"):
        simsql.store.binding_for(Narrow)
