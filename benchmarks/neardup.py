"""Near-duplicate text detection for the benchmark corpora: shingles, MinHash, Jaccard.

The corpus keeps one page of each group of natural near-duplicates (a tool and its renamed fork)
and the planted negatives of :mod:`benchmarks.edits` must not be near-duplicates by accident;
both ask the same question here. Independent of simsql's own shingles
(:mod:`simsql.text.containment`): the benchmarks judge simsql, so their ground truth does not reuse it.
"""

from __future__ import annotations

import re
import zlib

import numpy as np

HAN_CLASS = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
HAN = re.compile(rf"[{HAN_CLASS}]")
"""One Han character."""
CJK = r"\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
CJK_GAP = re.compile(rf"(?<=[{CJK}]) (?=[{CJK}])")
"""A space between two CJK characters: groff joins source lines with one, an artefact there."""

#: Two pages whose word 5-shingle Jaccard reaches this are the same text under two names (e.g. a
#: tool and its renamed fork); only the first in sorted order is kept so the corpus holds no
#: unplanted near-duplicates.
NATURAL_DUPLICATE_JACCARD = 0.5


def is_chinese(text: str, threshold: float = 0.3) -> bool:
    """True when Han characters make up at least ``threshold`` of the letters.

    A ratio rather than "any Han character" because zh_CN holds a few untranslated English
    pages and the translated ones are full of English option names and code.
    """
    han = len(HAN.findall(text))
    latin_words = len(re.findall(r"[A-Za-z]+", text))
    # A Latin word is counted as ~1 letter-equivalent of a Han character (one token each).
    return han > 0 and han / (han + latin_words) >= threshold


_TOKEN = re.compile(rf"[{HAN_CLASS}]|[^\W_{HAN_CLASS}]+")
# 42 bands of 3 rows: a pair at Jaccard 0.5 becomes a candidate with probability 0.996 (0.4:
# 0.94) while pairs at 0.1 rarely do, so the exact check below sees few pairs yet misses
# almost no duplicate.
_NUM_PERM = 126
_BANDS = 42
_rng_perm = np.random.default_rng(20240601)
_PERM_A = _rng_perm.integers(1, 2**63 - 1, size=_NUM_PERM, dtype=np.uint64) | np.uint64(1)
_PERM_B = _rng_perm.integers(0, 2**63 - 1, size=_NUM_PERM, dtype=np.uint64)


def shingles(text: str, k: int = 5) -> np.ndarray:
    """Hashes of word (Han: character) k-grams; deterministic across processes and runs."""
    tokens = _TOKEN.findall(text.lower())
    if len(tokens) < k:
        tokens = tokens + [""] * (k - len(tokens))
    ids = np.fromiter((zlib.crc32(t.encode()) for t in tokens), dtype=np.uint64, count=len(tokens))
    mult = np.uint64(0x9E3779B97F4A7C15)
    h = np.zeros(len(tokens) - k + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(k):
            h = h * mult + ids[i : len(ids) - k + 1 + i]
    return np.unique(h)


def minhash(shingles: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (shingles[None, :] * _PERM_A[:, None] + _PERM_B[:, None]).min(axis=1)


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    inter = np.intersect1d(a, b, assume_unique=True).size
    return inter / (a.size + b.size - inter) if inter else 0.0


class NaturalDuplicateFilter:
    """Greedy keep-first filter over documents in sorted order.

    Whether a document is dropped depends only on the documents before it, so a limited,
    uncached build returns exactly the prefix of the full corpus.
    """

    def __init__(self) -> None:
        self._buckets: dict[tuple[int, bytes], list[int]] = {}
        self._shingles: list[np.ndarray] = []
        self._sigs: list[np.ndarray] = []
        self.dropped: list[tuple[str, str, float]] = []
        self._ids: list[str] = []

    def admit(
        self,
        doc_id: str,
        text: str,
        text_shingles: np.ndarray | None = None,
        signature: np.ndarray | None = None,
    ) -> bool:
        sh = shingles(text) if text_shingles is None else text_shingles
        sig = minhash(sh) if signature is None else signature
        rows = _NUM_PERM // _BANDS
        keys = [(b, sig[b * rows : (b + 1) * rows].tobytes()) for b in range(_BANDS)]
        seen: set[int] = set()
        for key in keys:
            for j in self._buckets.get(key, ()):
                if j in seen:
                    continue
                seen.add(j)
                if np.count_nonzero(sig == self._sigs[j]) < 0.3 * _NUM_PERM:
                    continue  # estimate far below the threshold: skip the exact check
                jac = jaccard(sh, self._shingles[j])
                if jac >= NATURAL_DUPLICATE_JACCARD:
                    self.dropped.append((doc_id, self._ids[j], round(jac, 3)))
                    return False
        index = len(self._shingles)
        self._shingles.append(sh)
        self._sigs.append(sig)
        self._ids.append(doc_id)
        for key in keys:
            self._buckets.setdefault(key, []).append(index)
        return True

