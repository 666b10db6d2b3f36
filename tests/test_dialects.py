"""The dialect seam: version refusal and the compiled Hamming expression."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.dialects import mysql, postgresql

import simsql
from simsql import UnsupportedDatabase
from simsql.dialects import probe_values, radius_for

from .models import Article


def _compile(dialect: object) -> str:
    return str(select(Article.simhash.hamming_distance(5)).compile(dialect=dialect))


def test_postgres_older_than_14_is_refused_with_its_version() -> None:
    dialect = postgresql.psycopg.dialect()
    dialect.server_version_info = (13, 11)
    with pytest.raises(UnsupportedDatabase, match="PostgreSQL 13.11"):
        _compile(dialect)


def test_postgres_14_compiles_xor_and_bit_count() -> None:
    dialect = postgresql.psycopg.dialect()
    dialect.server_version_info = (14, 0)
    assert "bit_count(CAST((articles.simhash #" in _compile(dialect)


def test_other_backends_are_refused_by_name() -> None:
    with pytest.raises(UnsupportedDatabase, match="mysql"):
        _compile(mysql.dialect())


def test_probe_sets_have_the_multi_index_sizes() -> None:
    assert [len(probe_values(0xBEEF, r)) for r in range(4)] == [1, 17, 137, 697]
    assert len(set(probe_values(0xBEEF, 2))) == 137
    assert all(simsql.hamming(v, 0xBEEF) <= 2 for v in probe_values(0xBEEF, 2))
    assert [radius_for(d) for d in (0, 3, 4, 7, 8, 11, 12)] == [0, 0, 1, 1, 2, 2, 3]


def test_live_server_is_new_enough(engine) -> None:  # type: ignore[no-untyped-def]
    from simsql.dialects import check_server

    with engine.connect() as connection:
        check_server(connection)


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(st.integers(0, 2**64 - 1), st.sets(st.integers(0, 63), max_size=3))
def test_pair_masks_catch_every_pair_within_three_bits(a: int, flips: set[int]) -> None:
    from simsql.queries import _pair_masks

    b = a
    for bit in flips:
        b ^= 1 << bit
    assert any((a & mask) == (b & mask) for mask in _pair_masks())
