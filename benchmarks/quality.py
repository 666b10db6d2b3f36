"""Quality: recall and false positives of "within t bits" as a duplicate test, t = 0..12.

Positives are planted near-duplicates of real man pages (word insertions, deletions,
substitutions and mixed edits at 1-20%, paragraph reordering, added site boilerplate);
negatives are unrelated pages, "hard" negatives from one man-page family (shared
boilerplate), and many random pairs for the false-positive rate at small thresholds.
Configurations: simsql's default and the alternatives it was chosen against, an IDF table
fitted on the other half of the corpus, and the ``simhash`` package's defaults.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np

import simsql

from . import corpus, edits

THRESHOLDS = list(range(13))


def _configs(fit_texts: list[str]) -> dict[str, Callable[[list[str]], list[int | None]]]:
    def simsql_config(fingerprinter: simsql.Fingerprinter) -> Callable[[list[str]], list[int | None]]:
        return lambda texts: fingerprinter.fingerprint_many(texts, empty="none")

    def simhash_package(texts: list[str]) -> list[int | None]:
        from simhash import Simhash

        out: list[int | None] = []
        for text in texts:
            try:
                out.append(Simhash(text).value)
            except (OverflowError, ValueError):
                out.append(None)
        return out

    return {
        "simsql default (words, log counts)": simsql_config(simsql.Fingerprinter()),
        "words, raw counts": simsql_config(simsql.Fingerprinter(weighting="count")),
        "word 3-shingles": simsql_config(simsql.Fingerprinter(shingle_size=3)),
        "char 4-grams": simsql_config(simsql.Fingerprinter(tokenizer="chars")),
        "words, IDF fitted on the corpus": simsql_config(
            simsql.Fingerprinter(weighting=simsql.IdfTable.fit(fit_texts))
        ),
        "simhash package defaults": simhash_package,
    }


def _distances(fingerprint: Callable[[str], int | None], pairs: list[tuple[str, str]]) -> np.ndarray:
    return np.array(
        [simsql.hamming(x, y) if (x := fingerprint(a)) is not None and (y := fingerprint(b)) is not None else -1 for a, b in pairs]
    )


def _memoised(fingerprint_many: Callable[[list[str]], list[int | None]], texts: list[str]) -> Callable[[str], int | None]:
    """Fingerprint every distinct text once; pairs then only look values up."""
    distinct = list(dict.fromkeys(texts))
    table = dict(zip(distinct, fingerprint_many(distinct)))
    return table.__getitem__


def _entropy(fingerprints: list[int | None]) -> float:
    values = np.array([f for f in fingerprints if f is not None], dtype=np.uint64)
    p = np.unpackbits(values.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little").mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(np.nan_to_num(p * np.log2(p)) + np.nan_to_num((1 - p) * np.log2(1 - p)))
    return float(h.sum())


def _language(docs: list[corpus.Document], lang: str, per_kind: int, random_pairs: int) -> dict[str, Any]:
    rng = random.Random(17)
    order = list(range(len(docs)))
    rng.shuffle(order)
    pair_docs = [docs[i] for i in order[: len(docs) // 2]]
    fit_texts = [docs[i].text for i in order[len(docs) // 2 :]]
    pairs = edits.planted_pairs(pair_docs, rng_seed=23, per_kind=per_kind)
    groups: dict[str, list[tuple[str, str]]] = {}
    for pair in pairs:
        key = pair.kind if pair.rate is None else f"{pair.kind} {int(round(pair.rate * 100))}%"
        groups.setdefault(key, []).append((pair.a, pair.b))
    texts = [d.text for d in pair_docs]
    randoms = [(texts[a], texts[b]) for a, b in (rng.sample(range(len(texts)), 2) for _ in range(random_pairs))]
    all_texts = [t for pair in pairs for t in (pair.a, pair.b)] + texts
    out: dict[str, Any] = {}
    for name, fingerprint_many in _configs(fit_texts).items():
        fingerprint = _memoised(fingerprint_many, all_texts)
        entry: dict[str, Any] = {"recall": {}, "false_positive": {}}
        for key, members in groups.items():
            d = _distances(fingerprint, members)
            d = d[d >= 0]
            rate = {t: float((d <= t).mean()) if len(d) else None for t in THRESHOLDS}
            if key in edits.NEGATIVE_KINDS:
                entry["false_positive"][key] = rate
            else:
                entry["recall"][key] = rate
        d = _distances(fingerprint, randoms)
        d = d[d >= 0]
        entry["false_positive"]["random pairs"] = {t: float((d <= t).mean()) for t in THRESHOLDS}
        entry["random_pairs"] = int(len(d))
        entry["unrelated_mean_distance"] = float(d.mean())
        entry["bit_entropy"] = _entropy([fingerprint(t) for t in texts])
        out[name] = entry
    return {"documents": len(pair_docs), "pairs_per_kind": per_kind, "configs": out}


def run(quick: bool) -> dict[str, Any]:
    limit = 200 if quick else None
    per_kind = 5 if quick else 40
    random_pairs = 500 if quick else 20_000
    return {
        "english": _language(corpus.english_documents(limit), "en", per_kind, random_pairs),
        "chinese": _language(corpus.chinese_documents(limit), "zh", per_kind, random_pairs),
    }
