"""Duplicate-detection quality on real text: recall and false positives vs distance threshold.

For each language (English and Chinese man pages, :mod:`benchmarks.corpus`) the documents are
split in two halves at random (fixed seed): the *pair half* supplies the planted pairs of
:func:`benchmarks.edits.planted_pairs` (positives: insert / delete / substitute / mixed edits at
rates 1%..20%, paragraph reorder, site boilerplate; negatives: same-family "hard" pairs and
unrelated pairs) and the random pairs; the *IDF half* is only used to fit the
:class:`~simsql.IdfTable` of the ``idf`` configuration, so that table never saw a test document.

Every configuration fingerprints the same texts. Reported per configuration and language, for
thresholds 0..12 (a pair is called a duplicate when its Hamming distance is <= the threshold):

* ``recall``: per positive kind and rate (``"edit@0.02"``, ``"reorder"``, ...);
* ``fp_rate``: on planted hard negatives, planted unrelated negatives, and many random pairs of
  distinct documents (100,000 in a full run, or all pairs when fewer: an FP rate near 1e-4 needs that many);
* ``precision_balanced`` (planted positives vs planted negatives, about 1:1) and
  ``precision_at_prior`` (pooled recall against the random-pair FP rate, with one pair in
  ``PRIOR`` a true duplicate, as in a dedup job where duplicates are rare);
* ``bit_entropy``: the sum over the 64 bits of the binary entropy of "bit set" across the
  documents (64 is ideal; a low value means near-constant bits, hence closer unrelated
  fingerprints and skewed index buckets), and ``block_collision``: how often two random
  documents share a 16-bit block (what the block index reads per query), over the uniform 2**-16.

The ``simhash`` package (2.1.2) raises ``OverflowError`` under numpy 2 on documents where one
4-gram occurs more than 255 times; its pairs with such a document are skipped and counted.

Run alone with ``python -m benchmarks.quality [--quick] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import corpus, edits, log
from .hamming import distances

THRESHOLDS: tuple[int, ...] = tuple(range(13))
PRIOR = 1e-3
SEED = 20240611


def _at_most(distances: Sequence[int] | np.ndarray) -> list[float] | None:
    """Fraction of ``distances`` <= t for each threshold t (None when there are none)."""
    d = np.asarray(distances, dtype=np.int64)
    if d.size == 0:
        return None
    return [float(np.mean(d <= t)) for t in THRESHOLDS]


def _bit_stats(fps: np.ndarray) -> dict[str, float]:
    """Per-bit entropy sum (ideal 64) and 16-bit block collision rate over ``fps``."""
    n = len(fps)
    bits = ((fps[:, None] >> np.arange(64, dtype=np.uint64)[None, :]) & np.uint64(1)).astype(np.float64)
    p = bits.mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(p * np.log2(p) + (1 - p) * np.log2(1 - p))
    h = np.nan_to_num(h, nan=0.0)
    collisions = []
    for block in range(4):
        values = ((fps >> np.uint64(16 * block)) & np.uint64(0xFFFF)).astype(np.int64)
        counts = np.bincount(values, minlength=1 << 16).astype(np.float64)
        collisions.append(float((counts * (counts - 1)).sum() / (n * (n - 1))) if n > 1 else 0.0)
    mean_collision = float(np.mean(collisions))
    return {
        "bit_entropy": float(h.sum()),
        "min_bit_entropy": float(h.min()),
        "most_biased_bit_p": float(p[np.argmax(np.abs(p - 0.5))]),
        "block_collision": mean_collision,
        "block_collision_vs_uniform": mean_collision * (1 << 16),
    }


def _split(docs: Sequence[corpus.Document], limit: int | None, seed: int) -> tuple[list, list]:
    shuffled = list(docs)
    random.Random(seed).shuffle(shuffled)
    if limit is not None:
        shuffled = shuffled[: 2 * limit]
    half = len(shuffled) // 2
    pair_half = sorted(shuffled[:half], key=lambda d: d.doc_id)
    idf_half = sorted(shuffled[half:], key=lambda d: d.doc_id)
    return pair_half, idf_half


def _random_pairs(n: int, count: int, seed: int) -> np.ndarray:
    """``count`` distinct unordered pairs of distinct indices below ``n`` (all of them if fewer)."""
    total = n * (n - 1) // 2
    rng = np.random.default_rng(seed)
    if total <= count:
        i, j = np.triu_indices(n, k=1)
        return np.stack([i, j], axis=1)
    chosen: set[tuple[int, int]] = set()
    while len(chosen) < count:
        a = rng.integers(0, n, size=2 * (count - len(chosen)))
        b = rng.integers(0, n, size=a.size)
        for x, y in zip(a.tolist(), b.tolist()):
            if x != y:
                chosen.add((min(x, y), max(x, y)))
                if len(chosen) == count:
                    break
    return np.array(sorted(chosen), dtype=np.int64)


def simhash_package_many(texts: Sequence[str]) -> list[int | None]:
    from simhash import Simhash

    out: list[int | None] = []
    for t in texts:
        try:
            out.append(Simhash(t).value)
        except OverflowError:
            out.append(None)
    return out


def _configs(lang: str, idf_texts: Sequence[str]) -> list[tuple[str, str, Callable[[Sequence[str]], list[int | None]]]]:
    """(name, description, fingerprint function) for every configuration measured."""
    from simsql import Fingerprinter
    from simsql.fingerprint import IdfTable

    def simsql(fp: Fingerprinter) -> Callable[[Sequence[str]], list[int | None]]:
        return lambda texts: fp.fingerprint_many(texts, empty="none")

    table = IdfTable.fit(idf_texts)
    configs = [
        ("default", "Fingerprinter() (words, log counts)", simsql(Fingerprinter())),
        ("count", 'Fingerprinter(weighting="count")', simsql(Fingerprinter(weighting="count"))),
        ("shingle3", "Fingerprinter(shingle_size=3)", simsql(Fingerprinter(shingle_size=3))),
        ("chars", 'Fingerprinter(tokenizer="chars") (char 4-grams, log counts)', simsql(Fingerprinter(tokenizer="chars"))),
        (
            "idf",
            f"Fingerprinter(weighting=IdfTable.fit(...)) on the {table.documents} held-out documents (count x idf)",
            simsql(Fingerprinter(weighting=table)),
        ),
    ]
    if lang == "zh":
        configs += [
            ("jieba_idf", 'Fingerprinter(weighting="jieba_idf") (jieba\'s shipped IDF)', simsql(Fingerprinter(weighting="jieba_idf"))),
            ("bigrams", 'Fingerprinter(chinese="bigrams") (Han character bigrams)', simsql(Fingerprinter(chinese="bigrams"))),
        ]
    configs.append(("simhash package", "simhash 2.1.2 Simhash(text) defaults (char 4-grams, count, MD5)", simhash_package_many))
    return configs


def _precision(tp: float, fp: float) -> float | None:
    return tp / (tp + fp) if tp + fp > 0 else None


@dataclass
class _Planted:
    """One language's planted pairs, grouped, and the random pairs, over the pair half."""

    documents: int
    pair_docs: list[corpus.Document]
    idf_docs: list[corpus.Document]
    per_kind: int
    positives: list[edits.Pair]
    index: dict[str, int]
    random_pairs: np.ndarray
    neg_groups: dict[str, list[tuple[int, int]]]
    pos_groups: dict[str, list[int]]

    @property
    def texts(self) -> list[str]:
        return [d.text for d in self.pair_docs]


def _plant(lang: str, quick: bool, log: Callable[[str], None]) -> _Planted:
    limit = corpus.QUICK_DOCUMENTS if quick else None
    docs = corpus.english_documents(limit) if lang == "en" else corpus.chinese_documents(limit)
    per_kind = 3 if quick else 200
    pair_docs, idf_docs = _split(docs, 60 if quick else None, SEED + (0 if lang == "en" else 1))
    started = time.perf_counter()
    pairs = edits.planted_pairs(pair_docs, SEED, per_kind=per_kind)
    log(f"{lang}: {len(pairs)} planted pairs from {len(pair_docs)} documents in {time.perf_counter() - started:.1f} s")
    index = {d.doc_id: i for i, d in enumerate(pair_docs)}
    if any(p.a_id not in index or (not p.is_duplicate and p.b_id not in index) for p in pairs):
        raise AssertionError("planted pair refers to a document outside the pair half")
    positives = [p for p in pairs if p.is_duplicate]
    neg_groups: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for p in pairs:
        if not p.is_duplicate:
            neg_groups[p.kind].append((index[p.a_id], index[p.b_id]))
    pos_groups: dict[str, list[int]] = defaultdict(list)
    for k, p in enumerate(positives):
        pos_groups[p.kind if p.rate is None else f"{p.kind}@{p.rate:g}"].append(k)
    random_pairs = _random_pairs(len(pair_docs), 2_000 if quick else 100_000, SEED)
    return _Planted(len(docs), pair_docs, idf_docs, per_kind, positives, index, random_pairs, neg_groups, pos_groups)


def _recall(planted: _Planted, doc_fps: list[int | None], edited_fps: list[int | None]) -> tuple[dict[str, Any], list[int | None]]:
    """Recall per kind, per rate and pooled, with each positive's distance (None: unfingerprinted)."""
    pos_d: list[int | None] = []
    for p, fb in zip(planted.positives, edited_fps):
        fa = doc_fps[planted.index[p.a_id]]
        pos_d.append(None if fa is None or fb is None else int(bin(fa ^ fb).count("1")))

    def known(members: Iterable[int]) -> list[int]:
        return [d for d in (pos_d[k] for k in members) if d is not None]

    positives = planted.positives
    entry: dict[str, Any] = {
        "recall": {group: _at_most(known(members)) for group, members in planted.pos_groups.items()},
        "recall_by_rate": {
            f"{rate:g}": _at_most(known(k for k, p in enumerate(positives) if p.rate == rate)) for rate in edits.RATES
        },
        "recall_all": _at_most(known(range(len(positives)))),
        "positive_median_distance": {
            g: float(np.median(known(m))) if known(m) else None for g, m in planted.pos_groups.items()
        },
    }
    return entry, pos_d


def _false_positives(planted: _Planted, doc_fps: list[int | None]) -> tuple[dict[str, Any], list[int], int]:
    """FP rates per negative kind and on random pairs, the negatives' distances and how many
    negative pairs a text the configuration cannot fingerprint left out."""
    doc_ok = np.array([f is not None for f in doc_fps])
    docs_arr = np.array([f if f is not None else 0 for f in doc_fps], dtype=np.uint64)
    entry: dict[str, Any] = {}
    fp_rate: dict[str, list[float] | None] = {}
    neg_all: list[int] = []
    skipped = 0
    for kind, members in planted.neg_groups.items():
        usable = [(i, j) for i, j in members if doc_ok[i] and doc_ok[j]]
        skipped += len(members) - len(usable)
        fp_rate[kind] = None
        if usable:
            pairs = np.array(usable)
            d = distances(docs_arr[pairs[:, 0]], docs_arr[pairs[:, 1]])
            neg_all.extend(d.tolist())
            fp_rate[kind] = _at_most(d)
            entry.setdefault("negative_mean_distance", {})[kind] = float(d.mean())
    rp = planted.random_pairs
    usable_random = rp[doc_ok[rp[:, 0]] & doc_ok[rp[:, 1]]]
    rd = distances(docs_arr[usable_random[:, 0]], docs_arr[usable_random[:, 1]])
    fp_rate["random_pairs"] = _at_most(rd)
    entry.update(fp_rate=fp_rate, fp_count_random_pairs=[int((rd <= t).sum()) for t in THRESHOLDS], random_pairs_used=int(len(rd)))
    entry["random_distance"] = {
        "mean": float(rd.mean()) if rd.size else None,
        "min": int(rd.min()) if rd.size else None,
        "p01": float(np.percentile(rd, 1)) if rd.size else None,
        "p50": float(np.median(rd)) if rd.size else None,
        "histogram": np.bincount(rd, minlength=65).tolist() if rd.size else None,
    }
    entry.update(_bit_stats(docs_arr[doc_ok]))
    return entry, neg_all, skipped


def _precisions(entry: dict[str, Any], pooled: list[int], negatives: list[int]) -> None:
    """Precision on the balanced planted set, and at :data:`PRIOR` from random-pair FP rates."""
    pos_arr = np.array(pooled, dtype=np.int64)
    neg_arr = np.array(negatives, dtype=np.int64)
    entry["precision_balanced"] = [_precision(float((pos_arr <= t).sum()), float((neg_arr <= t).sum())) for t in THRESHOLDS]
    recall, random_fp = entry["recall_all"], entry["fp_rate"]["random_pairs"]
    entry["precision_at_prior"] = [
        _precision((recall[t] if recall else 0.0) * PRIOR, (random_fp[t] if random_fp else 0.0) * (1 - PRIOR)) for t in THRESHOLDS
    ]


def _skipped(entry: dict[str, Any], name: str, planted: _Planted, doc_fps: list[int | None], edited_fps: list[int | None],
             pos_d: list[int | None], neg_skipped: int) -> None:  # fmt: skip
    """Record the texts a configuration could not fingerprint (the simhash package's overflow)."""
    skipped_docs = sum(1 for f in doc_fps if f is None)
    skipped_pos = sum(1 for d in pos_d if d is None)
    skipped_random = len(planted.random_pairs) - entry["random_pairs_used"]
    if not (skipped_docs or skipped_pos or neg_skipped):
        return
    entry["skipped"] = {"documents": skipped_docs, "positives": skipped_pos, "negatives": neg_skipped, "random_pairs": skipped_random}
    if name == "simhash package":
        entry["note"] = (
            f"simhash 2.1.2 raised OverflowError (numpy 2) on {skipped_docs} of {len(doc_fps)} documents "
            f"and {sum(1 for f in edited_fps if f is None)} edited copies; {skipped_pos} positive, "
            f"{neg_skipped} negative and {skipped_random} random pairs with such a text are left out"
        )


def _measure(planted: _Planted, name: str, description: str, fingerprint: Callable[[Sequence[str]], list[int | None]]) -> dict[str, Any]:
    """Every figure of one configuration on one language's planted and random pairs."""
    t0 = time.perf_counter()
    doc_fps = fingerprint(planted.texts)
    edited_fps = fingerprint([p.b for p in planted.positives])
    entry: dict[str, Any] = {"config": description, "fingerprint_seconds": time.perf_counter() - t0}
    recall, pos_d = _recall(planted, doc_fps, edited_fps)
    entry.update(recall)
    false_positives, negatives, neg_skipped = _false_positives(planted, doc_fps)
    entry.update(false_positives)
    _precisions(entry, [d for d in pos_d if d is not None], negatives)
    _skipped(entry, name, planted, doc_fps, edited_fps, pos_d, neg_skipped)
    return entry


def _language(lang: str, quick: bool, log: Callable[[str], None]) -> dict[str, Any]:
    planted = _plant(lang, quick, log)
    result: dict[str, Any] = {
        "documents": planted.documents,
        "pair_documents": len(planted.pair_docs),
        "idf_documents": len(planted.idf_docs),
        "pair_mb": sum(len(t.encode()) for t in planted.texts) / 1e6,
        "per_kind": planted.per_kind,
        "positives": {k: len(v) for k, v in planted.pos_groups.items()},
        "negatives": {k: len(v) for k, v in planted.neg_groups.items()},
        "random_pairs": int(len(planted.random_pairs)),
        "configs": {},
    }
    for name, description, fingerprint in _configs(lang, [d.text for d in planted.idf_docs]):
        entry = result["configs"][name] = _measure(planted, name, description, fingerprint)
        r3 = entry["recall_by_rate"].get("0.02")
        random_fp = entry["fp_rate"]["random_pairs"]
        log(
            f"{lang} {name}: {entry['fingerprint_seconds']:.1f} s, 2% recall<=3 {r3[3] if r3 else None}, "
            f"random mean {entry['random_distance']['mean']}, FP<=3 {random_fp[3] if random_fp else None}"
        )
    return result


def run(quick: bool, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Quality curves as a JSON-able dict (see the module docstring)."""
    import jieba

    logging.getLogger("simhash").setLevel(logging.ERROR)
    jieba.setLogLevel(logging.WARNING)
    log = log or (lambda message: None)
    started = time.perf_counter()
    out: dict[str, Any] = {
        "quick": quick,
        "thresholds": list(THRESHOLDS),
        "prior": PRIOR,
        "seed": SEED,
        "rates": list(edits.RATES),
        "load_average_before": list(os.getloadavg()),
        "languages": {},
    }
    for lang in ("en", "zh"):
        out["languages"][lang] = _language(lang, quick, log)
    out["seconds"] = time.perf_counter() - started
    out["note"] = (
        "A pair is a duplicate when its Hamming distance is <= the threshold. Random pairs may "
        "include same-family pages (hard negatives) at their natural rate. precision_at_prior uses "
        f"pooled recall over all planted positives and the random-pair FP rate with a prior of {PRIOR:g}."
    )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.quality", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", help="write the result JSON here")
    args = parser.parse_args(argv)
    result = run(quick=args.quick, log=log)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1)
    else:
        print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
