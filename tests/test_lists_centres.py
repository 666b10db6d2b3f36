"""The pure math of partition lists (:mod:`simsql.text.lists`), no server: k-modes on 64-bit
fingerprints and spherical k-means on vectors are deterministic from the sample and the seed,
use every centre, place each row as brute force does (lowest list on ties), order a query's
lists nearest first, and refuse bad arguments with a clear error."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from simsql.text.lists import LIST_SPAN, Centres, check_lists, check_probes, fit_means, fit_modes


def _fingerprints(n: int = 1500, seed: int = 1) -> np.ndarray:
    """``n`` fingerprints around 12 random modes (each bit flipped with probability 0.12), sign
    bit included."""
    rng = random.Random(seed)
    modes = [rng.getrandbits(64) for _ in range(12)]
    out = []
    for _ in range(n):
        value = rng.choice(modes)
        for bit in range(64):
            if rng.random() < 0.12:
                value ^= 1 << bit
        out.append(value)
    return np.array(out, dtype=np.uint64)


def _vectors(n: int = 1500, dimensions: int = 16, seed: int = 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(9, dimensions))
    return centres[rng.integers(0, 9, n)] + 0.6 * rng.normal(size=(n, dimensions))


def _hamming(a: int, b: int) -> int:
    return bin(a ^ b).count("1")


def test_fit_modes_is_deterministic_from_the_sample_and_the_seed() -> None:
    sample = _fingerprints()
    first = fit_modes(sample, 20, seed=7)
    again = fit_modes(sample.copy(), 20, seed=7)
    assert first.dtype == np.uint64 and first.shape == (20,)
    assert np.array_equal(first, again)
    assert not np.array_equal(first, fit_modes(sample, 20, seed=8))


def test_fit_means_is_deterministic_from_the_sample_and_the_seed() -> None:
    sample = _vectors()
    first = fit_means(sample, 20, seed=7)
    again = fit_means(sample.copy(), 20, seed=7)
    assert first.shape == (20, sample.shape[1])
    assert np.array_equal(first, again)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0)
    assert not np.array_equal(first, fit_means(sample, 20, seed=8))


@pytest.mark.parametrize("lists", [1, 7, 40])
def test_every_centre_holds_rows(lists: int) -> None:
    """No list is left empty: every centre is the nearest of some sampled row."""
    modes = Centres(1, "modes", fit_modes(_fingerprints(), lists, seed=3))
    assert set(modes.place(_fingerprints()).tolist()) == {LIST_SPAN + i for i in range(lists)}
    means = Centres(1, "means", fit_means(_vectors(), lists, seed=3))
    assert set(means.place(_vectors()).tolist()) == {LIST_SPAN + i for i in range(lists)}


def test_place_is_the_brute_force_nearest_modes() -> None:
    """Hamming distance, the lowest list on ties; including centres planted to tie."""
    sample = _fingerprints()
    values = fit_modes(sample, 16, seed=1)
    values[5] = values[2]  # an exact tie: every row nearest 2 also is nearest 5; 2 must win
    centres = Centres(3, "modes", values)
    rows = [*(int(v) for v in sample[:400]), *(int(v) for v in values), 0, (1 << 64) - 1]
    placed = centres.place(np.array(rows, dtype=np.uint64)).tolist()
    for row, value in zip(rows, placed):
        distances = [_hamming(row, int(c)) for c in values]
        assert value == 3 * LIST_SPAN + distances.index(min(distances))
    assert 3 * LIST_SPAN + 5 not in placed


def test_place_is_the_brute_force_nearest_means() -> None:
    sample = _vectors()
    values = fit_means(sample, 16, seed=1)
    values[9] = values[4]
    centres = Centres(2, "means", values)
    rows = np.concatenate([sample[:400], values * 3.0])  # lengths do not matter, only directions
    placed = centres.place(rows).tolist()
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    for row, value in zip(unit, placed):
        cosines = [float(row @ c) for c in values]
        best = max(cosines)
        assert value == 2 * LIST_SPAN + next(i for i, c in enumerate(cosines) if c >= best - 1e-12)
    assert 2 * LIST_SPAN + 9 not in placed
    assert centres.place(sample[0]).tolist() == [placed[0]]  # one vector: one list


def test_nearest_lists_modes_nearest_first_lowest_on_ties() -> None:
    values = np.array([0b1111, 0b0000, 0b0011, 0b0001, 0b0011, 1 << 63], dtype=np.uint64)
    centres = Centres(1, "modes", values)
    base = LIST_SPAN
    # distances from 0b0001: 3, 1, 1, 0, 1, 2 -> lists 3, then 1, 2, 4 (ties by list), then 5, 0
    assert centres.nearest(0b0001, 6) == [base + 3, base + 1, base + 2, base + 4, base + 5, base + 0]
    assert centres.nearest(0b0001, 2) == [base + 3, base + 1]
    assert centres.nearest(0b0001, 100) == centres.nearest(0b0001, 6)  # more probes than lists: all


def test_nearest_lists_means_by_cosine() -> None:
    values = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    centres = Centres(2, "means", values)
    base = 2 * LIST_SPAN
    assert centres.nearest([0.0, 5.0], 5) == [base + 1, base + 3, base + 4, base + 0, base + 2]
    target = np.array([0.3, 0.9])
    cosines = values @ (target / np.linalg.norm(target))
    expected = sorted(range(5), key=lambda i: (-cosines[i], i))
    assert centres.nearest(target, 3) == [base + i for i in expected[:3]]


@pytest.mark.parametrize("lists", [0, -1, LIST_SPAN + 1])
def test_lists_out_of_range_are_refused(lists: int) -> None:
    with pytest.raises(ValueError, match="lists"):
        fit_modes(_fingerprints(50), lists)
    with pytest.raises(ValueError, match="lists"):
        fit_means(_vectors(50), lists)


@pytest.mark.parametrize("lists", [True, 2.0, "3", None])
def test_lists_of_another_type_are_refused(lists: Any) -> None:
    with pytest.raises(TypeError, match="lists must be an int"):
        fit_modes(_fingerprints(50), lists)
    with pytest.raises(TypeError, match="lists must be an int"):
        check_lists(lists)


def test_more_lists_than_distinct_rows_are_refused() -> None:
    repeated = np.array([5, 5, 9, 9, 9, 12], dtype=np.uint64)
    assert len(fit_modes(repeated, 3)) == 3
    with pytest.raises(ValueError, match="3 distinct fingerprints, fewer than lists=4"):
        fit_modes(repeated, 4)
    vectors = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 0.0]])  # two directions, one zero
    assert len(fit_means(vectors, 2)) == 2
    with pytest.raises(ValueError, match="2 distinct vectors, fewer than lists=3"):
        fit_means(vectors, 3)
    with pytest.raises(ValueError, match="non-empty 2-D"):
        fit_means(np.zeros((0, 4)), 1)


@pytest.mark.parametrize("probes", [0, -1, -100])
def test_probes_below_one_are_refused(probes: int) -> None:
    centres = Centres(1, "modes", np.array([1, 2, 3], dtype=np.uint64))
    with pytest.raises(ValueError, match="probes must be at least 1"):
        centres.nearest(1, probes)
    with pytest.raises(ValueError, match="probes must be at least 1"):
        check_probes(probes)


@pytest.mark.parametrize("probes", [True, False, 1.0, 2.5, "2", None])
def test_probes_of_another_type_are_refused(probes: Any) -> None:
    centres = Centres(1, "means", np.eye(3))
    with pytest.raises(TypeError, match="probes must be an int"):
        centres.nearest([1.0, 0.0, 0.0], probes)


@pytest.mark.parametrize("generation", [0, -1, 1 << 15])
def test_generation_out_of_range_is_refused(generation: int) -> None:
    with pytest.raises(ValueError, match="generation"):
        Centres(generation, "modes", np.array([1], dtype=np.uint64))


def test_held_out_rows_a_fit_asks_by_table_size() -> None:
    """1,000 held-out rows up to a million rows (their brute force reads the table once each),
    fewer above so the curve costs about what it costs at a million, never fewer than 200."""
    from simsql.text.lists import recall_queries

    assert [recall_queries(n) for n in (50, 1800, 1_000_000, 2_000_000, 50_000_000)] == [50, 1000, 1000, 500, 200]
