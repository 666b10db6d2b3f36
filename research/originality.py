"""The originality check of issue 8, measured: evasions caught, false matches, balanced bits.

Corpus: :mod:`benchmarks.sources` (six documentation sources for tuning, ``debian-handbook``
held out). For each language and each configuration:

* **evasions**: up to ``--per-kind`` tuning articles (every held-out one) get each evasion of
  :data:`benchmarks.edits.EVASIONS`; a copy is *caught at t* when its fingerprint is within t
  bits of the original's. The ``simhash`` package (``Simhash(text)`` defaults) runs on the same
  texts. Real revisions (:func:`benchmarks.sources.real_revisions`) are reported alike.
* **false matches**: every distinct pair of tuning articles (English: all of them; Chinese has
  fewer articles, so besides all pairs of real articles, all pairs of articles assembled from
  disjoint sets of real paragraphs, at least 10^7 pairs); the per-pair rate at distance <= t
  and the expected false alarms per check against 1M and 10M stored rows (rate x rows).
* **balance** (``--balance``): 1M articles assembled from distinct tuning sentences (half English,
  half Chinese; ``--balance-population paragraphs`` for the older runs of paragraphs, which
  repeat text across articles), fingerprinted from cached feature counts by simsql's own
  weighting (checked equal to ``fingerprint_many`` on a sample); bits of entropy and the fullest
  16-bit bucket against the uniform expectation (:mod:`research.balance`).

Run: ``python -m research.originality [--balance] [--out research/results/originality.json]``
then ``python -m research.originality_report`` (BENCHMARKS.md's section and plot).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import corpus, edits, log, sources
from benchmarks.hamming import distances, nearest_blocks
from benchmarks.internals import fingerprints_from_counts
from benchmarks.manpages import Lang
from benchmarks.quality import simhash_package_many
from simsql import Fingerprinter
from simsql.queries import ORIGINALITY_DISTANCE, ORIGINALITY_PROBE_RADIUS
from simsql.text.containment import shingles

from . import balance
from .configurations import configurations, corpus_split

THRESHOLDS = tuple(range(21))
RECOMMENDED_THRESHOLD = ORIGINALITY_DISTANCE
"""find_original's default max_distance (owned by simsql.queries), where the tuning sources'
light evasions level off (with the second stage behind it)."""
PROBE_RADIUS = ORIGINALITY_PROBE_RADIUS
"""find_original's default probe radius: simsql's rows count a pair as found at ``t`` bits only
when it is within ``t`` and one of its 16-bit blocks is within this radius, as the index finds
it (for ``t <= 4 * radius + 3`` that is every pair within ``t``). ``evasions_exact`` and
``at_most_exact`` keep every pair within ``t`` (an index probing far enough for all of them);
``evasions_radius1`` counts what radius-1 probes would reach (the 7-bit search's index work)."""
SEED = 8
RESULTS = Path(__file__).resolve().parent / "results" / "originality.json"



def _to_array(values: Sequence[int | None]) -> np.ndarray:
    """uint64 fingerprints; a text the peer cannot fingerprint gets a value that matches nothing."""
    return np.array([v if v is not None else 0 for v in values], dtype=np.uint64)


def reached(a: np.ndarray, b: np.ndarray, probed: bool = True, radius: int = PROBE_RADIUS) -> np.ndarray:
    """Which pairs the index can return: with ``probed`` (simsql), those with a 16-bit block
    within ``radius`` bits (:data:`PROBE_RADIUS`, find_original's); otherwise (the simhash
    package's own index) every pair."""
    return nearest_blocks(a, b) <= radius if probed else np.ones(len(a), dtype=bool)


def caught(d: np.ndarray, reachable: np.ndarray | None = None) -> list[float]:
    """Share of pairs found at each threshold; with ``reachable``, only those the probes reach."""
    mask = np.ones(len(d), dtype=bool) if reachable is None else reachable
    return [float(np.mean((d <= t) & mask)) for t in THRESHOLDS]


_COUNTS: dict[tuple[Any, ...], dict[str, Any]] = {}


def fingerprints(config: Fingerprinter | None, texts: Sequence[str]) -> np.ndarray:
    """Fingerprints of ``texts``; feature counts are shared by configurations that tokenize alike.

    The same two steps as ``Fingerprinter.fingerprint_many`` (``feature_counts``, then the
    weighted sums), so the values are simsql's own; tokenizing (jieba) is the costly half.
    """
    if config is None:
        return _to_array(simhash_package_many(texts))
    key = (config.tokenizer, config.shingle_size, config.char_ngram_size, config.chinese)
    cache = _COUNTS.setdefault(key, {})
    counts = []
    for text in texts:
        c = cache.get(text)
        if c is None:
            c = cache[text] = config.feature_counts(text)
        counts.append(c)
    return _to_array(fingerprints_from_counts(config, counts))


# --------------------------------------------------------------------------------------------
# Texts
# --------------------------------------------------------------------------------------------


def evasion_pairs(docs: Sequence[corpus.Document], per_kind: int, seed: int) -> dict[str, tuple[list[str], list[str]]]:
    """kind -> (originals, copies); donors for inserted sentences come from the other articles."""
    donors = [s for d in docs[::7] for s in edits.sentences(d.text)[:3] if 20 <= len(s) <= 300]
    out: dict[str, tuple[list[str], list[str]]] = {}
    for kind in edits.EVASIONS:
        picker = random.Random(f"{seed}:{kind}")
        chosen = picker.sample(list(docs), min(per_kind, len(docs)))
        originals = [d.text for d in chosen]
        copies = [edits.evade(kind, d.text, random.Random(f"{seed}:{kind}:{d.doc_id}"), donors) for d in chosen]
        out[kind] = (originals, copies)
    return out


def disjoint_articles(docs: Sequence[corpus.Document], min_chars: int, seed: int) -> list[str]:
    """Articles made of real paragraphs, no paragraph used twice: unrelated by construction."""
    paras = [p for d in docs for p in d.text.split("\n\n") if len(p) >= 20]
    random.Random(seed).shuffle(paras)
    out: list[str] = []
    current: list[str] = []
    for p in paras:
        current.append(p)
        if sum(map(len, current)) >= min_chars:
            out.append("\n\n".join(current))
            current = []
    return out


NATURAL_DUPLICATE = 0.5
"""Word 5-shingle containment (of the smaller article in the larger) from which two articles of
the corpus are the same text in fact (a section quoted in two manuals, two near-identical man
pages): such a pair is a true match, counted apart, not a false one."""
CLOSE = 15
"""Pairs within this many bits are checked for natural duplicates: up to 15, so false-match
rates at every distance around ``find_original``'s default (14) have them set apart."""


def _containment(a: str, b: str, cache: dict[str, frozenset[int]]) -> float:
    """simsql's own second stage (:mod:`simsql.text.containment`), so the study measures what
    ``find_original`` does."""
    sa = cache.get(a)
    if sa is None:
        sa = cache[a] = shingles(a)
    sb = cache.get(b)
    if sb is None:
        sb = cache[b] = shingles(b)
    return len(sa & sb) / max(1, min(len(sa), len(sb)))


def text_stage_cost(texts: Sequence[str]) -> float:
    """Milliseconds to shingle one stored article: what ``find_original``'s second stage pays per
    candidate on top of fetching its row (best of three passes over ``texts``)."""
    best = math.inf
    for _ in range(3):
        started = time.perf_counter()
        for text in texts:
            shingles(text)
        best = min(best, (time.perf_counter() - started) / max(len(texts), 1))
    return best * 1e3


def beta_binomial_cdf(mean: float, var: float, n: int = 64) -> list[float]:
    """P(distance <= t) under the beta-binomial with this mean and variance (moment fit).

    Unrelated pairs differ in each bit with a probability that itself varies from pair to pair
    (some pairs share a topic), which widens the binomial; the beta-binomial captures that with
    one more parameter. Used only to extrapolate below what 10^7 pairs can observe.
    """
    p = mean / n
    binomial_var = n * p * (1 - p)
    rho = max((var / binomial_var - 1) / (n - 1), 1e-9)
    s = 1 / rho - 1
    a, b = p * s, (1 - p) * s
    log_beta_ab = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    pmf = [
        math.exp(
            math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
            + math.lgamma(k + a) + math.lgamma(n - k + b) - math.lgamma(n + a + b) - log_beta_ab
        )
        for k in range(n + 1)
    ]  # fmt: skip
    return [sum(pmf[: t + 1]) for t in THRESHOLDS]


def pair_rates(fps: np.ndarray, texts: Sequence[str], probed: bool = True) -> dict[str, Any]:
    """Per-pair rate of distance <= t over all distinct pairs (``probed``: and reached by
    find_original's probes, see :data:`PROBE_RADIUS`; ``at_most_exact`` counts every pair).

    Pairs within ``CLOSE`` bits are checked for being the same text in fact (containment >=
    ``NATURAL_DUPLICATE``); those are reported as ``natural_duplicates`` and left out of the rate.
    """
    n = len(fps)
    total = n * (n - 1) // 2
    hist = np.zeros(65, dtype=np.int64)
    reached_hist = np.zeros(65, dtype=np.int64)
    natural = np.zeros(65, dtype=np.int64)
    natural_reached = np.zeros(65, dtype=np.int64)
    cache: dict[str, np.ndarray] = {}
    close_max = 0.0
    for i in range(n - 1):
        a, b = np.full(n - i - 1, fps[i]), fps[i + 1 :]
        d = distances(a, b)
        found = reached(a, b, probed)
        hist += np.bincount(d, minlength=65)
        reached_hist += np.bincount(d[found], minlength=65)
        for j in np.flatnonzero(d <= CLOSE):
            c = _containment(texts[i], texts[i + 1 + j], cache)
            if c >= NATURAL_DUPLICATE:
                natural[d[j]] += 1
                natural_reached[d[j]] += int(found[j])
            else:
                close_max = max(close_max, c)
    hist -= natural
    reached_hist -= natural_reached
    pairs = total - int(natural.sum())
    exact = np.cumsum(hist)
    cumulative = np.cumsum(reached_hist)
    k = np.arange(65)
    mean = float((hist * k).sum() / pairs)
    var = float((hist * (k - mean) ** 2).sum() / pairs)
    return {
        "pairs": int(pairs),
        "natural_duplicates": [int(x) for x in np.cumsum(natural)[: len(THRESHOLDS)]],
        "max_containment_of_false_matches": close_max,
        "at_most": [int(cumulative[t]) for t in THRESHOLDS],
        "rate": [float(cumulative[t] / pairs) for t in THRESHOLDS],
        "at_most_exact": [int(exact[t]) for t in THRESHOLDS],
        "mean_distance": mean,
        "sd_distance": math.sqrt(var),
        "model_rate": beta_binomial_cdf(mean, var),
    }


# --------------------------------------------------------------------------------------------
# One language
# --------------------------------------------------------------------------------------------


def run_language(lang: Lang, per_kind: int, configs: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    tune, held = corpus_split(lang)
    log(f"{lang}: {len(tune)} tuning articles, {len(held)} held out")
    sets = {"tuning": evasion_pairs(tune, per_kind, SEED), "held_out": evasion_pairs(held, 10**9, SEED)}
    revisions = sources.real_revisions(lang)
    unrelated = {"real": [d.text for d in tune]}
    if lang == "zh":
        unrelated["assembled"] = disjoint_articles(tune, 400, SEED)
    cache: dict[str, np.ndarray] = {}
    verified = {
        split: {kind: np.array([_containment(a, b, cache) >= NATURAL_DUPLICATE for a, b in zip(*pairs[kind])]) for kind in pairs}
        for split, pairs in sets.items()
    }
    result: dict[str, Any] = {
        "second_stage_keeps": {split: {k: float(v.mean()) for k, v in kinds.items()} for split, kinds in verified.items()},
        "text_stage_ms_per_candidate": text_stage_cost([d.text for d in held]),
        "articles": {"tuning": len(tune), "held_out": len(held)},
        "unrelated_articles": {k: len(v) for k, v in unrelated.items()},
        "revisions": len(revisions),
        "configs": {},
    }
    for name, (description, config) in configs.items():
        t0 = time.perf_counter()
        entry: dict[str, Any] = {"description": description, "evasions": {}}
        entry["verified"] = {}
        probed = config is not None  # simsql's index; the simhash package's pairs count at their distance
        entry["evasions_exact"] = {}
        for split, pairs in sets.items():
            fps = {kind: (fingerprints(config, a), fingerprints(config, b)) for kind, (a, b) in pairs.items()}
            dists = {kind: distances(*ab) for kind, ab in fps.items()}
            found = {kind: reached(*ab, probed) for kind, ab in fps.items()}
            entry["evasions"][split] = {kind: caught(d, found[kind]) for kind, d in dists.items()}
            entry["evasions_exact"][split] = {kind: caught(d) for kind, d in dists.items()}
            if probed:  # what radius-1 probes (the index work of the 7-bit search) would catch
                entry.setdefault("evasions_radius1", {})[split] = {
                    kind: caught(d, reached(*fps[kind], radius=1)) for kind, d in dists.items()
                }
            entry["verified"][split] = {kind: caught(d, found[kind] & verified[split][kind]) for kind, d in dists.items()}
        if revisions:
            a, b = fingerprints(config, [r[1] for r in revisions]), fingerprints(config, [r[2] for r in revisions])
            entry["revisions"] = caught(distances(a, b), reached(a, b, probed))
        entry["false_match"] = {k: pair_rates(fingerprints(config, texts), texts, probed) for k, texts in unrelated.items()}
        held_texts = [d.text for d in held]
        held_fm = pair_rates(fingerprints(config, held_texts), held_texts, probed)
        entry["false_match"]["held_out"] = held_fm
        result["configs"][name] = entry
        log(f"{lang} {name}: {time.perf_counter() - t0:.0f} s")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m research.originality", description=__doc__)
    parser.add_argument("--per-kind", type=int, default=300)
    parser.add_argument("--langs", default="en,zh")
    parser.add_argument("--configs", default=None, help="comma-separated names (default: all)")
    parser.add_argument("--balance", action="store_true", help="also measure bit balance at 1M rows")
    parser.add_argument("--balance-rows", type=int, default=1_000_000)
    parser.add_argument("--balance-population", choices=("sentences", "paragraphs"), default="sentences")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    configs = configurations(args.configs.split(",") if args.configs else None)
    results: dict[str, Any] = {"thresholds": list(THRESHOLDS), "seed": SEED, "languages": {}}
    if args.out.exists():
        results = json.loads(args.out.read_text())
    langs = [lang for lang in args.langs.split(",") if lang]
    if langs:  # what the stored language results were measured with; --langs "" only adds balance
        results["recommended_threshold"] = RECOMMENDED_THRESHOLD
        results["probe_radius"] = PROBE_RADIUS
        results.setdefault("descriptions", {}).update({k: v[0] for k, v in configs.items()})
    results["source_articles"] = {
        source: {lang: len(sources.articles(source, lang)) for lang in langs} for source, langs in sources.SOURCES.items()
    }
    for lang in langs:
        results["languages"][lang] = run_language(lang, args.per_kind, configs)  # type: ignore[arg-type]
    if args.balance:
        chosen = {k: v[1] for k, v in configs.items() if v[1] is not None}
        results["balance"] = balance.run(args.balance_rows, chosen, args.balance_population)
        results["balance_population"] = args.balance_population
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
