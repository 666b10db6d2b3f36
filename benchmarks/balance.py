"""Bit balance at a million rows of real text, for a user who fits nothing.

Articles are random runs of real paragraphs from the tuning sources (:mod:`benchmarks.sources`,
never the held-out one), half English and half Chinese, as a store of real articles would hold.
Fingerprinting a million of them one by one is hours of CPU, so every paragraph's feature counts
are computed once and an article's counts are the sum of its paragraphs' (words never cross a
paragraph break, so this is exact for word features); weights then come from
``Fingerprinter.feature_weights`` and the signed sums from simsql's own ``_signs``.
:func:`verify` checks the result equals ``fingerprint_many`` on the article texts.

Reported per configuration: bits of entropy (sum over the 64 bits of the binary entropy of "bit
set"; 64 is ideal) and, for each of the four 16-bit blocks the index uses, the fullest bucket
over the uniform expectation ``rows / 65536``.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Sequence
from itertools import repeat
from typing import Any

import numpy as np

from simsql import Fingerprinter
from simsql.fingerprint import _hash, _signs
from simsql.weighting import quantize

from . import corpus, sources

_BATCH = 4096


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _paragraphs(lang: corpus.Lang) -> list[str]:
    paras: list[str] = []
    for source, langs in sources.SOURCES.items():
        if lang in langs and source != sources.HELD_OUT:
            paras.extend(p for d in sources.articles(source, lang) for p in d.text.split("\n\n") if len(p) >= 20)
    return sorted(set(paras))


class _Vocabulary:
    """Paragraph feature counts in CSR form over one vocabulary."""

    def __init__(self, paragraphs: Sequence[str], fp: Fingerprinter) -> None:
        index: dict[bytes, int] = {}
        ptr, ids, counts = [0], [], []
        for text in paragraphs:
            for feature, count in fp.feature_counts(text).items():
                ids.append(index.setdefault(feature, len(index)))
                counts.append(count)
            ptr.append(len(ids))
        self.features = list(index)
        self.ptr = np.array(ptr, dtype=np.int64)
        self.ids = np.array(ids, dtype=np.int64)
        self.counts = np.array(counts, dtype=np.float64)


def _article_members(n_paragraphs: int, lengths: np.ndarray, n: int, seed: int, min_chars: int, max_chars: int) -> list[np.ndarray]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        target = rng.randint(min_chars, max_chars)
        chosen: list[int] = []
        size = 0
        while size < target and len(chosen) < 40:
            i = rng.randrange(n_paragraphs)
            if i not in chosen:
                chosen.append(i)
                size += int(lengths[i]) + 2
        out.append(np.array(chosen, dtype=np.int64))
    return out


def _fingerprints(members: list[np.ndarray], vocab: _Vocabulary, fp: Fingerprinter) -> np.ndarray:
    hashes = np.fromiter(map(_hash, vocab.features, repeat(fp.seed)), np.uint64, len(vocab.features))
    ones = np.ones(len(vocab.features))
    idf = fp.feature_weights(vocab.features, ones)  # log-type weightings: 1 + ln 1 = 1
    out = np.zeros(len(members), dtype=np.uint64)
    size = np.int64(len(vocab.features))
    for lo in range(0, len(members), _BATCH):
        batch = members[lo : lo + _BATCH]
        starts = np.concatenate([vocab.ptr[m] for m in batch])
        ends = np.concatenate([vocab.ptr[m + 1] for m in batch])
        owner_of_par = np.repeat(np.arange(len(batch)), [len(m) for m in batch])
        lengths = ends - starts
        index = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths) + np.arange(int(lengths.sum()))
        keys = np.repeat(owner_of_par.astype(np.int64), lengths) * size + vocab.ids[index]
        unique, inverse = np.unique(keys, return_inverse=True)
        counts = np.bincount(inverse, weights=vocab.counts[index])
        owner, feature = unique // size, unique % size
        if fp.weighting == "count":
            weights = counts
        else:
            raw = (1.0 + np.log(counts)) * idf[feature]
            bounds = np.flatnonzero(np.diff(np.concatenate(([-1], owner))))
            top = np.maximum.reduceat(raw, bounds)
            weights = np.rint(raw * np.repeat(quantize(np.array([1.0]))[0] / top, np.diff(np.concatenate((bounds, [len(owner)])))))
        out[lo : lo + len(batch)] = np.array(_signs(hashes[feature], weights, owner, len(batch)), dtype=np.uint64)
    return out


def verify(fp: Fingerprinter, paragraphs: Sequence[str], members: list[np.ndarray], vocab: _Vocabulary) -> None:
    sample = members[:300]
    texts = ["\n\n".join(paragraphs[i] for i in m) for m in sample]
    expected = np.array(fp.fingerprint_many(texts), dtype=np.uint64)
    got = _fingerprints(sample, vocab, fp)
    if not np.array_equal(expected, got):
        raise AssertionError(f"cached-count fingerprints differ from fingerprint_many ({int((expected != got).sum())} of 300)")


def stats(fps: np.ndarray) -> dict[str, Any]:
    n = len(fps)
    bits = np.unpackbits(fps.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    p = bits.mean(axis=0, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.nan_to_num(-(p * np.log2(p) + (1 - p) * np.log2(1 - p)))
    fullest = []
    for block in range(4):
        values = ((fps >> np.uint64(16 * block)) & np.uint64(0xFFFF)).astype(np.int64)
        fullest.append(float(np.bincount(values, minlength=1 << 16).max() / (n / 65536)))
    return {
        "rows": n,
        "bit_entropy": float(h.sum()),
        "min_bit_entropy": float(h.min()),
        "fullest_bucket_vs_uniform": fullest,
        "worst_bucket_vs_uniform": max(fullest),
    }


def run(rows: int, configs: dict[str, Fingerprinter]) -> dict[str, Any]:
    """Balance of each configuration over ``rows`` articles, half per language."""
    result: dict[str, Any] = {}
    per_lang: dict[str, dict[str, np.ndarray]] = {}
    for lang, (lo, hi) in (("en", (1500, 6000)), ("zh", (600, 3000))):
        paras = _paragraphs(lang)  # type: ignore[arg-type]
        lengths = np.array([len(p) for p in paras])
        members = _article_members(len(paras), lengths, rows // 2, seed=1 if lang == "en" else 2, min_chars=lo, max_chars=hi)
        _log(f"balance {lang}: {len(paras)} paragraphs, {len(members)} articles")
        vocabularies: dict[str, _Vocabulary] = {}
        for name, fp in configs.items():
            if fp.tokenizer != "words" or fp.shingle_size != 1:
                continue
            vocab = vocabularies.get(fp.chinese) or vocabularies.setdefault(fp.chinese, _Vocabulary(paras, fp))
            verify(fp, paras, members, vocab)
            per_lang.setdefault(name, {})[lang] = _fingerprints(members, vocab, fp)
            _log(f"balance {lang} {name}: done")
    for name, by_lang in per_lang.items():
        both = np.concatenate([by_lang["en"], by_lang["zh"]])
        result[name] = {"mixed": stats(both), **{lang: stats(v) for lang, v in by_lang.items()}}
    return result
