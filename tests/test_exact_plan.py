"""Exact ``most_similar``: whether the bands past the first run is decided before they run
(:mod:`simsql.queries.plan_choice`), and the answer never depends on the decision.

On PostgreSQL the executed plan is read (``EXPLAIN (ANALYZE, FORMAT JSON)``): a target with no
row within 3 bits, on a table whose size says ``limit`` rows are not to be expected within the
bands' reach, never executes a band probe past the first (nor the count that budgets it); a
target with a near row still runs them. Exactness is checked against brute force on every
server, for near, far, tied and clustered targets, on tables whose blocks are skewed.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.orm import Session

import simsql
from simsql.queries import plan_choice

from .models import MODELS
from .tables import brute_force, load_fingerprints

MODES = sorted(MODELS)


@pytest.fixture(autouse=True)
def _bands_at_every_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tables are small; the banded plan they test runs on tables estimated at 1M rows or
    more (``plan_size.BANDS_FROM_ROWS``): every size here, so the bands stay covered."""
    from simsql.queries import plan_size

    monkeypatch.setattr(plan_size, "BANDS_FROM_ROWS", 0)


def _flip(rng: random.Random, value: int, bits: int) -> int:
    for bit in rng.sample(range(64), bits):
        value ^= 1 << bit
    return value


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    found = [plan]
    for child in plan.get("Plans", []):
        found.extend(_nodes(child))
    return found


def _band_probe_loops(engine: Engine, statement: Any) -> list[int]:
    """``Actual Loops`` of every index scan that probes a block with several values (the bands
    past the first and their budget counts; band 0 probes one value per block)."""
    sql = str(statement.compile(engine, compile_kwargs={"literal_binds": True}))
    with engine.connect() as connection:
        raw = connection.execute(text("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)).scalar_one()
    plan = (raw if isinstance(raw, list) else json.loads(raw))[0]["Plan"]
    conditions = ("Index Cond", "Recheck Cond", "Filter")  # index, bitmap or (small tables) seq scans
    return [int(node["Actual Loops"]) for node in _nodes(plan) if any("= ANY" in str(node.get(c, "")) for c in conditions)]


@pytest.mark.parametrize("mode", MODES)
def test_far_target_never_runs_the_wider_bands(engine: Engine, mode: str) -> None:
    """20,000 uniform fingerprints: the statistics expect a few hundredths of a row within the
    bands' reach (radius 2, 11 bits) of a target with no near row, so its plan is band 0 and the
    scan; the probes of bands 1 and 2 (and their budget counts) are in the statement but never
    executed. A target with a copy 2 bits away runs
    them. Both answers are the brute-force ones."""
    from .models import Base

    Base.metadata.create_all(engine)
    model = MODELS[mode]
    rng = random.Random(21)
    fingerprints: list[int | None] = [rng.getrandbits(64) for _ in range(20_000)]
    near = _flip(rng, fingerprints[17] or 0, 2)
    load_fingerprints(engine, model, fingerprints)
    assert plan_choice.expected_within([1, 1, 1, 1], 20_000, 11) < plan_choice.EXPECTED_ROWS / 10  # the statistics say: scan
    far = rng.getrandbits(64)
    far_loops = _band_probe_loops(engine, simsql.most_similar(select(model), far, limit=10))
    assert far_loops and all(loops == 0 for loops in far_loops), far_loops
    near_loops = _band_probe_loops(engine, simsql.most_similar(select(model), near, limit=10))
    assert any(loops > 0 for loops in near_loops), near_loops
    with Session(engine) as session:
        for query in (far, near):
            got = [(row[0].id, row.distance) for row in session.execute(simsql.most_similar(select(model), query, limit=10))]
            assert got == brute_force(fingerprints, query, 10, None)


def _skewed_corpus(seed: int) -> tuple[list[int | None], list[int]]:
    """Fingerprints whose blocks are skewed (a third of the rows share one of a few values in
    each block, as common words make real text do), and targets of every kind: far, a copy
    within 3 bits, a cluster at 4-11 bits with nothing nearer, ties at one distance, and a
    target inside the crowded buckets."""
    rng = random.Random(seed)
    crowded = [rng.getrandbits(16) for _ in range(3)]

    def skewed() -> int:
        words = [rng.choice(crowded) if rng.random() < 0.35 else rng.getrandbits(16) for _ in range(4)]
        return (words[0] << 48) | (words[1] << 32) | (words[2] << 16) | words[3]

    fingerprints: list[int | None] = [skewed() for _ in range(2500)]
    far, copied, clustered, tied, crowd = (skewed() | (1 << 63) for _ in range(5))
    fingerprints += [_flip(rng, copied, rng.randint(0, 3)) for _ in range(2)] + [_flip(rng, copied, d) for d in range(4, 14)]
    fingerprints += [_flip(rng, clustered, rng.randint(4, 11)) for _ in range(14)]
    fingerprints += [_flip(rng, tied, 6) for _ in range(12)] + [_flip(rng, tied, 2)]
    fingerprints += [_flip(rng, crowd, rng.randint(0, 12)) for _ in range(20)] + [None] * 5
    rng.shuffle(fingerprints)
    return fingerprints, [far, copied, clustered, tied, crowd, rng.getrandbits(64)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.filterwarnings("error::sqlalchemy.exc.SAWarning")  # a cartesian product (side table + exclusion) was one
def test_most_similar_is_exact_whichever_way_the_bands_are_decided(tables: Engine, mode: str) -> None:
    """Against brute force, with limits and probe radii on both sides of the decision (limit 1
    with radius 4 makes the table's size alone call for the bands), a stored row's own fingerprint
    with the row excluded (its copy at 0 bits is then no evidence), exclusions that empty band 0, and a filter."""
    model = MODELS[mode]
    fingerprints, queries = _skewed_corpus(seed=31)
    load_fingerprints(tables, model, fingerprints)
    with Session(tables) as session:
        for query in queries:
            for limit, radius, bound in ((10, 2, None), (1, 2, None), (25, 1, None), (1, 4, None), (12, 3, None), (10, 2, 20)):
                statement = simsql.most_similar(select(model), query, limit=limit, probe_radius=radius, max_distance=bound)
                got = [(row[0].id, row.distance) for row in session.execute(statement)]
                assert got == brute_force(fingerprints, query, limit, bound), (query, limit, radius, bound)
            near = [key for key, _ in brute_force(fingerprints, query, 3, 3)]
            statement = simsql.most_similar(select(model).where(model.category == "even"), query, limit=10, exclude=near)
            got = [(row[0].id, row.distance) for row in session.execute(statement)]
            assert got == brute_force(fingerprints, query, 10, None, keep=lambda key: key % 2 == 0 and key not in near), query
        key, mine = next((i + 1, fp) for i, fp in enumerate(fingerprints) if fp is not None)
        got = [(r[0].id, r.distance) for r in session.execute(simsql.most_similar(select(model), mine, limit=10, exclude=[key]))]
        assert got == brute_force(fingerprints, mine, 10, None, keep=lambda other: other != key)
