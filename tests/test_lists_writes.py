"""ORM writers and partition lists (issue 34): a row's list is always written with its
fingerprint, even when the new list equals the one the session loaded (found by the 1M refit
benchmark: two sessions updating one row left it in the other writer's list)."""

from __future__ import annotations

from sqlalchemy import Engine, Text, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
from simsql.lists import ListsMixin, fit_lists
from simsql.store.lists import live_centres

from .tables import texts


class Base(DeclarativeBase):
    pass


class Item(ListsMixin, simsql.SimHashMixin, Base):
    __tablename__ = "listed_items"
    __simhash_source__ = ("body",)
    id: Mapped[int] = mapped_column(primary_key=True)
    body: Mapped[str | None] = mapped_column(Text)


def _lists(engine: Engine) -> dict[int, tuple[int, str]]:
    with Session(engine) as session:
        return {row.id: (row.simhash_part, row.body) for row in session.scalars(select(Item)) if row.simhash_part is not None}


def test_a_list_equal_to_the_loaded_one_is_still_written_beside_its_fingerprint(any_engine: Engine) -> None:
    Base.metadata.drop_all(any_engine)
    Base.metadata.create_all(any_engine)
    with Session(any_engine) as session:
        session.add_all(Item(id=row["id"], body=row["body"]) for row in texts(200))
        session.commit()
    fit_lists(any_engine, Item.__tablename__, lists=4)
    placed = _lists(any_engine)
    target = next(iter(placed))
    home, _ = placed[target]
    same = next(body for key, (part, body) in placed.items() if part == home and key != target)  # back to its list
    other = next(body for key, (part, body) in placed.items() if part != home)  # to another list
    with Session(any_engine) as first, Session(any_engine) as second:
        moved, returned = first.get(Item, target), second.get(Item, target)  # both load the row in list `home`
        assert moved is not None and returned is not None
        moved.body = other
        first.commit()
        returned.body = same  # its new list is the one it loaded: unchanged to SQLAlchemy's eye
        second.commit()
    with any_engine.connect() as connection:
        fingerprint, part = connection.execute(
            text("SELECT simhash, simhash_part FROM listed_items WHERE id = :id"), {"id": target}
        ).one()
        (centres,) = live_centres(connection, simsql.store.registry.current_schema(connection), Item.__tablename__)
    assert part == int(centres.place([int(fingerprint) & 0xFFFFFFFFFFFFFFFF])[0]) == home
