"""The README's path seen from the command line (issue 33 parts 2 and 3): a ``SimHashMixin``
model, ``create_all`` on a database where simsql was never installed, rows written through the
ORM; then ``simsql status``, ``backfill``, ``similar`` and ``dupes`` work on it with no other
step. A table dropped and made again outside simsql is the new table it is: ``create_all`` of
another configuration writes to it, ``simsql attach`` refuses before changing anything and
names the one command that clears the dropped table's entry."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import Engine, Integer, String, Text, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.alembic
import simsql.dialects
from simsql.schema.names import Names

from .command_line import cli, failed, ok
from .tables import is_mysql, state

TEXT = "the harvest came in late this year after a long and very wet summer in the valley"


def _model(wide: bool = False) -> type:
    class Base(DeclarativeBase):
        pass

    mixin: type = simsql.WideSimHashMixin if wide else simsql.SimHashMixin

    class Art(mixin, Base):  # type: ignore[misc, valid-type]
        __tablename__ = "arts"
        __simhash_source__ = ("title", "body")
        id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
        title: Mapped[str] = mapped_column(String(200))
        body: Mapped[str] = mapped_column(Text)

    return Art


def _create_and_write(engine: Engine, model: type) -> None:
    model.metadata.create_all(engine)
    with Session(engine) as session:
        session.add_all([
            model(id=1, title="Harvest", body=TEXT),
            model(id=2, title="Harvest", body=TEXT + " again"),
            model(id=3, title="Rail", body="train drivers will strike on monday over pay, the union said"),
        ])  # fmt: skip
        session.commit()


def test_the_readme_model_is_seen_by_the_command_line(any_engine: Engine, any_url: str) -> None:
    _create_and_write(any_engine, _model())
    with any_engine.begin() as connection:  # a row written behind the ORM: the backfill's work
        connection.execute(text("INSERT INTO arts (id, title, body) VALUES (4, 'Harvest', :body)"), {"body": TEXT})
    (status,) = json.loads(ok(cli("status", "--format", "json", url=any_url)).stdout)
    assert (status["table"].split(".")[-1], status["rows"], status["missing"]) == ("arts", 4, 1)
    assert "fingerprinted 1 rows" in ok(cli("backfill", "--table", "arts", "--no-progress", url=any_url)).stdout
    similar = json.loads(ok(cli("similar", "--table", "arts", "--id", "1", "--format", "json", url=any_url)).stdout)
    assert {row["key"] for row in similar[:2]} == {2, 4}
    assert json.loads(ok(cli("dupes", "--table", "arts", "--format", "json", url=any_url)).stdout)
    ok(cli("similar", "--table", "arts", "--id", "3", url=any_url))


def test_a_replaced_table_is_refused_by_attach_before_anything_changes(any_engine: Engine, any_url: str) -> None:
    simsql.alembic.upgrade(any_engine)
    _create_and_write(any_engine, _model())
    with any_engine.begin() as connection:
        connection.execute(text("DROP TABLE arts"))
        connection.execute(text("CREATE TABLE arts (id int PRIMARY KEY, title varchar(200), body text)"))
        connection.execute(text("INSERT INTO arts VALUES (1, 'Harvest', :body)"), {"body": TEXT})
    before = state(any_engine, "arts")
    attach = ("attach", "--table", "arts", "--text-column", "body", "--no-backfill")
    refused = cli(*attach, url=any_url)
    failed(refused, 1, "replaced outside simsql")
    assert "attached" not in refused.stdout and "simsql detach --table arts" in refused.stderr, refused.stderr
    assert state(any_engine, "arts") == before
    ok(cli("detach", "--table", "arts", url=any_url))  # the command the refusal names
    ok(cli(*attach, url=any_url))
    assert "fingerprinted 1 rows" in ok(cli("backfill", "--table", "arts", "--no-progress", url=any_url)).stdout


def test_create_all_of_another_configuration_on_a_replaced_table(any_engine: Engine) -> None:
    simsql.alembic.upgrade(any_engine)
    _create_and_write(any_engine, _model())
    with any_engine.begin() as connection:
        connection.execute(text("DROP TABLE arts"))
    wide = _model(wide=True)
    _create_and_write(any_engine, wide)  # the dropped table's entry does not outlive it
    (report,) = simsql.status(any_engine)
    assert (report.wide, report.rows_missing, report.state) == (True, 0, "attached")


def _unrecorded(engine: Engine, model: type) -> dict[str, object]:
    """A mixin table as an earlier simsql left it where it was not installed: made by create_all,
    written through the ORM, absent from the registry. Returns the table's state."""
    _create_and_write(engine, model)
    with engine.begin() as connection:
        connection.execute(text("DELETE FROM simsql_registry"))
    found = state(engine, "arts")
    return {key: found[key] for key in ("create", "checksum", "triggers")}


def _same(engine: Engine, before: dict[str, object]) -> None:
    after = state(engine, "arts")
    assert {key: after[key] for key in before} == before


@pytest.mark.parametrize("wide", [False, True], ids=["v2", "v3"])
def test_attach_adopts_what_a_mixin_made(any_engine: Engine, any_url: str, wide: bool) -> None:
    before = _unrecorded(any_engine, _model(wide))
    hint = cli("similar", "--table", "arts", "--id", "1", url=any_url)
    failed(hint, 1, "run `simsql attach --table arts --schema ")
    attach = ("attach", "--table", "arts", "--text-column", "title", "--text-column", "body", "--no-backfill")
    other = cli(*attach, "--no-wide" if wide else "--wide", url=any_url)  # the other kind: refused, with the one that fits
    failed(other, 1, "--wide / wide=True" if wide else "--no-wide / wide=False")
    _same(any_engine, before)
    ok(cli(*attach, url=any_url) if not wide else cli(*attach, "--wide", url=any_url))
    _same(any_engine, before)  # adopted as it is
    similar = json.loads(ok(cli("similar", "--table", "arts", "--id", "1", "--format", "json", url=any_url)).stdout)
    assert similar[0]["key"] == 2
    ok(cli("dupes", "--table", "arts", url=any_url))
    ok(cli("backfill", "--table", "arts", "--no-progress", url=any_url))
    ok(cli("detach", "--table", "arts", url=any_url))


@pytest.mark.parametrize("wide", [False, True], ids=["v2", "v3"])
def test_attach_adopts_a_mixin_table_whose_trigger_an_earlier_simsql_wrote(engine: Engine, url: str, wide: bool) -> None:
    """PostgreSQL's row trigger now returns at once for a fit's list writes; a mixin table made
    before that keeps the trigger body simsql wrote then, which is still simsql's to adopt."""
    from simsql.dialects.postgresql.ddl import FUNCTION_MARK, dollar_quote, row_trigger_body

    before = _unrecorded(engine, _model(wide))
    names = Names("arts", wide=wide)
    with engine.begin() as connection:
        schema = connection.execute(text("SELECT current_schema()")).scalar_one()
        earlier = row_trigger_body(names, ("title", "body"), derive_blocks=False, skips_list_writes=False)
        assert earlier != row_trigger_body(names, ("title", "body"), derive_blocks=False)
        connection.execute(
            text(f'CREATE OR REPLACE FUNCTION "{schema}"."{names.row_function}"() RETURNS trigger LANGUAGE plpgsql AS '
                 f"{dollar_quote(chr(10) + FUNCTION_MARK + earlier)}")
        )  # fmt: skip
    before = {**before, "triggers": state(engine, "arts")["triggers"]}
    attach = ("attach", "--table", "arts", "--text-column", "title", "--text-column", "body", "--no-backfill")
    ok(cli(*attach, *(("--wide",) if wide else ()), url=url))
    _same(engine, before)  # adopted as it is


def test_attach_never_adopts_what_it_cannot_prove_simsql_made(any_engine: Engine, any_url: str) -> None:
    before = _unrecorded(any_engine, _model())
    with any_engine.begin() as connection:  # one of simsql's triggers gone: no longer as simsql makes it
        trigger = simsql.dialects.backend(connection).trigger_names(Names("arts"))[-1]
        connection.execute(text(f"DROP TRIGGER {trigger}" + ("" if is_mysql(any_engine) else " ON arts")))
    before = {**before, "triggers": state(any_engine, "arts")["triggers"]}
    attach = ("attach", "--table", "arts", "--text-column", "title", "--text-column", "body", "--no-backfill")
    failed(cli(*attach, url=any_url), 1, "simsql did not create them")
    _same(any_engine, before)


def test_attach_refuses_a_mixin_table_of_another_configuration(any_engine: Engine, any_url: str) -> None:
    model = _model()
    model.__simhash_fingerprinter__ = simsql.Fingerprinter(shingle_size=2)
    before = _unrecorded(any_engine, model)
    attach = ("attach", "--table", "arts", "--text-column", "title", "--text-column", "body", "--no-backfill")
    failed(cli(*attach, url=any_url), 1, "stored fingerprints are not of configuration")
    _same(any_engine, before)


def test_status_names_the_detach_that_clears_a_replaced_table_elsewhere(engine: Engine, url: str, schema: str) -> None:
    """A table in a schema other than the connection's: the command status prints works as typed."""
    other = f"{schema}_other"
    with engine.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{other}"'))
        connection.execute(text(f'CREATE TABLE "{other}".t (id int PRIMARY KEY, body text)'))
    try:
        ok(cli("attach", "--table", "t", "--schema", other, "--text-column", "body", "--no-backfill", url=url))
        with engine.begin() as connection:
            connection.execute(text(f'DROP TABLE "{other}".t'))
            connection.execute(text(f'CREATE TABLE "{other}".t (id int PRIMARY KEY, body text)'))
        hint = ok(cli("status", url=url)).stderr.split("clear its entry with: ", 1)[1].strip()
        assert hint == f"simsql detach --table t --schema {other}", hint
        ok(cli(*hint.split()[1:], url=url))
        assert simsql.status(engine) == []
    finally:
        with engine.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{other}" CASCADE'))


def test_create_all_in_a_schema_of_its_own_installs_nothing_elsewhere(engine: Engine, schema: str) -> None:
    """A mixin table made in a schema that is not the connection's (the demo's ``simsql_demo``):
    simsql is installed where unqualified statements resolve, so nothing is installed for it."""
    other = f"{schema}_own"

    class Base(DeclarativeBase):
        pass

    class Own(simsql.SimHashMixin, Base):
        __tablename__ = "own"
        __table_args__ = {"schema": other}
        __simhash_source__ = ("body",)
        id: Mapped[int] = mapped_column(Integer, primary_key=True)
        body: Mapped[str] = mapped_column(Text)

    with engine.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{other}"'))
    try:
        Base.metadata.create_all(engine)
        assert simsql.alembic.current(engine) == ()
    finally:
        with engine.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{other}" CASCADE'))
