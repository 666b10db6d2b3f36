"""The fingerprint configurations the originality and balance experiments compare, by name.

One place names them, so :mod:`research.originality` and :mod:`research.balance` measure the same
``"v2 default"`` or ``"fitted IdfTable"``; both import from here, neither from the other. The
corpus split (tuning sources, and ``debian-handbook`` held out) lives here too, because the fitted
configurations are fitted on the tuning articles only.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from benchmarks import corpus, sources
from benchmarks.manpages import Lang
from simsql import Fingerprinter
from simsql.fingerprint import Background
from simsql.text.weighting import IdfTable, prior_idf

from .article_prior import article_prior


def corpus_split(lang: Lang) -> tuple[list[corpus.Document], list[corpus.Document]]:
    """(tuning articles, held-out articles) of ``lang``."""
    tune: list[corpus.Document] = []
    for source, langs in sources.SOURCES.items():
        if lang in langs and source != sources.HELD_OUT:
            tune.extend(sources.articles(source, lang))
    return tune, sources.articles(sources.HELD_OUT, lang)


@lru_cache(maxsize=1)
def prior_entries() -> dict[str, float]:
    """The built-in prior's words and IDFs, read through ``IdfTable.save`` (its public form)."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "prior.json"
        prior_idf().save(path)
        entries: dict[str, float] = json.loads(path.read_text(encoding="utf-8"))["idf"]
    return entries


def capped_prior(cap: float) -> IdfTable:
    """The built-in prior with every IDF above ``cap`` lowered to it (and the default = cap)."""
    return IdfTable({k: min(v, cap) for k, v in prior_entries().items()}, default=cap)


def banded_prior(lo: float, hi: float) -> IdfTable:
    """The built-in prior mapped to ``min(idf, hi) - lo``, floored at 0: common words drop out."""
    default = max(min(prior_idf().default, hi) - lo, 0.0)
    return IdfTable({k: max(min(v, hi) - lo, 0.0) for k, v in prior_entries().items()}, default=default)


def fitted_idf() -> IdfTable:
    """What a user who fits gets: ``IdfTable.fit`` on their own corpus (here every tuning article)."""
    langs: tuple[Lang, ...] = ("en", "zh")
    texts = [d.text for lang in langs for d in corpus_split(lang)[0]]
    return IdfTable.fit(texts)


BACKGROUND_SAMPLE: dict[Lang, int] = {"en": 1500, "zh": 500}
"""Tuning articles per language that :func:`tuning_background` fits on (2,000 in all: about the
corpus's own mix, a quarter Chinese)."""
BACKGROUND_SEED = 20


def tuning_background() -> Background:
    """What a user who fits a background on a sample of their own corpus gets:
    ``Background.fit`` on :data:`BACKGROUND_SAMPLE` random tuning articles (fixed seed), never the
    held-out source, so held-out recall and false matches show a background that did not see them."""
    texts: list[str] = []
    for lang, count in BACKGROUND_SAMPLE.items():
        tune = corpus_split(lang)[0]
        texts.extend(d.text for d in random.Random(f"{BACKGROUND_SEED}:{lang}").sample(tune, min(count, len(tune))))
    return Background.fit(texts)


def configurations(names: Sequence[str] | None = None) -> dict[str, tuple[str, Any]]:
    """name -> (description, Fingerprinter or None for the simhash package)."""
    makers: dict[str, tuple[str, Callable[[], Any]]] = {
        "v2 default": (
            'Fingerprinter(): words (Han: character bigrams), (1 + ln count) x clip(prior IDF - 2, 0.05, 2)', Fingerprinter
        ),
        "v2 + background": (
            "Fingerprinter(background=Background.fit(2,000 random tuning articles: en 1,500, zh 500)): "
            "v2 default with bits centred on the corpus's per-bit medians",
            lambda: Fingerprinter(background=tuning_background()),
        ),
        "v2 jieba": ('Fingerprinter(chinese="jieba"): the same with jieba words', lambda: Fingerprinter(chinese="jieba")),
        "v1 (0.1 default)": ("Fingerprinter(version=1): words, 1 + ln count", lambda: Fingerprinter(version=1)),
        "fitted IdfTable": (
            "Fingerprinter(weighting=IdfTable.fit(tuning articles)): (1 + ln count) x fitted IDF",
            lambda: Fingerprinter(weighting=fitted_idf()),
        ),
        "prior IDF unbanded": (
            "(1 + ln count) x prior IDF (no band)", lambda: Fingerprinter(weighting=prior_idf())
        ),
        "prior cap 3": ("(1 + ln count) x min(prior IDF, 3)", lambda: Fingerprinter(weighting=capped_prior(3.0))),
        "v2 shingle2": ("Fingerprinter(shingle_size=2)", lambda: Fingerprinter(shingle_size=2)),
        "simhash package": ("simhash 2.1.2 Simhash(text): char 4-grams, counts, MD5", lambda: None),
    }
    for lo, hi in ((1.0, 3.0), (1.5, 4.0), (2.0, 8.0), (3.0, 8.0), (3.0, 11.0)):
        makers[f"band {lo:g}-{hi:g}"] = (
            f"(1 + ln count) x (min(prior IDF, {hi:g}) - {lo:g})+",
            lambda lo=lo, hi=hi: Fingerprinter(weighting=banded_prior(lo, hi)),
        )
    for tokens, lo, hi in ((300, 1.0, 8.0), (300, 1.0, 5.0), (300, 2.0, 6.0), (1000, 1.0, 8.0)):
        makers[f"article L{tokens} band {lo:g}-{hi:g}"] = (
            (
                f"(1 + ln count) x clip(article IDF at L={tokens} tokens - {lo:g}, 0.05, {hi - lo:g}) "
                "(wordfreq + jieba dict.txt bigrams, research/article_prior.py)"
            ),
            lambda tokens=tokens, lo=lo, hi=hi: Fingerprinter(weighting=article_prior(tokens, lo, hi)),
        )
    chosen = names or list(makers)
    return {name: (makers[name][0], makers[name][1]()) for name in chosen}
