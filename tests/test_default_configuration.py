"""One default configuration for every new table, whichever way it is made (issue 33 part 1):
``SimHashMixin``, ``attach_table``, ``simsql attach`` and ``op.add_simhash`` all create
algorithm version 2; the wide signature (version 3) is asked for by name (``WideSimHashMixin``,
``wide=True``, ``--wide``). A model declared for a table attached by either path writes and
queries it, and a model of the other kind is refused with the mixin to use."""

from __future__ import annotations

import pytest
from alembic.autogenerate import produce_migrations
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, Integer, Text, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.alembic
import simsql.errors
from simsql.text.fingerprint import DEFAULT, DEFAULT_WIDE

from .command_line import cli, ok
from .tables import config_id

TEXT = "the harvest came in late this year after a long and very wet summer in the valley"


def _models() -> tuple[type, type]:
    """A ``SimHashMixin`` and a ``WideSimHashMixin`` model of the same table ``legacy``."""

    class Base(DeclarativeBase):
        pass

    class Narrow(DeclarativeBase):
        pass

    class Legacy(simsql.SimHashMixin, Base):
        __tablename__ = "legacy"
        __simhash_source__ = ("body",)
        id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
        body: Mapped[str | None] = mapped_column(Text)

    class WideLegacy(simsql.WideSimHashMixin, Narrow):
        __tablename__ = "legacy"
        __simhash_source__ = ("body",)
        id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
        body: Mapped[str | None] = mapped_column(Text)

    return Legacy, WideLegacy


def _legacy(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE legacy (id int PRIMARY KEY, body text)"))
        connection.execute(text("INSERT INTO legacy VALUES (1, :body)"), {"body": TEXT})


def _writes_and_queries(engine: Engine, model: type) -> None:
    with Session(engine) as session:
        session.add(model(id=2, body=TEXT + " again"))
        session.commit()
        simsql.backfill(engine, "legacy")
        found = session.execute(simsql.most_similar(select(model), session.get(model, 2), limit=1)).all()
        assert [row[0].id for row in found] == [1]


def test_simsql_attach_creates_what_simhash_mixin_declares(any_engine: Engine, any_url: str) -> None:
    _legacy(any_engine)
    ok(cli("attach", "--table", "legacy", "--text-column", "body", "--no-backfill", url=any_url))
    assert config_id(any_engine, "legacy") == DEFAULT.config_id
    _writes_and_queries(any_engine, _models()[0])


def test_op_add_simhash_creates_what_simhash_mixin_declares(any_engine: Engine) -> None:
    """The Alembic path: op.add_simhash, then the model docs/alembic.md documents for it, which
    writes, queries and autogenerates nothing more on the up-to-date database."""
    _legacy(any_engine)
    with any_engine.begin() as connection:
        op = Operations(MigrationContext.configure(connection))
        op.upgrade_simsql()
        op.add_simhash("legacy", source=["body"], primary_key=["id"])
        op.create_simhash_indexes("legacy")
    assert config_id(any_engine, "legacy") == DEFAULT.config_id
    model = _models()[0]
    _writes_and_queries(any_engine, model)
    with any_engine.connect() as connection:
        script = produce_migrations(MigrationContext.configure(connection), model.metadata)
    assert script.upgrade_ops is not None and script.upgrade_ops.is_empty(), script.upgrade_ops.as_diffs()


def test_attach_table_and_the_wide_opt_ins_agree(any_engine: Engine, any_url: str) -> None:
    _legacy(any_engine)
    ok(cli("attach", "--table", "legacy", "--text-column", "body", "--wide", "--no-backfill", url=any_url))
    assert config_id(any_engine, "legacy") == DEFAULT_WIDE.config_id
    _writes_and_queries(any_engine, _models()[1])


@pytest.mark.parametrize("attached_wide", [True, False], ids=["v3-table", "v2-table"])
def test_a_model_of_the_other_kind_is_told_which_mixin_to_use(any_engine: Engine, attached_wide: bool) -> None:
    _legacy(any_engine)
    simsql.attach_table(any_engine, "legacy", ["body"], wide=attached_wide, indexes=False)
    narrow, wide = _models()
    model = narrow if attached_wide else wide
    with Session(any_engine) as session, pytest.raises(simsql.text.errors.ConfigMismatch) as refused:
        session.add(model(id=2, body=TEXT))
        session.commit()
    message = str(refused.value)
    wanted, used = ("WideSimHashMixin", "SimHashMixin") if attached_wide else ("SimHashMixin", "WideSimHashMixin")
    assert f"declare {model.__name__} with simsql.{wanted} instead of simsql.{used}" in message, message
    assert "from_settings" not in message, message
