"""ORM writers and partition lists (issue 34): a row's list is always written with its
fingerprint, even when the new list equals the one the session loaded (found by the 1M refit
benchmark: two sessions updating one row left it in the other writer's list)."""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy import Engine, LargeBinary, Text, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
from simsql import VectorFingerprinter
from simsql.lists import ListsMixin, fit_lists
from simsql.store.lists import live_centres
from simsql.store.storage import binding_for
from simsql.text.vectors import vector_of

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


# -- vectors: an ORM write places the row by the vector its signature was computed from -------

DIMENSIONS = 16
_RNG = np.random.default_rng(41)
_LEAN = _RNG.normal(size=DIMENSIONS)  # a direction every vector shares, as embeddings do


def _vectors(count: int) -> np.ndarray:
    return (_RNG.normal(size=(count, DIMENSIONS)) + 1.5 * _LEAN).astype("<f4")


class CentredVector(ListsMixin, simsql.WideSimHashMixin, Base):
    """A centred configuration: the signature and the list share the vector at unit length."""

    __tablename__ = "listed_centred_vectors"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = VectorFingerprinter.fit(_vectors(500), seed=3)
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    embedding: Mapped[bytes | None] = mapped_column(LargeBinary)


class PlainVector(ListsMixin, simsql.SimHashMixin, Base):
    """No centre: the signature reads the vector as it is, the list at unit length."""

    __tablename__ = "listed_plain_vectors"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = VectorFingerprinter(DIMENSIONS, seed=4)
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    embedding: Mapped[bytes | None] = mapped_column(LargeBinary)


VECTOR_MODELS: tuple[Any, ...] = (CentredVector, PlainVector)


def _stored_vectors(engine: Engine, model: Any) -> dict[int, tuple[bytes | None, int | None, tuple[int | None, ...]]]:
    words = [getattr(model, name) for name in binding_for(model).names.signature_words] or [model.simhash]
    with Session(engine) as session:
        rows = session.execute(select(model.id, model.embedding, model.simhash_part, *words)).all()
    return {row[0]: (row[1], row[2], tuple(row[3:])) for row in rows}


def test_orm_writes_place_vectors_in_the_list_the_rule_gives_each_one(any_engine: Engine) -> None:
    """Every vector an ORM write places (inserts in flushes of many rows and both models, and
    updates of the vector) is in the list ``Centres.place`` gives its checked vector, row by
    row as the writers placed them before the vector was checked once for signature and list;
    its signature is the fingerprinter's. Vectors halfway between two centres (near ties) and
    copies of the centres are among them."""
    Base.metadata.drop_all(any_engine)
    Base.metadata.create_all(any_engine)
    loaded = _vectors(300)
    with Session(any_engine) as session:
        for model in VECTOR_MODELS:
            session.add_all(model(id=i + 1, embedding=v.tobytes()) for i, v in enumerate(loaded))
        session.commit()
    live = {}
    for model in VECTOR_MODELS:
        fit_lists(any_engine, model.__tablename__, lists=8, seed=1)
        with any_engine.connect() as connection:
            (live[model],) = live_centres(connection, simsql.store.registry.current_schema(connection), model.__tablename__)
    written: dict[Any, dict[int, np.ndarray]] = {model: {} for model in VECTOR_MODELS}
    for start in range(1000, 1400, 100):  # a flush of 100 rows of each model, interleaved
        fresh = _vectors(100)
        with Session(any_engine) as session:
            for i, vector in enumerate(fresh):
                for model in VECTOR_MODELS:
                    session.add(model(id=start + i, embedding=vector.tobytes()))
                    written[model][start + i] = vector
            session.commit()
    with Session(any_engine) as session:
        for model in VECTOR_MODELS:
            centres = live[model].values
            halfway = [(centres[a] + centres[b]).astype("<f4") for a in range(len(centres)) for b in range(a + 1, len(centres))]
            near = [*halfway, *centres.astype("<f4"), *_vectors(50)]
            for key, vector in enumerate(near, start=2000):
                session.add(model(id=key, embedding=vector.tobytes()))
                written[model][key] = vector
            for key in range(1, 41):  # updates that change the vector are placed again
                vector = _vectors(1)[0]
                row = session.get(model, key)
                assert row is not None
                row.embedding = vector.tobytes()
                written[model][key] = vector
        session.commit()

    for model in VECTOR_MODELS:
        fingerprinter, stored = model.__simhash_fingerprinter__, _stored_vectors(any_engine, model)
        assert set(written[model]) <= set(stored)
        for key, vector in written[model].items():
            raw, part, words = stored[key]
            assert raw == vector.tobytes()
            checked = fingerprinter.check(vector_of(raw))
            assert part == int(live[model].place(checked)[0]), (model.__name__, key)
            signature = fingerprinter.signatures_many(checked)[0].words if len(words) == 4 else (fingerprinter.fingerprint(vector),)
            assert tuple(w & 0xFFFFFFFFFFFFFFFF for w in words) == signature, (model.__name__, key)  # type: ignore[operator]
