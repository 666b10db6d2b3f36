"""The wide signature's storage: words 1-3 written with the fingerprint on every ORM write, its
20-bit blocks derived by the database from the words (never by Python), the words cleared by
the trigger with a stale fingerprint, and v2 tables (no ``wide``) unchanged."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, inspect, select, text, update
from sqlalchemy.orm import Session

import simsql
from simsql.schema.names import WIDE_LAYOUT, Names
from simsql.store.storage import binding_for

from .models import Article
from .wide_models import WIDE_MODELS, WideArticle, WideBase

MODES = ["columns", "side_table"]
TEXTS = [
    ("A note on tides", "The moon pulls the sea twice a day, and harbours keep tables of it."),
    ("标题", "你妈妈喊你回家吃饭哦，回家罗回家罗"),
]


@pytest.fixture
def wide_tables(any_engine: Engine) -> Engine:
    WideBase.metadata.create_all(any_engine)
    return any_engine


def _stored(session: Session, model: type) -> list[tuple[object, ...]]:
    binding = binding_for(model)
    columns = [*binding.words, *binding.wide_blocks]
    query = select(*binding.keys, *columns)
    if binding.mode == "side_table":
        query = query.join(binding.table, binding.keys[0] == binding.table_keys[0])
    return [tuple(row) for row in session.execute(query.order_by(binding.keys[0]))]


@pytest.mark.parametrize("mode", MODES)
def test_orm_writes_store_the_signature_and_the_database_derives_its_blocks(wide_tables: Engine, mode: str) -> None:
    model = WIDE_MODELS[mode]
    fingerprinter = simsql.Fingerprinter()
    with Session(wide_tables) as session:
        session.add_all([model(id=i, title=t, body=b) for i, (t, b) in enumerate(TEXTS, 1)])
        session.add(model(id=len(TEXTS) + 1, title=None, body="  ...  "))  # no features: all NULL
        session.commit()
        rows = _stored(session, model)
    for (key, *stored), (title, body) in zip(rows, TEXTS):
        signature = fingerprinter.signature(f"{title}\n{body}")
        assert stored == [*signature.words, *signature.blocks(WIDE_LAYOUT)]
    assert rows[-1][1:] == (None,) * (4 + WIDE_LAYOUT.count)


@pytest.mark.parametrize("mode", MODES)
def test_an_orm_update_of_the_text_rewrites_every_word(wide_tables: Engine, mode: str) -> None:
    model = WIDE_MODELS[mode]
    with Session(wide_tables) as session:
        row = model(id=1, title=TEXTS[0][0], body=TEXTS[0][1])
        session.add(row)
        session.commit()
        row.body = TEXTS[1][1]
        session.commit()
        stored = _stored(session, model)[0][1:]
    signature = simsql.Fingerprinter().signature(f"{TEXTS[0][0]}\n{TEXTS[1][1]}")
    assert list(stored) == [*signature.words, *signature.blocks(WIDE_LAYOUT)]


def test_a_write_behind_the_orm_clears_the_stale_signature(wide_tables: Engine) -> None:
    with Session(wide_tables) as session:
        session.add(WideArticle(id=1, title=TEXTS[0][0], body=TEXTS[0][1]))
        session.commit()
        session.execute(update(WideArticle).where(WideArticle.id == 1).values(body="rewritten by a raw writer"))
        session.commit()
        assert _stored(session, WideArticle)[0][1:] == (None,) * (4 + WIDE_LAYOUT.count)


def test_wide_block_columns_are_indexed_and_v2_tables_have_none(wide_tables: Engine) -> None:
    from .models import Base

    Base.metadata.create_all(wide_tables)
    names = Names("wide_articles", wide=True)
    found = {index["name"]: index["column_names"] for index in inspect(wide_tables).get_indexes("wide_articles")}
    assert all(found[names.index(block)][0] == block for block in names.wide_blocks)
    assert len(names.wide_blocks) == WIDE_LAYOUT.count
    v2_columns = {column["name"] for column in inspect(wide_tables).get_columns(Article.__tablename__)}
    assert not v2_columns & set(names.wide_words + names.wide_blocks)
    assert binding_for(Article).words == () and not binding_for(Article).names.wide


def test_raw_sql_reads_the_same_blocks(wide_tables: Engine) -> None:
    """The generated expression is the layout's (bit j of the signature is bit j % 64 of word j // 64)."""
    with Session(wide_tables) as session:
        session.add(WideArticle(id=1, title="x", body=" ".join(f"word{i}" for i in range(200))))
        session.commit()
        names = Names("wide_articles", wide=True)
        words = session.execute(text("SELECT " + ", ".join(names.signature_words) + " FROM wide_articles")).one()
    value = sum((int(w) % (1 << 64)) << (64 * k) for k, w in enumerate(words))
    with Session(wide_tables) as session:  # closed: an unclosed one holds its transaction until gc
        stored = _stored(session, WideArticle)[0][5:]
    assert list(stored) == [(value >> (WIDE_LAYOUT.width * i)) & ((1 << WIDE_LAYOUT.width) - 1) for i in range(WIDE_LAYOUT.count)]
