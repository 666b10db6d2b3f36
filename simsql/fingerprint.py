"""SimHash fingerprints (Charikar 2002; Manku, Jain and Das Sarma, WWW 2007).

Each feature is hashed to 64 bits with XXH3-64; bit ``j`` of the fingerprint is 1 when the
features whose hash has bit ``j`` set outweigh those whose hash has it clear (strictly: a tie
gives 0). Bit ``j`` is the bit of value ``2**j``.

Stability is a compatibility promise: a fingerprint stored today must equal the one computed
for the same text and configuration by a later simsql on another machine. Hence integer
(quantized) weights, a fixed hash algorithm, a private jieba instance, and ``config_id``,
which names everything that can change the output.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import repeat
from typing import Literal

import numpy as np
import xxhash

from . import tokenize
from .bits import FINGERPRINT_BITS
from .errors import EmptyDocument
from .weighting import IdfTable, jieba_idf_table, quantize, validate_weights

ALGORITHM_VERSION = 1
"""Bumped only if the fingerprint algorithm itself changes; part of ``config_id``."""

Weighting = Literal["count", "log", "jieba_idf"] | IdfTable

_BATCH_DOCS = 256
_hash = xxhash.xxh3_64_intdigest
# _BYTE_BITS[v, i] = bit i of byte value v (least significant first).
_BYTE_BITS = np.unpackbits(
    np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little"
).astype(np.float64)
_BYTE_OFFSETS = (np.arange(8, dtype=np.intp) * 256)[None, :]


def _signs(hashes: np.ndarray, weights: np.ndarray, doc_index: np.ndarray, n_docs: int) -> list[int]:
    """Signed weighted bit sums of many documents at once, reduced to fingerprints.

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
    bits = (2.0 * set_weight - total[:, None]) > 0.0
    return np.packbits(bits, axis=1, bitorder="little").view("<u8").ravel().tolist()


def _require_str(text: object) -> str:
    if isinstance(text, str):
        return text
    if text is None:
        raise TypeError("text must be a str, got None; store NULL yourself or skip the row")
    if isinstance(text, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"text must be a str, got {type(text).__name__}; decode it first, "
            "for example data.decode('utf-8', errors='replace')"
        )
    raise TypeError(f"text must be a str, got {type(text).__name__}")


@dataclass(frozen=True)
class Fingerprinter:
    """A SimHash configuration: immutable, hashable, and identified by :attr:`config_id`.

    The defaults were chosen by measurement on real text (see ``BENCHMARKS.md``): single words
    keep light edits within 3 bits far more often than word 3-shingles (93% against 22% of
    documents after a 2% word edit). Log-scaled counts cost a little of that recall against raw
    counts (93% against 96%) but raw counts let stopwords dominate: bits become nearly constant
    across documents, unrelated articles land 19 bits apart instead of 24, 0.03% of unrelated
    pairs fall within 3 bits (none with log counts), and the block index degenerates into a few
    huge buckets. An :class:`IdfTable` fitted on your own corpus separates best of all.

    Parameters:
        tokenizer: ``"words"`` (words, or word shingles when ``shingle_size > 1``; Han text is
            segmented) or ``"chars"`` (character n-grams of the whole text).
        shingle_size: words per shingle for ``"words"``.
        char_ngram_size: characters per n-gram for ``"chars"``.
        chinese: how Han runs become words: ``"jieba"`` segmentation or character ``"bigrams"``.
        weighting: ``"log"`` (1 + ln count), ``"count"``, ``"jieba_idf"`` (jieba's shipped IDF
            table, for Chinese) or an :class:`IdfTable` fitted on your corpus.
        seed: XXH3 seed; different seeds give unrelated fingerprints.
        bits: fingerprint width; only 64 is supported (a ``bigint``).
    """

    tokenizer: tokenize.TokenizerName = "words"
    shingle_size: int = 1
    char_ngram_size: int = 4
    chinese: tokenize.ChineseMode = "jieba"
    weighting: Weighting = "log"
    seed: int = 0
    bits: int = 64

    def __post_init__(self) -> None:
        if self.tokenizer not in ("words", "chars"):
            raise ValueError(f"tokenizer must be 'words' or 'chars', got {self.tokenizer!r}")
        for name in ("shingle_size", "char_ngram_size", "seed", "bits"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if not 1 <= self.shingle_size <= 16:
            raise ValueError(f"shingle_size must be in 1..16, got {self.shingle_size}")
        if not 1 <= self.char_ngram_size <= 32:
            raise ValueError(f"char_ngram_size must be in 1..32, got {self.char_ngram_size}")
        if self.chinese not in ("jieba", "bigrams"):
            raise ValueError(f"chinese must be 'jieba' or 'bigrams', got {self.chinese!r}")
        if not (isinstance(self.weighting, IdfTable) or self.weighting in ("count", "log", "jieba_idf")):
            raise ValueError(
                f"weighting must be 'count', 'log', 'jieba_idf' or an IdfTable, got {self.weighting!r}"
            )
        if not 0 <= self.seed < 2**64:
            raise ValueError(f"seed must be in [0, 2**64), got {self.seed}")
        if self.bits != FINGERPRINT_BITS:
            raise ValueError(f"only 64-bit fingerprints are supported (a bigint), got bits={self.bits}")

    # -- identity ---------------------------------------------------------------------------

    @cached_property
    def settings(self) -> dict[str, object]:
        """Everything that determines the output, as plain JSON values (recorded in the database)."""
        uses_jieba = self.tokenizer == "words" and self.chinese == "jieba"
        weighting = self.weighting
        return {
            "algorithm": ALGORITHM_VERSION,
            "hash": "xxh3_64",
            "tokenizer": self.tokenizer,
            "shingle_size": self.shingle_size if self.tokenizer == "words" else None,
            "char_ngram_size": self.char_ngram_size if self.tokenizer == "chars" else None,
            "chinese": (f"jieba-{tokenize.jieba_version()}" if uses_jieba else self.chinese)
            if self.tokenizer == "words"
            else None,
            "weighting": f"idf:{weighting.digest}" if isinstance(weighting, IdfTable) else weighting,
            "seed": self.seed,
            "bits": self.bits,
        }

    @cached_property
    def config_id(self) -> str:
        """Short stable name of this configuration, e.g. ``'sh1-3b8f0c2a9d41'``.

        It changes whenever a setting, the IDF table's content or the tokenizer's version would
        change output, so the database can refuse to compare fingerprints across configs.
        """
        canonical = json.dumps(self.settings, sort_keys=True, separators=(",", ":"))
        return f"sh{ALGORITHM_VERSION}-{xxhash.xxh3_64_hexdigest(canonical.encode())[:12]}"

    # -- features ---------------------------------------------------------------------------

    def _feature_counts(self, text: object) -> Counter[bytes]:
        counts: Counter[bytes | str] = Counter()
        for chunk in tokenize.features(
            _require_str(text), self.tokenizer, self.shingle_size, self.char_ngram_size, self.chinese
        ):
            counts.update(chunk)
        encoded = tokenize.encode_features(counts)
        return encoded if isinstance(encoded, Counter) else Counter(encoded)

    def features(self, text: str) -> dict[str, int]:
        """The features of ``text`` with their counts, as this configuration sees them.

        Useful to debug why two texts are (not) close, and to fit an :class:`IdfTable`.
        """
        return {f.decode("utf-8", "surrogatepass"): c for f, c in self._feature_counts(text).items()}

    def _weights(self, counts: Counter[bytes]) -> np.ndarray:
        values = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
        weighting = self.weighting
        if weighting == "count":
            return values
        if weighting == "log":
            return quantize(1.0 + np.log(values))
        table = jieba_idf_table() if weighting == "jieba_idf" else weighting
        assert isinstance(table, IdfTable)
        return quantize(values * table.weights(counts.keys()))

    # -- fingerprints -----------------------------------------------------------------------

    def fingerprint(self, text: str) -> int:
        """The unsigned 64-bit fingerprint of ``text``.

        Raises :class:`~simsql.errors.EmptyDocument` when the text has no features (empty,
        whitespace, punctuation only) and ``TypeError`` for anything but ``str``.
        """
        result = self.fingerprint_many([text], empty="none")[0]
        if result is None:
            raise EmptyDocument(f"text has no features to fingerprint ({_describe(text)}); store NULL or reject it")
        return result

    def fingerprint_many(
        self, texts: Iterable[str], *, empty: Literal["raise", "none"] = "raise"
    ) -> list[int | None]:
        """Fingerprints of many texts, vectorised across documents.

        ``empty="none"`` returns ``None`` for texts without features instead of raising, so one
        empty row does not fail a whole batch (the database layer stores those as NULL).
        """
        if empty not in ("raise", "none"):
            raise ValueError(f"empty must be 'raise' or 'none', got {empty!r}")
        results: list[int | None] = []
        batch: list[Counter[bytes]] = []
        for position, text in enumerate(texts):
            counts = self._feature_counts(text)
            if not counts and empty == "raise":
                raise EmptyDocument(
                    f"text #{position} has no features to fingerprint "
                    f"({_describe(text)}); store NULL or reject it"
                )
            batch.append(counts)
            if len(batch) >= _BATCH_DOCS:
                results.extend(self._fingerprint_counts(batch))
                batch = []
        if batch:
            results.extend(self._fingerprint_counts(batch))
        return results

    def _fingerprint_counts(self, batch: Sequence[Counter[bytes]]) -> list[int | None]:
        seed = self.seed
        live = [i for i, counts in enumerate(batch) if counts]
        out: list[int | None] = [None] * len(batch)
        if not live:
            return out
        hashes = np.concatenate(
            [np.fromiter(map(_hash, batch[i], repeat(seed)), np.uint64, len(batch[i])) for i in live]
        )
        weights = np.concatenate([self._weights(batch[i]) for i in live])
        sizes = np.fromiter((len(batch[i]) for i in live), np.intp, len(live))
        doc_index = np.repeat(np.arange(len(live), dtype=np.intp), sizes)
        for i, fp in zip(live, _signs(hashes, weights, doc_index, len(live))):
            out[i] = fp
        return out


def _describe(text: str) -> str:
    """Counted in code points, what ``len`` counts: one emoji the eye sees may be several."""
    if not text:
        return "empty string"
    if text.isspace():
        return "whitespace only"
    count = len(text)
    preview = text if count <= 20 else text[:20] + "..."
    return f"{preview!r}: {count} code point{'' if count == 1 else 's'}, no letters or digits forming a word"


@lru_cache(maxsize=32)
def _fingerprinter(**config: object) -> Fingerprinter:
    return Fingerprinter(**config)  # type: ignore[arg-type]


DEFAULT = Fingerprinter()


def simhash(text: str, **config: object) -> int:
    """Fingerprint ``text`` with ``Fingerprinter(**config)`` (the default configuration if none)."""
    return (_fingerprinter(**config) if config else DEFAULT).fingerprint(text)


def simhash_features(
    features: Mapping[str, float] | Iterable[tuple[str, float]],
    *,
    seed: int = 0,
    hash_function: Callable[[str], int] | None = None,
) -> int:
    """Fingerprint from caller-given weighted features, e.g. ``{"美国": 4, "51区": 5}``.

    Use it when your pipeline already extracts keywords and weights. Repeated features add up.
    ``hash_function`` (feature -> unsigned 64-bit int) replaces XXH3, for worked examples and
    for reproducing other implementations.
    """
    items = features.items() if isinstance(features, Mapping) else features
    totals: dict[str, float] = {}
    for item in items:
        try:
            feature, weight = item
        except (TypeError, ValueError):
            raise TypeError(f"features must be (str, weight) pairs, got {item!r}") from None
        if not isinstance(feature, str):
            raise TypeError(f"feature names must be str, got {type(feature).__name__}")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise TypeError(f"weight of {feature!r} must be a number, got {type(weight).__name__}")
        totals[feature] = totals.get(feature, 0.0) + float(weight)
    weights = np.fromiter(totals.values(), np.float64, len(totals))
    validate_weights(weights)
    weights = quantize(weights)
    if not totals or not weights.any():
        raise EmptyDocument("no features with a positive weight to fingerprint")
    if hash_function is None:
        encoded = (f.encode("utf-8", "surrogatepass") for f in totals)
        hashes = np.fromiter(map(_hash, encoded, repeat(seed)), np.uint64, len(totals))
    else:
        values = [hash_function(f) for f in totals]
        for feature, value in zip(totals, values):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
                raise ValueError(f"hash_function({feature!r}) must return an int in [0, 2**64), got {value!r}")
        hashes = np.array(values, dtype=np.uint64)
    doc_index = np.zeros(len(totals), dtype=np.intp)
    return _signs(hashes, weights, doc_index, 1)[0]  # type: ignore[return-value]
