"""The wide signature on an existing table: ``attach_table(..., wide=True)`` (``simsql attach
--wide``), backfill, status, ``reflect`` + ``find_original`` and detach, on every server.

The answers are compared with a ``WideSimHashMixin`` model holding the same rows, and detach
with the catalog as it was before attach."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import random
from typing import Any

import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.orm import Session

import simsql
import simsql.alembic
import simsql.errors
from simsql.dialects import backend
from simsql.lifecycle.refingerprinting import refingerprint
from simsql.schema.names import WIDE_LAYOUT, Names

from .command_line import cli
from .tables import build_live_docs, is_mysql, run, state, texts, unsigned
from .test_find_original import FOOTER, HEADER
from .wide_models import WideArticle, WideBase

MODULES = ("json.decoder", "json.encoder", "argparse", "textwrap", "heapq", "fractions", "dataclasses", "calendar", "random", "functools")


def _articles() -> list[str]:
    """Real prose, one article per module: its docstrings (a few hundred to thousands of words)."""
    found = []
    for name in MODULES:
        tree = ast.parse(inspect.getsource(importlib.import_module(name)))
        parts = [ast.get_docstring(n) for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))]
        found.append("\n\n".join(p for p in parts if p))
    return found


def _rows() -> list[dict[str, Any]]:
    """The articles (ids 1..10), then rows of every kind of text (some without any feature)."""
    rows = [{"id": i, "title": f"About {name}", "body": body} for i, (name, body) in enumerate(zip(MODULES, _articles()), 1)]
    return rows + [{**row, "id": 100 + row["id"]} for row in texts(60)]


def _edited(article: str, rng: random.Random) -> list[str]:
    """Light evasions: boilerplate around it, 2% of the words replaced, its lines shuffled."""
    words = article.split(" ")
    for _ in range(len(words) // 50):
        words[rng.randrange(len(words))] = rng.choice(["lorem", "ipsum", "dolor", "amet"])
    lines = [line for line in article.split("\n") if line.strip()]
    rng.shuffle(lines)
    return [f"{HEADER}\n\n{article}\n\n{FOOTER}", " ".join(words), "\n".join(lines)]


def _create(engine: Engine, table: str) -> str:
    """A plain table (no simsql), its quoted name."""
    quoted = backend(engine).quote(table)
    body = "TEXT" if is_mysql(engine) else "text"
    run(engine, f"CREATE TABLE {quoted} (id INT PRIMARY KEY, title VARCHAR(200), body {body})")
    return quoted


def _insert(engine: Engine, quoted: str, rows: list[dict[str, Any]]) -> None:
    with engine.begin() as connection:
        connection.execute(text(f"INSERT INTO {quoted} (id, title, body) VALUES (:id, :title, :body)"), rows)


def _index_names(engine: Engine, table: str) -> set[str]:
    with engine.connect() as connection:
        return set(simsql.lifecycle.catalog.index_names(connection, simsql.store.registry.current_schema(connection), table))


def _signatures(engine: Engine, quoted: str, names: Names) -> dict[int, tuple[Any, ...]]:
    columns = ", ".join(backend(engine).quote(c) for c in (*names.signature_words, *names.wide_blocks))
    with engine.connect() as connection:
        rows = connection.execute(text(f"SELECT id, {columns} FROM {quoted} ORDER BY id")).all()
    words = len(names.signature_words)
    return {row[0]: (*(unsigned(engine, w) for w in row[1 : 1 + words]), *row[1 + words :]) for row in rows}


@pytest.mark.parametrize("table", ["articles", 'Odd "name" 100% sure'], ids=["plain", "odd"])
def test_attach_wide_backfill_find_original_as_the_mixin(any_engine: Engine, table: str) -> None:
    rows = _rows()
    quoted = _create(any_engine, table)
    _insert(any_engine, quoted, rows)
    WideBase.metadata.create_all(any_engine)
    with Session(any_engine) as session:
        session.add_all([WideArticle(**row) for row in rows])
        session.commit()

    simsql.alembic.upgrade(any_engine)
    entry = simsql.attach_table(any_engine, table, ["title", "body"], wide=True)
    names = entry.names
    assert entry.wide and entry.mode == "columns+wide" and names.wide
    assert not {n.lower() for n in _index_names(any_engine, table)} & {n.lower() for n in names.indexes}  # left to the backfill
    status = simsql.status(any_engine)[0]
    with_text = sum(1 for r in rows if r["title"] is not None or r["body"] is not None)
    assert status.wide and status.rows_missing_wide == status.rows_missing == with_text

    result = simsql.backfill(any_engine, table, workers=0, batch_size=7)
    assert result.indexes_built == names.indexes and len(names.indexes) == 4 + WIDE_LAYOUT.count
    found = {n.lower() for n in _index_names(any_engine, table)}
    assert {n.lower() for n in names.indexes} <= found
    status = simsql.status(any_engine)[0]
    assert (status.rows_missing, status.rows_missing_wide, status.rows_stale) == (0, 0, 0)
    assert simsql.backfill(any_engine, table, workers=0).indexes_built == ()

    # the words and blocks a backfill stores are those the ORM stores for the same text
    mixin = _signatures(any_engine, "wide_articles", Names("wide_articles", wide=True))
    assert _signatures(any_engine, quoted, names) == mixin

    with any_engine.connect() as connection:
        reflected = simsql.reflect(connection, table)
    rng = random.Random(7)
    with Session(any_engine) as session:
        for original in rows[:10]:
            for copy in _edited(original["body"], rng):
                attached = simsql.find_original(session, reflected, copy)
                declared = simsql.find_original(session, WideArticle, copy)
                assert attached is not None and declared is not None
                assert (attached.row.id, attached.distance) == (declared.row.id, declared.distance) == (original["id"], attached.distance)
                bare = simsql.find_original(session, reflected, copy, min_containment=None)
                assert bare is not None and (bare.row.id, bare.distance) == (original["id"], attached.distance)
        assert simsql.find_original(session, reflected, "Parliament debated the new tax law until late") is None

    before_detach = simsql.detach_table(any_engine, table)
    assert before_detach.wide
    with any_engine.connect() as connection:
        columns = {c.lower() for c in simsql.lifecycle.catalog.require_table(connection, table, None).columns}
    assert columns == {"id", "title", "body"} and not _index_names(any_engine, table) - {"PRIMARY", f"{table}_pkey"}


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_detach_of_a_wide_attachment_restores_the_table_exactly(any_engine: Engine, side_table: bool) -> None:
    build_live_docs(any_engine)
    simsql.alembic.upgrade(any_engine)
    before = state(any_engine)
    entry = simsql.attach_table(any_engine, "docs", ["title", "body"], wide=True, side_table=side_table)
    assert entry.mode == ("side_table+wide" if side_table else "columns+wide")
    assert simsql.backfill(any_engine, "docs", workers=0).rows_fingerprinted == 4
    with any_engine.connect() as connection:
        reflected = simsql.reflect(connection, "docs")
    with Session(any_engine) as session:
        match = simsql.find_original(session, reflected, "title\n" + session.get(reflected, 3).body)  # type: ignore[union-attr]
        assert match is not None and match.row.id == 3
    simsql.detach_table(any_engine, "docs")
    assert state(any_engine) == before


def test_the_triggers_keep_the_wide_signature_current(any_engine: Engine) -> None:
    rows = _rows()[:12]
    quoted = _create(any_engine, "notes")
    _insert(any_engine, quoted, rows)
    simsql.alembic.upgrade(any_engine)
    names = simsql.attach_table(any_engine, "notes", ["title", "body"], wide=True).names
    simsql.backfill(any_engine, "notes", workers=0)
    fingerprinter = simsql.Fingerprinter()

    # a write behind simsql: the text changes, the trigger drops the signature with the fingerprint
    run(any_engine, f"UPDATE {quoted} SET body = 'a new text entirely, nothing like before' WHERE id = 1")
    assert _signatures(any_engine, quoted, names)[1] == (None,) * (4 + WIDE_LAYOUT.count)
    status = simsql.status(any_engine)[0]
    assert (status.rows_missing, status.rows_missing_wide) == (1, 1)
    # a writer that knows only the 64 bits: its fingerprint stays, the words are missing
    w1 = backend(any_engine).quote(names.wide_words[0])
    run(any_engine, f"UPDATE {quoted} SET {w1} = NULL WHERE id = 2")
    assert simsql.status(any_engine)[0].rows_missing_wide == 2
    assert simsql.backfill(any_engine, "notes", workers=0).rows_fingerprinted == 2
    stored = _signatures(any_engine, quoted, names)
    for key, row in ((1, {"title": rows[0]["title"], "body": "a new text entirely, nothing like before"}), (2, rows[1])):
        signature = fingerprinter.signature(f"{row['title']}\n{row['body']}")
        assert stored[key] == (*signature.words, *signature.blocks(WIDE_LAYOUT))

    # a row inserted behind simsql is missing until a backfill signs it
    _insert(any_engine, quoted, [{"id": 500, "title": "Fresh", "body": "A fresh row inserted by raw SQL"}])
    assert simsql.status(any_engine)[0].rows_missing_wide == 1
    simsql.backfill(any_engine, "notes", workers=0)
    signature = fingerprinter.signature("Fresh\nA fresh row inserted by raw SQL")
    assert _signatures(any_engine, quoted, names)[500] == (*signature.words, *signature.blocks(WIDE_LAYOUT))
    assert simsql.status(any_engine)[0].rows_missing_wide == 0


def test_an_empty_table_gets_its_wide_indexes_at_attach(any_engine: Engine) -> None:
    _create(any_engine, "empty")
    simsql.alembic.upgrade(any_engine)
    names = simsql.attach_table(any_engine, "empty", ["body"], wide=True).names
    assert {n.lower() for n in names.indexes} <= {n.lower() for n in _index_names(any_engine, "empty")}


def test_a_wide_attachment_keeps_its_kind_and_moves_to_other_settings_where_it_can(any_engine: Engine) -> None:
    quoted = _create(any_engine, "notes")
    _insert(any_engine, quoted, _rows()[:3])
    simsql.alembic.upgrade(any_engine)
    simsql.attach_table(any_engine, "notes", ["title", "body"], wide=True)
    simsql.attach_table(any_engine, "notes", ["title", "body"], wide=True)  # the same: nothing to do
    with pytest.raises(simsql.text.errors.SchemaError, match="already attached"):
        simsql.attach_table(any_engine, "notes", ["title", "body"], wide=False)
    other = simsql.Fingerprinter(version=3, shingle_size=2)
    if is_mysql(any_engine):  # there refingerprint moves version 2 to 3 of the same settings only
        with pytest.raises(simsql.text.errors.UnsupportedDatabase, match="only from algorithm version 2 to version 3"):
            refingerprint(any_engine, "notes", to=other)
        return
    assert refingerprint(any_engine, "notes", to=other, workers=0).switched  # PostgreSQL: wide to wide
    report = simsql.status(any_engine)[0]
    assert (report.config_id, report.wide, report.rows_missing, report.rows_missing_wide) == (other.config_id, True, 0, 0)


def test_the_command_line_attaches_wide_and_backfills(any_engine: Engine, any_url: str) -> None:
    build_live_docs(any_engine)
    before = state(any_engine)
    # version 3, the wide signature, asked for by name (version 2 is attach's default, as SimHashMixin's)
    attached = cli("attach", "--table", "docs", "--text-column", "title", "--text-column", "body", "--wide", "--backfill", url=any_url)
    assert attached.returncode == 0, attached.stderr
    assert "with the wide signature" in attached.stdout and "built when the backfill ends" in attached.stdout
    assert "fingerprinted 4 rows" in attached.stdout and f"built {4 + WIDE_LAYOUT.count} block indexes" in attached.stdout
    status = json.loads(cli("status", "--format", "json", url=any_url).stdout)
    assert [(s["mode"], s["missing"], s["missing_wide"]) for s in status] == [("columns+wide", 0, 0)]
    detached = cli("detach", "--table", "docs", url=any_url)
    assert detached.returncode == 0, detached.stderr
    after = state(any_engine)
    assert (after["create"], after["checksum"], after["triggers"]) == (before["create"], before["checksum"], before["triggers"])
    with any_engine.connect() as connection:
        assert connection.execute(select(simsql.schema.names.registry_table)).all() == []
