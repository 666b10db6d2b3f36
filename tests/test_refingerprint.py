"""A way forward for stored data (issue 8, deliverable 5; issue 9's 0.1 leftover).

Tables filled with the old configuration keep working when it is named; the registry refuses
mixes; ``simsql.refingerprint`` moves a table to another configuration online (concurrent
writers, SIGKILL and rerun, both storage modes); a table attached by simsql 0.1 is upgraded in
place by attaching it again. Every fingerprint is checked against one computed in Python. On
MySQL/MariaDB, where refingerprint is not built yet, it is refused before anything changes.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from sqlalchemy import Engine, Text, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.alembic
import simsql.bits
from simsql import Fingerprinter
from simsql.dialects import type_rules
from simsql.errors import ConfigMismatch, SchemaError
from simsql.lifecycle.refingerprinting import refingerprint

from .command_line import cli, command, kill_when, ok
from .tables import ROWS, build_docs, check_fingerprints, config_id, holder_sql, rows_done, writer

V1 = Fingerprinter(version=1)
V2 = Fingerprinter()


def _leftovers(engine: Engine) -> list[str]:
    """Anything a refingerprint staged that should be gone after its switch."""
    with engine.connect() as connection:
        return list(
            connection.execute(
                text(
                    "SELECT relname FROM pg_class WHERE relnamespace = CAST(current_schema() AS regnamespace) "
                    "AND relname LIKE '%next%' UNION ALL "
                    "SELECT attname FROM pg_attribute WHERE attnum > 0 AND NOT attisdropped AND attname LIKE '%next%' "
                    "AND attrelid IN (SELECT oid FROM pg_class WHERE relnamespace = CAST(current_schema() AS regnamespace) "
                    "AND relkind IN ('r', 'p')) "
                    "UNION ALL SELECT proname FROM pg_proc WHERE pronamespace = CAST(current_schema() AS regnamespace) "
                    "AND proname LIKE '%next%' UNION ALL SELECT table_name FROM simsql_backfill WHERE table_name LIKE '%#refingerprint'"
                )
            ).scalars()
        )


# -- the old configuration, named explicitly ----------------------------------------------


def test_version_1_named_on_a_mixin_keeps_working_and_the_default_is_refused(engine: Engine) -> None:
    class Base(DeclarativeBase):
        pass

    class Note(simsql.SimHashMixin, Base):
        __tablename__ = "notes"
        __simhash_source__ = ("body",)
        __simhash_fingerprinter__ = Fingerprinter(version=1)
        id: Mapped[int] = mapped_column(primary_key=True)
        body: Mapped[str] = mapped_column(Text)

    class Base2(DeclarativeBase):
        pass

    class NewNote(simsql.SimHashMixin, Base2):  # the same table, seen by code on the new default
        __tablename__ = "notes"
        __simhash_source__ = ("body",)
        id: Mapped[int] = mapped_column(primary_key=True)
        body: Mapped[str] = mapped_column(Text)

    simsql.alembic.upgrade(engine)
    Base.metadata.create_all(engine)
    bodies = {i: f"note {i} about vacuum, replication and the buffer cache, take {i * 7}" for i in range(1, 21)}
    with Session(engine) as session:
        session.add_all([Note(id=i, body=b) for i, b in bodies.items()])
        session.commit()
        stored = {row.id: row.simhash for row in session.execute(select(Note.id, Note.simhash))}  # unsigned, via SimHash
        assert stored == {i: V1.fingerprint(b) for i, b in bodies.items()}
        found = session.scalars(select(Note.id).where(simsql.similar_to(Note, bodies[3], max_distance=0))).all()
        assert 3 in found
    assert config_id(engine, "notes") == V1.config_id
    with Session(engine) as session, pytest.raises(ConfigMismatch, match=V1.config_id):
        session.scalars(select(NewNote.id).where(simsql.similar_to(NewNote, bodies[3]))).all()
    with Session(engine) as session, pytest.raises(ConfigMismatch):
        session.add(NewNote(id=99, body="written with the new default"))
        session.commit()
    # Moved to the new default (a mapped class names the table), the new code works and the old is refused.
    assert refingerprint(engine, Note, to=V2, workers=0).switched
    with Session(engine) as session:
        session.add(NewNote(id=99, body="written with the new default"))
        session.commit()
        bodies[99] = "written with the new default"
        stored = {row.id: row.simhash for row in session.execute(select(NewNote.id, NewNote.simhash))}
        assert stored == {i: V2.fingerprint(b) for i, b in bodies.items()}
        found = session.scalars(select(NewNote.id).where(simsql.similar_to(NewNote, bodies[99], max_distance=0))).all()
        assert found == [99]
    with Session(engine) as session, pytest.raises(ConfigMismatch, match=V2.config_id):
        session.scalars(select(Note.id).where(simsql.similar_to(Note, bodies[3]))).all()


def test_version_1_attach_backfill_and_query_by_name(engine: Engine) -> None:
    build_docs(engine)
    simsql.alembic.upgrade(engine)
    entry = simsql.attach_table(engine, "docs", ["title", "body"], fingerprinter=V1)
    assert entry.config_id == V1.config_id
    simsql.backfill(engine, "docs", workers=0)  # the recorded configuration, rebuilt from settings
    with_text, fingerprinted = check_fingerprints(engine, holder_sql(False), V1)
    assert fingerprinted == with_text > 0
    with pytest.raises(ConfigMismatch, match="refingerprint"):
        simsql.backfill(engine, "docs", fingerprinter=V2, workers=0)
    with pytest.raises(ConfigMismatch):
        simsql.attach_table(engine, "docs", ["title", "body"], fingerprinter=V2)
    with engine.connect() as connection:
        Docs: Any = simsql.reflect(connection, "docs")
        body = connection.execute(text("SELECT title || chr(10) || body FROM docs WHERE id = 7")).scalar_one()
        assert 7 in connection.execute(select(Docs.id).where(simsql.similar_to(Docs, body, max_distance=0))).scalars().all()


# -- refingerprint: online, both modes, concurrent writers ---------------------------------


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_refingerprint_with_concurrent_writers(engine: Engine, side_table: bool) -> None:
    build_docs(engine)
    simsql.alembic.upgrade(engine)
    simsql.attach_table(engine, "docs", ["title", "body"], side_table=side_table, fingerprinter=V1)
    simsql.backfill(engine, "docs", workers=0)
    sql = holder_sql(side_table)
    checked_midway: list[bool] = []

    def midway(done: int, total: int) -> None:
        """During the fill: the table is still wholly version 1, and version 2 is refused."""
        if checked_midway:
            return
        assert config_id(engine, "docs") == V1.config_id
        check_fingerprints(engine, sql, V1)
        with pytest.raises(ConfigMismatch):
            simsql.backfill(engine, "docs", fingerprinter=V2, workers=0)
        checked_midway.append(True)

    stop, counts = threading.Event(), {"writes": 0}
    writers = [threading.Thread(target=writer, args=(engine, seed, stop, counts)) for seed in range(2)]
    for thread in writers:
        thread.start()
    try:
        result = refingerprint(engine, "docs", to=V2, batch_size=100, workers=2, progress=midway)
        check_fingerprints(engine, sql, V2)  # right after the switch, writers still running
    finally:
        stop.set()
        for thread in writers:
            thread.join(30)
    assert checked_midway and counts["writes"] > 50, "the writers barely ran; the test proved nothing"
    assert result.switched and (result.from_config, result.to_config) == (V1.config_id, V2.config_id)
    assert config_id(engine, "docs") == V2.config_id
    simsql.backfill(engine, "docs", workers=0)  # rows the writers changed after the switch
    with_text, fingerprinted = check_fingerprints(engine, sql, V2)
    assert fingerprinted == with_text > ROWS // 2
    report = simsql.status(engine)[0]
    assert (report.config_id, report.rows_missing, report.rows_stale) == (V2.config_id, 0, 0)
    assert _leftovers(engine) == []
    with pytest.raises(ConfigMismatch):
        simsql.backfill(engine, "docs", fingerprinter=V1, workers=0)
    # Queries use the new fingerprints through their usual names and indexes.
    with engine.connect() as connection:
        Docs: Any = simsql.reflect(connection, "docs")
        title, body = connection.execute(text("SELECT title, body FROM docs WHERE body IS NOT NULL LIMIT 1")).one()
        statement = select(Docs.id).where(simsql.similar_to(Docs, f"{title}\n{body}", max_distance=0))
        assert connection.execute(statement).scalars().all()
    # And back again: the names a switch leaves are free for the next run.
    assert refingerprint(engine, "docs", to=V1, workers=0).switched
    simsql.backfill(engine, "docs", workers=0)
    assert check_fingerprints(engine, sql, V1)[1] == check_fingerprints(engine, sql, V1)[0]
    assert _leftovers(engine) == []


def test_refingerprint_refuses_a_second_target_until_abandoned(engine: Engine) -> None:
    build_docs(engine)
    simsql.alembic.upgrade(engine)
    simsql.attach_table(engine, "docs", ["title", "body"], fingerprinter=V1)
    assert not refingerprint(engine, "docs", to=V1).switched  # already there: nothing to do
    # A run stopped after staging (as if killed): its cursor records the target.
    with engine.begin() as connection:
        connection.execute(text("ALTER TABLE docs ADD COLUMN simhash_next bigint"))  # the user's own column
    with pytest.raises(SchemaError, match="simhash_next"):
        refingerprint(engine, "docs", to=V2)
    with engine.begin() as connection:
        connection.execute(text("ALTER TABLE docs DROP COLUMN simhash_next"))
    other = Fingerprinter(shingle_size=2)
    stopped = _stage_only(engine, V2)
    assert stopped
    with pytest.raises(SchemaError, match="in progress"):
        refingerprint(engine, "docs", to=other)
    refingerprint(engine, "docs", to=other, abandon=True)
    assert _leftovers(engine) == [] and config_id(engine, "docs") == V1.config_id
    assert refingerprint(engine, "docs", to=other, workers=0).switched
    assert config_id(engine, "docs") == other.config_id


def _stage_only(engine: Engine, to: Fingerprinter) -> bool:
    """Start a refingerprint and stop it at its first batch (what a kill leaves)."""

    class Stop(Exception):
        pass

    def stop(done: int, total: int) -> None:
        raise Stop

    try:
        refingerprint(engine, "docs", to=to, batch_size=50, workers=0, progress=stop)
    except Stop:
        return True
    return False


# -- killed with SIGKILL, then run again --------------------------------------------------

KILL_ROWS = 8_000


def test_refingerprint_killed_then_rerun_finishes(engine: Engine, url: str) -> None:
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE articles (id serial PRIMARY KEY, title varchar(200), body text)"))
        connection.execute(
            text(
                "INSERT INTO articles (title, body) SELECT 'title ' || g, CASE WHEN g % 97 = 0 THEN NULL ELSE "
                "(SELECT string_agg('w' || floor(random() * 50000)::int, ' ') FROM generate_series(1, 60 + g % 2 - g % 2)) END "
                "FROM generate_series(1, :n) AS g"
            ),
            {"n": KILL_ROWS},
        )
    simsql.alembic.upgrade(engine)
    simsql.attach_table(engine, "articles", ["title", "body"], fingerprinter=V1)
    argv = command(url, "refingerprint", "--table", "articles", "--algorithm-version", "2", "--batch-size", "200", "--workers", "0",
                   "--no-progress")  # fmt: skip
    kill_when(argv, lambda: (rows_done(engine, "articles#refingerprint") or 0) >= 1000)
    assert config_id(engine, "articles") == V1.config_id  # killed mid-fill: still wholly version 1
    done_before = rows_done(engine, "articles#refingerprint")
    assert done_before is not None and done_before < KILL_ROWS
    again = ok(cli("refingerprint", "--table", "articles", "--algorithm-version", "2", "--no-progress", "--workers", "0",
                   url=url, timeout=600))  # fmt: skip
    assert "resumed" in again.stdout and V2.config_id in again.stdout
    assert config_id(engine, "articles") == V2.config_id
    with_text, fingerprinted = check_fingerprints(engine, holder_sql(False, "articles"), V2)
    assert fingerprinted == with_text == KILL_ROWS  # every row has a title
    assert _leftovers(engine) == []


# -- tables attached by simsql 0.1 --------------------------------------------------------


def _attach_like_0_1(engine: Engine, side_table: bool) -> None:
    """What simsql 0.1's `simsql attach` created: no digest column, its trigger, a registry row."""
    with engine.begin() as connection:
        if side_table:
            generated = ", ".join(
                f"simhash_b{i} integer GENERATED ALWAYS AS ({type_rules('postgresql').block_expression_sql('simhash', i)}) STORED" for i in range(4)
            )
            connection.execute(text(
                f"CREATE TABLE docs_simhash (id int NOT NULL, simhash bigint, {generated}, PRIMARY KEY (id), "
                "FOREIGN KEY (id) REFERENCES docs (id) ON DELETE CASCADE)"
            ))
            body = ("BEGIN IF NEW.title IS DISTINCT FROM OLD.title OR NEW.body IS DISTINCT FROM OLD.body THEN "
                    "DELETE FROM docs_simhash WHERE id = OLD.id; END IF; RETURN NEW; END")
            connection.execute(text(f"CREATE FUNCTION simsql_docs_stale() RETURNS trigger LANGUAGE plpgsql AS $f${body}$f$"))
            connection.execute(text("CREATE TRIGGER simsql_docs_stale AFTER UPDATE ON docs FOR EACH ROW EXECUTE FUNCTION simsql_docs_stale()"))
        else:
            blocks = ", ".join(f"ADD COLUMN simhash_b{i} integer" for i in range(4))
            connection.execute(text(f"ALTER TABLE docs ADD COLUMN simhash bigint, {blocks}"))
            assign = " ".join(f"NEW.simhash_b{i} := {type_rules('postgresql').block_expression_sql('NEW.simhash', i)};" for i in range(4))
            body = ("BEGIN IF TG_OP = 'UPDATE' AND NEW.simhash IS NOT DISTINCT FROM OLD.simhash AND "
                    "(NEW.title IS DISTINCT FROM OLD.title OR NEW.body IS DISTINCT FROM OLD.body) THEN "
                    f"NEW.simhash := NULL; END IF; {assign} RETURN NEW; END")
            connection.execute(text(f"CREATE FUNCTION simsql_docs_blocks() RETURNS trigger LANGUAGE plpgsql AS $f${body}$f$"))
            connection.execute(text(
                "CREATE TRIGGER simsql_docs_blocks BEFORE INSERT OR UPDATE ON docs FOR EACH ROW EXECUTE FUNCTION simsql_docs_blocks()"
            ))
        connection.execute(
            text("INSERT INTO simsql_registry (table_schema, table_name, column_name, config_id, settings, source, mode, side_table) "
                 "VALUES (current_schema(), 'docs', 'simhash', :c, CAST(:s AS jsonb), ARRAY['title', 'body'], :m, :side)"),
            {"c": V1.config_id, "s": json.dumps(V1.settings), "m": "side_table" if side_table else "columns",
             "side": "docs_simhash" if side_table else None},
        )
        rows = connection.execute(text("SELECT id, title, body FROM docs ORDER BY id")).all()
        holder = "docs_simhash" if side_table else "docs"
        for key, title, body_text in rows:
            parts = [p for p in (title, body_text) if p is not None]
            fingerprint = V1.fingerprint("\n".join(parts)) if parts else None
            if key == 5:  # 0.1's bug: a writer recomputed the fingerprint from text it then replaced
                fingerprint = V1.fingerprint("some other text that row 5 held once")
            if fingerprint is None:
                continue
            if side_table:
                connection.execute(text("INSERT INTO docs_simhash (id, simhash) VALUES (:k, :f)"), {"k": key, "f": simsql.bits.to_signed(fingerprint)})
            else:
                connection.execute(text(f"UPDATE {holder} SET simhash = :f WHERE id = :k"), {"k": key, "f": simsql.bits.to_signed(fingerprint)})


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_a_table_attached_by_0_1_is_upgraded_by_attaching_again(engine: Engine, side_table: bool) -> None:
    build_docs(engine)
    simsql.alembic.upgrade(engine)
    _attach_like_0_1(engine, side_table)
    with pytest.raises(SchemaError, match="simsql attach --table docs"):
        simsql.backfill(engine, "docs", workers=0)
    with engine.connect() as connection:
        before = connection.execute(text(f"SELECT id, simhash FROM {'docs_simhash' if side_table else 'docs'} ORDER BY id")).all()
    simsql.attach_table(engine, "docs", ["title", "body"], side_table=side_table, fingerprinter=V1)
    sql = holder_sql(side_table)
    with engine.connect() as connection:
        kept = connection.execute(text(f"SELECT id, simhash FROM {'docs_simhash' if side_table else 'docs'} ORDER BY id")).all()
    assert kept == before  # nothing lost: every fingerprint kept, marked for verification (no digest)
    assert simsql.status(engine)[0].rows_stale == len(before)
    result = simsql.backfill(engine, "docs", workers=0)
    assert result.rows_fingerprinted >= len(before)
    with_text, fingerprinted = check_fingerprints(engine, sql, V1)  # row 5's stale fingerprint was replaced
    assert fingerprinted == with_text
    report = simsql.status(engine)[0]
    assert (report.rows_missing, report.rows_stale) == (0, 0)
    # Today's trigger now guards it: a text change drops the fingerprint.
    with engine.begin() as connection:
        connection.execute(text("UPDATE docs SET body = 'changed text' WHERE id = 7"))
    check_fingerprints(engine, sql, V1)
    assert simsql.status(engine)[0].rows_missing == 1
    # And it can move on to the new configuration.
    assert refingerprint(engine, "docs", to=V2, workers=0).switched
    with_text, fingerprinted = check_fingerprints(engine, sql, V2)
    assert fingerprinted == with_text


def test_simsql_attach_again_upgrades_a_0_1_table_and_backfills_it(engine: Engine, url: str) -> None:
    build_docs(engine)
    simsql.alembic.upgrade(engine)
    _attach_like_0_1(engine, side_table=False)
    attach = ("attach", "--table", "docs", "--text-column", "title", "--text-column", "body")
    ok(cli(*attach, "--backfill", "--workers", "0", url=url, timeout=300))
    with_text, fingerprinted = check_fingerprints(engine, holder_sql(False), V1)
    assert fingerprinted == with_text
    report = simsql.status(engine)[0]
    assert (report.config_id, report.rows_missing, report.rows_stale) == (V1.config_id, 0, 0)


def test_a_process_that_checked_before_the_switch_is_refused_after_it(
    engine: Engine, database_url: str, schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Registry checks are cached per engine; the cache expires (``registry.CHECK_TTL``), so a
    process still on the old configuration is refused soon after another one switched the table,
    instead of writing old fingerprints into it for as long as it runs."""

    class Base(DeclarativeBase):
        pass

    class Item(simsql.SimHashMixin, Base):
        __tablename__ = "items"
        __simhash_source__ = ("body",)
        __simhash_fingerprinter__ = Fingerprinter(version=1)
        id: Mapped[int] = mapped_column(primary_key=True)
        body: Mapped[str] = mapped_column(Text)

    simsql.alembic.upgrade(engine)
    Base.metadata.create_all(engine)
    with Session(engine) as session:  # checked, and cached, with version 1
        session.add(Item(id=1, body="the first item, about replication slots"))
        session.commit()
    other = __import__("sqlalchemy").create_engine(database_url, connect_args={"options": f"-csearch_path={schema}"})
    try:
        assert refingerprint(other, "items", to=V2, workers=0).switched  # another process
    finally:
        other.dispose()
    monkeypatch.setattr(simsql.store.registry, "CHECK_TTL", 0.0, raising=False)  # as if the cache had expired
    with Session(engine) as session, pytest.raises(ConfigMismatch, match=V2.config_id):
        session.add(Item(id=2, body="a second item written by code still on version 1"))
        session.commit()
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM items WHERE id = 2")).scalar_one() == 0


def test_a_partitioned_table_moves_there_and_back(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE docs (id int, region text, title text, body text, PRIMARY KEY (id, region)) PARTITION BY LIST (region)"))
        connection.execute(text("CREATE TABLE docs_eu PARTITION OF docs FOR VALUES IN ('eu')"))
        connection.execute(text("CREATE TABLE docs_us PARTITION OF docs FOR VALUES IN ('us')"))
        connection.execute(text(
            "INSERT INTO docs SELECT i, CASE WHEN i % 2 = 0 THEN 'eu' ELSE 'us' END, 'doc ' || i, "
            "'partitioned text about vacuum and replication, row ' || i FROM generate_series(1, 60) i"
        ))
    simsql.alembic.upgrade(engine)
    simsql.attach_table(engine, "docs", ["title", "body"], fingerprinter=V1)
    simsql.backfill(engine, "docs", workers=0)
    for to in (V2, V1, V2):  # each switch leaves every index name free for the next run
        assert refingerprint(engine, "docs", to=to, workers=0).switched
        with_text, fingerprinted = check_fingerprints(engine, holder_sql(False), to)
        assert fingerprinted == with_text == 60
        with engine.connect() as connection:
            indexes = connection.execute(text(
                "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE c.relnamespace = CAST(current_schema() AS regnamespace) AND c.relname LIKE 'ix_%' ORDER BY 1"
            )).all()
        assert len(indexes) == 3 * 4 and all(valid for _, valid in indexes)
        assert not [name for name, _ in indexes if "next" in name]
    assert _leftovers(engine) == []


def test_detach_removes_an_unfinished_refingerprint_too(engine: Engine) -> None:
    build_docs(engine)
    simsql.alembic.upgrade(engine)
    simsql.attach_table(engine, "docs", ["title", "body"], fingerprinter=V1)
    assert _stage_only(engine, V2)
    simsql.detach_table(engine, "docs")
    assert _leftovers(engine) == []
    with engine.connect() as connection:
        columns = connection.execute(text(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'docs'"
        )).scalars().all()
    assert sorted(columns) == ["body", "id", "title"]


def test_refingerprint_not_built_for_mysql_is_refused_clearly_not_half_run(mysql_engine: Engine) -> None:
    """Refingerprint to other settings (on MySQL only version 2 to 3 of the same settings runs:
    tests/test_refingerprint_v3.py) says so before any of its DDL runs; attach, detach and
    status (tests/test_lifecycle.py) and backfill (tests/test_backfill.py) run there."""
    from simsql.errors import UnsupportedDatabase

    from .tables import run

    run(mysql_engine, "CREATE TABLE docs (id INT PRIMARY KEY, body TEXT)")
    simsql.alembic.upgrade(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", source=["body"])
    with mysql_engine.connect() as connection:
        before = connection.execute(text("SHOW CREATE TABLE docs")).one()[1]
    with pytest.raises(UnsupportedDatabase, match="on (MySQL|MariaDB).*does not run other moves there yet"):
        refingerprint(mysql_engine, "docs", to=Fingerprinter(shingle_size=2))
    with mysql_engine.connect() as connection:
        assert connection.execute(text("SHOW CREATE TABLE docs")).one()[1] == before
