"""Partition lists (IVF): centres fitted on a sample, each row placed in the list of its nearest.

"Most similar" without a near copy has no block to probe: the tenth neighbour of an article is
15-20 bits away, of an embedding 70-80 of 256. Partition lists give such queries an index path,
as pgvector's IVFFlat does: ``lists`` centres fitted on a sample of the table, every row placed
in the list of its nearest centre (an integer column with a covering index), and a query that
reads only the rows of the ``probes`` lists nearest to its target. What it gives up: a neighbour
placed in a list that was not probed is missed, so the answer is approximate; more probes, more
recall, more rows read (BENCHMARKS.md measures recall@10 on real text and embeddings).

Two kinds of centres, one per signature:

- ``modes`` (text fingerprints): k-modes on 64-bit fingerprints. Distance is the Hamming
  distance; a centre is the bitwise majority of its members (the fingerprint nearest, in
  Hamming distance, to all of them at once).
- ``means`` (vectors): spherical k-means on the stored vectors scaled to unit length. Distance
  is the cosine; a centre is the normalised mean of its members.

Deterministic from the sample and the seed: the first centres are the sample's rows in the order
of a seeded XXH3 hash of their values (not numpy's generator, whose streams may change between
versions), ties in assignment go to the lowest list, and an emptied list is reseeded with the row
farthest from its centre (lowest index on ties). Pure numpy: no database here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import xxhash

Kind = Literal["modes", "means"]

LIST_SPAN = 1 << 16
"""List numbers of one generation of centres: a row's list value is
``generation * LIST_SPAN + list``, so a refit's lists never share a value with the lists it
replaces, and a query tells "in a live list" from "left behind" by range alone."""

MAX_LISTS = LIST_SPAN
MAX_GENERATION = (1 << 31) // LIST_SPAN - 1
"""The list column is a 32-bit integer."""

DEFAULT_ITERATIONS = 12
_CHUNK = 4096


def default_lists(rows: int) -> int:
    """pgvector's rule for IVFFlat, which BENCHMARKS.md checks on simsql's lists: ``rows / 1000``
    up to a million rows, ``sqrt(rows)`` beyond; at least 1."""
    if rows <= 1_000_000:
        return max(1, rows // 1000)
    return max(1, int(rows**0.5))


def default_sample(lists: int, rows: int) -> int:
    """Rows sampled to fit ``lists`` centres: 50 a list, at least 10,000, at most the table."""
    return min(rows, max(10_000, 50 * lists))


def check_lists(lists: object) -> int:
    if isinstance(lists, bool) or not isinstance(lists, int):
        raise TypeError(f"lists must be an int, got {type(lists).__name__}")
    if not 1 <= lists <= MAX_LISTS:
        raise ValueError(f"lists must be in 1..{MAX_LISTS}, got {lists}")
    return lists


def check_probes(probes: object) -> int:
    if isinstance(probes, bool) or not isinstance(probes, int):
        raise TypeError(f"probes must be an int, got {type(probes).__name__}")
    if probes < 1:
        raise ValueError(f"probes must be at least 1 (the lists read per query), got {probes}")
    return probes


def _hash_order(values: np.ndarray, seed: int) -> np.ndarray:
    """Indexes of ``values``' rows in the order of a seeded hash of each row's bytes (ties, equal
    rows, by index): a shuffle that depends on the sample's contents and the seed alone."""
    rows = np.ascontiguousarray(values).reshape(len(values), -1).view(np.uint8)
    hashes = np.array([xxhash.xxh3_64_intdigest(row.tobytes(), seed=seed) for row in rows], dtype=np.uint64)
    return np.lexsort((np.arange(len(values)), hashes))


def hamming_matrix(fingerprints: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """``[n, lists]`` Hamming distances (uint8) between unsigned 64-bit values."""
    return np.bitwise_count(fingerprints[:, None] ^ centres[None, :]).astype(np.uint8)


def _best(rows: np.ndarray, scores: Any, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """Each row's best centre by ``scores(chunk)`` (``[chunk, lists]``, lower is better; the
    lowest list on ties) and its score, a chunk of rows at a time (memory stays bounded)."""
    if len(rows) <= _CHUNK:  # one chunk (an ORM write's one row): the same arithmetic, nothing copied
        block = scores(rows)
        chosen = block.argmin(axis=1)
        return chosen.astype(np.int64, copy=False), block[np.arange(len(block)), chosen].astype(dtype, copy=False)
    lists = np.empty(len(rows), dtype=np.int64)
    best = np.empty(len(rows), dtype=dtype)
    for start in range(0, len(rows), _CHUNK):
        block = scores(rows[start : start + _CHUNK])
        chosen = block.argmin(axis=1)
        lists[start : start + _CHUNK] = chosen
        best[start : start + _CHUNK] = block[np.arange(len(block)), chosen]
    return lists, best


def nearest_modes(fingerprints: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each fingerprint's nearest centre (lowest list on ties) and its Hamming distance."""
    return _best(fingerprints, lambda chunk: hamming_matrix(chunk, centres), np.int64)


def _majority(members: np.ndarray, current: np.uint64) -> np.uint64:
    """The bitwise majority of ``members`` (unsigned 64-bit); a tied bit keeps ``current``'s."""
    bits = np.unpackbits(members.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    ones = bits.sum(axis=0, dtype=np.int64) * 2
    mine = np.unpackbits(np.array([current], dtype="<u8").view(np.uint8), bitorder="little").astype(bool)
    chosen = np.where(ones == len(members), mine, ones > len(members))
    return np.packbits(chosen, bitorder="little").view("<u8")[0]


def fit_modes(fingerprints: object, lists: int, seed: int = 0, iterations: int = DEFAULT_ITERATIONS) -> np.ndarray:
    """``lists`` centres (unsigned 64-bit) by k-modes on ``fingerprints`` (unsigned 64-bit values).

    ``ValueError`` when the sample holds fewer distinct fingerprints than ``lists``."""
    sample = np.asarray(fingerprints, dtype=np.uint64).ravel()
    check_lists(lists)
    distinct = np.unique(sample)
    if len(distinct) < lists:
        raise ValueError(
            f"the sample holds {len(distinct)} distinct fingerprints, fewer than lists={lists}: "
            "ask for fewer lists (or sample more rows)"
        )
    order = _hash_order(distinct, seed)
    centres = distinct[order[:lists]].copy()
    assigned = np.full(len(sample), -1, dtype=np.int64)
    for _ in range(iterations):
        chosen, distances = nearest_modes(sample, centres)
        if np.array_equal(chosen, assigned):
            break
        assigned = chosen
        counts = np.bincount(assigned, minlength=lists)
        spare = list(np.lexsort((np.arange(len(sample)), -distances)))
        for list_number in range(lists):
            if counts[list_number] == 0:  # reseed with the farthest row not yet used
                while spare and distances[spare[0]] == 0:
                    spare.pop(0)
                if spare:
                    centres[list_number] = sample[spare.pop(0)]
                continue
            centres[list_number] = _majority(sample[assigned == list_number], centres[list_number])
    return centres


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0.0, 1.0, norms)


def nearest_means(unit: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each unit row's nearest centre by cosine (lowest list on ties) and that cosine."""
    lists, negated = _best(unit, lambda chunk: -(chunk @ centres.T), np.float64)
    return lists, -negated


def fit_means(vectors: object, lists: int, seed: int = 0, iterations: int = DEFAULT_ITERATIONS) -> np.ndarray:
    """``lists`` unit centres ``[lists, dimensions]`` (float64) by spherical k-means on ``vectors``."""
    sample = np.asarray(vectors, dtype=np.float64)
    check_lists(lists)
    if sample.ndim != 2 or len(sample) == 0:
        raise ValueError(f"fit_means takes a non-empty 2-D batch of vectors, got shape {sample.shape}")
    unit = unit_rows(sample)
    distinct = np.unique(unit, axis=0)
    distinct = distinct[distinct.any(axis=1)]
    if len(distinct) < lists:
        raise ValueError(
            f"the sample holds {len(distinct)} distinct vectors, fewer than lists={lists}: ask for fewer lists"
        )
    centres = distinct[_hash_order(distinct, seed)[:lists]].copy()
    assigned = np.full(len(unit), -1, dtype=np.int64)
    for _ in range(iterations):
        chosen, cosines = nearest_means(unit, centres)
        if np.array_equal(chosen, assigned):
            break
        assigned = chosen
        counts = np.bincount(assigned, minlength=lists)
        sums = _sums_by_list(unit, assigned, lists)
        spare = list(np.lexsort((np.arange(len(unit)), cosines)))
        for list_number in np.flatnonzero(counts == 0):
            sums[list_number] = unit[spare.pop(0)] if spare else centres[list_number]
        centres = unit_rows(sums)
    return centres


def _sums_by_list(unit: np.ndarray, assigned: np.ndarray, lists: int) -> np.ndarray:
    """``[lists, dimensions]``: the sum of the rows assigned to each list (zeros for none)."""
    order = np.argsort(assigned, kind="stable")
    ordered = assigned[order]
    present, starts = np.unique(ordered, return_index=True)
    sums = np.zeros((lists, unit.shape[1]), dtype=np.float64)
    sums[present] = np.add.reduceat(unit[order], starts, axis=0)
    return sums


@dataclass(frozen=True, eq=False)
class Centres:
    """One generation of fitted centres: how a row is placed and which lists a query reads.

    ``values`` are unsigned 64-bit fingerprints (``kind="modes"``) or unit vectors
    ``[lists, dimensions]`` (``kind="means"``). List ``i`` is stored as ``base + i``."""

    generation: int
    kind: Kind
    values: np.ndarray

    def __post_init__(self) -> None:
        if not 1 <= self.generation <= MAX_GENERATION:
            raise ValueError(f"generation must be in 1..{MAX_GENERATION}, got {self.generation}")

    @property
    def lists(self) -> int:
        return len(self.values)

    @property
    def base(self) -> int:
        return self.generation * LIST_SPAN

    @property
    def last(self) -> int:
        """The highest list value this generation can hold."""
        return self.base + LIST_SPAN - 1

    def place(self, signatures: object) -> np.ndarray:
        """The list values (``base + list``) of unsigned fingerprints (``modes``) or vectors
        (``means``), one per row."""
        if self.kind == "means":
            return self.place_unit(unit_rows(np.atleast_2d(np.asarray(signatures, dtype=np.float64))))
        chosen, _ = nearest_modes(np.asarray(signatures, dtype=np.uint64).ravel(), self.values)
        return chosen + self.base

    def place_unit(self, unit: np.ndarray) -> np.ndarray:
        """:meth:`place` of vectors already at unit length (float64 ``[n, dimensions]``, e.g.
        :meth:`simsql.VectorFingerprinter.unit` of checked ones, the values :func:`unit_rows`
        gives): the same lists, without scaling the vectors again."""
        chosen, _ = nearest_means(unit, self.values)
        return chosen + self.base

    def nearest(self, target: object, probes: int) -> list[int]:
        """The list values of the ``probes`` lists nearest ``target`` (a fingerprint or a vector),
        nearest first (lowest list on ties)."""
        check_probes(probes)
        if self.kind == "modes":
            distances = hamming_matrix(np.array([target], dtype=np.uint64), self.values)[0].astype(np.int64)
        else:
            unit = unit_rows(np.atleast_2d(np.asarray(target, dtype=np.float64)))[0]
            distances = -(self.values @ unit)
        order = np.lexsort((np.arange(self.lists), distances))[:probes]
        return [int(i) + self.base for i in order]


RECALL_K = 10
"""The recall a fit measures is recall@10, as the benchmarks count it."""
RECALL_QUERIES = 1000
"""Held-out rows a fit asks for its neighbours, up to a million rows (:func:`recall_queries`).
The recall a query asks is kept at one-sided 95% confidence over them, so their number is the
margin a query pays in lists: at 1M rows of real text, ``recall=0.95`` probed 54-66 lists from
curves of 200 rows, 52-53 from curves of 1,000 (BENCHMARKS.md, issue 41, "The lists chosen in
Python"), for 3-7 s of brute force at the fit instead of under 1."""
RECALL_MIN_QUERIES = 200
RECALL_WORK = 1_000_000_000
"""Held-out rows times table rows a fit's curve reads at most (above :data:`RECALL_MIN_QUERIES`):
each held-out row's exact top-10 is a brute force over every fingerprint of the table."""


def recall_queries(rows: int) -> int:
    """How many held-out rows a fit of a table of ``rows`` fingerprinted rows measures its
    recall curve on: :data:`RECALL_QUERIES`, fewer above a million rows (about
    :data:`RECALL_WORK` comparisons) but never fewer than :data:`RECALL_MIN_QUERIES`, and never
    more than the table holds."""
    return min(rows, max(RECALL_MIN_QUERIES, min(RECALL_QUERIES, RECALL_WORK // max(rows, 1))))
RECALL_PERCENT = 100
CONFIDENCE_Z = 1.645
"""``probes_at`` holds the fewest probes whose recall reaches a level at one-sided 95%
confidence (the measured mean less 1.645 standard errors over the held-out rows), not the mean:
a query asking ``recall=0.95`` should get it on rows the fit did not see."""


@dataclass(frozen=True)
class RecallCurve:
    """Recall@``k`` against probes, measured by a fit on ``queries`` rows of the table itself
    (each excluded from its own answer), when the table held ``rows`` fingerprinted rows.

    ``probes_at[p]`` is the fewest probes whose measured recall reaches ``p`` percent at 95%
    confidence (:data:`CONFIDENCE_Z`); what a query asking ``recall=p / 100`` probes. ``grid`` and ``recall``: the curve at 1, 2, 4, ...
    probes and at every list, for a person to read."""

    k: int
    queries: int
    rows: int
    grid: tuple[int, ...]
    recall: tuple[float, ...]
    probes_at: tuple[int, ...]

    def as_settings(self) -> dict[str, Any]:
        return {"k": self.k, "queries": self.queries, "rows": self.rows, "grid": list(self.grid),
                "recall": list(self.recall), "probes_at": list(self.probes_at)}  # fmt: skip

    @classmethod
    def from_settings(cls, stored: Any) -> RecallCurve | None:
        if not isinstance(stored, dict) or "probes_at" not in stored:
            return None
        return cls(int(stored["k"]), int(stored["queries"]), int(stored["rows"]), tuple(int(p) for p in stored["grid"]),
                   tuple(float(r) for r in stored["recall"]), tuple(int(p) for p in stored["probes_at"]))  # fmt: skip


def recall_percent(recall: object) -> int:
    """``recall`` (a float in (0, 1]) as the whole percent a query looks up, rounded up (a query
    never gets less than it asked); a clear error naming ``recall`` otherwise."""
    if isinstance(recall, bool) or not isinstance(recall, (int, float)):
        raise TypeError(f"recall must be a number in (0, 1], got {type(recall).__name__}")
    if not 0.0 < float(recall) <= 1.0:
        raise ValueError(f"recall must be in (0, 1] (the share of the exact top-10 wanted, e.g. 0.95), got {recall!r}")
    return min(RECALL_PERCENT, max(1, int(np.ceil(float(recall) * RECALL_PERCENT - 1e-9))))


def recall_curve(fingerprints: object, queries: object, centres: np.ndarray, k: int = RECALL_K) -> RecallCurve:
    """The recall@``k`` of probing 1 .. ``lists`` lists of ``centres`` (k-modes) for each row
    ``queries`` (indexes into ``fingerprints``, every fingerprinted row of the table), against
    the exact top-``k`` by brute force over all of them, the query row excluded.

    A probed answer holds the ``k`` nearest rows of the probed lists; of them, those within the
    true ``k``-th distance count (ties at that distance are as good as the exact answer's), so a
    query's recall with ``p`` probes is ``min(k, rows within that distance in its p nearest
    lists) / k``: computed for every ``p`` at once from the lists of those rows alone."""
    rows = np.asarray(fingerprints, dtype=np.uint64).ravel()
    chosen = np.asarray(queries, dtype=np.int64).ravel()
    lists = len(centres)
    k = max(1, min(k, len(rows) - 1))
    found = np.zeros((len(chosen), lists), dtype=np.float64)
    for row, index in enumerate(chosen):
        distances = np.bitwise_count(rows ^ rows[index]).astype(np.int16)
        distances[index] = 127
        kth = np.partition(distances, k - 1)[k - 1]
        within = np.flatnonzero(distances <= kth)
        their_lists, _ = nearest_modes(rows[within], centres)
        order = np.lexsort((np.arange(lists), hamming_matrix(rows[index : index + 1], centres)[0]))
        rank = np.empty(lists, dtype=np.int64)
        rank[order] = np.arange(lists)
        per_probe = np.bincount(rank[their_lists], minlength=lists).cumsum()
        found[row] = np.minimum(per_probe, k) / k
    mean = found.mean(axis=0) if len(chosen) else np.ones(lists)
    spread = found.std(axis=0) / np.sqrt(max(len(chosen), 1)) if len(chosen) else np.zeros(lists)
    assured = np.where(mean >= 1.0, 1.0, mean - CONFIDENCE_Z * spread)
    probes_at = tuple(int(np.argmax(assured >= p / RECALL_PERCENT - 1e-9)) + 1 for p in range(RECALL_PERCENT + 1))
    grid = sorted({*(1 << i for i in range(lists.bit_length()) if 1 << i <= lists), lists})
    return RecallCurve(k, len(chosen), len(rows), tuple(grid), tuple(round(float(mean[p - 1]), 4) for p in grid), probes_at)


__all__ = [
    "Centres",
    "RECALL_K",
    "RECALL_MIN_QUERIES",
    "RECALL_QUERIES",
    "RECALL_WORK",
    "RecallCurve",
    "recall_curve",
    "recall_queries",
    "recall_percent",
    "DEFAULT_ITERATIONS",
    "Kind",
    "LIST_SPAN",
    "MAX_GENERATION",
    "MAX_LISTS",
    "check_lists",
    "check_probes",
    "default_lists",
    "default_sample",
    "fit_means",
    "fit_modes",
    "hamming_matrix",
    "nearest_means",
    "nearest_modes",
    "unit_rows",
]
