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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import corpus, edits

THRESHOLDS: tuple[int, ...] = tuple(range(13))
PRIOR = 1e-3
SEED = 20240611
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def nearest_blocks(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per pair, the fewest differing bits in any of the four 16-bit blocks: a pair is reached by
    block probes of that radius or more (how ``find_original``'s index finds rows past the
    probes' full reach). Blocks are whole byte pairs, so byte popcounts add up per block."""
    xor = np.bitwise_xor(a.astype(np.uint64), b.astype(np.uint64))
    return _POPCOUNT[xor.view(np.uint8)].reshape(-1, 4, 2).sum(axis=2).min(axis=1)


def _distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    xor = np.bitwise_xor(a.astype(np.uint64), b.astype(np.uint64))
    return _POPCOUNT[xor.view(np.uint8)].reshape(-1, 8).sum(axis=1, dtype=np.int64)


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


def _simhash_package_many(texts: Sequence[str]) -> list[int | None]:
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
    from simsql import Fingerprinter, IdfTable

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
    configs.append(("simhash package", "simhash 2.1.2 Simhash(text) defaults (char 4-grams, count, MD5)", _simhash_package_many))
    return configs


def _precision(tp: float, fp: float) -> float | None:
    return tp / (tp + fp) if tp + fp > 0 else None


def _language(lang: str, quick: bool, log: Callable[[str], None]) -> dict[str, Any]:
    docs = corpus.english_documents() if lang == "en" else corpus.chinese_documents()
    limit = 60 if quick else None
    per_kind = 3 if quick else 200
    random_pair_count = 2_000 if quick else 100_000
    pair_docs, idf_docs = _split(docs, limit, SEED + (0 if lang == "en" else 1))

    started = time.perf_counter()
    pairs = edits.planted_pairs(pair_docs, SEED, per_kind=per_kind)
    log(f"{lang}: {len(pairs)} planted pairs from {len(pair_docs)} documents in {time.perf_counter() - started:.1f} s")
    positives = [p for p in pairs if p.is_duplicate]
    negatives = [p for p in pairs if not p.is_duplicate]
    index = {d.doc_id: i for i, d in enumerate(pair_docs)}
    doc_texts = [d.text for d in pair_docs]
    if any(p.a_id not in index or (not p.is_duplicate and p.b_id not in index) for p in pairs):
        raise AssertionError("planted pair refers to a document outside the pair half")
    random_pairs = _random_pairs(len(pair_docs), random_pair_count, SEED)
    neg_groups: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for p in negatives:
        neg_groups[p.kind].append((index[p.a_id], index[p.b_id]))
    pos_groups: dict[str, list[int]] = defaultdict(list)
    for k, p in enumerate(positives):
        pos_groups[p.kind if p.rate is None else f"{p.kind}@{p.rate:g}"].append(k)

    result: dict[str, Any] = {
        "documents": len(docs),
        "pair_documents": len(pair_docs),
        "idf_documents": len(idf_docs),
        "pair_mb": sum(len(t.encode()) for t in doc_texts) / 1e6,
        "per_kind": per_kind,
        "positives": {k: len(v) for k, v in pos_groups.items()},
        "negatives": {k: len(v) for k, v in neg_groups.items()},
        "random_pairs": int(len(random_pairs)),
        "configs": {},
    }
    for name, description, fingerprint in _configs(lang, [d.text for d in idf_docs]):
        t0 = time.perf_counter()
        doc_fps = fingerprint(doc_texts)
        edited_fps = fingerprint([p.b for p in positives])
        seconds = time.perf_counter() - t0
        doc_ok = np.array([f is not None for f in doc_fps])
        docs_arr = np.array([f if f is not None else 0 for f in doc_fps], dtype=np.uint64)
        entry: dict[str, Any] = {"config": description, "fingerprint_seconds": seconds}

        pos_d: list[int | None] = []
        for p, fb in zip(positives, edited_fps):
            fa = doc_fps[index[p.a_id]]
            pos_d.append(None if fa is None or fb is None else int(bin(fa ^ fb).count("1")))
        recall: dict[str, list[float] | None] = {}
        for group, members in pos_groups.items():
            recall[group] = _at_most([pos_d[k] for k in members if pos_d[k] is not None])
        entry["recall"] = recall
        by_rate: dict[str, list[float] | None] = {}
        for rate in edits.RATES:
            by_rate[f"{rate:g}"] = _at_most(
                [pos_d[k] for k, p in enumerate(positives) if p.rate == rate and pos_d[k] is not None]
            )
        entry["recall_by_rate"] = by_rate
        pooled = [d for d in pos_d if d is not None]
        entry["recall_all"] = _at_most(pooled)
        entry["positive_median_distance"] = {
            g: (float(np.median([pos_d[k] for k in m if pos_d[k] is not None])) if any(pos_d[k] is not None for k in m) else None)
            for g, m in pos_groups.items()
        }

        fp_rate: dict[str, list[float] | None] = {}
        neg_all: list[int] = []
        neg_skipped = 0
        for kind, members in neg_groups.items():
            usable = [(i, j) for i, j in members if doc_ok[i] and doc_ok[j]]
            neg_skipped += len(members) - len(usable)
            if usable:
                a = np.array([i for i, _ in usable])
                b = np.array([j for _, j in usable])
                d = _distances(docs_arr[a], docs_arr[b])
                neg_all.extend(d.tolist())
                fp_rate[kind] = _at_most(d)
                entry.setdefault("negative_mean_distance", {})[kind] = float(d.mean())
            else:
                fp_rate[kind] = None
        usable_random = random_pairs[doc_ok[random_pairs[:, 0]] & doc_ok[random_pairs[:, 1]]]
        rd = _distances(docs_arr[usable_random[:, 0]], docs_arr[usable_random[:, 1]])
        fp_rate["random_pairs"] = _at_most(rd)
        entry["fp_rate"] = fp_rate
        entry["fp_count_random_pairs"] = [int((rd <= t).sum()) for t in THRESHOLDS]
        entry["random_pairs_used"] = int(len(rd))
        entry["random_distance"] = {
            "mean": float(rd.mean()) if rd.size else None,
            "min": int(rd.min()) if rd.size else None,
            "p01": float(np.percentile(rd, 1)) if rd.size else None,
            "p50": float(np.median(rd)) if rd.size else None,
            "histogram": np.bincount(rd, minlength=65).tolist() if rd.size else None,
        }

        # Precision: balanced planted set, and at a realistic prior using random-pair FP rates.
        pos_arr = np.array(pooled, dtype=np.int64)
        neg_arr = np.array(neg_all, dtype=np.int64)
        entry["precision_balanced"] = [
            _precision(float((pos_arr <= t).sum()), float((neg_arr <= t).sum())) for t in THRESHOLDS
        ]
        prior = []
        for t in THRESHOLDS:
            r = entry["recall_all"][t] if entry["recall_all"] else 0.0
            f = fp_rate["random_pairs"][t] if fp_rate["random_pairs"] else 0.0
            prior.append(_precision(r * PRIOR, f * (1 - PRIOR)))
        entry["precision_at_prior"] = prior
        entry.update(_bit_stats(docs_arr[doc_ok]))

        skipped_docs = int((~doc_ok).sum())
        skipped_pos = sum(1 for d in pos_d if d is None)
        if skipped_docs or skipped_pos or neg_skipped:
            entry["skipped"] = {
                "documents": skipped_docs,
                "positives": skipped_pos,
                "negatives": neg_skipped,
                "random_pairs": int(len(random_pairs) - len(rd)),
            }
            if name == "simhash package":
                entry["note"] = (
                    f"simhash 2.1.2 raised OverflowError (numpy 2) on {skipped_docs} of {len(doc_texts)} documents "
                    f"and {sum(1 for f in edited_fps if f is None)} edited copies; {skipped_pos} positive, "
                    f"{neg_skipped} negative and {len(random_pairs) - len(rd)} random pairs with such a text are left out"
                )
        result["configs"][name] = entry
        r3 = entry["recall_by_rate"].get("0.02")
        log(
            f"{lang} {name}: {seconds:.1f} s, 2% recall<=3 {r3[3] if r3 else None}, "
            f"random mean {entry['random_distance']['mean']}, FP<=3 {fp_rate['random_pairs'][3] if fp_rate['random_pairs'] else None}"
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

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)

    result = run(quick=args.quick, log=log)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1)
    else:
        print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
