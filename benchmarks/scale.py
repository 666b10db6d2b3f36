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

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

import simsql
import simsql.text.weighting
from simsql.fingerprint import Background
from simsql.text.bitsums import weighted_fingerprints
from simsql.text.tokenize import is_han_feature
from simsql.text.weighting import QUANT_SCALE

from .internals import feature_hashes

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
    vocabulary: list[bytes]  # feature of each id (for IDF weights)


def paragraph_features(paragraphs: Sequence[str], fingerprinter: simsql.Fingerprinter) -> ParagraphFeatures:
    vocabulary: dict[bytes, int] = {}
    ptr = [0]
    ids: list[int] = []
    counts: list[int] = []
    for text in paragraphs:
        for feature, count in fingerprinter.feature_counts(text).items():
            ids.append(vocabulary.setdefault(feature, len(vocabulary)))
            counts.append(count)
        ptr.append(len(ids))
    hashes = feature_hashes(list(vocabulary), fingerprinter.seed)
    return ParagraphFeatures(
        np.array(ptr, dtype=np.int64),
        np.array(ids, dtype=np.int64),
        np.array(counts, dtype=np.float64),
        hashes,
        fingerprinter.seed,
        list(vocabulary),
    )


def _linear_in_counts(fingerprinter: simsql.Fingerprinter) -> bool:
    """Weightings that multiply the raw count (``count``, and version 1's IDF tables) rather
    than ``1 + ln count``."""
    weighting = fingerprinter.weighting
    return weighting == "count" or (fingerprinter.version == 1 and (weighting == "jieba_idf" or isinstance(weighting, simsql.text.weighting.IdfTable)))


def fingerprints_of(members: np.ndarray, features: ParagraphFeatures, fingerprinter: simsql.Fingerprinter) -> np.ndarray:
    """Fingerprints (uint64) of articles given as rows of paragraph ids (-1 padded), weighted by
    ``fingerprinter.feature_weights`` exactly as simsql weights a text (checked by :func:`verify`).

    With a background, the bit sums are kept apart per script (Latin, Han: ``is_han_feature``,
    as ``Fingerprinter._script_sums`` does) and reduced by simsql's own exact integer rule
    (``weighted_fingerprints``) instead of the sign of the sum."""
    out = np.empty(len(members), dtype=np.uint64)
    vocabulary = np.int64(len(features.hashes))
    # Per-feature factor: the weight of a feature seen once (1 + ln 1 = 1 for log-type weightings).
    factor = fingerprinter.feature_weights(features.vocabulary, np.ones(len(features.vocabulary)))
    linear = _linear_in_counts(fingerprinter)
    background = fingerprinter.background
    han = np.fromiter(map(is_han_feature, features.vocabulary), np.intp, len(features.vocabulary)) if background is not None else None
    # Per-script sums histogram twice as many (document, script) rows: halve the batch.
    step = _BATCH if background is None else _BATCH // 2
    for lo in range(0, len(members), step):
        batch = members[lo : lo + step]
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
        if fingerprinter.weighting == "count":
            weights = counts
        else:
            weights = (counts if linear else 1.0 + np.log(counts)) * factor[feature]
            boundaries = np.flatnonzero(np.diff(np.concatenate(([-1], owner))))
            top = np.maximum.reduceat(weights, boundaries)
            scale = np.repeat(QUANT_SCALE / top, np.diff(np.concatenate((boundaries, [len(owner)]))))
            weights = np.rint(weights * scale)
        present = np.unique(owner)
        local = np.searchsorted(present, owner)
        fingerprints = np.zeros(len(batch), dtype=np.uint64)
        scripts = None if han is None else han[feature]
        fingerprints[present] = np.array(
            weighted_fingerprints(features.hashes[feature], weights, local, len(present), background, scripts), dtype=np.uint64
        )
        out[lo : lo + len(batch)] = fingerprints
    return out


@dataclass
class ScaleSet:
    fingerprints: np.ndarray  # uint64, row i has id i + 1
    members: np.ndarray  # int32 (n, MAX_PARAGRAPHS), -1 padded: paragraph ids of each article
    variant_of: np.ndarray  # int64: id of the article a variant was made from, 0 if none
    series_heads: np.ndarray  # ids of series base articles
    fingerprinter: simsql.Fingerprinter
    pools: tuple[tuple[int, int, float], ...] = ()


def random_articles(
    rng: np.random.Generator, n: int, paragraphs: int, pools: Sequence[tuple[int, int, float]] = ()
) -> np.ndarray:
    """Rows of 4..16 random paragraph ids; with ``pools`` ((start, stop, share), ...) each
    article draws from one pool only, so an article is English or Chinese, not a mix."""
    lengths = rng.integers(4, MAX_PARAGRAPHS + 1, size=n)
    if pools:
        shares = np.array([share for _, _, share in pools], dtype=np.float64)
        which = rng.choice(len(pools), size=n, p=shares / shares.sum())
        starts = np.array([start for start, _, _ in pools])[which]
        sizes = np.array([stop - start for start, stop, _ in pools])[which]
        members = (starts[:, None] + (rng.random((n, MAX_PARAGRAPHS)) * sizes[:, None]).astype(np.int64)).astype(np.int32)
    else:
        members = rng.integers(0, paragraphs, size=(n, MAX_PARAGRAPHS), dtype=np.int32)
    members[np.arange(MAX_PARAGRAPHS)[None, :] >= lengths[:, None]] = -1
    return members


def build(
    features: ParagraphFeatures,
    n: int,
    seed: int,
    fingerprinter: simsql.Fingerprinter,
    variant_rate: float = 0.05,
    series_count: int = 200,
    pools: Sequence[tuple[int, int, float]] = (),
) -> ScaleSet:
    """``n`` article fingerprints from real paragraphs, with planted variants and series."""
    rng = np.random.default_rng(seed)
    paragraphs = len(features.ptr) - 1
    members = random_articles(rng, n, paragraphs, pools)
    variant_of = np.zeros(n, dtype=np.int64)

    # Variants: copy an earlier article, then change one paragraph (replace, drop or add).
    candidates = np.flatnonzero(rng.random(n) < variant_rate)
    candidates = candidates[candidates > 0]
    for row in candidates:
        source = int(rng.integers(0, row))
        members[row] = members[source]
        variant_of[row] = source + 1
        mutate(members[row], rng, paragraphs, pools)

    # Series: 12 variants of a base article placed consecutively at random positions.
    heads = []
    if n >= 1000:
        for start in rng.choice(n - 13, size=min(series_count, n // 1000), replace=False):
            heads.append(int(start) + 1)
            for offset in range(1, 13):
                members[start + offset] = members[start]
                variant_of[start + offset] = start + 1
                mutate(members[start + offset], rng, paragraphs, pools)

    fingerprints = fingerprints_of(members, features, fingerprinter)
    return ScaleSet(fingerprints, members, variant_of, np.array(heads, dtype=np.int64), fingerprinter, tuple(pools))


def mutate(row: np.ndarray, rng: np.random.Generator, paragraphs: int, pools: Sequence[tuple[int, int, float]] = ()) -> None:
    """Replace, drop or add one paragraph; new paragraphs come from the article's own pool."""
    lo, hi = 0, paragraphs
    for start, stop, _ in pools:
        if start <= row[0] < stop:
            lo, hi = start, stop
    used = np.flatnonzero(row >= 0)
    action = rng.integers(0, 3)
    if action == 0 or len(used) >= MAX_PARAGRAPHS:  # replace one paragraph
        row[used[rng.integers(0, len(used))]] = rng.integers(lo, hi)
    elif action == 1 and len(used) > 4:  # drop the last paragraph
        row[used[-1]] = -1
    else:  # add a paragraph
        row[len(used)] = rng.integers(lo, hi)


def article_text(paragraphs: Sequence[str], members: np.ndarray) -> str:
    return "\n\n".join(paragraphs[i] for i in members if i >= 0)


def verify(paragraphs: Sequence[str], scale: ScaleSet, fingerprinter: simsql.Fingerprinter, sample: int = 50) -> int:
    """Fingerprint ``sample`` articles as text and compare: returns the number that match."""
    matches = 0
    for row in range(min(sample, len(scale.fingerprints))):
        text = article_text(paragraphs, scale.members[row])
        matches += fingerprinter.fingerprint(text) == int(scale.fingerprints[row])
    return matches


@dataclass
class RealText:
    """Paragraphs (English then Chinese), their features under one configuration, and the pools."""

    paragraphs: list[str]
    features: ParagraphFeatures
    fingerprinter: simsql.Fingerprinter
    pools: tuple[tuple[int, int, float], ...]
    source: str = "manpages"


CONFIGS = ("default", "v1", "idf-heldout", "background")
"""``default``: ``simsql.Fingerprinter()``. ``v1``: ``Fingerprinter(version=1)``, simsql 0.1's
default. ``idf-heldout``: the default features weighted by an
:class:`simsql.IdfTable` fitted on every fifth document, which no article is assembled from (a
user who fits on their own corpus; the stand-in for balanced bits). ``background``: the default
fingerprinter centred on a :class:`simsql.text.background.Background` fitted on those same held-out
documents (a user who fits a background on a sample of their own corpus)."""

CHINESE_SHARE = 0.2
TEXT_SOURCES = ("manpages", "heldout")
"""Where articles' paragraphs come from: ``manpages`` (:mod:`benchmarks.corpus`, what defaults
are tuned on) or ``heldout`` (Debian's installed manuals, :mod:`benchmarks.heldout`, never
tuned on)."""


def real_text(config: str = "default", limit: int | None = None, source: str = "manpages") -> RealText:
    """Articles' raw material: prose in English and Chinese (man pages, or with
    ``source="heldout"`` Debian's manuals), one document in five kept aside (only the IDF or
    background fit sees it)."""
    from . import corpus

    if config not in CONFIGS:
        raise ValueError(f"config must be one of {CONFIGS}, got {config!r}")
    if source not in TEXT_SOURCES:
        raise ValueError(f"source must be one of {TEXT_SOURCES}, got {source!r}")
    if source == "heldout":
        from .heldout import heldout_documents

        english, chinese = heldout_documents("en")[:limit], heldout_documents("zh")[:limit]
    else:
        english = corpus.english_documents(limit)
        chinese = corpus.chinese_documents(limit)
    held_out = english[::5] + chinese[::5]
    english_paragraphs = corpus.paragraphs(d for i, d in enumerate(english) if i % 5)
    chinese_paragraphs = corpus.paragraphs(d for i, d in enumerate(chinese) if i % 5)
    fingerprinter = simsql.Fingerprinter(version=1) if config == "v1" else simsql.Fingerprinter()
    if config == "idf-heldout":
        table = simsql.text.weighting.IdfTable.fit((d.text for d in held_out), fingerprinter)
        fingerprinter = simsql.Fingerprinter(weighting=table)
    elif config == "background":
        fitted = Background.fit((d.text for d in held_out), simsql.Fingerprinter())
        fingerprinter = simsql.Fingerprinter(background=fitted)
    paragraphs = english_paragraphs + chinese_paragraphs
    features = paragraph_features(paragraphs, fingerprinter)
    split = len(english_paragraphs)
    pools = ((0, split, 1 - CHINESE_SHARE), (split, len(paragraphs), CHINESE_SHARE))
    return RealText(paragraphs, features, fingerprinter, pools, source)


def corpus_key(real: RealText) -> str:
    """The part of a cache file's name that says what its rows were made of: the source (none for
    the man pages), the configuration and the paragraphs' count and content (a digest), so a
    corpus rendered again, or of another size, is never paired with another's cache. Every cache
    of rows built from ``real`` (:func:`build_cached`, ``lists_data.text_set``) is named by it."""
    origin = "" if real.source == "manpages" else f"-{real.source}"
    digest = hashlib.sha256("\x00".join(real.paragraphs).encode()).hexdigest()[:12]
    return f"{origin}-{real.fingerprinter.config_id}-{len(real.paragraphs)}-{digest}"


def build_cached(real: RealText, n: int, seed: int) -> ScaleSet:
    """:func:`build`, kept in ``benchmarks/.cache`` by configuration, size and seed: a 10M-row set
    takes the better part of an hour to generate on a busy 2-core machine."""
    from .corpus import CACHE_DIR

    path = CACHE_DIR / f"scale{corpus_key(real)}-{n}-{seed}.npz"
    if path.exists():
        saved = np.load(path)
        return ScaleSet(saved["fingerprints"], saved["members"], saved["variant_of"], saved["series_heads"], real.fingerprinter, real.pools)
    data = build(real.features, n, seed=seed, fingerprinter=real.fingerprinter, pools=real.pools)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".tmp.npz")
    np.savez(partial, fingerprints=data.fingerprints, members=data.members, variant_of=data.variant_of, series_heads=data.series_heads)
    partial.replace(path)
    return data
