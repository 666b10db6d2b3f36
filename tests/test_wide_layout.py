"""The wide block layout chosen per table (issue 43): ``wide_blocks="10x24"`` at attach, recorded in
the registry's ``mode``, and every wide query (the check's probes, ``wide_search``,
``near_duplicates``) cutting the signature as the table does, checked against brute force on
every server and both storage modes; 8 x 20 tables recorded as ``+wide`` read back unchanged;
bad layouts refused before any SQL."""

from __future__ import annotations

import random
from itertools import combinations
from typing import Any

import pytest
from sqlalchemy import Engine, String, Text, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.alembic
from simsql.dialects import backend
from simsql.queries.wide import WIDER_BUDGET_SCALE, probe_budget, probe_groups, wide_search
from simsql.queries.wide_duplicates import guaranteed_distance, half_widths, pair_containment
from simsql.schema.names import WIDE_LAYOUT, Attachment, Names, block_layout, parse_mode, wide_mode
from simsql.store import binding_for
from simsql.text.containment import shingled
from simsql.text.errors import SchemaError
from simsql.text.signature import BlockLayout, Signature

from .tables import is_mysql, run, state, unsigned
from .test_find_original import FOOTER, HEADER
from .test_readme_alembic import fresh_database  # noqa: F401  (fixture)
from .test_wide_lifecycle import _articles

WIDER = BlockLayout(count=10, width=24)


class LayoutBase(DeclarativeBase):
    pass


class WiderArticle(simsql.WideSimHashMixin, LayoutBase):
    """Columns mode, ten blocks of 24 bits."""

    __tablename__ = "wider_articles"
    __simhash_source__ = ("title", "body")
    __simhash_wide_blocks__ = "10x24"

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


class WiderPost(LayoutBase):
    """Side-table mode, nine blocks of 28 bits (a layout the mixin cannot take: any count here)."""

    __tablename__ = "wider_posts"

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


simsql.attach_model(WiderPost, source=("title", "body"), wide=True, wide_blocks=BlockLayout(count=9, width=28))
MODELS = {"columns": WiderArticle, "side_table": WiderPost}


# -- the layout, its text and its record ---------------------------------------------------------


def test_layouts_are_parsed_checked_and_recorded_compatibly() -> None:
    assert block_layout(None) == WIDE_LAYOUT == block_layout("8x20") == block_layout(WIDE_LAYOUT)
    assert block_layout(" 10 x 24 ") == WIDER == block_layout(WIDER)
    assert wide_mode(WIDE_LAYOUT) == "+wide" and wide_mode(WIDER) == "+wide10x24"
    # what earlier simsql wrote reads back as 8 x 20; what this one writes reads back as written
    assert parse_mode("columns+wide") == ("columns", WIDE_LAYOUT)
    assert parse_mode("side_table+wide") == ("side_table", WIDE_LAYOUT)
    assert parse_mode("columns") == ("columns", None) and parse_mode("side_table") == ("side_table", None)
    for layout in (WIDE_LAYOUT, WIDER, BlockLayout(count=16, width=16), BlockLayout(count=2, width=31)):
        for kind in ("columns", "side_table"):
            names = Names.for_table("t", mode=kind, wide=True, layout=layout)
            assert parse_mode(names.recorded_mode) == (kind, layout)
            entry = Attachment("s", "t", "simhash", "c", {}, ("body",), names.recorded_mode, names.side)
            assert entry.names == names and entry.wide and entry.layout == layout
            assert names.wide_blocks == tuple(f"simhash_v{i}" for i in range(layout.count)) and len(names.indexes) == 4 + layout.count
    assert Names("t").recorded_mode == "columns" and Names("t", layout=WIDER).wide_blocks == ()


@pytest.mark.parametrize(
    "value,message",
    [
        ("10x40", "16 to 31 bits"),
        ("12x12", "16 to 31 bits"),
        ("12x24", "288 bits; the signature has 256"),
        ("1x24", "at least 2 blocks"),
        ("10*24", "<count>x<width>"),
        ("ten by 24", "<count>x<width>"),
        (24, "string or a BlockLayout"),
        (BlockLayout(count=20, width=12), "16 to 31 bits"),
    ],
)
def test_bad_layouts_are_refused_with_the_rule(value: Any, message: str) -> None:
    with pytest.raises(SchemaError, match=message.replace("*", r"\*")):
        block_layout(value)


@pytest.mark.parametrize("mode", ["columns+wide8x20", "columns+wide10x24x", "columns+wide 10x24", "columns+wide10x99", "rows+wide"])
def test_a_mode_no_simsql_writes_is_refused(mode: str) -> None:
    with pytest.raises(SchemaError):
        parse_mode(mode)


def test_a_wider_layout_gets_twice_the_probes() -> None:
    signature = Signature((1, 2, 3, 4), (0.01,) * 256, 800)
    base = probe_budget(signature)
    assert probe_budget(signature, False, WIDE_LAYOUT) == base
    assert probe_budget(signature, False, WIDER) == WIDER_BUDGET_SCALE * base
    assert probe_budget(signature, True, WIDER) == 2 * WIDER_BUDGET_SCALE * base
    assert probe_budget(signature, False, BlockLayout(count=12, width=20)) == base
    assert guaranteed_distance(1, WIDER) == 19 and guaranteed_distance(1) == 15
    assert half_widths(24) == (12, 12) and half_widths(21) == (10, 11)


def test_the_mixin_refuses_fewer_blocks_than_it_declares() -> None:
    with pytest.raises(SchemaError, match="at least 8 blocks"):

        class Few(simsql.WideSimHashMixin, LayoutBase):
            __tablename__ = "few"
            __simhash_source__ = ("body",)
            __simhash_wide_blocks__ = "6x24"
            id: Mapped[int] = mapped_column(primary_key=True)
            body: Mapped[str | None] = mapped_column(Text)

    with pytest.raises(SchemaError, match="16 to 31 bits"):

        class Bad(simsql.WideSimHashMixin, LayoutBase):
            __tablename__ = "bad"
            __simhash_source__ = ("body",)
            __simhash_wide_blocks__ = "10x40"
            id: Mapped[int] = mapped_column(primary_key=True)
            body: Mapped[str | None] = mapped_column(Text)


# -- every wide query on the table's layout -----------------------------------------------------


def _rows() -> list[dict[str, Any]]:
    """Ten real articles (ids 1..10), light copies of four of them (ids 11..22), short noise."""
    rng = random.Random(5)
    articles = _articles()
    rows = [{"id": i, "title": f"Article {i}", "body": body[:4000]} for i, body in enumerate(articles, 1)]
    for original in rows[:4]:
        words = original["body"].split(" ")
        for share in (0.01, 0.03, 0.05):
            edited = list(words)
            for i in rng.sample(range(len(edited)), int(len(edited) * share)):
                edited[i] = rng.choice(["lorem", "ipsum", "dolor", "amet"])
            rows.append({"id": len(rows) + 1, "title": original["title"], "body": " ".join(edited)})
    rows += [{"id": 100 + i, "title": None, "body": f"note {i} about {rng.choice(['tea', 'rain', 'maps'])}"} for i in range(20)]
    return rows


def _load(engine: Engine, model: type) -> dict[int, str]:
    LayoutBase.metadata.create_all(engine)
    binding = binding_for(model)
    with Session(engine) as session:
        rows = [model(**row) for row in _rows()]
        session.add_all(rows)
        session.commit()
        return {row.id: t for row in rows if (t := binding.text_of(row)) is not None}


def _stored(engine: Engine, names: Names) -> dict[int, tuple[Any, ...]]:
    quote = backend(engine).quote
    key = names.side_keys(["id"])[0] if names.side else "id"
    columns = ", ".join(quote(c) for c in (*names.signature_words, *names.wide_blocks))
    with engine.connect() as connection:
        found = connection.execute(text(f"SELECT {quote(key)}, {columns} FROM {quote(names.holder)} WHERE {quote(names.fingerprint)} IS NOT NULL")).all()
    return {row[0]: (*(unsigned(engine, w) for w in row[1:5]), *row[5:]) for row in found}


@pytest.mark.parametrize("mode", ["columns", "side_table"])
def test_the_database_cuts_blocks_as_the_layout_says(any_engine: Engine, mode: str) -> None:
    model = MODELS[mode]
    texts = _load(any_engine, model)
    binding = binding_for(model)
    layout = binding.names.layout
    assert layout != WIDE_LAYOUT and len(binding.wide_blocks) == layout.count
    stored = _stored(any_engine, binding.names)
    for key, body in texts.items():
        signature = binding.fingerprinter.signature(body)
        assert stored[key] == (*signature.words, *signature.blocks(layout))
    with any_engine.connect() as connection:
        entry = simsql.store.registry.read(connection, model.__tablename__)
    assert entry is not None and entry.mode == f"{mode}+wide{layout.count}x{layout.width}" and entry.names.layout == layout


@pytest.mark.parametrize("mode", ["columns", "side_table"])
def test_wide_search_and_find_original_on_a_wider_layout(any_engine: Engine, mode: str) -> None:
    model = MODELS[mode]
    texts = _load(any_engine, model)
    binding = binding_for(model)
    layout = binding.names.layout
    signatures = {key: binding.fingerprinter.signature(body) for key, body in texts.items()}
    rng = random.Random(9)
    with Session(any_engine) as session:
        for key in rng.sample(sorted(texts), 8):
            target = binding.fingerprinter.signature(texts[key] + " and one more sentence")
            for budget, bound in ((layout.count, 256), (60, 96), (400, 120)):
                groups = probe_groups(target, budget, 0, layout)
                expected = sorted(
                    (target.distance(s), k)
                    for k, s in signatures.items()
                    if any(s.blocks(layout)[b] in values for b, values in groups.items()) and target.distance(s) <= bound
                )
                rows = session.execute(wide_search(model, target, bound, budget=budget, limit=1000)).all()
                assert [(d, row.id) for row, d in rows] == expected
        for original in range(1, 11):
            body = texts[original]
            for copy in (f"{HEADER}\n\n{body}\n\n{FOOTER}", "\n".join(reversed(body.split("\n")))):
                match = simsql.find_original(session, model, copy)
                assert match is not None and match.row.id in {original, *_copies_of(original)}
        assert simsql.find_original(session, model, "Parliament debated the new tax law until late at night") is None
        near = session.scalars(select(model).where(simsql.similar_to(model, texts[3], max_distance=3))).all()
        assert 3 in {row.id for row in near}


def _copies_of(original: int) -> set[int]:
    return {10 + 3 * (original - 1) + k for k in (1, 2, 3)} if original <= 4 else set()


@pytest.mark.parametrize("mode", ["columns", "side_table"])
@pytest.mark.parametrize("radius", [0, 1, 2, 3])
def test_near_duplicates_is_the_stated_rule_on_the_layout(any_engine: Engine, mode: str, radius: int) -> None:
    model = MODELS[mode]
    texts = _load(any_engine, model)
    binding = binding_for(model)
    layout = binding.names.layout
    signatures = {key: binding.fingerprinter.signature(body) for key, body in texts.items()}
    shingles = {key: shingled(body) for key, body in texts.items()}
    expected = []
    for a, b in combinations(sorted(texts), 2):
        sa, sb = signatures[a], signatures[b]
        near = any((x ^ y).bit_count() <= radius for x, y in zip(sa.blocks(layout), sb.blocks(layout)))
        if near and sa.distance(sb) <= 96:
            share = pair_containment(shingles[a], shingles[b])
            if share >= 0.5:
                expected.append((a, b, sa.distance(sb)))
    with Session(any_engine) as session:
        pairs = simsql.near_duplicates(session, model, probe_radius=radius, wide_distance=96)
    assert [(p.a, p.b, p.distance) for p in pairs] == expected
    if radius >= 1:  # each 1% copy with its original
        assert {(k, min(_copies_of(k))) for k in range(1, 5)} <= {(p.a, p.b) for p in pairs}


# -- attach, reattach, detach -------------------------------------------------------------------


def _plain_table(engine: Engine, table: str, rows: list[dict[str, Any]]) -> None:
    quoted = backend(engine).quote(table)
    run(engine, f"CREATE TABLE {quoted} (id INT PRIMARY KEY, title VARCHAR(200), body {'TEXT' if is_mysql(engine) else 'text'})")
    if rows:
        with engine.begin() as connection:
            connection.execute(text(f"INSERT INTO {quoted} (id, title, body) VALUES (:id, :title, :body)"), rows)


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_attach_table_with_wide_blocks_backfills_answers_and_detaches_leaving_nothing(any_engine: Engine, side_table: bool) -> None:
    rows = _rows()
    simsql.alembic.upgrade(any_engine)
    _plain_table(any_engine, "notes", rows)
    before = state(any_engine, "notes")
    entry = simsql.attach_table(any_engine, "notes", ["title", "body"], wide=True, wide_blocks="10x24", side_table=side_table)
    names = entry.names
    assert entry.mode == ("side_table" if side_table else "columns") + "+wide10x24" and names.layout == WIDER
    result = simsql.backfill(any_engine, "notes", workers=0, batch_size=9)
    assert result.indexes_built == names.indexes and len(names.indexes) == 4 + 10
    # the blocks an attached table derives (a trigger on PostgreSQL's columns, generated columns
    # elsewhere) are the layout's, as Python cuts them
    fingerprinter = simsql.Fingerprinter(version=3)
    stored = _stored(any_engine, names)
    for row in rows:
        signature = fingerprinter.signature("\n".join(p for p in (row["title"], row["body"]) if p is not None))
        assert stored[row["id"]] == (*signature.words, *signature.blocks(WIDER))
    # attaching again: the same layout (or none named) changes nothing; another one is refused
    assert simsql.attach_table(any_engine, "notes", ["title", "body"], wide=True, side_table=side_table).mode == entry.mode
    assert simsql.attach_table(any_engine, "notes", ["title", "body"], wide_blocks=WIDER, side_table=side_table).mode == entry.mode
    with pytest.raises(SchemaError, match="already attached with wide blocks 10x24.*--wide-blocks 8x20"):
        simsql.attach_table(any_engine, "notes", ["title", "body"], wide=True, wide_blocks="8x20", side_table=side_table)
    assert simsql.status(any_engine)[0].mode == entry.mode

    with any_engine.connect() as connection:
        reflected = simsql.reflect(connection, "notes")
    assert len(binding_for(reflected).wide_blocks) == 10
    with Session(any_engine) as session:
        for original in rows[:10]:
            match = simsql.find_original(session, reflected, f"{HEADER}\n\n{original['body']}\n\n{FOOTER}")
            assert match is not None and match.row.id in {original["id"], *_copies_of(original["id"])}
        pairs = simsql.near_duplicates(session, reflected, probe_radius=1, wide_distance=96)
        assert {(k, min(_copies_of(k))) for k in range(1, 5)} <= {(p.a, p.b) for p in pairs}

    assert simsql.detach_table(any_engine, "notes").mode == entry.mode
    after = state(any_engine, "notes")
    assert after == before


def test_wide_blocks_without_the_wide_signature_is_refused(any_engine: Engine) -> None:
    simsql.alembic.upgrade(any_engine)
    _plain_table(any_engine, "notes", _rows()[:3])
    before = state(any_engine, "notes")
    with pytest.raises(SchemaError, match="pass wide=True too"):
        simsql.attach_table(any_engine, "notes", ["title", "body"], wide=False, wide_blocks="10x24")
    with pytest.raises(SchemaError, match="16 to 31 bits"):
        simsql.attach_table(any_engine, "notes", ["title", "body"], wide=True, wide_blocks="10x32")
    assert state(any_engine, "notes") == before
    with pytest.raises(SchemaError, match="pass wide=True too"):
        simsql.attach_model(Plain, ["body"], wide=False, wide_blocks="10x24")


class Plain(LayoutBase):
    __tablename__ = "plain"
    id: Mapped[int] = mapped_column(primary_key=True)
    body: Mapped[str | None] = mapped_column(Text)


def test_an_8x20_table_recorded_the_old_way_reads_back_unchanged(any_engine: Engine) -> None:
    simsql.alembic.upgrade(any_engine)
    _plain_table(any_engine, "notes", _rows()[:12])
    entry = simsql.attach_table(any_engine, "notes", ["title", "body"], wide=True)
    assert entry.mode == "columns+wide" and entry.names.layout == WIDE_LAYOUT and len(entry.names.wide_blocks) == 8
    simsql.backfill(any_engine, "notes", workers=0)
    with any_engine.connect() as connection:
        reflected = simsql.reflect(connection, "notes")
    with Session(any_engine) as session:
        body = session.get(reflected, 2).body  # type: ignore[union-attr]
        match = simsql.find_original(session, reflected, f"{HEADER}\n\n{body}\n\n{FOOTER}")
        assert match is not None and match.row.id == 2
    simsql.detach_table(any_engine, "notes")


# -- the Alembic operations ---------------------------------------------------------------------


def _layout_migration() -> Any:
    from alembic.operations import ops

    from simsql.alembic import AddSimHashOp, CreateSimHashIndexesOp

    return ops.UpgradeOps(ops=[
        AddSimHashOp("docs", ["title", "body"], primary_key=["id"], wide=True, wide_blocks="10x24"),
        CreateSimHashIndexesOp("docs", primary_key=["id"], wide=True, wide_blocks=WIDER),
    ])  # fmt: skip


def test_the_operations_carry_and_render_the_layout() -> None:
    from alembic.autogenerate import render_python_code

    from simsql.alembic import AddSimHashOp, CreateSimHashIndexesOp

    from .test_alembic_render import _body

    migration = _layout_migration()
    code, undo = _body(render_python_code(migration)), _body(render_python_code(migration.reverse()))
    assert "op.add_simhash('docs', ['title', 'body'], primary_key=['id'], wide=True, wide_blocks='10x24')" in code
    assert "op.create_simhash_indexes('docs', primary_key=['id'], wide=True, wide_blocks='10x24')" in code
    assert "op.drop_simhash('docs', source=['title', 'body'], primary_key=['id'], wide=True, wide_blocks='10x24')" in undo
    assert AddSimHashOp("docs", ["body"], wide_blocks="10x24").names.layout == WIDER  # wide_blocks alone: wide
    assert CreateSimHashIndexesOp("docs", wide_blocks="10x24").names.wide_blocks[-1] == "simhash_v9"
    plain = type(migration)(ops=[AddSimHashOp("docs", ["body"], wide=True)])
    assert "wide_blocks" not in _body(render_python_code(plain))
    with pytest.raises(SchemaError, match="16 to 31 bits"):
        AddSimHashOp("docs", ["body"], wide=True, wide_blocks="10x40")
    with pytest.raises(SchemaError, match="pass wide=True too"):
        AddSimHashOp("docs", ["body"], wide=False, wide_blocks="10x24").names  # noqa: B018


def test_online_operations_attach_a_layout_and_undo_it(any_engine: Engine) -> None:
    from alembic.autogenerate import render_python_code
    from alembic.runtime.migration import MigrationContext

    from .tables import build_docs
    from .test_alembic_render import _body, _migrate

    build_docs(any_engine, rows=30)
    simsql.alembic.upgrade(any_engine)
    before = state(any_engine)
    migration = _layout_migration()
    with any_engine.begin() as connection:
        _migrate(_body(render_python_code(migration)), MigrationContext.configure(connection))
    with any_engine.connect() as connection:
        entry = simsql.store.registry.read(connection, "docs")
        assert entry is not None and entry.mode == "columns+wide10x24"
        indexes = {n.lower() for n in simsql.lifecycle.catalog.index_names(connection, entry.table_schema, "docs")}
    assert {n.lower() for n in entry.names.indexes} <= indexes and len(entry.names.indexes) == 14
    simsql.backfill(any_engine, "docs", workers=0)
    assert simsql.status(any_engine)[0].rows_missing_wide == 0
    with any_engine.begin() as connection:
        _migrate(_body(render_python_code(migration.reverse())), MigrationContext.configure(connection))
    assert state(any_engine) == before


def test_offline_scripts_build_a_layout(tmp_path: Any, fresh_database: str) -> None:
    from sqlalchemy import create_engine

    from .tables import build_docs
    from .test_alembic_render import _offline_scripts
    from .test_readme_alembic import _psql

    engine = create_engine(fresh_database)
    try:
        build_docs(engine, rows=30)
        simsql.alembic.upgrade(engine)
        before = state(engine)
        scripts = _offline_scripts(_layout_migration())
        _psql(fresh_database, scripts[0], tmp_path)
        assert "simhash_v9" in scripts[0] and "columns+wide10x24" in scripts[0]
        simsql.backfill(engine, "docs", workers=0)
        assert simsql.status(engine)[0].rows_missing_wide == 0
        stored = _stored(engine, Names("docs", wide=True, layout=WIDER))
        fingerprinter = simsql.Fingerprinter(version=3)
        with engine.connect() as connection:
            for key, title, body in connection.execute(text("SELECT id, title, body FROM docs")).all():
                joined = "\n".join(p for p in (title, body) if p is not None)
                if key in stored:
                    signature = fingerprinter.signature(joined)
                    assert stored[key] == (*signature.words, *signature.blocks(WIDER))
        _psql(fresh_database, scripts[1], tmp_path)
        assert state(engine) == before
    finally:
        engine.dispose()


# -- moving a table's layout online (refingerprint) ---------------------------------------------


def _blocks_agree(engine: Engine, names: Names) -> int:
    """Every stored wide block is the layout's cut of its row's words; returns the rows checked."""
    stored = _stored(engine, names)
    for key, (*words, ) in stored.items():
        value = sum(int(word) << (64 * k) for k, word in enumerate(words[:4]))
        mask = (1 << names.layout.width) - 1
        wanted = tuple((value >> (i * names.layout.width)) & mask for i in range(names.layout.count))
        assert tuple(words[4:]) == wanted, f"row {key}: blocks are not the layout's cut of its words"
    return len(stored)


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_a_wide_table_moves_its_blocks_online_while_writers_run(engine: Engine, url: str, side_table: bool) -> None:
    import threading

    from simsql.lifecycle.refingerprinting import refingerprint

    from .command_line import cli
    from .tables import ROWS, build_docs, writer

    build_docs(engine)
    simsql.alembic.upgrade(engine)
    before = state(engine)
    entry = simsql.attach_table(engine, "docs", ["title", "body"], wide=True, side_table=side_table)
    simsql.backfill(engine, "docs", workers=0)
    assert entry.names.layout == WIDE_LAYOUT
    stop, counts = threading.Event(), {"writes": 0}
    threads = [threading.Thread(target=writer, args=(engine, seed, stop, counts)) for seed in range(2)]
    for thread in threads:
        thread.start()
    try:
        result = refingerprint(engine, "docs", to=simsql.Fingerprinter(version=3), wide_blocks="10x24", batch_size=100, workers=2)
        with engine.connect() as connection:
            moved = simsql.store.registry.read(connection, "docs")
        assert moved is not None and moved.names.layout == WIDER
        _blocks_agree(engine, moved.names)  # right after the switch, writers still running
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    assert counts["writes"] > 20, f"the writers barely ran: {counts}"
    assert result.switched and result.from_config == result.to_config and moved.mode.endswith("+wide10x24")
    simsql.backfill(engine, "docs", workers=0)  # rows the writers changed after the switch
    assert _blocks_agree(engine, moved.names) > ROWS // 2
    report = simsql.status(engine)[0]
    assert (report.mode, report.rows_missing, report.rows_missing_wide, report.rows_stale) == (moved.mode, 0, 0, 0)
    with engine.connect() as connection:
        reflected = simsql.reflect(connection, "docs")
        indexes = {n.lower() for n in simsql.lifecycle.catalog.index_names(connection, moved.table_schema, moved.names.holder)}
        leftovers = connection.execute(text(
            "SELECT attname FROM pg_attribute WHERE attrelid IN (SELECT oid FROM pg_class WHERE relnamespace = "
            "CAST(current_schema() AS regnamespace) AND relkind = 'r') AND attname LIKE '%next%' AND NOT attisdropped"
        )).all()  # fmt: skip
        key, title, body = connection.execute(text("SELECT id, title, body FROM docs WHERE body IS NOT NULL ORDER BY id")).first()  # type: ignore[misc]
    assert {n.lower() for n in moved.names.indexes} <= indexes and leftovers == []
    with Session(engine) as session:
        found = simsql.find_original(session, reflected, f"Header of a copy\n\n{title}\n{body}\n\nfooter")
        assert found is not None and found.row.id == key
    # and back, from the command line; then detach leaves the table as it was
    assert refingerprint(engine, "docs", to=simsql.Fingerprinter(version=3), wide_blocks="10x24").switched is False
    back = cli("refingerprint", "--table", "docs", "--wide-blocks", "8x20", "--no-progress", url=url)
    assert back.returncode == 0 and "cut into blocks of 8x20" in back.stdout, back.stderr
    assert simsql.status(engine)[0].mode == ("side_table" if side_table else "columns") + "+wide"
    simsql.detach_table(engine, "docs")
    after = state(engine)  # the writers changed the rows: the table's definition and triggers are as before
    assert (after["create"], after["triggers"], after["registry"]) == (before["create"], before["triggers"], before["registry"])


def _attached_docs(engine: Engine, rows: int) -> dict[str, Any]:
    """``docs`` of ``rows`` rows attached with the wide signature (8 x 20) and backfilled: its state."""
    from .tables import build_docs

    build_docs(engine, rows=rows)
    simsql.alembic.upgrade(engine)
    simsql.attach_table(engine, "docs", ["title", "body"], wide=True)
    simsql.backfill(engine, "docs", workers=0)
    return state(engine)


def test_an_unfinished_layout_move_resumes_only_as_started_and_abandons_cleanly(engine: Engine) -> None:
    from simsql.lifecycle.refingerprinting import refingerprint

    attached = _attached_docs(engine, rows=300)

    class Stop(Exception):
        pass

    def stop(done: int, total: int) -> None:
        raise Stop

    v3 = simsql.Fingerprinter(version=3)
    with pytest.raises(SchemaError, match="version 3"):
        refingerprint(engine, "docs", to=simsql.Fingerprinter(), wide_blocks="10x24")
    with pytest.raises(Stop):
        refingerprint(engine, "docs", to=v3, wide_blocks="10x24", batch_size=50, workers=0, progress=stop)
    with pytest.raises(SchemaError, match="with 10 wide blocks is in progress"):
        refingerprint(engine, "docs", to=v3, wide_blocks="12x20")
    with pytest.raises(SchemaError, match="10x24 is in progress"):  # the same count, another width
        refingerprint(engine, "docs", to=v3, wide_blocks="10x22")
    refingerprint(engine, "docs", to=v3, abandon=True)
    assert state(engine) == attached
    with pytest.raises(Stop):
        refingerprint(engine, "docs", to=v3, wide_blocks="10x24", batch_size=50, workers=0, progress=stop)
    result = refingerprint(engine, "docs", to=v3, wide_blocks="10x24", workers=0)
    assert result.switched and result.resumed and simsql.status(engine)[0].mode == "columns+wide10x24"
    with pytest.raises(Stop):  # a move staged, then the table detached: nothing of either is left
        refingerprint(engine, "docs", to=v3, wide_blocks="8x20", batch_size=50, workers=0, progress=stop)
    simsql.detach_table(engine, "docs")
    with engine.connect() as connection:
        columns = {c.lower() for c in simsql.lifecycle.catalog.require_table(connection, "docs", None).columns}
    assert columns == {"id", "title", "body"}


def test_mysql_moves_no_layout_and_says_how(mysql_engine: Engine) -> None:
    from simsql.lifecycle.refingerprinting import refingerprint
    from simsql.text.errors import UnsupportedDatabase

    attached = _attached_docs(mysql_engine, rows=50)
    with pytest.raises(UnsupportedDatabase, match="moves no block layout.*--wide-blocks"):
        refingerprint(mysql_engine, "docs", to=simsql.Fingerprinter(version=3), wide_blocks="10x24")
    assert state(mysql_engine) == attached


def test_the_command_line_attaches_a_layout_and_refuses_a_bad_one(any_engine: Engine, any_url: str) -> None:
    import json

    from .command_line import cli
    from .tables import build_live_docs

    build_live_docs(any_engine)
    before = state(any_engine)
    bad = cli("attach", "--table", "docs", "--text-column", "body", "--wide-blocks", "12x24", url=any_url)
    assert bad.returncode != 0 and "288 bits; the signature has 256" in bad.stderr
    attached = cli("attach", "--table", "docs", "--text-column", "title", "--text-column", "body", "--wide-blocks", "10x24", "--backfill", url=any_url)
    assert attached.returncode == 0, attached.stderr
    assert "simhash_w1..simhash_v9, blocks 10x24" in attached.stdout and "built 14 block indexes" in attached.stdout
    status = json.loads(cli("status", "--format", "json", url=any_url).stdout)
    assert [(s["mode"], s["missing"], s["missing_wide"]) for s in status] == [("columns+wide10x24", 0, 0)]
    detached = cli("detach", "--table", "docs", url=any_url)
    assert detached.returncode == 0, detached.stderr
    after = state(any_engine)
    assert (after["create"], after["checksum"], after["triggers"]) == (before["create"], before["checksum"], before["triggers"])


def test_a_sqlmodel_model_takes_the_layout_as_the_mixin_does() -> None:
    from sqlmodel import Field, SQLModel

    class LayoutDoc(simsql.WideSimHashMixin, SQLModel, table=True):
        __tablename__ = "layout_docs"
        __simhash_source__ = ("body",)
        __simhash_wide_blocks__ = "10x24"
        id: int | None = Field(default=None, primary_key=True)
        body: str

    table: Any = LayoutDoc.__table__
    assert [c.name for c in table.columns if c.name.startswith("simhash_v")] == [f"simhash_v{i}" for i in range(10)]
    assert "simhash_w3" in str(table.c.simhash_v9.computed.sqltext.compile()) and binding_for(LayoutDoc).names.layout == WIDER
    SQLModel.metadata.remove(table)  # declared for this test only


def test_a_mixin_table_is_attached_with_its_own_layout_only(any_engine: Engine) -> None:
    """``create_all`` of a 10 x 24 mixin model, then ``attach_table``: the table keeps (and the
    registry records) the model's 10 x 24, whatever the default; 8 x 20 asked for is refused,
    and nothing changes."""
    LayoutBase.metadata.create_all(any_engine, tables=[WiderArticle.__table__])  # type: ignore[list-item]
    entry = simsql.attach_table(any_engine, "wider_articles", ["title", "body"], wide=True)
    assert entry.mode == "columns+wide10x24"
    before = state(any_engine, "wider_articles")
    with pytest.raises(SchemaError, match="already attached with wide blocks 10x24"):
        simsql.attach_table(any_engine, "wider_articles", ["title", "body"], wide=True, wide_blocks="8x20")
    assert state(any_engine, "wider_articles") == before
    with Session(any_engine) as session:
        session.add_all([WiderArticle(**row) for row in _rows()[:12]])
        session.commit()
        body = session.get(WiderArticle, 3).body  # type: ignore[union-attr]
        match = simsql.find_original(session, WiderArticle, f"{HEADER}\n\n{body}\n\n{FOOTER}")
        assert match is not None and match.row.id in {3, *_copies_of(3)}


def test_a_model_of_another_layout_than_the_tables_is_refused_before_it_writes(any_engine: Engine) -> None:
    """A 10 x 24 model on a table attached with 8 x 20 (or the other way round) would probe block
    values of one width in columns of the other: its first write says so, and writes nothing."""
    simsql.alembic.upgrade(any_engine)
    _plain_table(any_engine, "wider_articles", [])
    simsql.attach_table(any_engine, "wider_articles", ["title", "body"], wide=True)  # 8 x 20
    with Session(any_engine) as session:
        session.add(WiderArticle(id=1, title="t", body="some text of a few words"))
        with pytest.raises(SchemaError, match="wide blocks 8x20.*WiderArticle declares 10x24"):
            session.commit()
    with any_engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM wider_articles")).scalar_one() == 0


def _wider_articles_declared(**declared: Any) -> type:
    """A mixin model of ``wider_articles`` of its own (its own declarative base), declaring
    ``declared`` (``__simhash_wide_blocks__``, ``__simhash_fingerprinter__``) over the defaults."""

    class OwnBase(DeclarativeBase):
        pass

    namespace = {
        "__tablename__": "wider_articles", "__simhash_source__": ("title", "body"), **declared,
        "__annotations__": {"id": Mapped[int], "title": Mapped[str | None], "body": Mapped[str | None]},
        "id": mapped_column(primary_key=True), "title": mapped_column(String(200)), "body": mapped_column(Text),
    }  # fmt: skip
    return type("DeclaredArticle", (simsql.WideSimHashMixin, OwnBase), namespace)


def _attached_wider(engine: Engine) -> list[dict[str, Any]]:
    """``wider_articles`` made by hand, attached with 10 x 24 and backfilled: its rows."""
    simsql.alembic.upgrade(engine)
    rows = _rows()
    _plain_table(engine, "wider_articles", rows)
    simsql.attach_table(engine, "wider_articles", ["title", "body"], wide=True, wide_blocks="10x24")
    simsql.backfill(engine, "wider_articles", workers=0)
    return rows


def test_a_model_of_another_layout_than_the_tables_is_refused_before_it_reads(any_engine: Engine) -> None:
    """A model declaring 8 x 20 (the mixin's default) on a table attached with 10 x 24 holds the
    same eight block column names: its probes would read them as 20-bit values where the table
    cut 24 bits, and find nothing, silently. Every query of it is refused instead, naming both
    layouts, as its writes are."""
    default_layout = _wider_articles_declared()
    rows = _attached_wider(any_engine)
    copy = f"{HEADER}\n\n{rows[2]['body']}\n\n{FOOTER}"
    with Session(any_engine) as session:
        match = simsql.find_original(session, WiderArticle, copy)  # the table's own layout finds it
        assert match is not None and match.row.id in {3, *_copies_of(3)}
    refused = "wide blocks 10x24.*declares 8x20"
    with Session(any_engine) as session:
        with pytest.raises(SchemaError, match=refused):
            simsql.find_original(session, default_layout, copy)
    with Session(any_engine) as session:
        with pytest.raises(SchemaError, match=refused):
            simsql.near_duplicates(session, default_layout, by_text=True)
    with Session(any_engine) as session:
        with pytest.raises(SchemaError, match=refused):
            session.scalars(simsql.most_similar(select(default_layout), 3, limit=5)).all()


def test_the_originality_check_of_a_model_of_another_configuration_is_refused(any_engine: Engine) -> None:
    """``find_original`` of a model whose configuration is not the table's (here: another seed,
    the right layout) is refused as every other query of it is, before its probes run: its
    signatures would never meet the stored ones."""
    from simsql.text.errors import ConfigMismatch

    other_seed = _wider_articles_declared(__simhash_wide_blocks__="10x24", __simhash_fingerprinter__=simsql.Fingerprinter(version=3, seed=5))
    rows = _attached_wider(any_engine)
    with Session(any_engine) as session:
        with pytest.raises(ConfigMismatch, match="holds fingerprints of config"):
            simsql.find_original(session, other_seed, f"{HEADER}\n\n{rows[2]['body']}\n\n{FOOTER}")
