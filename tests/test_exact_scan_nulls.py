"""Exact ``most_similar``'s scan and the rows without a fingerprint: the scan ranks every row by
its distance and keeps the top ``limit``; rows without a fingerprint (no text yet, or not
backfilled) must never be among them, on any server, whichever of the plan's branches answers.

(Written while trying to make MySQL's exact scan cheaper by ranking those rows last instead of
filtering them: EXPLAIN ANALYZE showed the filter at a fifth of the scan, but end to end the
change measured nothing, EXPLAIN ANALYZE's own per-row timing being most of that fifth; the
change was not kept, the answers test was.)"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.orm import Session

import simsql
from simsql.bits import hamming

from .tables import build_docs, unsigned


def _docs_with_unfingerprinted_rows(engine: Engine, rows: int) -> Any:
    build_docs(engine, rows=rows)
    simsql.alembic.upgrade(engine)
    simsql.attach_table(engine, "docs", ["title", "body"])
    simsql.backfill(engine, "docs", workers=0)
    with engine.begin() as connection:  # rows written behind the ORM, not fingerprinted yet
        connection.execute(
            text("INSERT INTO docs (id, title, body) VALUES (:id, :title, NULL)"),
            [{"id": rows + i, "title": None} for i in range(1, 6)],
        )
        connection.execute(text("UPDATE docs SET simhash = NULL WHERE id IN (2, 3)"))
    with engine.connect() as connection:
        return simsql.reflect(connection, "docs")


@pytest.mark.parametrize("rows", [6, 40])
def test_rows_without_a_fingerprint_are_never_ranked(any_engine: Engine, rows: int) -> None:
    """With fewer fingerprinted rows than the limit (6 rows, 2 of them cleared) every one of them
    and nothing else; with more, the brute-force top 10 (ties by key)."""
    model = _docs_with_unfingerprinted_rows(any_engine, rows)
    with any_engine.connect() as connection:
        stored = {
            key: unsigned(any_engine, value)
            for key, value in connection.execute(text("SELECT id, simhash FROM docs WHERE simhash IS NOT NULL"))
        }
    target = stored[1]
    expected = sorted(stored, key=lambda key: (hamming(stored[key], target), key))[:10]
    with Session(any_engine) as session:
        found = session.execute(simsql.most_similar(select(model), target, limit=10)).all()
        keys = session.execute(simsql.most_similar(select(model.id), target, limit=10)).all()
    assert [row[0].id for row in found] == expected
    assert [row[0] for row in keys] == expected
    assert [row.distance for row in found] == [hamming(stored[key], target) for key in expected]

