"""Issue 21, item 9: a query argument the database cannot take is refused before any statement
is built, with a TypeError or ValueError naming it, on every server; the largest limit a server
reads still works."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

import simsql

from .models import Article, Post

TEXT = "The quick brown fox jumps over the lazy dog while the farmer watches from the old barn door"


def _rows(engine: Engine) -> list[Article]:
    with Session(engine, expire_on_commit=False) as session:
        rows = [Article(title="fox", body=TEXT), Article(title="fox", body=TEXT + " again")]
        session.add_all(rows)
        session.commit()
        return rows


def test_a_limit_beyond_64_bits_is_refused_and_the_largest_works(tables: Engine) -> None:
    _rows(tables)
    with pytest.raises(ValueError, match="limit must be at most"):
        simsql.most_similar(select(Article), TEXT, limit=2**63)
    with Session(tables) as session:
        assert len(session.execute(simsql.most_similar(select(Article), TEXT, limit=2**63 - 1)).all()) == 2


@pytest.mark.parametrize("exclude", [object(), [object()], {1: 2}, [(1, 2)], [Post(id=1)]], ids=["object", "list", "dict", "arity", "other-model"])
def test_an_exclude_that_is_no_key_of_the_model_is_refused(tables: Engine, exclude: object) -> None:
    _rows(tables)
    with pytest.raises((TypeError, ValueError), match="exclude"):
        simsql.most_similar(select(Article), TEXT, limit=5, exclude=exclude)


def test_excluding_keys_rows_and_tuples_still_works(tables: Engine) -> None:
    a, b = _rows(tables)
    with Session(tables) as session:
        for exclude in (b.id, [b.id], (b.id,), [(b.id,)], {b.id}, [b]):
            rows = session.execute(simsql.most_similar(select(Article), a.body, limit=5, exclude=exclude)).all()
            assert [r[0].id for r in rows] == [a.id], exclude
