"""Feature weights: term counts, log-scaled counts, IDF tables.

Weights are turned into integers before the signed bit sums (see :func:`quantize`): sums of
integers below 2**53 are exact in float64 whatever the summation order, so a BLAS or SIMD
library that adds in a different order on another machine cannot flip a bit whose sum is
close to zero. That is what makes fingerprints portable across machines.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import statistics
from collections.abc import Iterable, Mapping, Sized
from functools import lru_cache
from importlib import resources
from itertools import repeat
from typing import Any, Protocol

import numpy as np
import xxhash

from . import tokenize


class FeatureSource(Protocol):
    """Anything that turns a text into feature counts, e.g. a :class:`~simsql.Fingerprinter`.

    A protocol rather than an import keeps the layers one way: the fingerprinter imports
    weighting, never the reverse.
    """

    def feature_counts(self, text: str) -> Mapping[bytes, int]: ...


QUANT_SCALE = float(1 << 24)
"""Largest quantized weight of a document; per-feature sums stay far below 2**53."""

_FORMAT = "simsql-idf"


def quantize(weights: np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
    """Scale ``weights`` so the largest is 2**24 and round to integers (as float64).

    Positive scaling does not change the sign of any bit sum, so this only removes
    floating-point noise. Negative, NaN and infinite weights are refused by the callers.

    ``starts`` (ascending, each document non-empty): where each document's weights begin in
    ``weights``; each document is then scaled apart, exactly as ``quantize`` of its own weights
    (the same maximum, the same division and product per element).
    """
    if starts is None:
        top = float(weights.max()) if weights.size else 0.0
        if top <= 0.0:
            return np.zeros_like(weights)
        return np.rint(weights * (QUANT_SCALE / top))
    tops = np.maximum.reduceat(weights, starts)
    scales = np.zeros_like(tops)  # a document whose weights are all 0 stays all 0
    np.divide(QUANT_SCALE, tops, out=scales, where=~(tops <= 0.0))
    return np.rint(weights * np.repeat(scales, np.diff(np.append(starts, len(weights)))))


def validate_weights(weights: np.ndarray) -> None:
    if weights.size and not (np.all(np.isfinite(weights)) and float(weights.min()) >= 0.0):
        raise ValueError("feature weights must be finite and non-negative")


class IdfTable:
    """Inverse document frequencies of features, fitted on a corpus and saved as JSON.

    IDF weighting lets rare, content-bearing features dominate the fingerprint so that shared
    boilerplate moves it less. A table is immutable and hashable by content (its ``digest``),
    so a :class:`~simsql.Fingerprinter` that uses it stays hashable and its ``config_id``
    changes when, and only when, the table's content changes.

    Features missing from the table get ``default`` (by default, the IDF of a feature seen in
    no document: the rarest possible).
    """

    __slots__ = ("_idf", "default", "documents", "digest")

    def __init__(self, idf: Mapping[str, float], default: float, documents: int = 0) -> None:
        table: dict[bytes, float] = {}
        for feature, value in idf.items():
            if not isinstance(feature, str):
                raise TypeError(f"IDF features must be str, got {type(feature).__name__}")
            value = float(value)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"IDF of {feature!r} must be finite and >= 0, got {value}")
            table[feature.encode("utf-8", "surrogatepass")] = value
        default = float(default)
        if not math.isfinite(default) or default < 0:
            raise ValueError(f"default IDF must be finite and >= 0, got {default}")
        self._idf = table
        self.default = default
        self.documents = int(documents)
        canonical = json.dumps(
            [sorted((k.decode("utf-8", "surrogatepass"), repr(v)) for k, v in table.items()), repr(default)],
            ensure_ascii=True,
            separators=(",", ":"),
        )
        self.digest = xxhash.xxh3_64_hexdigest(canonical.encode("ascii"))

    @classmethod
    def fit(cls, texts: Iterable[str], fingerprinter: FeatureSource | None = None) -> IdfTable:
        """Fit smoothed IDF, ``ln((1 + N) / (1 + df)) + 1``, on ``texts``.

        Features come from ``fingerprinter`` (the default one if omitted): fit the table with
        the same tokenizer settings you will fingerprint with. Texts without features are
        skipped rather than counted as documents.
        """
        count = fingerprinter.feature_counts if fingerprinter is not None else tokenize.feature_counts
        document_frequency: dict[bytes, int] = {}
        documents = 0
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"IdfTable.fit needs str texts, got {type(text).__name__}")
            distinct = count(text).keys()
            if not distinct:
                continue
            documents += 1
            for feature in distinct:
                document_frequency[feature] = document_frequency.get(feature, 0) + 1
        if documents == 0:
            raise ValueError("IdfTable.fit needs at least one text with features")
        idf = {
            feature.decode("utf-8", "surrogatepass"): math.log((1 + documents) / (1 + df)) + 1.0
            for feature, df in document_frequency.items()
        }
        return cls(idf, default=math.log(1 + documents) + 1.0, documents=documents)

    def save(self, path: str | os.PathLike[str]) -> None:
        payload: dict[str, Any] = {
            "format": _FORMAT,
            "version": 1,
            "documents": self.documents,
            "default": self.default,
            "idf": {k.decode("utf-8", "surrogatepass"): v for k, v in sorted(self._idf.items())},
        }
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, ensure_ascii=False, indent=0)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> IdfTable:
        with open(path, encoding="utf-8") as handle:
            payload = json.load(handle)
        if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
            raise ValueError(f"{os.fspath(path)!r} is not a simsql IDF table (format {_FORMAT!r})")
        return cls(payload["idf"], default=payload["default"], documents=payload.get("documents", 0))

    def get(self, feature: str | bytes) -> float:
        key = feature if isinstance(feature, bytes) else feature.encode("utf-8", "surrogatepass")
        return self._idf.get(key, self.default)

    def weights(self, features: Iterable[bytes]) -> np.ndarray:
        """The IDF of each of ``features`` (``default`` for those not in the table), in order."""
        values = map(self._idf.get, features, repeat(self.default))
        return np.fromiter(values, dtype=np.float64, count=len(features) if isinstance(features, Sized) else -1)

    def __len__(self) -> int:
        return len(self._idf)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IdfTable) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:
        return f"IdfTable(features={len(self)}, documents={self.documents}, digest={self.digest!r})"


@lru_cache(maxsize=1)
def jieba_idf_table() -> IdfTable:
    """jieba's shipped IDF table (``jieba/analyse/idf.txt``); unknown features get its median,
    as ``jieba.analyse`` itself does."""
    analyse = tokenize.import_jieba("jieba.analyse")
    path = os.path.join(os.path.dirname(analyse.__file__), "idf.txt")
    idf: dict[str, float] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            parts = line.split()
            if len(parts) == 2:
                idf[parts[0]] = float(parts[1])
    return IdfTable(idf, default=statistics.median(idf.values()))


PRIOR_VERSION = 1
PRIOR_SHA256 = "b10fb2f7636a7cfea048efdc2421a61baed721faa8396b5c0e4407e239160386"
"""SHA-256 of the decompressed prior file: part of the fingerprint compatibility promise."""
PRIOR_DEFAULT = 11.0
PRIOR_BAND = (2.0, 4.0)
"""A word's prior weight is its IDF minus 2, kept within (0, 2]: chosen by measurement."""
PRIOR_FLOOR = 0.05
"""The weight of the commonest words: small, so a text of stopwords alone still has a fingerprint."""


def prior_weight(idf: float) -> float:
    """Weight of a word of prior IDF ``idf``: ``min(max(idf - 2, 0.05), 2)``.

    Words commoner than IDF 2 ("the", "的") barely count, so they no longer push the same bits in
    every document; every word rarer than IDF 4 (most content words, and any word the prior does
    not know, such as a copier's substitution) counts the same, so a few rare words cannot
    dominate the fingerprint and light edits stay light. Raising the ceiling balances bits a
    little better but lets edits move fingerprints further (BENCHMARKS.md, "band" configurations).
    """
    low, high = PRIOR_BAND
    return min(max(idf - low, PRIOR_FLOOR), high - low)


def _read_prior() -> dict[str, float]:
    raw = gzip.decompress(resources.files("simsql").joinpath(f"data/prior-{PRIOR_VERSION}.tsv.gz").read_bytes())
    digest = hashlib.sha256(raw).hexdigest()
    if digest != PRIOR_SHA256:
        raise RuntimeError(
            f"simsql's built-in IDF prior has SHA-256 {digest}, expected {PRIOR_SHA256}; "
            "the installation is damaged: reinstall simsql"
        )
    idf: dict[str, float] = {}
    for line in raw.decode("utf-8").splitlines():
        if line and not line.startswith("#"):
            word, value = line.split("\t")
            idf[word] = float(value)
    return idf


@lru_cache(maxsize=1)
def prior_idf() -> IdfTable:
    """The built-in IDF prior itself, never fitted on anyone's corpus.

    56,188 common words: jieba 0.42.1's shipped IDF (Chinese) and wordfreq 3.1.1's English
    frequencies on the same scale ("the" and "的" both 0.88); every other feature has
    ``PRIOR_DEFAULT``, about the IDF of a rare word. Built by ``research/build_prior.py``.
    The file ships with simsql and is checked against a pinned hash, so fingerprints cannot
    drift with an installed jieba or a damaged install.
    """
    return IdfTable(_read_prior(), default=PRIOR_DEFAULT, documents=0)


@lru_cache(maxsize=1)
def prior_table() -> IdfTable:
    """The weights of ``weighting="prior"``: :func:`prior_weight` of every word of the prior."""
    idf = {word: prior_weight(value) for word, value in _read_prior().items()}
    return IdfTable(idf, default=prior_weight(PRIOR_DEFAULT), documents=0)
