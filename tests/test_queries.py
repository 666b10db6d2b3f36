"""Similarity queries on every server (PostgreSQL, and MySQL/MariaDB when one answers): exactness
against brute force, both storage modes; and on MySQL/MariaDB, plans that read the block
indexes, not every row (a MariaDB plan that is correct but correlated per row is a full scan in
disguise). How fingerprints are stored: tests/test_storage.py."""

from __future__ import annotations

import random
from typing import Any

import pytest
from sqlalchemy import Engine, insert, select, text
from sqlalchemy.orm import Session

import simsql
import simsql.bits
import simsql.dialects
import simsql.queries
import simsql.store
from simsql import EmptyDocument
from simsql.bits import hamming
from simsql.errors import NotAttached

from .models import MODELS, Article, Base, Comment
from .tables import brute_force, explain, load_fingerprints

MODES = sorted(MODELS)


@pytest.fixture(autouse=True)
def _bands_at_every_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tables are small; the banded plan they test runs on tables estimated at 1M rows or
    more (``plan_size.BANDS_FROM_ROWS``): every size here, so the bands stay covered."""
    from simsql.queries import plan_size

    monkeypatch.setattr(plan_size, "BANDS_FROM_ROWS", 0)


def _planted_corpus(seed: int, size: int = 3000) -> tuple[list[int | None], list[int]]:
    """Random fingerprints, sign bit included, plus neighbours planted at 0..12 bits of queries."""
    rng = random.Random(seed)
    fingerprints: list[int | None] = [rng.getrandbits(64) for _ in range(size)]
    queries = [rng.getrandbits(64) | (1 << 63) for _ in range(6)] + [rng.getrandbits(64) for _ in range(4)]
    for query in queries:
        for distance in range(0, 13):
            for _ in range(rng.randint(0, 2)):
                flipped = query
                for bit in rng.sample(range(64), distance):
                    flipped ^= 1 << bit
                fingerprints.append(flipped)
    fingerprints.extend([None] * 20)
    rng.shuffle(fingerprints)
    return fingerprints, queries


@pytest.mark.parametrize("mode", MODES)
def test_similar_to_is_exact(tables: Engine, mode: str) -> None:
    model = MODELS[mode]
    fingerprints, queries = _planted_corpus(seed=1)
    load_fingerprints(tables, model, fingerprints)
    with Session(tables) as session:
        for query in queries:
            for max_distance in (0, 1, 3, 5, 8):
                found = set(session.scalars(select(model.id).where(simsql.similar_to(model, query, max_distance))))
                expected = {key for key, _ in brute_force(fingerprints, query, 10**9, max_distance)}
                assert found == expected, (query, max_distance)


@pytest.mark.parametrize("mode", MODES)
def test_queries_compile_once_per_shape(tables: Engine, mode: str) -> None:
    """Repeated ``similar_to`` and ``most_similar`` queries reuse one compiled statement per
    bound and limit (no per-call SQL building), and the cached statement carries each call's
    own values."""
    from sqlalchemy import event

    model = MODELS[mode]
    fingerprints, queries = _planted_corpus(seed=5)
    load_fingerprints(tables, model, fingerprints)
    stats: list[str] = []

    def record(conn: Any, cursor: Any, statement: Any, parameters: Any, context: Any, executemany: bool) -> None:
        stats.append(context._get_cache_stats())

    event.listen(tables, "before_cursor_execute", record)
    try:
        with Session(tables) as session:
            for max_distance in (3, 7):
                first = len(stats)
                for query in queries:
                    found = set(session.scalars(select(model.id).where(simsql.similar_to(model, query, max_distance))))
                    assert found == {key for key, _ in brute_force(fingerprints, query, 10**9, max_distance)}
                mine = [s for s in stats[first:] if not s.startswith("raw")]  # registry checks run raw
                assert mine[0].startswith("generated") and all(s.startswith("cached") for s in mine[1:]), mine
            for limit, max_distance in ((5, None), (16, 11)):
                first = len(stats)
                for query in queries:
                    statement = simsql.most_similar(select(model), query, limit=limit, max_distance=max_distance)
                    got = [(row[0].id, row.distance) for row in session.execute(statement)]
                    assert got == brute_force(fingerprints, query, limit, max_distance)
                mine = [s for s in stats[first:] if not s.startswith("raw")]
                assert mine[0].startswith("generated") and all(s.startswith("cached") for s in mine[1:]), mine
    finally:
        event.remove(tables, "before_cursor_execute", record)
    key_a = select(model.id).where(simsql.similar_to(model, queries[0], 3))._generate_cache_key()
    key_b = select(model.id).where(simsql.similar_to(model, queries[1], 3))._generate_cache_key()
    assert key_a == key_b


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("probe_radius", [0, 2])
def test_most_similar_is_exact(tables: Engine, mode: str, probe_radius: int) -> None:
    model = MODELS[mode]
    fingerprints, queries = _planted_corpus(seed=2)
    load_fingerprints(tables, model, fingerprints)
    with Session(tables) as session:
        for query in queries:
            for limit, max_distance in ((10, None), (3, None), (25, None), (10, 3), (50, 9)):
                statement = simsql.most_similar(select(model), query, limit=limit, max_distance=max_distance, probe_radius=probe_radius)
                got = [(row[0].id, row.distance) for row in session.execute(statement)]
                assert got == brute_force(fingerprints, query, limit, max_distance)


def _flip(rng: random.Random, value: int, bits: int) -> int:
    for bit in rng.sample(range(64), bits):
        value ^= 1 << bit
    return value


@pytest.mark.parametrize("mode", MODES)
def test_most_similar_exact_where_band_zero_does_or_does_not_fill(tables: Engine, mode: str) -> None:
    """The branch points of the exact plan (MySQL/MariaDB: band 0 alone, then the scan only if
    band 0 found fewer than ``limit`` rows): queries with limit - 1, limit and limit + 1 rows
    within 3 bits, ties across the 3/4-bit boundary, only far rows, fewer rows than the limit,
    NULL fingerprints, exclusions that empty band 0, and a filter; against brute force."""
    model = MODELS[mode]
    rng = random.Random(8)
    limit = 5
    fingerprints: list[int | None] = [rng.getrandbits(64) for _ in range(1500)] + [None] * 10
    queries = [rng.getrandbits(64) | (1 << 63) for _ in range(4)] + [rng.getrandbits(64) for _ in range(3)]
    for within, query in zip((limit - 1, limit, limit + 1, 0), queries):
        fingerprints += [_flip(rng, query, rng.randint(0, 3)) for _ in range(within)]
        fingerprints += [_flip(rng, query, 3), _flip(rng, query, 4), _flip(rng, query, 4)]  # ties at the boundary
        fingerprints += [_flip(rng, query, d) for d in range(5, 13)]
    rng.shuffle(fingerprints)
    load_fingerprints(tables, model, fingerprints)

    def near_keys(query: int, bits: int) -> list[int]:
        return [key for key, d in brute_force(fingerprints, query, 10**9, bits)]

    with Session(tables) as session:
        for query in queries:
            for size in (1, limit - 1, limit, limit + 1, 12):
                got = [(r[0].id, r.distance) for r in session.execute(simsql.most_similar(select(model), query, limit=size))]
                assert got == brute_force(fingerprints, query, size, None), (query, size)
            band_zero = near_keys(query, 3)
            for excluded in (band_zero[:1], band_zero, band_zero[:2] + near_keys(query, 4)[-1:]):
                statement = simsql.most_similar(select(model), query, limit=limit, exclude=excluded)
                got = [(r[0].id, r.distance) for r in session.execute(statement)]
                assert got == brute_force(fingerprints, query, limit, None, keep=lambda key: key not in excluded), (query, excluded)
            filtered = simsql.most_similar(select(model).where(model.category == "even"), query, limit=limit, exclude=band_zero[:1])
            got = [(r[0].id, r.distance) for r in session.execute(filtered)]
            assert got == brute_force(fingerprints, query, limit, None, keep=lambda key: key % 2 == 0 and key not in band_zero[:1])
            few = simsql.most_similar(select(model).where(model.id <= 3), query, limit=limit)
            got = [(r[0].id, r.distance) for r in session.execute(few)]
            assert got == brute_force(fingerprints, query, limit, None, keep=lambda key: key <= 3)
            for max_distance in (3, 4, 12, 20):
                got = [(r[0].id, r.distance) for r in session.execute(simsql.most_similar(select(model), query, limit=limit, max_distance=max_distance))]
                assert got == brute_force(fingerprints, query, limit, max_distance), (query, max_distance)


@pytest.mark.parametrize("mode", MODES)
def test_most_similar_composes_with_filters(tables: Engine, mode: str) -> None:
    model = MODELS[mode]
    fingerprints, queries = _planted_corpus(seed=3)
    load_fingerprints(tables, model, fingerprints)
    with Session(tables) as session:
        for query in queries[:4]:
            statement = simsql.most_similar(select(model).where(model.category == "even"), query, limit=7)
            got = [(row[0].id, row.distance) for row in session.execute(statement)]
            assert got == brute_force(fingerprints, query, 7, None, keep=lambda key: key % 2 == 0)
            similarities = [row.similarity for row in session.execute(statement)]
            assert similarities == [1 - d / 64 for _, d in got]


@pytest.mark.parametrize("mode", MODES)
def test_instance_target_excludes_itself_and_text_targets(tables: Engine, mode: str) -> None:
    model = MODELS[mode]
    with Session(tables) as session:
        base = "The quick brown fox jumps over the lazy dog while the farmer watches from the old barn door"
        a = model(title="fox", body=base)
        b = model(title="fox", body=base + " again")
        c = model(title="tax", body="Parliament debated the new tax law for small businesses until late at night")
        session.add_all([a, b, c])
        session.commit()
        rows = session.execute(simsql.most_similar(select(model), a, limit=5)).all()
        assert [r[0].id for r in rows] == [b.id, c.id]
        rows = session.execute(simsql.most_similar(select(model), a, limit=5, exclude=[b])).all()
        assert [r[0].id for r in rows] == [c.id]
        original = simsql.find_original(session, model, "fox\n" + base)
        assert original is not None and original.row.id == a.id and original.distance == 0
        assert simsql.find_original(session, model, "Completely unrelated words about cooking pasta with garlic") is None
        with pytest.raises(EmptyDocument):
            simsql.find_original(session, model, "   ")
        with pytest.raises(TypeError):
            simsql.most_similar(select(model), None)
        with pytest.raises(ValueError):
            simsql.most_similar(select(model), 2**64)
        with pytest.raises(ValueError):
            simsql.most_similar(select(model).order_by(model.id), 1)


@pytest.mark.parametrize("mode", MODES)
def test_near_duplicates_and_groups(tables: Engine, mode: str) -> None:
    model = MODELS[mode]
    fingerprints, _ = _planted_corpus(seed=4, size=2000)
    load_fingerprints(tables, model, fingerprints)
    expected = sorted(
        (i + 1, j + 1, hamming(a, b))
        for i, a in enumerate(fingerprints)
        for j, b in enumerate(fingerprints)
        if i < j and a is not None and b is not None and hamming(a, b) <= 3
    )
    with Session(tables) as session:
        pairs = simsql.near_duplicates(session, model, max_distance=3)
        assert [tuple(p) for p in pairs] == expected
        assert expected, "the planted corpus must contain near-duplicates"
        groups = simsql.duplicate_groups(session, model, max_distance=3)
        linked = {key for pair in expected for key in pair[:2]}
        assert sorted(k for g in groups for k in g) == sorted(linked)
        for a, b, _ in expected:
            assert any(a in g and b in g for g in groups)
        with pytest.raises(ValueError, match="exact up to"):
            simsql.near_duplicates(session, model, max_distance=4)


@pytest.mark.parametrize("mode", MODES)
def test_most_similar_many_matches_single_queries(tables: Engine, mode: str) -> None:
    model = MODELS[mode]
    fingerprints, queries = _planted_corpus(seed=5)
    load_fingerprints(tables, model, fingerprints)
    with Session(tables) as session:
        many = simsql.queries.most_similar_many(session, model, [*queries, "", "some words"], limit=4, max_distance=3)
        assert len(many) == len(queries) + 2
        for query, found in zip(queries, many):
            assert found == brute_force(fingerprints, query, 4, 3)
        assert many[len(queries)] == []


def test_modes_give_identical_answers(tables: Engine) -> None:
    fingerprints, queries = _planted_corpus(seed=6, size=1500)
    for model in MODELS.values():
        load_fingerprints(tables, model, fingerprints)
    with Session(tables) as session:
        for query in queries:
            answers = [
                [(r[0].id, r.distance) for r in session.execute(simsql.most_similar(select(m), query, limit=12))]
                for m in MODELS.values()
            ]
            assert answers[0] == answers[1]


def test_unattached_model_is_refused() -> None:
    with pytest.raises(NotAttached, match="attach"):
        simsql.most_similar(select(Comment), "text")


def test_long_table_names_get_valid_index_names() -> None:
    from simsql.schema.names import Names

    name = Names("a_very_long_table_name_that_goes_on_and_on_beyond_the_limit").index("simhash_b0")
    assert len(name.encode()) <= 63 and name.endswith("simhash_b0")


def test_column_comparators_match_python(tables: Engine) -> None:
    fingerprints, queries_ = _planted_corpus(seed=9, size=50)
    load_fingerprints(tables, Article, fingerprints)
    query = queries_[0]
    with Session(tables) as session:
        rows = session.execute(
            select(Article.id, Article.simhash, Article.simhash.hamming_distance(query), Article.simhash.similarity(query))
            .where(Article.simhash.is_not(None))
            .order_by(Article.simhash.hamming_distance(query), Article.id)
        ).all()
    assert len(rows) == sum(1 for f in fingerprints if f is not None)
    for _, fp, distance, sim in rows:
        assert distance == hamming(fp, query)
        assert sim == pytest.approx(simsql.bits.similarity(fp, query))
    assert [r[2] for r in rows] == sorted(r[2] for r in rows)


@pytest.mark.parametrize("mode", MODES)
def test_real_text_fingerprints_are_exact(tables: Engine, mode: str) -> None:
    """Fingerprints of real text (skewed bits, crowded buckets), written through the ORM with
    planted near-copies, against brute force over what the database stored."""
    from simsql.demo import load_corpus, plant_copies

    model = MODELS[mode]
    articles, _ = load_corpus(limit=400, progress=False)
    rows, _ = plant_copies(articles, random.Random(11))
    with Session(tables) as session:
        session.add_all(model(title=row[0], body=row[1]) for row in rows)
        session.commit()
        binding = simsql.store.binding_for(model)
        stored = dict(session.execute(select(binding.table_keys[0], binding.fingerprint)).all())
    fingerprints = [stored.get(i + 1) for i in range(max(stored))]
    queries = [fp for fp in fingerprints[:: max(1, len(fingerprints) // 12)] if fp is not None]
    with Session(tables) as session:
        for query in queries:
            got = [(r[0].id, r.distance) for r in session.execute(simsql.most_similar(select(model), query, limit=15))]
            assert got == brute_force(fingerprints, query, 15, None)
            for max_distance in (3, 9):
                found = set(session.scalars(select(model.id).where(simsql.similar_to(model, query, max_distance))))
                assert found == {key for key, _ in brute_force(fingerprints, query, 10**9, max_distance)}
        pairs = simsql.near_duplicates(session, model, max_distance=3)
        expected = sorted(
            (i + 1, j + 1, hamming(a, b))
            for i, a in enumerate(fingerprints)
            for j, b in enumerate(fingerprints)
            if i < j and a is not None and b is not None and hamming(a, b) <= 3
        )
        assert expected and [tuple(p) for p in pairs] == expected


@pytest.mark.parametrize("limit", [0, -1, None, True, 2.5, "3"])
def test_most_similar_many_refuses_bad_limits(tables: Engine, limit: Any) -> None:
    """A limit that is not a positive int is a caller's mistake: a clear error, not a database one."""
    with Session(tables) as session:
        with pytest.raises((TypeError, ValueError), match="limit"):
            simsql.queries.most_similar_many(session, Article, ["some words to look up"], limit=limit)


@pytest.mark.parametrize("targets", ["some words to look up", b"some bytes", 12345])
def test_most_similar_many_refuses_a_single_target(tables: Engine, targets: Any) -> None:
    """A str is a Sequence: iterating it would look up each character as its own text."""
    with Session(tables) as session:
        with pytest.raises(TypeError, match="targets"):
            simsql.queries.most_similar_many(session, Article, targets)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("budget", [1, 40, 10**6])
def test_most_similar_stays_exact_when_bands_are_skipped(tables: Engine, mode: str, budget: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bands over budget are left to the scan, which then starts where the last band stopped.

    A budget of 1 skips every band past the first, 40 skips some (depending on the query), and
    10**6 none; the answer must not depend on it.
    """
    monkeypatch.setattr(simsql.queries.plan_choice, "BAND_BUDGET", 0.0)
    monkeypatch.setattr(simsql.queries.plan_choice, "MIN_BAND_BUDGET", budget)
    model = MODELS[mode]
    fingerprints, queries = _planted_corpus(seed=11)
    load_fingerprints(tables, model, fingerprints)
    with Session(tables) as session:
        for query in queries:
            for limit, max_distance in ((10, None), (1, None), (40, None), (25, 20), (10, 9)):
                statement = simsql.most_similar(select(model), query, limit=limit, max_distance=max_distance)
                got = [(row[0].id, row.distance) for row in session.execute(statement)]
                assert got == brute_force(fingerprints, query, limit, max_distance), (query, limit, max_distance)


@pytest.mark.parametrize("mode", MODES)
def test_approximate_most_similar_keeps_its_promises(tables: Engine, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``exact=False``: every row within 3 bits is found, in order; with an unspent budget every
    row within ``4 * probe_radius + 3`` bits too; whatever else is returned is a real row at its
    true distance whose block is within ``probe_radius`` bits of the target's. Every radius and
    both budgets on one table (loaded once: the table, not the plan, is what costs)."""
    monkeypatch.setattr(simsql.queries.plan_choice, "BAND_BUDGET", 0.0)
    model = MODELS[mode]
    fingerprints, queries = _planted_corpus(seed=12)
    load_fingerprints(tables, model, fingerprints)
    for probe_radius in (0, 1, 2, 3):
        for budget in (1, 10**6):
            monkeypatch.setattr(simsql.queries.plan_choice, "MIN_BAND_BUDGET", budget)
            _check_approximate_answers(tables, model, fingerprints, queries, probe_radius, budget)


def _check_approximate_answers(
    tables: Engine, model: Any, fingerprints: list[int | None], queries: list[int], probe_radius: int, budget: int
) -> None:
    guaranteed = 4 * probe_radius + 3 if budget > 1 else 3
    with Session(tables) as session:
        for query in queries:
            for max_distance in (None, 9):
                statement = simsql.most_similar(select(model), query, limit=30, max_distance=max_distance, exact=False, probe_radius=probe_radius)
                got = [(row[0].id, row.distance) for row in session.execute(statement)]
                truth = brute_force(fingerprints, query, 10**9, max_distance)
                within = [pair for pair in truth if pair[1] <= guaranteed][:30]
                where = (query, max_distance, probe_radius, budget)
                assert got[: len(within)] == within, where
                assert [d for _, d in got] == sorted(d for _, d in got), where
                assert len({key for key, _ in got}) == len(got), where
                for key, d in got:
                    fp = fingerprints[key - 1]
                    assert fp is not None and hamming(fp, query) == d, where
                    assert max_distance is None or d <= max_distance, where
                    assert min(hamming(a, b) for a, b in zip(simsql.bits.blocks(fp), simsql.bits.blocks(query))) <= probe_radius, where


def test_a_database_without_the_registry_is_probed_once_not_per_query(any_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without simsql's registry (a mixin model, no `simsql db upgrade`), there is nothing to
    check; the answer is cached like a passed check, instead of one extra round trip per query
    (it cost near-duplicate lookups on MariaDB about half their time)."""
    from simsql.store import registry, statement_checks
    Base.metadata.create_all(any_engine)
    with Session(any_engine) as session:
        session.add(Article(id=1, title="t", body="the wheat harvest was late this year"))
        session.commit()
        fingerprint = session.scalars(select(Article.simhash)).one()
    registry.forget(any_engine)
    probes: list[str] = []
    real_check = statement_checks._raw_check

    def counted(connection: Any, check: statement_checks.StatementCheck) -> None:
        probes.append(check.table)
        real_check(connection, check)

    monkeypatch.setattr(statement_checks, "_raw_check", counted)
    with Session(any_engine) as session:
        for _ in range(3):
            assert session.scalars(select(Article.id).where(simsql.similar_to(Article, fingerprint))).all() == [1]
    assert probes == ["articles"]


# -- MySQL/MariaDB: the plans read the block indexes -------------------------------------------


def _explain(engine: Engine, statement: object) -> list[dict[str, object]]:
    sql = str(statement.compile(engine, compile_kwargs={"literal_binds": True}))  # type: ignore[attr-defined]
    with engine.connect() as connection:
        return [dict(row._mapping) for row in connection.execute(text(explain(connection) + sql))]


def _loaded(engine: Engine, size: int = 3000) -> int:
    Base.metadata.create_all(engine)
    rng = random.Random(7)
    rows = [{"id": i + 1, "title": "t", "body": None, "category": "x", "simhash": rng.getrandbits(64)} for i in range(size)]
    with engine.begin() as connection:
        connection.execute(insert(Article.__table__), rows)
        connection.execute(text("ANALYZE TABLE articles"))
    return rng.getrandbits(64)


def test_similar_to_is_not_a_correlated_subquery(mysql_engine: Engine) -> None:
    query = _loaded(mysql_engine)
    plan = _explain(mysql_engine, select(Article.id).where(simsql.similar_to(Article, query, 3)))
    assert not [row for row in plan if "DEPENDENT" in str(row["select_type"])], plan
    probes = [row for row in plan if str(row["key"]).startswith("ix_articles_simhash_b")]
    assert len(probes) == 4 and all(row["type"] in ("ref", "range") for row in probes), plan


def test_most_similar_bands_probe_ranges_and_stored_values_are_unsigned(mysql_engine: Engine) -> None:
    query = _loaded(mysql_engine)
    plan = _explain(mysql_engine, simsql.most_similar(select(Article), query, limit=10, probe_radius=1))
    band_reads = [row for row in plan if str(row["key"]).startswith("ix_articles_simhash_b") and row["type"] != "index"]
    assert band_reads and all(row["type"] in ("ref", "range") for row in band_reads), plan
    with Session(mysql_engine) as session:
        session.execute(text("UPDATE articles SET simhash = 18446744073709551615 WHERE id = 1"))
        stored = session.execute(text("SELECT simhash, simhash_b0 FROM articles WHERE id = 1")).one()
        assert tuple(stored) == (2**64 - 1, 0xFFFF)
        assert session.execute(select(Article.simhash).where(Article.id == 1)).scalar_one() == 2**64 - 1


@pytest.mark.parametrize("argument", ["exact", "scan"])
@pytest.mark.parametrize("value", ["yes", 1, None])
def test_most_similar_refuses_a_flag_that_is_not_a_bool(argument: str, value: object) -> None:
    """``exact="yes"`` was taken as true without a word (found by the Django faces, which check
    it): a flag that is not True or False is refused, naming it, before any statement is built."""
    with pytest.raises(TypeError, match=f"{argument} must be True or False"):
        simsql.most_similar(select(Article), "some text", **{argument: value})


def test_near_duplicates_hash_joins_on_mysql_rather_than_ranging_over_the_keys(mysql_engine: Engine) -> None:
    """MySQL 9 planned each masked self-join as a nested loop with "range checked for each record"
    on ``a.id < b.id`` (half the table read again for every row: 16 x 2,154 x 1,076 rows, 0.6 s a
    mask on 2,154 rows, where the hash join takes 1.3 ms); the join must be a hash join on the mask.
    MariaDB, which cannot hash-join an expression, goes through the block indexes instead."""
    _loaded(mysql_engine)
    statement = simsql.queries.near_duplicates_query(Article, 3, mysql_engine.dialect)
    sql = str(statement.compile(mysql_engine, compile_kwargs={"literal_binds": True}))
    with mysql_engine.connect() as connection:
        if not simsql.dialects.backend(mysql_engine).hash_joins_expressions():
            pytest.skip("the server cannot hash-join an expression: near_duplicates joins the block indexes")
        plan = str(connection.exec_driver_sql("EXPLAIN FORMAT=TREE " + sql).scalar_one())
    assert "re-planned for each iteration" not in plan, plan
    assert plan.count("hash join") == len(simsql.queries.pair_masks()), plan
