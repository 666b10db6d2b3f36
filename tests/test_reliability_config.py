"""Reliability of the configuration check and of the mixin's declaration (issue 21, items 4, 11).

Item 4: the registry check is cached per engine. Keyed by ``id(engine)``, a new engine that
CPython allocates at a disposed engine's address inherited that engine's passed checks, so
fingerprints of another configuration were stored. Address reuse is not deterministic, so the
tests force it: the registry's ``id`` is patched to give the new engine the old one's address
(a cache that does not use addresses is not affected by the patch).

Item 11: ``__simhash_source__ = "body"`` was iterated character by character.
"""

from __future__ import annotations

import builtins
import gc

import pytest
from sqlalchemy import Engine, Text, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.alembic
import simsql.store
import simsql.text.fingerprint
from simsql import Fingerprinter
from simsql.errors import ConfigMismatch
from simsql.store import registry

BODY = "the quick brown fox jumps over the lazy dog near the river bank today"
OTHER = Fingerprinter(shingle_size=2)


class DefaultBase(DeclarativeBase):
    pass


class Doc(simsql.SimHashMixin, DefaultBase):
    __tablename__ = "docs"
    __simhash_source__ = ("body",)
    id: Mapped[int] = mapped_column(primary_key=True)
    body: Mapped[str | None] = mapped_column(Text)


class OtherBase(DeclarativeBase):
    pass


class OtherDoc(simsql.SimHashMixin, OtherBase):
    """The same table, written by an application configured with another Fingerprinter."""

    __tablename__ = "docs"
    __simhash_source__ = ("body",)
    __simhash_fingerprinter__ = OTHER
    id: Mapped[int] = mapped_column(primary_key=True)
    body: Mapped[str | None] = mapped_column(Text)


def _same_address_as(monkeypatch: pytest.MonkeyPatch, address: int, engine: Engine) -> None:
    """From now on the registry sees ``engine`` at ``address`` (as if CPython reused it)."""
    monkeypatch.setattr(
        registry, "id", lambda obj: address if obj is engine else builtins.id(obj), raising=False
    )


def test_a_new_engine_at_a_disposed_engines_address_is_checked(any_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    DefaultBase.metadata.create_all(any_engine)  # installs simsql and records the table
    simsql.alembic.upgrade(any_engine)
    with any_engine.begin() as connection:  # nothing recorded, as after a create_all by simsql before 0.3
        connection.execute(text("DELETE FROM simsql_registry"))
    # A process configured with OTHER reads the table while nothing is recorded: the check passes.
    first = any_engine.execution_options()  # an engine object of its own on the same database
    with Session(first) as session:
        session.execute(select(OtherDoc.id).where(simsql.similar_to(OtherDoc, BODY))).all()
    # Then the table is filled with the default configuration (and recorded so).
    with Session(any_engine) as session:
        session.add(Doc(id=1, body=BODY))
        session.commit()
    address = builtins.id(first)
    del first
    gc.collect()
    second = any_engine.execution_options()
    _same_address_as(monkeypatch, address, second)
    with Session(second) as session:
        session.add(OtherDoc(id=2, body=BODY))
        with pytest.raises(ConfigMismatch, match="docs"):
            session.commit()
        session.rollback()
        with pytest.raises(ConfigMismatch, match="docs"):
            session.execute(select(OtherDoc.id).where(simsql.similar_to(OtherDoc, BODY))).all()
    with any_engine.connect() as connection:
        assert connection.execute(select(Doc.id)).scalars().all() == [1]  # nothing of OTHER stored


def test_registry_check_is_not_inherited_by_an_engine_at_the_same_address(
    any_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same through :func:`simsql.store.registry.check`, which statements with
    ``statement_checks.CHECK_OPTION`` and the ORM's writes use."""
    simsql.alembic.upgrade(any_engine)
    first = any_engine.execution_options()
    with first.connect() as connection:
        registry.check(connection, "docs", None, OTHER.config_id)  # nothing recorded: passes
    with any_engine.begin() as connection:
        registry.record(connection, "docs", None, Fingerprinter(), ("body",), "columns")
    address = builtins.id(first)
    del first
    gc.collect()
    second = any_engine.execution_options()
    _same_address_as(monkeypatch, address, second)
    with second.connect() as connection, pytest.raises(ConfigMismatch, match="docs"):
        registry.check(connection, "docs", None, OTHER.config_id)


def test_forget_still_drops_an_engines_cached_checks(any_engine: Engine) -> None:
    simsql.alembic.upgrade(any_engine)
    with any_engine.connect() as connection:
        registry.check(connection, "docs", None, OTHER.config_id)
    with any_engine.begin() as connection:
        # written behind the cache's back (another process): the cache still trusts the check ...
        connection.execute(
            simsql.schema.names.registry_table.insert().values(
                simsql.schema.names.record_values(
                    registry.current_schema(connection), "docs", Fingerprinter(), ("body",), "columns", None, "simhash"
                )
            )
        )
    with any_engine.connect() as connection:
        registry.check(connection, "docs", None, OTHER.config_id)
    registry.forget(any_engine)  # ... until forgotten
    with any_engine.connect() as connection, pytest.raises(ConfigMismatch):
        registry.check(connection, "docs", None, OTHER.config_id)


# -- item 11: __simhash_source__ as one string, or of a type that is refused ----------------------


class StringBase(DeclarativeBase):
    pass


class Titled(simsql.SimHashMixin, StringBase):
    """``__simhash_source__`` given as one column name, not a sequence of them."""

    __tablename__ = "titled"
    __simhash_source__ = "body"
    id: Mapped[int] = mapped_column(primary_key=True)
    b: Mapped[str | None] = mapped_column(Text)  # one-letter attributes a per-character reading would find
    o: Mapped[str | None] = mapped_column(Text)
    d: Mapped[str | None] = mapped_column(Text)
    y: Mapped[str | None] = mapped_column(Text)
    body: Mapped[str | None] = mapped_column(Text)


def test_a_string_source_is_one_column() -> None:
    assert Titled.__simhash_source__ == ("body",)
    binding = simsql.store.binding_for(Titled)
    assert binding.source == ("body",) and binding.source_columns == ("body",)
    assert binding.fingerprint_of(Titled(id=1, b="x", o="y", d="z", y="w", body=BODY)) == simsql.text.fingerprint.simhash(BODY)


def test_a_string_source_fingerprints_its_column(any_engine: Engine) -> None:
    StringBase.metadata.create_all(any_engine)
    with Session(any_engine) as session:
        session.add(Titled(id=1, b="b", o="o", d="d", y="y", body=BODY))
        session.commit()
        stored = session.execute(select(Titled.simhash)).scalar_one()
    assert stored == simsql.text.fingerprint.simhash(BODY)  # the SimHash column reads back unsigned


@pytest.mark.parametrize(
    ("source", "named"),
    [(5, "int"), ({"title", "body"}, "set"), (["body", 3], "int"), (b"body", "bytes"), ({"body": 1}, "dict")],
)
def test_a_source_of_another_type_is_refused_when_the_class_is_created(source: object, named: str) -> None:
    class BadBase(DeclarativeBase):
        pass

    with pytest.raises(TypeError, match=rf"Bad\.__simhash_source__ .*column name.*{named}"):

        class Bad(simsql.SimHashMixin, BadBase):
            __tablename__ = "bad"
            __simhash_source__ = source
            id: Mapped[int] = mapped_column(primary_key=True)
            body: Mapped[str | None] = mapped_column(Text)

    assert "bad" not in BadBase.metadata.tables  # refused before the class was mapped
