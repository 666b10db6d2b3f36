"""Feature weights: term counts, log-scaled counts, IDF tables.

Weights are turned into integers before the signed bit sums (see :func:`quantize`): sums of
integers below 2**53 are exact in float64 whatever the summation order, so a BLAS or SIMD
library that adds in a different order on another machine cannot flip a bit whose sum is
close to zero. That is what makes fingerprints portable across machines.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import xxhash

if TYPE_CHECKING:
    from .fingerprint import Fingerprinter

QUANT_SCALE = float(1 << 24)
"""Largest quantized weight of a document; per-feature sums stay far below 2**53."""

_FORMAT = "simsql-idf"


def quantize(weights: np.ndarray) -> np.ndarray:
    """Scale ``weights`` so the largest is 2**24 and round to integers (as float64).

    Positive scaling does not change the sign of any bit sum, so this only removes
    floating-point noise. Negative, NaN and infinite weights are refused by the callers.
    """
    top = float(weights.max()) if weights.size else 0.0
    if top <= 0.0:
        return np.zeros_like(weights)
    return np.rint(weights * (QUANT_SCALE / top))


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
    def fit(cls, texts: Iterable[str], fingerprinter: Fingerprinter | None = None) -> IdfTable:
        """Fit smoothed IDF, ``ln((1 + N) / (1 + df)) + 1``, on ``texts``.

        Features come from ``fingerprinter`` (the default one if omitted): fit the table with
        the same tokenizer settings you will fingerprint with. Texts without features are
        skipped rather than counted as documents.
        """
        from .fingerprint import Fingerprinter

        fingerprinter = fingerprinter or Fingerprinter()
        document_frequency: dict[bytes, int] = {}
        documents = 0
        for text in texts:
            distinct = fingerprinter._feature_counts(text).keys()
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
        lookup = self._idf.get
        default = self.default
        return np.fromiter((lookup(f, default) for f in features), dtype=np.float64)

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
    import jieba.analyse

    path = os.path.join(os.path.dirname(jieba.analyse.__file__), "idf.txt")
    idf: dict[str, float] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            parts = line.split()
            if len(parts) == 2:
                idf[parts[0]] = float(parts[1])
    return IdfTable(idf, default=statistics.median(idf.values()))
