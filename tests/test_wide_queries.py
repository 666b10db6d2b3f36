"""The wide index stage (simsql.queries.wide) against brute force on both servers: the statement
returns exactly the rows some budgeted probe reaches within the distance bound, nearest first,
every row within count - 1 bits (the pigeonhole bound) is among them, and the database answers from the block indexes."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

import simsql
from simsql.errors import NotAttached
from simsql.queries.wide import probe_groups, wide_search
from simsql.schema.names import WIDE_LAYOUT, Names
from simsql.text.signature import Signature

from .models import Article
from .wide_models import WIDE_MODELS, WideBase

MODES = ["columns", "side_table"]
WORDS = [f"w{i}" for i in range(300)]


def _texts(n: int, seed: int) -> list[str]:
    """Some random texts and many lightly edited copies of them, so distances spread from 0 up."""
    rng = random.Random(seed)
    bases = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 80))) for _ in range(n // 4)]
    out = list(bases)
    while len(out) < n:
        words = rng.choice(bases).split()
        for _ in range(rng.randint(0, 6)):
            words[rng.randrange(len(words))] = rng.choice(WORDS)
        out.append(" ".join(words))
    return out


def _load(engine: Engine, mode: str, texts: list[str]) -> type:
    WideBase.metadata.create_all(engine)
    model = WIDE_MODELS[mode]
    with Session(engine) as session:
        session.add_all([model(id=i, title=None, body=t) for i, t in enumerate(texts, 1)])
        session.commit()
    return model


def _brute(signatures: list[Signature], target: Signature, budget: int, max_distance: int) -> list[tuple[int, int]]:
    groups = probe_groups(target, budget)
    found = []
    for key, signature in enumerate(signatures, 1):
        blocks = signature.blocks(WIDE_LAYOUT)
        reached = any(blocks[block] in values for block, values in groups.items())
        if reached and target.distance(signature) <= max_distance:
            found.append((target.distance(signature), key))
    return sorted(found)


@pytest.mark.parametrize("mode", MODES)
def test_candidates_are_the_brute_force_answer(any_engine: Engine, mode: str) -> None:
    texts = _texts(240, seed=7)
    model = _load(any_engine, mode, texts)
    fingerprinter = simsql.Fingerprinter()
    signatures = [s for s in fingerprinter.signatures_many(texts) if s is not None]
    rng = random.Random(3)
    with Session(any_engine) as session:
        for query in rng.sample(texts, 12):
            target = fingerprinter.signature(query + " " + rng.choice(WORDS))
            for budget, bound in ((12, 256), (48, 96), (200, 60)):
                rows = session.execute(wide_search(model, target, bound, budget=budget, limit=1000)).all()
                assert [(d, row.id) for row, d in rows] == _brute(signatures, target, budget, bound)


@pytest.mark.parametrize("mode", MODES)
def test_every_row_within_the_pigeonhole_bound_is_a_candidate(any_engine: Engine, mode: str) -> None:
    texts = _texts(200, seed=11)
    model = _load(any_engine, mode, texts)
    fingerprinter = simsql.Fingerprinter()
    signatures = fingerprinter.signatures_many(texts)
    with Session(any_engine) as session:
        for query in texts[:20]:
            target = fingerprinter.signature(query)
            near = {key for key, s in enumerate(signatures, 1) if s is not None and target.distance(s) <= WIDE_LAYOUT.count - 1}
            found = {row.id for row, _ in session.execute(wide_search(model, target, 256, budget=WIDE_LAYOUT.count, limit=1000))}
            assert near <= found and near


def test_the_wide_search_refuses_tables_without_the_signature_and_bad_arguments(any_engine: Engine) -> None:
    target = simsql.Fingerprinter().signature("a few words of text")
    with pytest.raises(NotAttached, match="WideSimHashMixin"):
        wide_search(Article, target)
    for bad in (-1, 257, True):
        with pytest.raises(ValueError, match="max_distance"):
            wide_search(WIDE_MODELS["columns"], target, bad)
    with pytest.raises(ValueError, match="budget"):
        wide_search(WIDE_MODELS["columns"], target, budget=3)


def _plan(session: Session, statement: object) -> str:
    compiled = statement.compile(session.bind, compile_kwargs={"literal_binds": True})  # type: ignore[attr-defined]
    return "\n".join(" ".join(str(v) for v in row) for row in session.execute(text(f"EXPLAIN {compiled}")))


@pytest.mark.parametrize("mode", MODES)
def test_the_probes_read_the_block_indexes(any_engine: Engine, mode: str) -> None:
    texts = _texts(1200, seed=5)
    model = _load(any_engine, mode, texts)
    names = Names(model.__tablename__ if mode == "columns" else f"{model.__tablename__}_simhash", wide=True)
    target = simsql.Fingerprinter().signature(texts[0])
    with Session(any_engine) as session:
        session.execute(text(f"ANALYZE {'TABLE ' if any_engine.dialect.name != 'postgresql' else ''}{names.table}"))
        if any_engine.dialect.name == "postgresql":
            # 1,200 rows: the planner may read a small table's page or two instead of an index;
            # what is asked here is that every block's probe can be answered from its index
            session.execute(text("SET LOCAL enable_seqscan = off"))
        plan = _plan(session, wide_search(model, target))
    used = [index for index in names.wide_indexes if index in plan]
    assert len(used) == WIDE_LAYOUT.count, plan


@pytest.mark.parametrize("mode", MODES)
def test_a_later_stage_probes_only_its_own_values(any_engine: Engine, mode: str) -> None:
    """find_original's second stage: the statement built once, given the probes from the 64th
    on (some blocks get none, an empty array or IN list), returns exactly the rows those reach."""
    from simsql.queries.wide import wide_parameters, wide_statement

    texts = _texts(240, seed=9)
    model = _load(any_engine, mode, texts)
    fingerprinter = simsql.Fingerprinter()
    signatures = [s for s in fingerprinter.signatures_many(texts) if s is not None]
    rng = random.Random(5)
    with Session(any_engine) as session:
        for query in rng.sample(texts, 8):
            target = fingerprinter.signature(query + " " + rng.choice(WORDS))
            groups = probe_groups(target, 72, 64)
            assert len(groups) < WIDE_LAYOUT.count and sum(map(len, groups.values())) == 8
            rows = session.execute(wide_statement(model, 1000), wide_parameters(target, 256, groups)).all()
            expected = sorted(
                (target.distance(s), key) for key, s in enumerate(signatures, 1)
                if any(s.blocks(WIDE_LAYOUT)[block] in values for block, values in groups.items())
            )  # fmt: skip
            assert [(d, row.id) for row, d in rows] == expected


def test_the_probe_budget_grows_for_texts_of_few_features() -> None:
    """512 probes for a text of 500 distinct features or more, in inverse proportion below, at
    most 2,048; a signature without a feature count (from its words, or a vector) gets 512;
    and ``wide_search`` takes the text's own budget unless given one."""
    from simsql.queries.wide import WIDE_BUDGET, WIDE_MAX_BUDGET, probe_budget

    def budget(features: int) -> int:
        return probe_budget(Signature((1, 2, 3, 4), (0.01,) * 256, features))

    assert [budget(n) for n in (0, 5000, 500, 499, 250, 200, 125, 124, 1)] == [512, 512, 512, 514, 1024, 1280, 2048, 2048, 2048]
    assert (WIDE_BUDGET, WIDE_MAX_BUDGET) == (512, 2048)
    short = simsql.Fingerprinter().signature("a short text of a few words")
    assert probe_budget(short) == WIDE_MAX_BUDGET

    def probed(budget: int | None) -> list[object]:
        bound = wide_search(WIDE_MODELS["columns"], short, budget=budget).compile(dialect=postgresql.dialect()).params
        return [bound[f"simsql_v{block}"] for block in range(WIDE_LAYOUT.count)]

    assert probed(None) == probed(WIDE_MAX_BUDGET) != probed(WIDE_BUDGET)


def test_probe_groups_are_the_probes_grouped_by_block_in_probe_order() -> None:
    """``probe_groups`` (grouped in numpy) holds, per block, exactly the values :func:`probes`
    (the reference order: cost, then block, then subset) probes there, in that order, for budgets
    of the table path and past it, and for a later stage's slice."""
    from simsql.text.signature import probes

    fingerprinter = simsql.Fingerprinter(version=3)
    for body in _texts(12, seed=43):
        signature = fingerprinter.signature(body)
        for budget, start in ((8, 0), (8, 8), (64, 0), (64, 8), (513, 64), (4096, 0), (4096, 2000)):
            expected: dict[int, list[int]] = {}
            for probe in probes(signature, WIDE_LAYOUT, budget=budget)[start:]:
                expected.setdefault(probe.block, []).append(probe.value)
            found = probe_groups(signature, budget, start)
            assert found == expected
            assert all(type(value) is int for values in found.values() for value in values)


@pytest.mark.parametrize("layout", [None, "10x24"])
@pytest.mark.parametrize("mode", MODES)
def test_the_candidates_statements_stay_short_enough_for_psycopg_to_cache(mode: str, layout: str | None) -> None:
    """Issue 43: psycopg 3 caches the conversion of a statement's ``%(name)s`` placeholders only
    for statements of at most 4,096 bytes (``psycopg._queries.MAX_CACHED_STATEMENT_LENGTH``);
    a longer one is parsed again on every execution (about 0.3 ms, once or twice per check). So
    the statements of find_original stay under it on PostgreSQL for both the default and the
    10 x 24 layout, a table name of 30 characters and a schema of 30 given by
    ``schema_translate_map`` (which qualifies every column by schema and table). What keeps them
    short: each branch of the probes' union reads the words, and the 256-bit distance is
    written once, outside it (PostgreSQL pushes its filter into every branch)."""
    from sqlalchemy.dialects.postgresql import psycopg
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

    from simsql.queries.wide import wide_keys_statement, wide_statement, wide_text_statement

    class OwnBase(DeclarativeBase):
        pass

    name = "a_table_name_of_thirty_chars_x"
    if mode == "columns":
        model: type = type("Long", (simsql.WideSimHashMixin, OwnBase), {
            "__tablename__": name, "__simhash_source__": ("title", "body"), "__simhash_wide_blocks__": layout,
            "__annotations__": {"id": Mapped[int], "title": Mapped[str | None], "body": Mapped[str | None]},
            "id": mapped_column(primary_key=True), "title": mapped_column(), "body": mapped_column(),
        })  # fmt: skip
    else:
        model = type("LongPost", (OwnBase,), {
            "__tablename__": name,
            "__annotations__": {"id": Mapped[int], "title": Mapped[str | None], "body": Mapped[str | None]},
            "id": mapped_column(primary_key=True), "title": mapped_column(), "body": mapped_column(),
        })  # fmt: skip
        simsql.attach_model(model, source=("title", "body"), wide=True, wide_blocks=layout)
    translate = {None: "a_schema_name_of_thirty_chars_"}
    for statement in (wide_statement(model, 4), wide_text_statement(model, 16), wide_keys_statement(model, 16)):
        sql = str(statement.compile(dialect=psycopg.dialect(), schema_translate_map=translate, render_schema_translate=True))
        assert translate[None] in sql and len(sql.encode()) <= 4096, (len(sql), sql)
