"""Properties of fingerprint arithmetic (hamming is a metric, the int64 mapping round-trips)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import simsql
import simsql.bits

u64 = st.integers(min_value=0, max_value=2**64 - 1)


@given(u64, u64)
def test_hamming_range_and_symmetry(a: int, b: int) -> None:
    d = simsql.bits.hamming(a, b)
    assert 0 <= d <= 64
    assert d == simsql.bits.hamming(b, a)
    assert (d == 0) == (a == b)


@given(u64, u64, u64)
def test_hamming_triangle_inequality(a: int, b: int, c: int) -> None:
    assert simsql.bits.hamming(a, c) <= simsql.bits.hamming(a, b) + simsql.bits.hamming(b, c)


@given(u64, u64)
def test_similarity_and_cosine_follow_distance(a: int, b: int) -> None:
    d = simsql.bits.hamming(a, b)
    assert simsql.bits.similarity(a, b) == pytest.approx(1 - d / 64)
    assert simsql.bits.cosine_estimate(a, b) == pytest.approx(math.cos(math.pi * d / 64))


@pytest.mark.parametrize("value", [0, 1, 2**63 - 1, 2**63, 2**64 - 1])
def test_signed_round_trip_edges(value: int) -> None:
    signed = simsql.bits.to_signed(value)
    assert -(2**63) <= signed < 2**63
    assert simsql.bits.to_unsigned(signed) == value


def test_signed_mapping_values() -> None:
    assert simsql.bits.to_signed(2**63) == -(2**63)
    assert simsql.bits.to_signed(2**64 - 1) == -1
    assert simsql.bits.to_signed(2**63 - 1) == 2**63 - 1


@given(u64, u64)
def test_signed_mapping_preserves_xor(a: int, b: int) -> None:
    sa, sb = simsql.bits.to_signed(a), simsql.bits.to_signed(b)
    assert simsql.bits.to_unsigned(sa ^ sb) == a ^ b


@pytest.mark.parametrize("bad", [-1, 2**64, 2**70])
def test_out_of_range_unsigned_rejected(bad: int) -> None:
    with pytest.raises(ValueError, match="2\\*\\*64"):
        simsql.bits.to_signed(bad)
    with pytest.raises(ValueError):
        simsql.bits.hamming(bad, 0)


@pytest.mark.parametrize("bad", [-(2**63) - 1, 2**63])
def test_out_of_range_signed_rejected(bad: int) -> None:
    with pytest.raises(ValueError):
        simsql.bits.to_unsigned(bad)


@pytest.mark.parametrize("bad", [None, 1.0, "12", True, b"\x00"])
def test_wrong_types_rejected(bad: object) -> None:
    with pytest.raises(TypeError):
        simsql.bits.hamming(bad, 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        simsql.bits.to_signed(bad)  # type: ignore[arg-type]


def test_blocks_most_significant_first() -> None:
    assert simsql.bits.blocks(0x0123_4567_89AB_CDEF) == (0x0123, 0x4567, 0x89AB, 0xCDEF)
    assert simsql.bits.blocks(0x0123_4567_89AB_CDEF, n=2) == (0x01234567, 0x89ABCDEF)
    with pytest.raises(ValueError):
        simsql.bits.blocks(1, n=3)


@given(u64, st.lists(st.integers(min_value=0, max_value=63), max_size=3))
def test_pigeonhole_within_three_bits_shares_a_block(a: int, flips: list[int]) -> None:
    b = a
    for bit in set(flips):
        b ^= 1 << bit
    assert any(x == y for x, y in zip(simsql.bits.blocks(a), simsql.bits.blocks(b)))
