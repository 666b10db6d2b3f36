"""A table's own background: SimHash bits centred on the text the table holds.

SimHash sets bit ``i`` when the weighted features whose hash has bit ``i`` set outweigh the
others. Words common to a whole corpus ("file", "option", "的文" in documentation) push the same
bits the same way in every document, so on real text bits lean one way, the 16-bit index blocks
crowd (slower lookups) and unrelated documents agree on the leaning bits (more false matches).
No built-in word list can know which words a given corpus repeats: on documentation prose a
general-purpose background predicts only a small part of the lean (BENCHMARKS.md, "Balanced bits
by default").

A :class:`Background` is that lean measured on the corpus itself. A fingerprinter with one sets
bit ``i`` when ``V_i`` exceeds the document's own expected lean, ``W_latin * c_latin_i +
W_han * c_han_i``, instead of zero: one centre per bit for Latin-script features and one for Han
features, so a mixed table's English and Chinese documents are each centred on their own lean.
Centres are medians over a sample (each script's over the documents written mainly in it), so
every bit splits the sample in half, which is what balanced buckets need. They are integers
(1/4096 of a unit), so the comparison is exact integer arithmetic and fingerprints stay identical
on every machine.

Fit one on a random sample of an attached table (``simsql refingerprint --fit-background FILE``,
which then moves the table over online; :func:`simsql.fit_background`; or :meth:`Background.fit`
on a few thousand texts) and fingerprint with ``Fingerprinter(background=Background.load(FILE))``.
The background is part of the configuration: its 128 numbers are recorded in the registry with
the rest, so backfills and the command line rebuild it by themselves.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import numpy as np
import xxhash

from .signature import WIDE_WORDS
from .tokenize import require_text

CENTRE_SCALE = 4096
"""Centres are stored as integers in units of 1/4096 of a document's total weight."""

MIN_DOCUMENTS = 100
"""Fewer texts than this cannot say which way a corpus leans; :meth:`Background.fit` refuses."""

MIN_PER_SCRIPT = 20
"""A script (Latin or Han) that fewer sample documents are written mainly in gets no centring."""



class LeanMeasure(Protocol):
    """What :meth:`Background.fit` needs of a fingerprint configuration (a
    :class:`~simsql.Fingerprinter` is one): its identity, itself without a background, and the
    per-script bit sums of some texts. A protocol, so this module needs nothing from
    :mod:`simsql.text.fingerprint`, which builds on it."""

    @property
    def config_id(self) -> str: ...

    def without_background(self) -> LeanMeasure: ...

    def script_sums(self, texts: Iterable[str], words: int = 1) -> tuple[np.ndarray, np.ndarray]: ...


_default_measure: list[LeanMeasure] = []


def set_default_measure(fingerprinter: LeanMeasure) -> None:
    """Name the configuration :meth:`Background.fit` measures with when given none.

    :mod:`simsql.text.fingerprint` calls this once, when it defines its ``DEFAULT``: the fingerprinter
    module builds on this one, so the default is handed down rather than imported up (no import
    cycle). ``import simsql`` always runs it before any caller can reach :meth:`Background.fit`.
    """
    _default_measure[:] = [fingerprinter]


_FORMAT = "simsql-background"
_BITS = 64
WIDE_CENTRES = (WIDE_WORDS - 1) * 64
"""Centres per script of a wide background: bits 64-255 of the wide signature (words 1-3)."""


def _centres(values: object, name: str, bits: int = _BITS) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of {bits} ints, got {type(values).__name__}")
    if len(values) != bits:
        raise ValueError(f"{name} must hold {bits} centres, got {len(values)}")
    out = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} centres must be ints, got {type(value).__name__}")
        if not -CENTRE_SCALE <= int(value) <= CENTRE_SCALE:
            raise ValueError(f"{name} centres must be within ±{CENTRE_SCALE}, got {int(value)}")
        out.append(int(value))
    return tuple(out)


_ROUNDS = 4


def _fit_centres(lean: np.ndarray, share: np.ndarray) -> np.ndarray:
    """Integer centres ([2, bits]: Latin, Han) that split each script's documents in half on every bit.

    A document's bit is set when its lean ``V/W`` exceeds ``s_latin * c_latin + s_han * c_han``
    (``s``: the script's share of its weight). Each script's centre is the median, over the
    documents written mainly in that script, of what the centre would have to be for that
    document to sit exactly on the threshold, given the other script's centre; alternating a few
    times settles both (they are only weakly coupled: a document's minor script is a small share).
    Measuring each script on its own documents matters in a mixed table: the English words of
    Chinese documents ("linux", "-f") lean differently from English documents, and a median over
    every document holding Latin features would centre English documents on neither.
    """
    bits = lean.shape[1]
    centres = np.zeros((2, bits))
    fitted = np.zeros((2, bits), dtype=np.int64)
    for _ in range(_ROUNDS):
        for script in (0, 1):
            other = 1 - script
            mainly = share[:, script] >= 0.5
            if np.count_nonzero(mainly) < MIN_PER_SCRIPT:
                continue
            needed = (lean[mainly] - share[mainly, other, None] * centres[other]) / share[mainly, script, None]
            fitted[script] = np.clip(np.rint(np.median(needed, axis=0) * CENTRE_SCALE), -CENTRE_SCALE, CENTRE_SCALE)
            centres[script] = fitted[script] / CENTRE_SCALE
    return fitted


@dataclass(frozen=True)
class Background:
    """Per-bit centres of a corpus, for one fingerprint configuration (see the module docstring).

    Attributes:
        latin: 64 centres for features outside Han script, in 1/4096 units.
        han: 64 centres for Han features (Chinese words or bigrams).
        fitted_for: ``config_id`` of the configuration (without a background) the centres were
            measured with; a :class:`~simsql.Fingerprinter` with other settings refuses it.
        documents: how many texts the fit saw (informational, not part of the identity).
        wide_latin, wide_han: 192 centres each for bits 64-255 of the wide signature (its words
            1-3, which a version-3 table's block indexes mostly cut from), or both empty: then
            only the 64-bit fingerprint (word 0) is centred and words 1-3 keep plain signs, as
            every background did before they existed (so a stored one keeps its signatures).
    """

    latin: tuple[int, ...]
    han: tuple[int, ...]
    fitted_for: str
    documents: int = field(default=0, compare=False)
    wide_latin: tuple[int, ...] = ()
    wide_han: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "latin", _centres(self.latin, "latin"))
        object.__setattr__(self, "han", _centres(self.han, "han"))
        if self.wide_latin or self.wide_han:
            object.__setattr__(self, "wide_latin", _centres(self.wide_latin, "wide_latin", WIDE_CENTRES))
            object.__setattr__(self, "wide_han", _centres(self.wide_han, "wide_han", WIDE_CENTRES))
        if not isinstance(self.fitted_for, str) or not self.fitted_for:
            raise TypeError(f"fitted_for must be a config_id (str), got {self.fitted_for!r}")
        if isinstance(self.documents, bool) or not isinstance(self.documents, int) or self.documents < 0:
            raise ValueError(f"documents must be a non-negative int, got {self.documents!r}")

    @property
    def wide(self) -> bool:
        """Whether the whole wide signature is centred (words 1-3 too), not only word 0."""
        return bool(self.wide_latin)

    @cached_property
    def settings(self) -> dict[str, Any]:
        """The identity recorded with the configuration (in the registry, in ``config_id``); the
        wide centres only when there are some, so a background without them keeps its identity."""
        settings: dict[str, Any] = {"fitted_for": self.fitted_for, "latin": list(self.latin), "han": list(self.han)}
        if self.wide:
            settings.update(wide_latin=list(self.wide_latin), wide_han=list(self.wide_han))
        return settings

    @cached_property
    def digest(self) -> str:
        canonical = json.dumps(self.settings, sort_keys=True, separators=(",", ":"))
        return xxhash.xxh3_64_hexdigest(canonical.encode("ascii"))

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> Background:
        if not isinstance(settings, Mapping):
            raise TypeError(f"background settings must be a mapping, got {type(settings).__name__}")
        try:
            return cls(
                settings["latin"], settings["han"], settings["fitted_for"],
                wide_latin=settings.get("wide_latin", ()), wide_han=settings.get("wide_han", ()),
            )  # fmt: skip
        except KeyError as missing:
            raise ValueError(f"background settings lack {missing}") from None

    @classmethod
    def fit(cls, texts: Iterable[str], fingerprinter: LeanMeasure | None = None, *, wide: bool = False) -> Background:
        """Measure the lean of ``texts`` as ``fingerprinter`` (the default one if omitted) sees them.

        ``wide=True`` centres the whole 256-bit wide signature (words 1-3 under their own seeds
        too), which a table with the wide signature wants: its block indexes are cut mostly from
        words 1-3, and on real text their bits lean as word 0's do, so blocks crowd and unrelated
        rows come nearer than chance (BENCHMARKS.md, "A wide background").

        Give it a sample of the table the fingerprints will live in, a few thousand texts (more
        changes little): the centres are per-bit medians, estimated to about 1/sqrt(n). Texts
        without features are skipped; fewer than :data:`MIN_DOCUMENTS` usable texts raise
        ``ValueError``. The fingerprinter's own background, if any, is ignored: centres are
        measured on the uncentred sums.
        """
        base = (fingerprinter if fingerprinter is not None else _default_measure[0]).without_background()
        leans: list[np.ndarray] = []  # per document: V / W, the whole document's lean on each bit
        shares: list[np.ndarray] = []  # per document: the Latin and Han shares of its weight
        batch: list[str] = []

        words = WIDE_WORDS if wide else 1

        def flush() -> None:
            signed, weight = base.script_sums(batch, words)
            total = weight.sum(axis=1)
            live = total > 0
            leans.append(signed[live].sum(axis=1) / total[live, None])
            shares.append(weight[live] / total[live, None])
            batch.clear()

        for text in texts:
            batch.append(require_text(text))
            if len(batch) >= 256:
                flush()
        if batch:
            flush()
        lean = np.concatenate(leans) if leans else np.zeros((0, _BITS * words))
        share = np.concatenate(shares) if shares else np.zeros((0, 2))
        documents = len(lean)
        if documents < MIN_DOCUMENTS:
            raise ValueError(
                f"Background.fit needs at least {MIN_DOCUMENTS} texts with words, got {documents}; "
                "fit it on a sample of the table the fingerprints will be stored in"
            )
        centres = _fit_centres(lean, share)
        latin, han = centres[0].tolist(), centres[1].tolist()
        return cls(
            tuple(latin[:_BITS]), tuple(han[:_BITS]), base.config_id, documents,
            wide_latin=tuple(latin[_BITS:]), wide_han=tuple(han[_BITS:]),
        )  # fmt: skip

    def save(self, path: str | os.PathLike[str]) -> None:
        payload = {"format": _FORMAT, "version": 1, "documents": self.documents, **self.settings}
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, indent=1)
            handle.write("\n")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Background:
        with open(path, encoding="utf-8") as handle:
            try:
                payload = json.load(handle)
            except (json.JSONDecodeError, UnicodeDecodeError) as error:
                raise ValueError(f"{os.fspath(path)!r} is not a simsql background (not UTF-8 JSON: {error})") from None
        if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
            raise ValueError(f"{os.fspath(path)!r} is not a simsql background (format {_FORMAT!r})")
        background = cls.from_settings(payload)
        documents = payload.get("documents", 0)
        object.__setattr__(background, "documents", int(documents) if isinstance(documents, int) else 0)
        return background

    def __repr__(self) -> str:
        wide = ", wide=True" if self.wide else ""
        return f"Background(fitted_for={self.fitted_for!r}, documents={self.documents}{wide}, digest={self.digest!r})"
