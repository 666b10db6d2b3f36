"""Scale sets: millions of fingerprints whose bit distribution comes from real text.

Uniform random fingerprints flatter a block index: real SimHash bits are skewed (common words
push the same bits the same way), which inflates some 16-bit buckets. Articles here are random
sets of real paragraphs (see ``corpus.assembled_articles``); fingerprinting millions of them one
by one would take hours, so the features of every paragraph are extracted once and an article's
features are the merged counts of its paragraphs' (no feature crosses a paragraph break). The
fingerprint is then computed from those counts by the very arithmetic simsql uses, vectorised
across thousands of articles; :func:`verify` checks it equals ``simsql.simhash`` of the text.

Planted structure, so queries have real neighbours:
* *variants*: an earlier article with one paragraph replaced, dropped or added (near-duplicates);
* *series*: 12 variants of one base article (a top-10 whose 10th neighbour is near).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat

import numpy as np

import simsql
from simsql.fingerprint import _hash, _signs
from simsql.weighting import QUANT_SCALE

MAX_PARAGRAPHS = 16
_BATCH = 5_000


@dataclass
class ParagraphFeatures:
    """Features of each paragraph in CSR form: ``ids[ptr[p]:ptr[p+1]]`` with their counts."""

    ptr: np.ndarray
    ids: np.ndarray
    counts: np.ndarray
    hashes: np.ndarray  # uint64 hash of each feature id
    seed: int
    idf: np.ndarray | None = None  # per feature id: the fingerprinter's weight at count 1 (IDF, prior)


def paragraph_features(paragraphs: Sequence[str], fingerprinter: simsql.Fingerprinter) -> ParagraphFeatures:
    if fingerprinter.tokenizer != "words" or fingerprinter.shingle_size != 1:
        raise ValueError("scale sets need single-word features (no feature may cross a paragraph break)")
    if fingerprinter.weighting == "jieba_idf" or (fingerprinter.version == 1 and not isinstance(fingerprinter.weighting, str)):
        raise ValueError("scale sets support count and log-type weightings (log, prior, version 2 IdfTable)")
    vocabulary: dict[bytes, int] = {}
    ptr = [0]
    ids: list[int] = []
    counts: list[int] = []
    for text in paragraphs:
        for feature, count in fingerprinter._feature_counts(text).items():
            ids.append(vocabulary.setdefault(feature, len(vocabulary)))
            counts.append(count)
        ptr.append(len(ids))
    hashes = np.fromiter(map(_hash, vocabulary, repeat(fingerprinter.seed)), np.uint64, len(vocabulary))
    # Log-type weightings are (1 + ln count) x a per-feature factor: the weight at count 1.
    idf = None if fingerprinter.weighting == "count" else fingerprinter.feature_weights(list(vocabulary), np.ones(len(vocabulary)))
    return ParagraphFeatures(
        np.array(ptr, dtype=np.int64), np.array(ids, dtype=np.int64), np.array(counts, dtype=np.float64), hashes,
        fingerprinter.seed, idf,
    )


def fingerprints_of(members: np.ndarray, features: ParagraphFeatures, weighting: str) -> np.ndarray:
    """Fingerprints (uint64) of articles given as rows of paragraph ids (-1 padded)."""
    out = np.empty(len(members), dtype=np.uint64)
    vocabulary = np.int64(len(features.hashes))
    for lo in range(0, len(members), _BATCH):
        batch = members[lo : lo + _BATCH]
        article, slot = np.nonzero(batch >= 0)
        paragraph = batch[article, slot]
        starts = features.ptr[paragraph]
        lengths = features.ptr[paragraph + 1] - starts
        total = int(lengths.sum())
        offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        index = offsets + np.arange(total)
        keys = np.repeat(article.astype(np.int64), lengths) * vocabulary + features.ids[index]
        unique, inverse = np.unique(keys, return_inverse=True)
        counts = np.bincount(inverse, weights=features.counts[index])
        owner = unique // vocabulary
        feature = unique % vocabulary
        if weighting == "log":  # log-type: (1 + ln count) x the fingerprinter's per-feature factor
            weights = 1.0 + np.log(counts)
            if features.idf is not None:
                weights = weights * features.idf[feature]
            boundaries = np.flatnonzero(np.diff(np.concatenate(([-1], owner))))
            top = np.maximum.reduceat(weights, boundaries)
            scale = np.repeat(QUANT_SCALE / top, np.diff(np.concatenate((boundaries, [len(owner)]))))
            weights = np.rint(weights * scale)
        else:
            weights = counts
        present = np.unique(owner)
        local = np.searchsorted(present, owner)
        fingerprints = np.zeros(len(batch), dtype=np.uint64)
        fingerprints[present] = np.array(_signs(features.hashes[feature], weights, local, len(present)), dtype=np.uint64)
        out[lo : lo + len(batch)] = fingerprints
    return out


@dataclass
class ScaleSet:
    fingerprints: np.ndarray  # uint64, row i has id i + 1
    members: np.ndarray  # int32 (n, MAX_PARAGRAPHS), -1 padded: paragraph ids of each article
    variant_of: np.ndarray  # int64: id of the article a variant was made from, 0 if none
    series_heads: np.ndarray  # ids of series base articles


def build(
    features: ParagraphFeatures,
    n: int,
    seed: int,
    weighting: str = "log",
    variant_rate: float = 0.05,
    series_count: int = 200,
) -> ScaleSet:
    """``n`` article fingerprints from real paragraphs, with planted variants and series."""
    rng = np.random.default_rng(seed)
    paragraphs = len(features.ptr) - 1
    lengths = rng.integers(4, MAX_PARAGRAPHS + 1, size=n)
    members = rng.integers(0, paragraphs, size=(n, MAX_PARAGRAPHS), dtype=np.int32)
    members[np.arange(MAX_PARAGRAPHS)[None, :] >= lengths[:, None]] = -1
    variant_of = np.zeros(n, dtype=np.int64)

    # Variants: copy an earlier article, then change one paragraph (replace, drop or add).
    candidates = np.flatnonzero(rng.random(n) < variant_rate)
    candidates = candidates[candidates > 0]
    for row in candidates:
        source = int(rng.integers(0, row))
        members[row] = members[source]
        variant_of[row] = source + 1
        _mutate(members[row], rng, paragraphs)

    # Series: 12 variants of a base article placed consecutively at random positions.
    heads = []
    if n >= 1000:
        for start in rng.choice(n - 13, size=min(series_count, n // 1000), replace=False):
            heads.append(int(start) + 1)
            for offset in range(1, 13):
                members[start + offset] = members[start]
                variant_of[start + offset] = start + 1
                _mutate(members[start + offset], rng, paragraphs)

    fingerprints = fingerprints_of(members, features, weighting)
    return ScaleSet(fingerprints, members, variant_of, np.array(heads, dtype=np.int64))


def _mutate(row: np.ndarray, rng: np.random.Generator, paragraphs: int) -> None:
    used = np.flatnonzero(row >= 0)
    action = rng.integers(0, 3)
    if action == 0 or len(used) >= MAX_PARAGRAPHS:  # replace one paragraph
        row[used[rng.integers(0, len(used))]] = rng.integers(0, paragraphs)
    elif action == 1 and len(used) > 4:  # drop the last paragraph
        row[used[-1]] = -1
    else:  # add a paragraph
        row[len(used)] = rng.integers(0, paragraphs)


def article_text(paragraphs: Sequence[str], members: np.ndarray) -> str:
    return "\n\n".join(paragraphs[i] for i in members if i >= 0)


def verify(paragraphs: Sequence[str], scale: ScaleSet, fingerprinter: simsql.Fingerprinter, sample: int = 50) -> int:
    """Fingerprint ``sample`` articles as text and compare: returns the number that match."""
    matches = 0
    for row in range(min(sample, len(scale.fingerprints))):
        text = article_text(paragraphs, scale.members[row])
        matches += fingerprinter.fingerprint(text) == int(scale.fingerprints[row])
    return matches
