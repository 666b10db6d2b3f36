"""The second stage of the originality check: how much of one text another one contains.

A fingerprint within a few bits says "probably the same text"; at the distances a disguised
copy reaches (a header and footer, a few swapped words: 8-14 bits), unrelated articles of a
large table also turn up now and then (about 2e-5 of random pairs at 11 bits on real English
documentation: ~20 per check at 1M rows, and more at 14). Reading those candidates' text and
counting shared word 5-shingles tells a copy (most shingles shared) from a coincidence (almost none)
exactly, so the fingerprint threshold can be wide without false alarms.

Shingles are word 5-grams after the same normalisation as fingerprints (NFKC, case folding);
Han characters count as one word each, so Chinese needs no segmenter here. Each distinct word is
hashed once (xxh3 of its UTF-8 bytes) and a 5-gram's hash is a polynomial of its five word
hashes, computed for the whole text at once: the check shingles up to ``candidates`` stored
texts per submission, so this is its cost per candidate (0.23 ms per English documentation
article, 0.34 ms per Chinese one; hashing every joined 5-gram took 0.28 and 0.48). Deterministic
across processes, unlike ``hash()``; nothing stores these hashes.
"""

from __future__ import annotations

import re

import numpy as np
import xxhash

from .tokenize import normalize

SHINGLE_WORDS = 5
MIN_CONTAINMENT = 0.5
"""Share of the smaller text's shingles found in the larger from which two texts are the same
text in fact. Copies with light edits keep 0.7-1.0; unrelated documentation pairs within 12
bits stay far below (measured in ``python -m benchmarks.originality``)."""

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_TOKEN = re.compile(f"[{_HAN}]|[^\\W_{_HAN}]+")


def shingles(text: str, size: int = SHINGLE_WORDS) -> frozenset[int]:
    """Hashes of the word (Han: character) ``size``-grams of ``text``; a text shorter than
    ``size`` words is one shingle of all its words, so short texts still compare."""
    if not isinstance(text, str):
        raise TypeError(f"shingles() needs str, got {type(text).__name__}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive int, got {size!r}")
    tokens = _TOKEN.findall(normalize(text))
    if not tokens:
        return frozenset()
    distinct: dict[str, int] = {}
    ids = np.fromiter((distinct.setdefault(t, len(distinct)) for t in tokens), dtype=np.intp, count=len(tokens))
    word_hashes = np.fromiter(
        (xxhash.xxh3_64_intdigest(w.encode("utf-8", "surrogatepass")) for w in distinct), dtype=np.uint64, count=len(distinct)
    )[ids]
    span = min(size, len(tokens))  # a text shorter than ``size`` words is one shingle of them all
    count = len(tokens) - span + 1
    grams = np.zeros(count, dtype=np.uint64)
    for offset in range(span):  # wraps modulo 2**64, as a polynomial hash should
        grams = grams * _GRAM_BASE + word_hashes[offset : offset + count]
    return frozenset(grams.tolist())


_GRAM_BASE = np.uint64(0x9E3779B97F4A7C15)
"""An odd 64-bit multiplier (the golden-ratio constant): 5-gram hash = sum of w_i * B^(4-i)."""


def containment(a: str | frozenset[int], b: str | frozenset[int]) -> float:
    """``|A ∩ B| / min(|A|, |B|)`` over shingle sets (0.0 when either text has no words).

    The smaller set is the denominator, so a copy padded with a header and footer, or cut
    to an excerpt, still scores as contained."""
    sa = a if isinstance(a, frozenset) else shingles(a)
    sb = b if isinstance(b, frozenset) else shingles(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / min(len(sa), len(sb))
