"""From hashed, weighted features to bits: the one arithmetic every fingerprint and wide
signature comes from, for many documents at once (numpy).

:func:`weighted_fingerprints` and :func:`weighted_signatures` are shared by
:class:`simsql.Fingerprinter` and by benchmarks that fingerprint millions of articles from cached
feature counts, so both give the library's own bits. Everything here is exact integer arithmetic
(below 2**53 in float64, or int64, or Python integers for inputs too heavy for either), so the
result does not depend on summation order or machine: the stability promise of stored
fingerprints rests on it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, count, repeat

import numpy as np
import xxhash

from . import tokenize
from .background import CENTRE_SCALE, Background
from .signature import WIDE_BITS, WIDE_WORDS, Signature

_hash = xxhash.xxh3_64_intdigest
# _BYTE_BITS[v, i] = bit i of byte value v (least significant first).
_BYTE_BITS = np.unpackbits(
    np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little"
).astype(np.float64)
_BYTE_OFFSETS = (np.arange(8, dtype=np.intp) * 256)[None, :]  # research's own histograms (benchmarks.internals)


@dataclass(frozen=True)
class FeatureBatch:
    """The features of a batch of documents, each distinct feature numbered once.

    Within a batch the same features (common words) recur in most documents: numbered, each is
    hashed under each seed, looked up in the weighting's table and classified by script once, and
    every occurrence gathers those by its number. Occurrences are in document order, then in each
    document's feature order (the order of the per-document arrays the batch replaces).

    Attributes:
        features: the distinct features, first seen first.
        feature: per occurrence, its number in ``features``.
        counts: per occurrence, its count in its document (float64).
        doc_index: per occurrence, its document.
        starts: per document, its first occurrence (every document has features).
    """

    features: list[bytes]
    feature: np.ndarray
    counts: np.ndarray
    doc_index: np.ndarray
    starts: np.ndarray

    @classmethod
    def of(cls, documents: Sequence[Mapping[bytes, int]]) -> FeatureBatch:
        """The batch of ``documents`` (feature counts, none empty)."""
        sizes = np.fromiter(map(len, documents), np.intp, len(documents))
        if not sizes.all():
            raise ValueError("every document of a batch needs features")
        total = int(sizes.sum())
        numbers: defaultdict[bytes, int] = defaultdict(count().__next__)  # a new feature takes the next number
        feature = np.fromiter(map(numbers.__getitem__, chain.from_iterable(documents)), np.intp, total)
        counts = np.fromiter(chain.from_iterable(document.values() for document in documents), np.float64, total)
        doc_index = np.repeat(np.arange(len(documents), dtype=np.intp), sizes)
        starts = np.cumsum(sizes) - sizes
        return cls(list(numbers), feature, counts, doc_index, starts)


def _byte_rows(hashes: Sequence[np.ndarray], feature: np.ndarray | None = None) -> np.ndarray:
    """``[8 * len(hashes), n]`` bytes: row ``8k + j`` holds byte ``j`` (least significant first)
    of every hash under seed ``k``; with ``feature``, of ``hashes[k][feature]`` (each
    occurrence's hash, gathered from the distinct features' hashes)."""
    stacked = np.stack([np.asarray(seeded).astype("<u8", copy=False) for seeded in hashes])
    rows = stacked.view(np.uint8).reshape(len(hashes), -1, 8).transpose(0, 2, 1).reshape(8 * len(hashes), -1)
    return rows if feature is None else np.take(rows, feature, axis=1)


_BLOCK_ROWS = 16
"""Rows histogrammed at once (an even number, so both script rows of a document fall together):
16 rows' histograms (32 KiB per byte position) stay in the CPU's cache and are reused by the
allocator, where a whole batch's (16 MiB and more) cost page faults on every call. Measured on
man-page articles: 16 rows beat 8, 32, 64 and a whole batch (benchmarks/signature_cpu.py)."""


def _set_weights(byte_rows: np.ndarray, weights: np.ndarray, row_index: np.ndarray, n_rows: int) -> np.ndarray:
    """``[n_rows, 8 * len(byte_rows)]``: per row (a document, or one script of it), the weight of
    the features with each bit set.

    Rather than unpacking every bit of every feature, weights are histogrammed per (row, byte
    value), one ``bincount`` per byte position and block of :data:`_BLOCK_ROWS` rows, then each
    256-bin histogram is multiplied by the bit table of byte values. All quantities are integers
    below 2**53, so the float64 arithmetic is exact and the result depends neither on summation
    order nor on how the work is cut or the matrix product blocked.
    """
    block = row_index // _BLOCK_ROWS
    if block.size > 1 and bool(np.any(block[1:] < block[:-1])):  # callers give document order; others are sorted
        order = np.argsort(row_index, kind="stable")
        byte_rows, weights, row_index, block = byte_rows[:, order], weights[order], row_index[order], block[order]
    n_bytes = len(byte_rows)
    out = np.empty((n_rows, 8 * n_bytes))
    bounds = np.searchsorted(block, np.arange(-(-n_rows // _BLOCK_ROWS) + 1)).tolist()
    for first_row, start, stop in zip(range(0, n_rows, _BLOCK_ROWS), bounds, bounds[1:]):
        rows = min(_BLOCK_ROWS, n_rows - first_row)
        base = (row_index[start:stop] - first_row) * 256
        block_weights = weights[start:stop]
        histograms = np.empty((n_bytes, rows * 256))
        for position in range(n_bytes):
            histograms[position] = np.bincount(base + byte_rows[position, start:stop], weights=block_weights, minlength=rows * 256)
        bits = histograms.reshape(n_bytes, rows, 256) @ _BYTE_BITS  # [byte position, row, bit of the byte]
        out[first_row : first_row + rows] = bits.transpose(1, 0, 2).reshape(rows, 8 * n_bytes)
    return out


def _sums(
    hashes: Sequence[np.ndarray], weights: np.ndarray, row_index: np.ndarray, n_rows: int, feature: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, each bit's signed weighted sum ``V`` (``[n_rows, 64 * len(hashes)]``; bit set when
    > 0) and the total weight its margin is measured against."""
    set_weight = _set_weights(_byte_rows(hashes, feature), weights, row_index, n_rows)
    total = np.bincount(row_index, weights=weights, minlength=n_rows)
    return 2.0 * set_weight - total[:, None], total


def _words(bits: np.ndarray) -> np.ndarray:
    """``[n, 64 * w]`` bits to ``[n, w]`` unsigned words (bit ``64k + i`` is bit ``i`` of word ``k``)."""
    return np.packbits(bits, axis=1, bitorder="little").view("<u8")


def _pack(bits: np.ndarray) -> list[int]:
    return _words(bits).ravel().tolist()


_EXACT_INT64 = float(1 << 49)
"""Below this total weight each of ``CENTRE_SCALE * V``, ``W_latin * c`` and ``W_han * c`` is under
2**61 in magnitude, so their sum fits an int64 exactly."""


def _centred_bits(signed: np.ndarray, weight: np.ndarray, background: Background, word: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Bit ``i`` is set when ``V_i > W_latin * c_latin_i + W_han * c_han_i`` (exact integers);
    also each bit's score ``CENTRE_SCALE * V_i - W . c_i`` (as float, for margins only).

    ``signed`` is [n, 2, 64] (``V`` per script), ``weight`` [n, 2]; ``word``: which 64 bits of
    the wide signature they are (0: the fingerprint; 1-3 need a wide background). Documents too
    heavy for int64 (never seen in practice: a total weight of 2**49 takes tens of millions of
    distinct features) are compared with Python integers instead, so no size of input changes
    the arithmetic.
    """
    if word == 0:
        latin, han = background.latin, background.han
    else:
        latin, han = (centres[64 * (word - 1) : 64 * word] for centres in (background.wide_latin, background.wide_han))
    centres = np.array([latin, han], dtype=np.int64)  # [2, 64]
    heavy = weight.sum(axis=1) >= _EXACT_INT64
    signed_int = signed.astype(np.int64)
    weight_int = weight.astype(np.int64)
    score = CENTRE_SCALE * signed_int.sum(axis=1) - weight_int @ centres
    bits = score > 0
    for row in np.flatnonzero(heavy):
        v = [int(a) + int(b) for a, b in zip(signed[row, 0], signed[row, 1])]
        w = [int(x) for x in weight[row]]
        bits[row] = [CENTRE_SCALE * v[i] - w[0] * latin[i] - w[1] * han[i] > 0 for i in range(64)]
    return bits, score.astype(np.float64)


def _centred_signs(signed: np.ndarray, weight: np.ndarray, background: Background) -> list[int]:
    """Fingerprints centred on ``background`` (see :func:`_centred_bits`)."""
    return _pack(_centred_bits(signed, weight, background)[0])


def script_bit_sums(
    hashes: np.ndarray | Sequence[np.ndarray],
    weights: np.ndarray,
    doc_index: np.ndarray,
    is_han: np.ndarray,
    n_docs: int,
    feature: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``V`` ([n_docs, 2, 64 * seeds]) and total weight ([n_docs, 2]) of each document's Latin (0)
    and Han (1) features: one histogram over (document, script) rows. ``hashes``: one array, or
    one per seed (words side by side); ``feature``: as in :func:`weighted_fingerprints`."""
    seeded = [hashes] if isinstance(hashes, np.ndarray) else list(hashes)
    script = np.asarray(is_han, dtype=np.intp)
    if feature is not None:
        script = script[feature]
    signed, total = _sums(seeded, weights, 2 * doc_index + script, 2 * n_docs, feature)
    return signed.reshape(n_docs, 2, -1), total.reshape(n_docs, 2)


def weighted_fingerprints(
    hashes: np.ndarray,
    weights: np.ndarray,
    doc_index: np.ndarray,
    n_docs: int,
    background: Background | None = None,
    is_han: np.ndarray | None = None,
    feature: np.ndarray | None = None,
) -> list[int]:
    """Fingerprints of ``n_docs`` documents from their features' hashes and quantized weights
    (``doc_index``: each feature's document; ``is_han``: each feature's script, needed with a
    background). The one rule from weighted features to bits, shared by :class:`Fingerprinter`
    and the benchmarks that fingerprint millions of articles from cached counts.

    ``feature`` (optional): each occurrence's number in ``hashes`` and ``is_han``, which then
    hold one entry per *distinct* feature (a batch's common words are hashed once); without it
    they hold one entry per occurrence, like ``weights`` and ``doc_index``."""
    if background is None:
        return _pack(_sums([hashes], weights, doc_index, n_docs, feature)[0] > 0.0)
    if is_han is None:
        raise ValueError("a background centres each script apart: pass is_han for every feature")
    return _centred_signs(*script_bit_sums(hashes, weights, doc_index, is_han, n_docs, feature), background)


def weighted_signatures(
    hashes: Sequence[np.ndarray],
    weights: np.ndarray,
    doc_index: np.ndarray,
    n_docs: int,
    background: Background | None = None,
    is_han: np.ndarray | None = None,
    feature: np.ndarray | None = None,
) -> list[Signature]:
    """Wide signatures of ``n_docs`` documents: ``hashes[k]`` holds every feature's hash under
    :func:`~simsql.text.signature.wide_seeds` ``[k]``. Word 0 follows exactly the rule of
    :func:`weighted_fingerprints` (so it is the fingerprint, background included); words 1-3 are
    centred the same way on a wide background's centres (:attr:`Background.wide`), plain signs
    otherwise. Margins are ``|score| / total weight`` per bit. ``feature``: as in
    :func:`weighted_fingerprints`.

    All four words come from one pass of histograms. With a background, the plain words' sums are
    the sums of their two scripts' (exact integers, so equal to summing the document at once)."""
    if len(hashes) != WIDE_WORDS:
        raise ValueError(f"a wide signature needs hashes under {WIDE_WORDS} seeds, got {len(hashes)}")
    if background is None:
        score, total = _sums(hashes, weights, doc_index, n_docs, feature)
        bits = score > 0.0
    else:
        if is_han is None:
            raise ValueError("a background centres each script apart: pass is_han for every feature")
        signed, weight = script_bit_sums(hashes, weights, doc_index, is_han, n_docs, feature)
        total = weight.sum(axis=1)
        centred = WIDE_WORDS if background.wide else 1
        bits = np.empty((n_docs, WIDE_BITS), dtype=bool)
        score = np.empty((n_docs, WIDE_BITS))
        for word in range(centred):
            part = slice(64 * word, 64 * (word + 1))
            bits[:, part], word_score = _centred_bits(signed[:, :, part], weight, background, word)
            score[:, part] = word_score / CENTRE_SCALE
        plain = signed[:, :, 64 * centred :].sum(axis=1)  # plain signs: both scripts' sums
        bits[:, 64 * centred :] = plain > 0.0
        score[:, 64 * centred :] = plain
    margin_rows = (np.abs(score) / total[:, None]).tolist()
    word_rows = _words(bits).tolist()
    features = np.bincount(doc_index, minlength=n_docs).tolist()  # one hash per distinct feature
    return [Signature(tuple(word_rows[row]), tuple(margin_rows[row]), features[row]) for row in range(n_docs)]


def feature_hashes(features: Sequence[bytes], seed: int) -> np.ndarray:
    """XXH3 of each of ``features`` under ``seed`` (uint64): the feature hash of every
    fingerprint and signature."""
    return np.fromiter(map(_hash, features, repeat(seed)), np.uint64, len(features))


def han_features(features: Sequence[bytes]) -> np.ndarray:
    """True for each Han feature of ``features`` (:func:`~simsql.text.tokenize.is_han_feature`);
    only features whose first byte can start a Han character are decoded."""
    flags = np.zeros(len(features), dtype=bool)
    lead = tokenize.HAN_LEAD
    candidates = np.flatnonzero(np.fromiter(map(lead.__le__, features), bool, len(features)))
    if candidates.size:
        flags[candidates] = np.fromiter((tokenize.is_han_feature(features[i]) for i in candidates.tolist()), bool, candidates.size)
    return flags
