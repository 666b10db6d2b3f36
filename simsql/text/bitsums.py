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

from collections import Counter
from collections.abc import Sequence
from itertools import repeat

import numpy as np
import xxhash

from . import tokenize
from .background import CENTRE_SCALE, Background
from .signature import WIDE_WORDS, Signature

_hash = xxhash.xxh3_64_intdigest
# _BYTE_BITS[v, i] = bit i of byte value v (least significant first).
_BYTE_BITS = np.unpackbits(
    np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little"
).astype(np.float64)
_BYTE_OFFSETS = (np.arange(8, dtype=np.intp) * 256)[None, :]


def _bit_sums(hashes: np.ndarray, weights: np.ndarray, doc_index: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """Per document, the weight of features with each bit set ([n_docs, 64]) and the total weight.

    Rather than unpacking 64 bits per feature, weights are histogrammed per (document, byte
    position, byte value) with one ``bincount``, then each 256-bin histogram is multiplied by the
    bit table of byte values. All quantities are integers below 2**53, so the float64
    arithmetic is exact and the result does not depend on summation order.
    """
    hash_bytes = hashes.astype("<u8", copy=False).view(np.uint8).reshape(-1, 8).astype(np.intp)
    bins = hash_bytes + _BYTE_OFFSETS + (doc_index * 2048)[:, None]
    per_byte = np.bincount(bins.ravel(), weights=np.repeat(weights, 8), minlength=2048 * n_docs)
    set_weight = (per_byte.reshape(n_docs, 8, 256) @ _BYTE_BITS).reshape(n_docs, 64)
    total = np.bincount(doc_index, weights=weights, minlength=n_docs)
    return set_weight, total


def _pack(bits: np.ndarray) -> list[int]:
    return np.packbits(bits, axis=1, bitorder="little").view("<u8").ravel().tolist()


def _plain_scores(hashes: np.ndarray, weights: np.ndarray, doc_index: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """Per document, each bit's signed weighted sum ``V`` ([n_docs, 64]; bit set when > 0) and
    the total weight its margin is measured against."""
    set_weight, total = _bit_sums(hashes, weights, doc_index, n_docs)
    return 2.0 * set_weight - total[:, None], total


def _signs(hashes: np.ndarray, weights: np.ndarray, doc_index: np.ndarray, n_docs: int) -> list[int]:
    """Signed weighted bit sums of many documents at once, reduced to fingerprints."""
    return _pack(_plain_scores(hashes, weights, doc_index, n_docs)[0] > 0.0)


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
    hashes: np.ndarray, weights: np.ndarray, doc_index: np.ndarray, is_han: np.ndarray, n_docs: int
) -> tuple[np.ndarray, np.ndarray]:
    """``V`` ([n_docs, 2, 64]) and total weight ([n_docs, 2]) of each document's Latin (0) and
    Han (1) features: one histogram over (document, script) rows."""
    set_weight, total = _bit_sums(hashes, weights, 2 * doc_index + is_han, 2 * n_docs)
    return (2.0 * set_weight - total[:, None]).reshape(n_docs, 2, 64), total.reshape(n_docs, 2)


def weighted_fingerprints(
    hashes: np.ndarray,
    weights: np.ndarray,
    doc_index: np.ndarray,
    n_docs: int,
    background: Background | None = None,
    is_han: np.ndarray | None = None,
) -> list[int]:
    """Fingerprints of ``n_docs`` documents from their features' hashes and quantized weights
    (``doc_index``: each feature's document; ``is_han``: each feature's script, needed with a
    background). The one rule from weighted features to bits, shared by :class:`Fingerprinter`
    and the benchmarks that fingerprint millions of articles from cached counts."""
    if background is None:
        return _signs(hashes, weights, doc_index, n_docs)
    if is_han is None:
        raise ValueError("a background centres each script apart: pass is_han for every feature")
    return _centred_signs(*script_bit_sums(hashes, weights, doc_index, is_han, n_docs), background)


def weighted_signatures(
    hashes: Sequence[np.ndarray],
    weights: np.ndarray,
    doc_index: np.ndarray,
    n_docs: int,
    background: Background | None = None,
    is_han: np.ndarray | None = None,
) -> list[Signature]:
    """Wide signatures of ``n_docs`` documents: ``hashes[k]`` holds every feature's hash under
    :func:`~simsql.text.signature.wide_seeds` ``[k]``. Word 0 follows exactly the rule of
    :func:`weighted_fingerprints` (so it is the fingerprint, background included); words 1-3 are
    centred the same way on a wide background's centres (:attr:`Background.wide`), plain signs
    otherwise. Margins are ``|score| / total weight`` per bit."""
    if len(hashes) != WIDE_WORDS:
        raise ValueError(f"a wide signature needs hashes under {WIDE_WORDS} seeds, got {len(hashes)}")
    words, margins = [], []
    for word, seeded in enumerate(hashes):
        if background is None or (word > 0 and not background.wide):  # plain signs
            score, total = _plain_scores(seeded, weights, doc_index, n_docs)
            words.append(_pack(score > 0.0))
        else:
            if is_han is None:
                raise ValueError("a background centres each script apart: pass is_han for every feature")
            signed, weight = script_bit_sums(seeded, weights, doc_index, is_han, n_docs)
            bits, score = _centred_bits(signed, weight, background, word)
            words.append(_pack(bits))
            score, total = score / CENTRE_SCALE, weight.sum(axis=1)
        margins.append(np.abs(score) / total[:, None])
    margin_rows = np.concatenate(margins, axis=1).tolist()
    features = np.bincount(doc_index, minlength=n_docs).tolist()  # one hash per distinct feature
    return [
        Signature(tuple(word[row] for word in words), tuple(margin_rows[row]), features[row]) for row in range(n_docs)
    ]


def feature_hashes(documents: Sequence[Counter[bytes]], seed: int) -> np.ndarray:
    """XXH3 of every feature of ``documents`` under ``seed``, in document then feature order."""
    return np.concatenate([np.fromiter(map(_hash, counts, repeat(seed)), np.uint64, len(counts)) for counts in documents])


def han_flags(documents: Sequence[Counter[bytes]], count: int) -> np.ndarray:
    """1 for each Han feature of ``documents`` (in order), 0 for the others."""
    return np.fromiter((tokenize.is_han_feature(f) for counts in documents for f in counts), dtype=np.intp, count=count)
