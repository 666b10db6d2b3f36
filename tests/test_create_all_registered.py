"""Tables ``metadata.create_all`` makes from ``SimHashMixin`` models are registered like
attached ones (issue 23 item 6): the command line lists them (``simsql status``), backfills,
searches (``simsql similar``) and groups them (``simsql dupes``), on PostgreSQL and
MySQL/MariaDB."""

from __future__ import annotations

import json

from sqlalchemy import Engine, String, Text, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

import simsql
import simsql.alembic
from tests.command_line import cli, ok


class Base(DeclarativeBase):
    pass


class Memo(simsql.SimHashMixin, Base):
    __tablename__ = "memos"
    __simhash_source__ = ("title", "body")
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    body: Mapped[str] = mapped_column(Text)


TEXT = "the harvest came in late this year after a long and very wet summer in the valley"


def test_create_all_tables_are_seen_by_the_command_line(any_engine: Engine, any_url: str) -> None:
    simsql.alembic.upgrade(any_engine)
    Base.metadata.create_all(any_engine)
    with any_engine.begin() as connection:  # rows written behind the ORM: the backfill's work
        for key in (1, 2):
            connection.execute(text("INSERT INTO memos (id, title, body) VALUES (:id, 'Harvest', :body)"), {"id": key, "body": TEXT})

    (status,) = json.loads(ok(cli("status", "--format", "json", url=any_url)).stdout)
    assert (status["table"].split(".")[-1], status["missing"]) == ("memos", 2)
    assert status["config_id"] == simsql.Fingerprinter().config_id

    ok(cli("backfill", "--table", "memos", url=any_url))
    similar = json.loads(ok(cli("similar", "--table", "memos", "--id", "1", "--format", "json", url=any_url)).stdout)
    assert [row["key"] for row in similar] == [2]
    dupes = json.loads(ok(cli("dupes", "--table", "memos", "--format", "json", url=any_url)).stdout)
    assert len(dupes) == 1

    Base.metadata.drop_all(any_engine)  # and drop_all forgets it
    assert simsql.status(any_engine) == []


def test_create_all_before_simsql_is_installed_installs_it(any_engine: Engine) -> None:
    """Where simsql's objects are not installed, ``create_all`` of a mixin model installs them
    and records the table, as ``attach_table`` does (issue 33: the README's path, followed by the
    command line, met only dead ends)."""
    Base.metadata.create_all(any_engine)
    assert simsql.alembic.current(any_engine) != ()
    assert [s.table for s in simsql.status(any_engine)] == ["memos"]
