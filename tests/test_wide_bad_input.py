"""Bad input on the version 3 paths (the wide signature): a clear error and nothing written.

The signature itself: empty or wordless text is :class:`EmptyDocument`, ``None`` and bytes a
``TypeError`` naming what was given. Through the ORM, a row whose text has no features stores
no signature at all (NULL words, as its NULL fingerprint), and a text the database cannot hold
(a lone surrogate) fails the flush with nothing of it stored. A backfill and a move to
version 3 leave such rows without words and, once marked, do not count them as missing.
"""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, func, select, text
from sqlalchemy.exc import StatementError
from sqlalchemy.orm import Session

import simsql
import simsql.alembic
from simsql import EmptyDocument
from simsql.lifecycle.refingerprinting import refingerprint
from simsql.text.fingerprint import DEFAULT_WIDE

from .tables import run, unsigned
from .wide_models import WideArticle, WideBase

WORDLESS = ["", "   \n\t", "!!! ... ???", "—", "\u3000\u3000"]


@pytest.mark.parametrize("text_value", WORDLESS)
def test_wordless_text_is_an_empty_document(text_value: str) -> None:
    with pytest.raises(EmptyDocument, match="no features"):
        DEFAULT_WIDE.signature(text_value)
    with pytest.raises(EmptyDocument, match="text #1"):
        DEFAULT_WIDE.signatures_many(["some words", text_value])
    assert DEFAULT_WIDE.signatures_many([text_value], empty="none") == [None]


@pytest.mark.parametrize(("value", "message"), [(None, "got None"), (b"bytes", "decode it first"), (7, "got int")])
def test_not_a_string_is_a_type_error(value: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        DEFAULT_WIDE.signature(value)  # type: ignore[arg-type]


def test_a_lone_surrogate_is_refused_by_the_flush_and_nothing_is_stored(any_engine: Engine) -> None:
    simsql.alembic.upgrade(any_engine)
    WideBase.metadata.create_all(any_engine)
    with Session(any_engine) as session:
        session.add(WideArticle(id=1, title="fine", body="a lone \ud800 surrogate"))
        with pytest.raises((StatementError, UnicodeEncodeError)):
            session.commit()
    with Session(any_engine) as session:
        assert session.scalar(select(func.count()).select_from(WideArticle)) == 0


def test_wordless_and_missing_text_store_no_signature(any_engine: Engine) -> None:
    simsql.alembic.upgrade(any_engine)
    WideBase.metadata.create_all(any_engine)
    rows = [WideArticle(id=i, title=None, body=body) for i, body in enumerate([*WORDLESS, None], 1)]
    rows.append(WideArticle(id=100, title="a title", body="words enough to sign"))
    with Session(any_engine) as session:
        session.add_all(rows)
        session.commit()
    with any_engine.connect() as connection:
        stored = connection.execute(text("SELECT id, simhash, simhash_w1, simhash_w2, simhash_w3, simhash_v0 FROM wide_articles")).all()
    for key, *values in stored:
        if key == 100:
            wanted = DEFAULT_WIDE.signature("a title\nwords enough to sign")
            assert [unsigned(any_engine, v) for v in values[:4]] == list(wanted.words)
        else:
            assert values == [None] * 5, f"row {key}: a signature of text without features"
    # as on a 64-bit table, the ORM leaves the mark of text without words to a backfill
    simsql.backfill(any_engine, "wide_articles", workers=0)
    report = simsql.status(any_engine)[0]
    assert (report.rows_missing, report.rows_missing_wide) == (0, 0)
    with any_engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM wide_articles WHERE simhash_w1 IS NOT NULL")).scalar_one() == 1


def test_a_move_to_version_3_leaves_wordless_rows_without_words(any_engine: Engine) -> None:
    body = "TEXT" if any_engine.dialect.name == "mysql" else "text"
    run(any_engine, f"CREATE TABLE notes (id INT PRIMARY KEY, body {body})")
    with any_engine.begin() as connection:
        connection.execute(text("INSERT INTO notes VALUES (:id, :body)"),
                           [{"id": i, "body": b} for i, b in enumerate([*WORDLESS, None, "real words here"], 1)])  # fmt: skip
    simsql.alembic.upgrade(any_engine)
    indexes = any_engine.dialect.name != "mysql" or not getattr(any_engine.dialect, "is_mariadb", False)
    simsql.attach_table(any_engine, "notes", ["body"], fingerprinter=simsql.Fingerprinter(), indexes=indexes)
    simsql.backfill(any_engine, "notes", workers=0)
    assert refingerprint(any_engine, "notes", to=DEFAULT_WIDE, workers=0).switched
    with any_engine.connect() as connection:
        stored = dict(connection.execute(text("SELECT id, simhash_w1 FROM notes")).all())
    assert [key for key, word in stored.items() if word is not None] == [len(WORDLESS) + 2]
    report = simsql.status(any_engine)[0]
    assert (report.wide, report.rows_missing, report.rows_missing_wide) == (True, 0, 0)
