"""Issue 21: what happens to an attached table that simsql does not expect, on every server.

A table dropped or replaced outside simsql (``DROP TABLE``, pandas ``to_sql(if_exists="replace")``)
reads as such in ``simsql status`` while the other tables read as usual, and ``simsql detach``
of it clears what simsql recorded. Rows whose text has no words count apart, so a finished
backfill reads as finished. A table name holding ``%`` (or quotes) works through every command.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import Engine, Integer, String, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.alembic

from .command_line import cli, ok
from .tables import is_mysql, run


def _create(engine: Engine, table: str) -> None:
    quoted = engine.dialect.identifier_preparer.quote_identifier(table).replace("%%", "%")
    with engine.begin() as connection:
        connection.execute(text(f"CREATE TABLE {quoted} (id INT PRIMARY KEY, body TEXT)"))
        connection.execute(
            text(f"INSERT INTO {quoted} (id, body) VALUES (1, :a), (2, :b), (3, NULL)"),
            {"a": "the quick brown fox jumps over the lazy dog", "b": "a quick brown fox jumps over the lazy dog"},
        )


def _registered(engine: Engine) -> list[tuple[str, str]]:
    with engine.connect() as connection:
        registry = connection.execute(text("SELECT table_name FROM simsql_registry")).scalars().all()
        progress = connection.execute(text("SELECT table_name FROM simsql_backfill")).scalars().all()
    return sorted([("registry", t) for t in registry] + [("progress", t) for t in progress])


def _states(engine: Engine) -> dict[str, tuple[str, int, int]]:
    return {s.table: (s.state, s.rows, s.rows_missing) for s in simsql.status(engine)}


@pytest.mark.parametrize("how", ["dropped", "replaced"])
def test_a_table_dropped_outside_simsql_reads_as_gone_and_detach_clears_it(any_engine: Engine, any_url: str, how: str) -> None:
    simsql.alembic.upgrade(any_engine)
    for table in ("keep", "lost"):
        _create(any_engine, table)
        simsql.attach_table(any_engine, table, ["body"])
        simsql.backfill(any_engine, table, workers=0)
    run(any_engine, "DROP TABLE lost")
    if how == "replaced":  # what pandas' to_sql(if_exists="replace") does
        run(any_engine, "CREATE TABLE lost (id INT PRIMARY KEY, body TEXT)", "INSERT INTO lost VALUES (7, 'new text')")
    gone = "gone" if how == "dropped" else "replaced"
    assert _states(any_engine) == {"keep": ("attached", 3, 0), "lost": (gone, 0, 0)}
    report = {s["table"].split(".")[-1]: s for s in json.loads(ok(cli("status", "--format", "json", url=any_url)).stdout)}
    assert (report["keep"]["state"], report["keep"]["fingerprinted"], report["lost"]["state"]) == ("attached", 2, gone)

    detached = ok(cli("detach", "--table", "lost", url=any_url))
    assert "outside simsql" in detached.stdout and "registry entry" in detached.stdout
    assert _registered(any_engine) == [("progress", "keep"), ("registry", "keep")]
    assert _states(any_engine) == {"keep": ("attached", 3, 0)}
    if how == "replaced":
        with any_engine.connect() as connection:
            assert connection.execute(text("SELECT id, body FROM lost")).all() == [(7, "new text")]


def test_detach_table_of_a_dropped_table_clears_its_entry(any_engine: Engine) -> None:
    simsql.alembic.upgrade(any_engine)
    _create(any_engine, "lost")
    simsql.attach_table(any_engine, "lost", ["body"], side_table=True)
    simsql.backfill(any_engine, "lost", workers=0)
    if is_mysql(any_engine):  # the side table's foreign key stands in the way
        run(any_engine, "SET FOREIGN_KEY_CHECKS = 0", "DROP TABLE lost")
    else:
        run(any_engine, "DROP TABLE lost CASCADE")
    assert simsql.detach_table(any_engine, "lost").table_name == "lost"
    assert _registered(any_engine) == [] and simsql.status(any_engine) == []


@pytest.mark.parametrize("table", ["odd%name", 'odd%%s"name'])
def test_a_percent_in_a_table_name_works_through_every_command(any_engine: Engine, any_url: str, table: str) -> None:
    simsql.alembic.upgrade(any_engine)
    _create(any_engine, "plain")
    simsql.attach_table(any_engine, "plain", ["body"])
    _create(any_engine, table)
    ok(cli("attach", "--table", table, "--text-column", "body", "--no-backfill", url=any_url))
    assert "rows_fingerprinted=2" in repr(simsql.backfill(any_engine, table, workers=0))
    ok(cli("backfill", "--table", table, url=any_url))
    report = {s["table"].split(".")[-1]: s for s in json.loads(ok(cli("status", "--format", "json", url=any_url)).stdout)}
    assert (report[table]["state"], report[table]["fingerprinted"], report[table]["missing"]) == ("attached", 2, 0)
    assert report["plain"]["state"] == "attached"
    ok(cli("detach", "--table", table, url=any_url))
    assert [s.table for s in simsql.status(any_engine)] == ["plain"]
    with any_engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM simsql_registry")).scalar() == 1


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_rows_without_words_count_apart_and_a_finished_backfill_reads_as_finished(any_engine: Engine, any_url: str, side_table: bool) -> None:
    simsql.alembic.upgrade(any_engine)
    _create(any_engine, "notes")  # 2 rows with words, 1 without text
    run(any_engine, "INSERT INTO notes (id, body) VALUES (4, ''), (5, '!!! ... ?'), (6, '   ')")
    simsql.attach_table(any_engine, "notes", ["body"], side_table=side_table)
    assert simsql.backfill(any_engine, "notes", workers=0).rows_fingerprinted == 2
    report = simsql.status(any_engine)[0]
    assert (report.rows, report.rows_fingerprinted, report.rows_missing, report.rows_no_text, report.rows_stale) == (6, 2, 0, 3, 0)
    assert simsql.backfill(any_engine, "notes", workers=0).rows_fingerprinted == 0  # a rerun changes nothing
    assert simsql.status(any_engine)[0] == report
    cli_report = json.loads(ok(cli("status", "--format", "json", url=any_url)).stdout)[0]
    assert (cli_report["missing"], cli_report["no_text"]) == (0, 3)

    run(any_engine, "UPDATE notes SET body = 'words at last, quite a few of them' WHERE id = 5")
    report = simsql.status(any_engine)[0]
    assert (report.rows_fingerprinted, report.rows_missing, report.rows_no_text) == (2, 1, 2)
    assert simsql.backfill(any_engine, "notes", workers=0).rows_fingerprinted == 1
    report = simsql.status(any_engine)[0]
    assert (report.rows_fingerprinted, report.rows_missing, report.rows_no_text) == (3, 0, 2)


def test_a_mixin_model_named_with_percent_creates_writes_and_queries(any_engine: Engine) -> None:
    """The ORM path of item 5: ``create_all`` installs the trigger of a ``SimHashMixin`` table
    named ``odd%name`` (its SQL reached the driver's %-formatting before), writes fingerprint
    it, and a query finds the copy; ``drop_all`` takes it away again."""
    class Base(DeclarativeBase):
        pass

    class Odd(simsql.SimHashMixin, Base):
        __tablename__ = "odd%name"
        __simhash_source__ = "body"
        id: Mapped[int] = mapped_column(Integer, primary_key=True)
        body: Mapped[str] = mapped_column(String(200))

    Base.metadata.create_all(any_engine)
    try:
        with Session(any_engine) as session:
            session.add_all([Odd(id=1, body=SENTENCE), Odd(id=2, body=SENTENCE + " again")])
            session.commit()
        with any_engine.begin() as connection:  # behind the ORM: the trigger keeps it honest
            quoted = any_engine.dialect.identifier_preparer.quote_identifier("odd%name").replace("%%", "%")
            connection.exec_driver_sql(
                f"UPDATE {quoted} SET body = 'an unrelated text about parliament and taxes' WHERE id = 2",
                execution_options={"no_parameters": True},
            )
        with Session(any_engine) as session:
            stale = session.execute(select(Odd.simhash).where(Odd.id == 2)).scalar_one()
            found = session.execute(simsql.most_similar(select(Odd), SENTENCE, limit=1)).all()
        assert stale is None  # the trigger cleared the fingerprint of the text it no longer matches
        assert [row[0].id for row in found] == [1]
    finally:
        Base.metadata.drop_all(any_engine)


SENTENCE = "the quick brown fox jumps over the lazy dog near the river bank"
