"""Exact ``most_similar``'s scan, bounded before its sort: on MySQL and MariaDB the scan keeps only
rows within the ``limit``-th smallest distance among the rows sharing a block value with the
target (:class:`simsql.dialects.SortBound`), so its sort builds keys for a few rows, not all.

The bound is only right if it counts each such row once (a row sharing three blocks is three
index hits), leaves out the rows the query excludes (the target's own row shares every block,
at distance 0), and keeps every row tied at it (ties are broken by key, among rows that share a
block and rows that do not). Each case below is built so that a bound that got one of these
wrong drops a row of the answer; answers are checked against brute force on every server (on
PostgreSQL the scan is not bounded: the same answers)."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

import simsql
import simsql.bits

from .models import Article
from .tables import brute_force, load_fingerprints

TARGET = 0x8F3A_51C2_7E09_B4D6


@pytest.fixture(autouse=True)
def _bands_at_every_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The full plan (bands, then the scan) on these small tables too (``plan_size.BANDS_FROM_ROWS``)."""
    from simsql.queries import plan_size

    monkeypatch.setattr(plan_size, "BANDS_FROM_ROWS", 0)


def _flipped(value: int, per_block: tuple[int, int, int, int], rng: random.Random) -> int:
    """``value`` with ``per_block[j]`` bits flipped in block ``j`` (block 0 is the top 16 bits)."""
    for block, bits in enumerate(per_block):
        low = 48 - 16 * block
        for bit in rng.sample(range(low, low + 16), bits):
            value ^= 1 << bit
    return value


def _planted() -> list[int]:
    """Keys 1-3: no block shared, at 7, 7 and 5 bits; 4: shares blocks 0-2, 6 bits off in block 3
    (three index hits); 5-8: share block 0, 7 bits off in the others (ties with keys 1-2)."""
    rng = random.Random(41)
    return [
        _flipped(TARGET, (2, 2, 2, 1), rng),
        _flipped(TARGET, (1, 2, 2, 2), rng),
        _flipped(TARGET, (2, 1, 1, 1), rng),
        _flipped(TARGET, (0, 0, 0, 6), rng),
        *(_flipped(TARGET, (0, 3, 2, 2), rng) for _ in range(4)),
    ]


def _table(engine: Engine) -> list[int | None]:
    """:func:`_planted`, key 9 the target's own fingerprint, then 400 random rows and rows without
    a fingerprint. Nothing but key 9 lies within 3 bits, so band 0 never fills and the scan answers."""
    rng = random.Random(34)
    fingerprints: list[int | None] = [*_planted(), TARGET, *(rng.getrandbits(64) for _ in range(400)), None, None, None]
    load_fingerprints(engine, Article, fingerprints)
    return fingerprints


def test_the_bounded_scan_keeps_every_row_of_the_answer(tables: Engine) -> None:
    fingerprints = _table(tables)
    with Session(tables) as session:
        for limit in (1, 2, 3, 4, 5, 6, 8):
            everyone = simsql.most_similar(select(Article), TARGET, limit=limit)
            assert [(r[0].id, r.distance) for r in session.execute(everyone)] == brute_force(fingerprints, TARGET, limit, None), limit
            for excluded in ([9], [9, 3], [9, 4, 1]):  # key 9 (the target, as a row target is) shares every block
                others = simsql.most_similar(select(Article), TARGET, limit=limit, exclude=excluded)
                expected = brute_force(fingerprints, TARGET, limit, None, keep=lambda key: key not in excluded)
                assert [(r[0].id, r.distance) for r in session.execute(others)] == expected, (limit, excluded)


def test_the_cases_are_the_ones_described() -> None:
    """The table holds what the bound could get wrong: without the exclusion key 9 alone would bound
    a top-1 at 0 bits; counted per index hit, key 4 alone would bound a top-3 at 6 bits (keys 3, 1
    and 2 lie at 5, 7 and 7); the 7-bit ties span rows that share a block and rows that do not."""
    planted = _planted()
    distances = [simsql.bits.hamming(fp, TARGET) for fp in planted]
    assert distances == [7, 7, 5, 6, 7, 7, 7, 7]
    shared = [sum((fp >> s) & 0xFFFF == (TARGET >> s) & 0xFFFF for s in (48, 32, 16, 0)) for fp in planted]
    assert shared == [0, 0, 0, 3, 1, 1, 1, 1]
