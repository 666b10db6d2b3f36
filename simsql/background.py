"""A table's own background: SimHash bits centred on the text the table holds.

SimHash sets bit ``i`` when the weighted features whose hash has bit ``i`` set outweigh the
others. Words common to a whole corpus ("file", "option", "的文" in documentation) push the same
bits the same way in every document, so on real text bits lean one way, the 16-bit index blocks
crowd (slower lookups) and unrelated documents agree on the leaning bits (more false matches).
No built-in word list can know which words a given corpus repeats: on documentation prose a
general-purpose background predicts only a small part of the lean (BENCHMARKS.md).

A :class:`Background` is that lean measured on the corpus itself: for each bit, the median of
the normalised sum ``V_i / W`` over a sample of documents, separately for Latin-script and Han
features (a mixed table holds both). A fingerprinter with a background sets bit ``i`` when
``V_i`` exceeds the document's own expected lean, ``W_latin * c_latin_i + W_han * c_han_i``,
instead of zero. Medians make every bit split the sample in half, which is what balanced
buckets need. Centres are integers (1/4096 of a unit), so the comparison is exact integer
arithmetic and fingerprints stay identical on every machine.

Fit one on a sample of the table (``simsql fit-background``, or :meth:`Background.fit` on a
few thousand texts), use it with ``Fingerprinter(background=...)``, and move the table over
with ``simsql refingerprint --background FILE``. The background is part of the configuration:
its 128 numbers are recorded in the registry with the rest, so the CLI can rebuild it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import xxhash

if TYPE_CHECKING:
    from .fingerprint import Fingerprinter

CENTRE_SCALE = 4096
"""Centres are stored as integers in units of 1/4096 of a document's total weight."""

MIN_DOCUMENTS = 100
"""Fewer texts than this cannot say which way a corpus leans; :meth:`Background.fit` refuses."""

MIN_PER_SCRIPT = 20
"""A script (Latin or Han) seen in fewer sample documents than this gets no centring."""

_FORMAT = "simsql-background"
_BITS = 64


def _centres(values: object, name: str) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of {_BITS} ints, got {type(values).__name__}")
    if len(values) != _BITS:
        raise ValueError(f"{name} must hold {_BITS} centres, got {len(values)}")
    out = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} centres must be ints, got {type(value).__name__}")
        if not -CENTRE_SCALE <= int(value) <= CENTRE_SCALE:
            raise ValueError(f"{name} centres must be within ±{CENTRE_SCALE}, got {int(value)}")
        out.append(int(value))
    return tuple(out)


@dataclass(frozen=True)
class Background:
    """Per-bit centres of a corpus, for one fingerprint configuration (see the module docstring).

    Attributes:
        latin: 64 centres for features outside Han script, in 1/4096 units.
        han: 64 centres for Han features (Chinese words or bigrams).
        fitted_for: ``config_id`` of the configuration (without a background) the centres were
            measured with; a :class:`~simsql.Fingerprinter` with other settings refuses it.
        documents: how many texts the fit saw (informational, not part of the identity).
    """

    latin: tuple[int, ...]
    han: tuple[int, ...]
    fitted_for: str
    documents: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "latin", _centres(self.latin, "latin"))
        object.__setattr__(self, "han", _centres(self.han, "han"))
        if not isinstance(self.fitted_for, str) or not self.fitted_for:
            raise TypeError(f"fitted_for must be a config_id (str), got {self.fitted_for!r}")
        if isinstance(self.documents, bool) or not isinstance(self.documents, int) or self.documents < 0:
            raise ValueError(f"documents must be a non-negative int, got {self.documents!r}")

    @cached_property
    def settings(self) -> dict[str, Any]:
        """The identity recorded with the configuration (in the registry, in ``config_id``)."""
        return {"fitted_for": self.fitted_for, "latin": list(self.latin), "han": list(self.han)}

    @cached_property
    def digest(self) -> str:
        canonical = json.dumps(self.settings, sort_keys=True, separators=(",", ":"))
        return xxhash.xxh3_64_hexdigest(canonical.encode("ascii"))

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> Background:
        if not isinstance(settings, Mapping):
            raise TypeError(f"background settings must be a mapping, got {type(settings).__name__}")
        try:
            return cls(settings["latin"], settings["han"], settings["fitted_for"])
        except KeyError as missing:
            raise ValueError(f"background settings lack {missing}") from None

    @classmethod
    def fit(cls, texts: Iterable[str], fingerprinter: Fingerprinter | None = None) -> Background:
        """Measure the lean of ``texts`` as ``fingerprinter`` (the default one if omitted) sees them.

        Give it a sample of the table the fingerprints will live in, a few thousand texts (more
        changes little): the centres are per-bit medians, estimated to about 1/sqrt(n). Texts
        without features are skipped; fewer than :data:`MIN_DOCUMENTS` usable texts raise
        ``ValueError``. The fingerprinter's own background, if any, is ignored: centres are
        measured on the uncentred sums.
        """
        from .fingerprint import DEFAULT, _require_str

        base = (fingerprinter if fingerprinter is not None else DEFAULT).without_background()
        leans: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])  # per script: V / W of documents holding it
        documents = 0
        batch: list[str] = []

        def flush() -> None:
            nonlocal documents
            signed, weight = base.script_sums(batch)
            documents += int(np.count_nonzero(weight.sum(axis=1) > 0))
            for script, found in enumerate(leans):
                present = weight[:, script] > 0
                found.append(signed[present, script, :] / weight[present, script, None])
            batch.clear()

        for text in texts:
            batch.append(_require_str(text))
            if len(batch) >= 256:
                flush()
        if batch:
            flush()
        if documents < MIN_DOCUMENTS:
            raise ValueError(
                f"Background.fit needs at least {MIN_DOCUMENTS} texts with words, got {documents}; "
                "fit it on a sample of the table the fingerprints will be stored in"
            )
        centres = []
        for found in leans:
            lean = np.concatenate(found)
            if len(lean) < MIN_PER_SCRIPT:
                centres.append([0] * _BITS)
                continue
            median = np.median(lean, axis=0)
            centres.append(np.clip(np.rint(median * CENTRE_SCALE), -CENTRE_SCALE, CENTRE_SCALE).astype(int).tolist())
        return cls(tuple(centres[0]), tuple(centres[1]), base.config_id, documents)

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
        return f"Background(fitted_for={self.fitted_for!r}, documents={self.documents}, digest={self.digest!r})"
