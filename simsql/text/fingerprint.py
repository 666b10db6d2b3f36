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
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from itertools import repeat
from typing import Any, Literal, TypeVar

import numpy as np
import xxhash

from . import tokenize
from .background import Background, set_default_measure
from .bits import FINGERPRINT_BITS
from .bitsums import FeatureBatch, feature_hashes, han_features, script_bit_sums, weighted_fingerprints, weighted_signatures
from .errors import ConfigMismatch, EmptyDocument
from .signature import WIDE_BITS, WIDE_WORDS, Signature, wide_seeds
from .weighting import IdfTable, jieba_idf_table, prior_table, quantize, validate_weights

ALGORITHM_VERSION = 2
"""The default of ``Fingerprinter(version=...)``: the 64-bit algorithm; part of ``config_id``.
Version 1 (simsql 0.1: log counts, no prior) stays available by name."""

WIDE_VERSION = 3
"""Version 2 (the same features, weights and fingerprints, bit for bit) plus the wide 256-bit
signature (:mod:`simsql.text.signature`) as part of the configuration: a table recorded with it stores
the signature too. Asked for by name: ``WideSimHashMixin``, ``simsql attach --wide``,
``wide=True``; every new table is version 2 unless told otherwise (:data:`DEFAULT`)."""

VERSIONS = (1, 2, 3)

Weighting = Literal["count", "log", "jieba_idf", "prior"] | IdfTable
_NAMED_WEIGHTINGS = {1: ("count", "log", "jieba_idf"), **dict.fromkeys((2, 3), ("count", "log", "jieba_idf", "prior"))}
_DEFAULT_WEIGHTING = {1: "log", 2: "prior", 3: "prior"}
_DEFAULT_CHINESE = {1: "jieba", 2: "bigrams", 3: "bigrams"}

_BATCH_DOCS = 256
_Result = TypeVar("_Result")
_hash = xxhash.xxh3_64_intdigest
@dataclass(frozen=True)
class Fingerprinter:
    """A SimHash configuration: immutable, hashable, and identified by :attr:`config_id`.

    The defaults were chosen by measurement on real text from six documentation sources and
    checked on a seventh held out (BENCHMARKS.md, "Defaults, and why: the measurements"):
    single words weighted by ``(1 + ln count) * idf`` with a built-in IDF prior. Words keep
    light edits close (word shingles do not), and the prior stops common words from pushing
    the same bits in every document, which both separates unrelated texts and keeps the
    16-bit index blocks balanced. An :class:`IdfTable` fitted on your own corpus replaces the
    prior.

    Parameters:
        tokenizer: ``"words"`` (words, or word shingles when ``shingle_size > 1``; Han text is
            segmented) or ``"chars"`` (character n-grams of the whole text).
        shingle_size: words per shingle for ``"words"``.
        char_ngram_size: characters per n-gram for ``"chars"``.
        chinese: how Han runs become features: character ``"bigrams"`` (version 2 default: a
            substituted character changes two bigrams, while jieba re-segments the words around
            it, and bigrams need no dictionary) or ``"jieba"`` segmentation (version 1 default).
        weighting: ``"prior"`` (version 2 default: log counts times the built-in word prior,
            see :func:`simsql.text.weighting.prior_weight`; shingles and character n-grams are not
            in the prior, so for them it equals ``"log"``),
            ``"log"`` (1 + ln count; version 1 default), ``"count"``, ``"jieba_idf"`` (count
            times jieba's shipped IDF) or an :class:`IdfTable` fitted on your corpus (version 2:
            log counts times its IDF; version 1: counts times its IDF).
        seed: XXH3 seed; different seeds give unrelated fingerprints.
        bits: fingerprint width; only 64 is supported (a ``bigint``).
        version: algorithm version. ``Fingerprinter(version=1)`` is exactly simsql 0.1's
            default configuration (same fingerprints, same ``config_id``), for tables
            fingerprinted before the defaults changed. ``version=3`` (:data:`WIDE_VERSION`): version
            2's fingerprints, with the wide signature part of the configuration (another ``config_id``).
        background: a :class:`~simsql.text.background.Background` fitted on your table's text with
            this same configuration: bits are centred on that corpus's own lean instead of
            zero, which balances them (faster lookups, fewer chance matches). ``None`` (the
            default) leaves fingerprints exactly as without it.
    """

    tokenizer: tokenize.TokenizerName = "words"
    shingle_size: int = 1
    char_ngram_size: int = 4
    chinese: tokenize.ChineseMode = None  # type: ignore[assignment]  # resolved per version
    weighting: Weighting = None  # type: ignore[assignment]  # resolved per version
    seed: int = 0
    bits: int = 64
    version: int = ALGORITHM_VERSION
    background: Background | None = None

    def __post_init__(self) -> None:
        if isinstance(self.version, bool) or self.version not in VERSIONS:
            raise ValueError(f"version must be one of {VERSIONS}, got {self.version!r}")
        if self.weighting is None:
            object.__setattr__(self, "weighting", _DEFAULT_WEIGHTING[self.version])
        if self.chinese is None:
            object.__setattr__(self, "chinese", _DEFAULT_CHINESE[self.version])
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
        named = _NAMED_WEIGHTINGS[self.version]
        if not (isinstance(self.weighting, IdfTable) or (isinstance(self.weighting, str) and self.weighting in named)):
            raise ValueError(
                f"weighting must be one of {', '.join(map(repr, named))} or an IdfTable for "
                f"version {self.version}, got {self.weighting!r}"
            )
        if not 0 <= self.seed < 2**64:
            raise ValueError(f"seed must be in [0, 2**64), got {self.seed}")
        if self.bits != FINGERPRINT_BITS:
            raise ValueError(f"only 64-bit fingerprints are supported (a bigint), got bits={self.bits}")
        if self.background is not None:
            if not isinstance(self.background, Background):
                raise TypeError(f"background must be a simsql Background, got {type(self.background).__name__}")
            base = self.without_background().config_id
            # version 3's fingerprint is version 2's: a background fitted for either serves both
            twins = (2, WIDE_VERSION) if self.version in (2, WIDE_VERSION) else (self.version,)
            accepted = {replace(self.without_background(), version=v).config_id for v in twins}
            if self.background.fitted_for not in accepted:
                raise ConfigMismatch(
                    f"this background was fitted for configuration {self.background.fitted_for}, not {base}; "
                    "fit it again with Background.fit(texts, fingerprinter) using these settings"
                )

    def without_background(self) -> Fingerprinter:
        """The same configuration with no background: the one a background is fitted with."""
        return self if self.background is None else replace(self, background=None)

    # -- identity ---------------------------------------------------------------------------

    @cached_property
    def settings(self) -> dict[str, object]:
        """Everything that determines the output, as plain JSON values (recorded in the database).

        Version 1 settings are exactly simsql 0.1's, so its ``config_id`` values still match.
        """
        uses_jieba = self.tokenizer == "words" and self.chinese == "jieba"
        weighting = self.weighting
        if isinstance(weighting, IdfTable):
            weighting_name = f"idf:{weighting.digest}"
        elif weighting == "prior":
            weighting_name = f"prior:{prior_table().digest}"
        else:
            weighting_name = weighting
        return {
            "algorithm": self.version,
            "hash": "xxh3_64",
            "tokenizer": self.tokenizer,
            "shingle_size": self.shingle_size if self.tokenizer == "words" else None,
            "char_ngram_size": self.char_ngram_size if self.tokenizer == "chars" else None,
            "chinese": (f"jieba-{tokenize.jieba_version()}" if uses_jieba else self.chinese)
            if self.tokenizer == "words"
            else None,
            "weighting": weighting_name,
            "seed": self.seed,
            "bits": self.bits,
        } | ({"signature_bits": WIDE_BITS} if self.wide else {}) | (
            {"background": self.background.settings} if self.background is not None else {}
        )

    @property
    def wide(self) -> bool:
        """Whether the wide signature is part of this configuration (version 3; its tables store it)."""
        return self.version >= WIDE_VERSION

    @cached_property
    def config_id(self) -> str:
        """Short stable name of this configuration, e.g. ``'sh2-3b8f0c2a9d41'``.

        It changes whenever a setting, the IDF table's content or the tokenizer's version would
        change output, so the database can refuse to compare fingerprints across configs.
        """
        canonical = json.dumps(self.settings, sort_keys=True, separators=(",", ":"))
        return f"sh{self.version}-{xxhash.xxh3_64_hexdigest(canonical.encode())[:12]}"

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], weighting: IdfTable | None = None) -> Fingerprinter:
        """The configuration recorded as ``settings`` (see :attr:`settings`), e.g. by the registry.

        Settings record an IDF table by digest only: pass the table as ``weighting`` then. The
        rebuilt configuration is checked to have the recorded identity, so a setting this
        version of simsql cannot reproduce (a newer algorithm, another jieba) is refused rather
        than silently fingerprinting differently.
        """
        recorded = str(settings.get("weighting", "log"))
        if recorded.startswith("idf:") and (weighting is None or recorded != f"idf:{weighting.digest}"):
            raise ConfigMismatch(
                f"these fingerprints were made with an IdfTable ({recorded}); pass "
                "Fingerprinter(weighting=IdfTable.load(...)) with that table"
            )
        chinese = str(settings.get("chinese") or "jieba")
        try:
            background = Background.from_settings(settings["background"]) if "background" in settings else None
            rebuilt = cls(
                tokenizer=settings.get("tokenizer", "words"),  # type: ignore[arg-type]
                shingle_size=int(settings.get("shingle_size") or 1),
                char_ngram_size=int(settings.get("char_ngram_size") or 4),
                chinese="jieba" if chinese.startswith("jieba") else "bigrams",  # type: ignore[arg-type]
                weighting=weighting if recorded.startswith("idf:") else recorded.split(":", 1)[0],  # type: ignore[arg-type]
                seed=int(settings.get("seed", 0)),  # type: ignore[call-overload]
                version=int(settings.get("algorithm", 1)),  # type: ignore[call-overload]
                background=background,
            )
        except (TypeError, ValueError) as error:
            raise ConfigMismatch(f"cannot rebuild the recorded configuration {dict(settings)}: {error}") from None
        if rebuilt.settings != dict(settings):
            raise ConfigMismatch(
                f"the recorded configuration {dict(settings)} differs from what this simsql builds "
                f"({rebuilt.settings}); install the simsql/jieba versions that made it"
            )
        return rebuilt

    # -- features ---------------------------------------------------------------------------

    def feature_counts(self, text: str) -> Counter[bytes]:
        """Distinct features of ``text`` as UTF-8 bytes with their counts (see :meth:`features`)."""
        encoded = tokenize.feature_counts(
            tokenize.require_text(text), self.tokenizer, self.shingle_size, self.char_ngram_size, self.chinese
        )
        return encoded if isinstance(encoded, Counter) else Counter(encoded)

    _feature_counts = feature_counts

    def features(self, text: str) -> dict[str, int]:
        """The features of ``text`` with their counts, as this configuration sees them.

        Useful to debug why two texts are (not) close, and to fit an :class:`IdfTable`.
        """
        return {f.decode("utf-8", "surrogatepass"): c for f, c in self.feature_counts(text).items()}

    def feature_weights(self, features: Iterable[bytes], counts: np.ndarray) -> np.ndarray:
        """Unquantized weights of one document's distinct ``features`` given their ``counts``.

        Exposed so that benchmarks building millions of fingerprints from cached counts use the
        very weighting simsql uses.
        """
        return self._weigh(counts, self._idf(features))

    def _idf(self, features: Iterable[bytes]) -> np.ndarray | None:
        """The factor of each of ``features`` that does not depend on its count (its IDF or prior
        weight), or ``None`` for the weightings of counts alone. A batch looks each distinct
        feature up once and gathers (:meth:`_batch_weights`)."""
        weighting = self.weighting
        if weighting == "count" or weighting == "log":
            return None
        table = jieba_idf_table() if weighting == "jieba_idf" else prior_table() if weighting == "prior" else weighting
        return table.weights(features)  # type: ignore[union-attr]

    def _weigh(self, counts: np.ndarray, idf: np.ndarray | None) -> np.ndarray:
        """Weights of features of ``counts`` and factors ``idf`` (:meth:`_idf`): the one weighting rule."""
        weighting = self.weighting
        if weighting == "count":
            return counts
        if weighting == "log":
            return 1.0 + np.log(counts)
        if weighting == "jieba_idf" or (self.version == 1 and isinstance(weighting, IdfTable)):
            return counts * idf
        return (1.0 + np.log(counts)) * idf

    def _weights(self, counts: Mapping[bytes, int]) -> np.ndarray:
        values = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
        if self.weighting == "count":
            return values
        return quantize(self.feature_weights(counts.keys(), values))

    def _batch_weights(self, batch: FeatureBatch) -> np.ndarray:
        """Quantized weights of every occurrence of ``batch``, each document scaled apart: equal to
        :meth:`_weights` of each document, with each distinct feature's factor looked up once."""
        if self.weighting == "count":
            return batch.counts
        idf = self._idf(batch.features)
        return quantize(self._weigh(batch.counts, None if idf is None else idf[batch.feature]), batch.starts)

    # -- fingerprints -----------------------------------------------------------------------

    def fingerprint(self, text: str) -> int:
        """The unsigned 64-bit fingerprint of ``text``.

        Raises :class:`~simsql.text.errors.EmptyDocument` when the text has no features (empty,
        whitespace, punctuation only) and ``TypeError`` for anything but ``str``.
        """
        result = self.fingerprint_many([text], empty="none")[0]
        if result is None:
            raise EmptyDocument(f"text has no features to fingerprint ({tokenize.describe_wordless(text)}); store NULL or reject it")
        return result

    def fingerprint_many(
        self, texts: Iterable[str], *, empty: Literal["raise", "none"] = "raise"
    ) -> list[int | None]:
        """Fingerprints of many texts, vectorised across documents.

        ``empty="none"`` returns ``None`` for texts without features instead of raising, so one
        empty row does not fail a whole batch (the database layer stores those as NULL).
        """
        return self._per_batch(texts, empty, self._fingerprint_counts)

    def signature(self, text: str) -> Signature:
        """The wide 256-bit :class:`~simsql.text.signature.Signature` of ``text``, with the margin of
        each bit; its word 0 equals :meth:`fingerprint`. Same errors as :meth:`fingerprint`."""
        result = self.signatures_many([text], empty="none")[0]
        if result is None:
            raise EmptyDocument(f"text has no features to fingerprint ({tokenize.describe_wordless(text)}); store NULL or reject it")
        return result

    def signatures_many(
        self, texts: Iterable[str], *, empty: Literal["raise", "none"] = "raise"
    ) -> list[Signature | None]:
        """Wide signatures of many texts (see :meth:`signature`), as :meth:`fingerprint_many`."""
        return self._per_batch(texts, empty, self._signature_counts)

    def _per_batch(
        self,
        texts: Iterable[str],
        empty: Literal["raise", "none"],
        compute: Callable[[Sequence[Counter[bytes]]], list[_Result | None]],
    ) -> list[_Result | None]:
        """``compute`` over the feature counts of ``texts``, :data:`_BATCH_DOCS` at a time."""
        if empty not in ("raise", "none"):
            raise ValueError(f"empty must be 'raise' or 'none', got {empty!r}")
        results: list[_Result | None] = []
        batch: list[Counter[bytes]] = []
        for position, text in enumerate(texts):
            counts = self.feature_counts(text)
            if not counts and empty == "raise":
                raise EmptyDocument(
                    f"text #{position} has no features to fingerprint "
                    f"({tokenize.describe_wordless(text)}); store NULL or reject it"
                )
            batch.append(counts)
            if len(batch) >= _BATCH_DOCS:
                results.extend(compute(batch))
                batch = []
        if batch:
            results.extend(compute(batch))
        return results

    def _fingerprint_counts(self, batch: Sequence[Counter[bytes]]) -> list[int | None]:
        return self._per_live_document(batch, self._fingerprints_of)

    def _signature_counts(self, batch: Sequence[Counter[bytes]]) -> list[Signature | None]:
        return self._per_live_document(batch, self._signatures_of)

    def _per_live_document(
        self,
        batch: Sequence[Counter[bytes]],
        compute: Callable[[Sequence[Counter[bytes]], int], list[_Result]],
    ) -> list[_Result | None]:
        """``compute(documents, seeds)`` over the documents that have features; ``None`` for the rest."""
        live = [i for i, counts in enumerate(batch) if counts]
        out: list[_Result | None] = [None] * len(batch)
        if live:
            for i, result in zip(live, compute([batch[i] for i in live], len(live))):
                out[i] = result
        return out

    def _fingerprints_of(self, documents: Sequence[Mapping[bytes, int]], count: int) -> list[int]:
        batch = FeatureBatch.of(documents)
        hashes = feature_hashes(batch.features, self.seed)
        is_han = None if self.background is None else han_features(batch.features)
        weights = self._batch_weights(batch)
        return weighted_fingerprints(hashes, weights, batch.doc_index, count, self.background, is_han, batch.feature)

    def _signatures_of(self, documents: Sequence[Mapping[bytes, int]], count: int) -> list[Signature]:
        batch = FeatureBatch.of(documents)
        seeded = [feature_hashes(batch.features, seed) for seed in wide_seeds(self.seed)]
        is_han = None if self.background is None else han_features(batch.features)
        weights = self._batch_weights(batch)
        return weighted_signatures(seeded, weights, batch.doc_index, count, self.background, is_han, batch.feature)

    def _script_sums(self, batch: Sequence[Mapping[bytes, int]], words: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """``V`` ([n, 2, 64 * words]) and total weight ([n, 2]) of each document's Latin (0) and
        Han (1) features, under the first ``words`` seeds of :func:`wide_seeds` (1: the
        fingerprint's own); documents without features give zeros."""
        if isinstance(words, bool) or not isinstance(words, int) or not 1 <= words <= WIDE_WORDS:
            raise ValueError(f"words must be an int in 1..{WIDE_WORDS}, got {words!r}")
        signed = np.zeros((len(batch), 2, 64 * words))
        weight = np.zeros((len(batch), 2))
        live = [i for i, counts in enumerate(batch) if counts]
        if not live:
            return signed, weight
        numbered = FeatureBatch.of([batch[i] for i in live])
        seeded = [feature_hashes(numbered.features, seed) for seed in wide_seeds(self.seed)[:words]]
        signed[live], weight[live] = script_bit_sums(
            seeded, self._batch_weights(numbered), numbered.doc_index, han_features(numbered.features), len(live), numbered.feature
        )
        return signed, weight

    def script_sums(self, texts: Iterable[str], words: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Per text, the signed bit sums ``V`` and total weights of its Latin and Han features
        (``[n, 2, 64 * words]`` and ``[n, 2]``; ``words`` 4: the whole wide signature): what
        :meth:`Background.fit` measures a corpus with."""
        return self._script_sums([self.feature_counts(text) for text in texts], words)


@lru_cache(maxsize=32)
def _fingerprinter(**config: object) -> Fingerprinter:
    return Fingerprinter(**config)  # type: ignore[arg-type]


DEFAULT = Fingerprinter()
set_default_measure(DEFAULT)

DEFAULT_WIDE = Fingerprinter(version=WIDE_VERSION)
"""Version 3's default: what ``WideSimHashMixin``, ``simsql attach --wide`` and ``wide=True`` use."""


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
    return weighted_fingerprints(hashes, weights, doc_index, 1)[0]
