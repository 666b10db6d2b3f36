"""SQLModel models with ``SimHashMixin`` (and with a side table) on every server, through a
SQLModel ``Session``: inserts and updates fingerprint the row, and every query answers as it
does for a plain SQLAlchemy model, ``session.exec(most_similar(...))`` giving ``(model,
distance, similarity)`` rows. docs/sqlmodel.md shows the same code."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sqlmodel = pytest.importorskip("sqlmodel")

from sqlalchemy import Engine, Text, text  # noqa: E402
from sqlmodel import Field, Session, SQLModel, select  # noqa: E402

import simsql  # noqa: E402
import simsql.sqlmodel  # noqa: E402
from simsql.store.storage import text_digest  # noqa: E402


class Story(simsql.SimHashMixin, SQLModel, table=True):
    """Fingerprint columns on the model's own table."""

    __tablename__ = "sqlmodel_stories"
    __simhash_source__ = ("title", "body")

    id: int | None = Field(default=None, primary_key=True)
    title: str | None = Field(default=None, max_length=200)
    body: str | None = Field(default=None, sa_type=Text)
    topic: str = Field(default="news", max_length=20)


class Note(SQLModel, table=True):
    """A model whose table is left alone: fingerprints in a side table."""

    __tablename__ = "sqlmodel_notes"

    id: int | None = Field(default=None, primary_key=True)
    title: str | None = Field(default=None, max_length=200)
    body: str | None = Field(default=None, sa_type=Text)
    topic: str = Field(default="news", max_length=20)


simsql.attach_model(Note, source=("title", "body"))
MODELS = {"columns": Story, "side_table": Note}
TABLES = [Story.__table__, Note.__table__, simsql.store.binding_for(Note).table]

WORDS = "river stone cloud maple lantern harbour violet engine copper meadow falcon silver orchard".split()


def _words(seed: int, count: int = 60) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) + str(rng.randrange(500)) for _ in range(count))


ORIGINAL = _words(1)
COPY = ORIGINAL.replace(ORIGINAL.split()[7], "changed", 1)  # one word of 60 changed
OTHER = _words(2)


@pytest.fixture
def sqlmodel_engine(any_engine: Engine) -> Iterator[Engine]:
    SQLModel.metadata.create_all(any_engine, tables=TABLES)
    yield any_engine


@pytest.fixture(params=sorted(MODELS))
def model(request: pytest.FixtureRequest) -> Any:
    return MODELS[request.param]


def _fill(engine: Engine, model: Any) -> tuple[int, int, int]:
    """Three rows: an original, a near-copy of it and an unrelated text; their ids."""
    with Session(engine) as session:
        rows = [model(title="a", body=ORIGINAL), model(title="a", body=COPY, topic="blog"), model(title="b", body=OTHER)]
        session.add_all(rows)
        session.commit()
        return rows[0].id, rows[1].id, rows[2].id


def test_insert_and_update_fingerprint_the_row(sqlmodel_engine: Engine) -> None:
    with Session(sqlmodel_engine) as session:
        story = Story(title="a", body=ORIGINAL)
        session.add(story)
        session.commit()
        assert story.simhash == simsql.text.fingerprint.simhash("a\n" + ORIGINAL)
        assert story.simhash_src == text_digest("a\n" + ORIGINAL)
        assert "simhash" not in story.model_dump()  # SQLAlchemy's columns, not pydantic fields
        story.body = OTHER
        session.add(story)
        session.commit()
        session.refresh(story)
        assert story.simhash == simsql.text.fingerprint.simhash("a\n" + OTHER)
        stored = session.exec(select(Story.simhash_b0).where(Story.id == story.id)).one()  # type: ignore[arg-type]
        assert stored == simsql.bits.blocks(simsql.text.fingerprint.simhash("a\n" + OTHER))[0]


def test_side_table_insert(sqlmodel_engine: Engine) -> None:
    (first, _, _) = _fill(sqlmodel_engine, Note)
    side = simsql.store.binding_for(Note).table.name
    with sqlmodel_engine.connect() as connection:
        stored = connection.execute(text(f"SELECT simhash FROM {side} WHERE id = {first}")).scalar_one()
    assert simsql.bits.to_unsigned(stored) == simsql.text.fingerprint.simhash("a\n" + ORIGINAL)


@pytest.mark.parametrize("most_similar", [simsql.most_similar, simsql.sqlmodel.most_similar], ids=["simsql", "simsql.sqlmodel"])
def test_exec_most_similar_gives_distances(sqlmodel_engine: Engine, model: Any, most_similar: Any) -> None:
    """``session.exec`` of a SQLModel ``select(Model)`` hands back only the model (scalars) for a
    one-entity select; most_similar's statement must come back as rows of three."""
    original, copy, other = _fill(sqlmodel_engine, model)
    with Session(sqlmodel_engine) as session:
        rows = session.exec(most_similar(select(model), "a\n" + ORIGINAL, limit=3)).all()
        assert [(type(m), m.id) for m, _, _ in rows] == [(model, original), (model, copy), (model, other)]
        distances = [d for _, d, _ in rows]
        assert distances[0] == 0 and 0 < distances[1] <= 12 and distances[2] > 12
        assert rows[1][2] == pytest.approx(1 - distances[1] / 64)
        filtered = session.exec(most_similar(select(model).where(model.topic == "blog"), ORIGINAL, limit=2)).all()
        assert [(m.id, d) for m, d, _ in filtered] == [(copy, simsql.bits.hamming(simsql.text.fingerprint.simhash(ORIGINAL), simsql.text.fingerprint.simhash("a\n" + COPY)))]


def test_exec_similar_to(sqlmodel_engine: Engine, model: Any) -> None:
    original, copy, _ = _fill(sqlmodel_engine, model)
    distance = simsql.bits.hamming(simsql.text.fingerprint.simhash("a\n" + ORIGINAL), simsql.text.fingerprint.simhash("a\n" + COPY))
    with Session(sqlmodel_engine) as session:
        found = session.exec(select(model).where(simsql.similar_to(model, "a\n" + ORIGINAL, max_distance=distance)).order_by(model.id)).all()
    assert [m.id for m in found] == [original, copy]


def test_near_duplicates_and_groups(sqlmodel_engine: Engine, model: Any) -> None:
    original, copy, other = _fill(sqlmodel_engine, model)
    distance = simsql.bits.hamming(simsql.text.fingerprint.simhash("a\n" + ORIGINAL), simsql.text.fingerprint.simhash("a\n" + COPY))
    assert 0 < distance <= 3  # the corpus is built so; the assertions below rely on it
    with Session(sqlmodel_engine) as session:
        session.add(model(title="a", body=ORIGINAL))
        session.commit()
        third = other + 1
        pairs = simsql.near_duplicates(session, model, max_distance=3)
        assert [(p.a, p.b, p.distance) for p in pairs] == [(original, copy, distance), (original, third, 0), (copy, third, distance)]
        assert simsql.duplicate_groups(session, model, max_distance=3) == [[original, copy, third]]


def test_find_original(sqlmodel_engine: Engine, model: Any) -> None:
    original, _, _ = _fill(sqlmodel_engine, model)
    with Session(sqlmodel_engine) as session:
        match = simsql.find_original(session, model, "a\n" + ORIGINAL.replace(ORIGINAL.split()[20], "other", 1))
        assert match is not None and isinstance(match.row, model) and match.row.id == original
        assert simsql.find_original(session, model, _words(3)) is None


def test_most_similar_many(sqlmodel_engine: Engine, model: Any) -> None:
    original, _, other = _fill(sqlmodel_engine, model)
    with Session(sqlmodel_engine) as session:
        answers = simsql.queries.most_similar_many(session, model, ["a\n" + ORIGINAL, "b\n" + OTHER], limit=1)
    assert answers == [[(original, 0)], [(other, 0)]]


TYPED = """
from sqlmodel import Field, Session, SQLModel, select
import simsql
import simsql.bits
import simsql.text.fingerprint
import simsql.queries
import simsql.sqlmodel
import simsql.store

class Article(simsql.SimHashMixin, SQLModel, table=True):
    __simhash_source__ = ("title", "body")
    id: int | None = Field(default=None, primary_key=True)
    title: str
    body: str

def nearest(session: Session, text: str) -> list[tuple[int | None, int, float]]:
    rows = session.exec(simsql.sqlmodel.most_similar(select(Article), text, limit=5)).all()
    return [(article.id, distance, similarity) for article, distance, similarity in rows]

def fingerprint(article: Article) -> int | None:
    return article.simhash
"""


def test_exec_of_most_similar_type_checks(tmp_path: Path) -> None:
    """mypy --strict reads ``session.exec(simsql.sqlmodel.most_similar(...))`` as rows of
    (model, int, float); with ``simsql.most_similar`` it matches none of exec's overloads."""
    api = pytest.importorskip("mypy.api")
    source = tmp_path / "app.py"
    source.write_text(TYPED, encoding="utf-8")
    root = Path(__file__).resolve().parents[1]
    # the project's configuration wherever pytest's working directory is, and simsql's own
    # modules read but not reported on (tests/test_typing.py checks them): only app.py is judged
    stdout, stderr, status = api.run(
        ["--strict", "--config-file", str(root / "pyproject.toml"), "--follow-imports", "silent",
         "--cache-dir", str(tmp_path / "cache"), str(source)]
    )  # fmt: skip
    assert status == 0, stdout + stderr
