"""Exact Hamming distances and bit balance over numpy arrays of 64-bit fingerprints: the ground
truth every benchmark checks simsql's answers against, computed without the database."""

from __future__ import annotations

import numpy as np

POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)
"""Set bits of each byte value."""


def distances(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Per pair, the Hamming distance of ``a[i]`` and ``b[i]`` (``b`` may be one fingerprint,
    compared with every row of ``a``)."""
    xor = np.bitwise_xor(np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64))
    return POPCOUNT[np.ascontiguousarray(xor).reshape(-1).view(np.uint8)].reshape(-1, 8).sum(axis=1, dtype=np.int64)


def nearest_blocks(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per pair, the fewest differing bits in any of the four 16-bit blocks: a pair is reached by
    block probes of that radius or more (how ``find_original``'s index finds rows past the
    probes' full reach). Blocks are whole byte pairs, so byte popcounts add up per block."""
    xor = np.bitwise_xor(np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64))
    return POPCOUNT[np.ascontiguousarray(xor).reshape(-1).view(np.uint8)].reshape(-1, 4, 2).sum(axis=2).min(axis=1)


def reachable_distances(fingerprints: np.ndarray, query: int, radius: int) -> np.ndarray:
    """Distances from ``query``, with rows that radius-``radius`` block probes cannot reach (no
    16-bit block within ``radius`` bits) set past 64: the ground truth of a search from probes
    alone (``find_original``), which finds every row within ``4 * radius + 3`` bits and a
    farther one only through a close block."""
    queries = np.full(len(fingerprints), query, dtype=np.uint64)
    return np.where(nearest_blocks(fingerprints, queries) <= radius, distances(fingerprints, query), 65)


def bit_balance(fingerprints: np.ndarray) -> dict[str, float]:
    """Entropy of the 64 bits and how crowded 16-bit buckets are (what block lookups pay for)."""
    bits = ((fingerprints[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).mean(axis=0)
    p = np.clip(bits.astype(np.float64), 1e-12, 1 - 1e-12)
    entropy = float(-(p * np.log2(p) + (1 - p) * np.log2(1 - p)).sum())
    n = len(fingerprints)
    uniform = n / 65536
    fullest, seen = 0.0, 0.0
    for block in range(4):
        values = ((fingerprints >> np.uint64(16 * (3 - block))) & np.uint64(0xFFFF)).astype(np.int64)
        counts = np.bincount(values, minlength=65536).astype(np.float64)
        fullest = max(fullest, float(counts.max()) / uniform)
        seen = max(seen, float((counts**2).sum()) / n / uniform)
    return {"entropy_bits": entropy, "fullest_bucket_vs_uniform": fullest, "bucket_seen_by_a_row_vs_uniform": seen}
