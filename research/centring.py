"""Experiments for issue 8, "balanced bits by default": centring SimHash bit sums on a background.

SimHash sets bit ``i`` when ``V_i = sum_f w_f s_i(f) > 0`` (``s_i(f) = +-1``, bit ``i`` of the
feature's hash). Common words push the same bits in every document, so bits lean one way over a
corpus and the 16-bit index blocks crowd. Centring compares ``V_i`` with ``W * mu_i`` instead
(``W = sum_f w_f``), where ``mu_i`` is the per-unit-weight push of "typical text" on bit ``i``.

This module computes, for the 1M-article population of :mod:`research.balance`, each
article's normalised sums ``r_i = V_i / W`` once per weighting (float32, exploration only: the
library's exact integer path is checked separately), then the balance of any centring ``mu``.
Backgrounds ``mu`` come from general-purpose frequency lists only (:mod:`research.article_prior`);
the population's own mean is reported as an oracle ceiling, never shipped.

Run: ``python -m research.centring [--rows 250000]`` (the sweep, per language, into
``research/results/centring.json``); ``--table results.json`` prints the candidate table of
BENCHMARKS.md from an originality run; ``--crowding`` shows what crowds the buckets left after
oracle centring (Chinese; with ``--population sentences``, both languages on the population of
:mod:`research.balance` that holds no near-duplicates).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import log
from benchmarks.internals import BYTE_BITS, BYTE_OFFSETS, HAN_RUN, feature_hashes
from simsql import Fingerprinter
from simsql.queries import ORIGINALITY_DISTANCE
from simsql.text.weighting import prior_table

from . import balance
from .article_prior import article_prior, chinese_bigram_shares, english_shares
from .configurations import fitted_idf

_BATCH = 4096


def _is_han(features: list[bytes]) -> np.ndarray:
    return np.fromiter((HAN_RUN.match(f.decode("utf-8", "surrogatepass")) is not None for f in features), bool, len(features))


class Population:
    """One language's articles as (article, feature, 1 + ln count) triples over a vocabulary."""

    def __init__(self, lang: str, rows: int, fp: Fingerprinter, population: balance.PopulationName = "paragraphs") -> None:
        self.source = balance.Population.build(population, lang, rows)  # type: ignore[arg-type]
        paras = self.source.units
        self.members = self.source.members
        self.vocab = balance.Vocabulary(paras, fp)
        self.han = _is_han(self.vocab.features)
        self.hashes = feature_hashes(self.vocab.features, fp.seed)
        self.batches: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]] = []
        for start in range(0, len(self.members), _BATCH):
            batch = self.members[start : start + _BATCH]
            owner, feature, counts = balance.article_counts(batch, self.vocab)
            self.batches.append((owner, feature, 1.0 + np.log(counts), len(batch)))
        log(f"{lang}: {len(paras)} {population}, {len(self.vocab.features)} features, {len(self.members)} articles")

    def sums(self, feature_weight: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(r = V / W as float32 [articles x 64], W, W of Han features) for per-feature weights."""
        rs, ws, hs = [], [], []
        hash_bytes_all = self.hashes.astype("<u8").view(np.uint8).reshape(-1, 8).astype(np.intp)
        for owner, feature, logc, n_docs in self.batches:
            weights = logc * feature_weight[feature]
            bins = hash_bytes_all[feature] + BYTE_OFFSETS + (owner * 2048)[:, None]
            per_byte = np.bincount(bins.ravel(), weights=np.repeat(weights, 8), minlength=2048 * n_docs)
            set_weight = (per_byte.reshape(n_docs, 8, 256) @ BYTE_BITS).reshape(n_docs, 64)
            total = np.bincount(owner, weights=weights, minlength=n_docs)
            han = np.bincount(owner, weights=weights * self.han[feature], minlength=n_docs)
            rs.append(((2.0 * set_weight - total[:, None]) / total[:, None]).astype(np.float32))
            ws.append(total)
            hs.append(han)
        return np.concatenate(rs), np.concatenate(ws), np.concatenate(hs)


def pack(bits: np.ndarray) -> np.ndarray:
    return np.packbits(bits, axis=1, bitorder="little").view("<u8").ravel()


def push(hashes: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per-unit-weight push ``sum w s / sum w`` of weighted features on each of the 64 bits."""
    hash_bytes = hashes.astype("<u8").view(np.uint8).reshape(-1, 8).astype(np.intp)
    per_byte = np.bincount((hash_bytes + BYTE_OFFSETS).ravel(), weights=np.repeat(weights, 8), minlength=2048)
    set_weight = (per_byte.reshape(8, 256) @ BYTE_BITS).reshape(64)
    total = weights.sum()
    return (2.0 * set_weight - total) / total


def summary(fps: np.ndarray) -> tuple[float, float]:
    s = balance.stats(fps)
    return round(s["bit_entropy"], 2), round(s["worst_bucket_vs_uniform"], 1)


# --------------------------------------------------------------------------------------------
# General-purpose backgrounds
# --------------------------------------------------------------------------------------------

_K = np.arange(1, 120)
_LGAMMA = np.array([math.lgamma(k + 1) for k in _K])


def expected_log_count(lam: np.ndarray) -> np.ndarray:
    """``E[(1 + ln c) 1{c > 0}]`` for ``c ~ Poisson(lam)``: a feature's expected log-count weight."""
    lam = np.asarray(lam, float)
    out = np.empty_like(lam)
    tiny, big = lam < 1e-4, lam > 40
    out[tiny] = lam[tiny]
    out[big] = 1 + np.log(lam[big]) - 1 / (2 * lam[big])
    mid = np.flatnonzero(~tiny & ~big)
    for s in range(0, len(mid), 20000):
        i = mid[s : s + 20000]
        col = lam[i][:, None]
        out[i] = (np.exp(_K * np.log(col) - col - _LGAMMA) * (1 + np.log(_K))).sum(axis=1)
    return out


def background(shares: dict[bytes, float], weight: Callable[[list[bytes]], np.ndarray], tokens: float) -> np.ndarray:
    """``mu``: per-unit-weight push of an article of ``tokens`` tokens drawn from ``shares``."""
    features = list(shares)
    p = np.fromiter(shares.values(), float, len(features))
    hashes = feature_hashes(features, 0)
    return push(hashes, weight(features) * expected_log_count(tokens * p))


def evaluate(pops: dict[str, Population], name: str, weight: Callable[[list[bytes]], np.ndarray], tokens: float = 1000.0) -> dict[str, Any]:
    """Balance uncentred, centred on a general background, and centred on the population's own
    mean (an oracle: the ceiling of any centring, never shippable)."""
    mus = {"en": background(english_shares(), weight, tokens), "zh": background(chinese_bigram_shares(characters=False), weight, tokens)}
    fps: dict[str, dict[str, np.ndarray]] = {"plain": {}, "general-centred": {}, "oracle-centred": {}}
    for lang, pop in pops.items():
        r, total, han = pop.sums(weight(pop.vocab.features))
        share = (han / total)[:, None]
        fps["plain"][lang] = pack(r > 0)
        fps["general-centred"][lang] = pack(r > ((1 - share) * mus["en"] + share * mus["zh"]).astype(np.float32))
        fps["oracle-centred"][lang] = pack(r > r.mean(axis=0)[None, :])
    out: dict[str, Any] = {}
    for tag, by_lang in fps.items():
        both = np.concatenate([by_lang["en"], by_lang["zh"]])
        out[tag] = {"mixed": summary(both), **{lang: summary(v) for lang, v in by_lang.items()}}
        log(f"{name:36s} {tag:16s} {out[tag]}")
    return out


def candidates() -> dict[str, Callable[[list[bytes]], np.ndarray]]:
    out: dict[str, Callable[[list[bytes]], np.ndarray]] = {"v2 prior": prior_table().weights}
    for tokens, lo, hi in ((300, 1, 5), (300, 2, 6), (300, 1, 8), (1000, 1, 8)):
        out[f"article L{tokens} band {lo}-{hi}"] = article_prior(tokens, lo, hi).weights
    out["fitted IdfTable"] = fitted_idf().weights
    return out


def crowding(pop: Population, fps: np.ndarray, lengths: np.ndarray, sample: int = 200) -> list[dict[str, float]]:
    """Per 16-bit block: the fullest bucket over uniform, the share of article pairs in it that
    share a paragraph (against random pairs), and the median share of an article's text taken by
    its longest paragraph: whether crowding is near-duplicates the population itself contains."""
    rng = np.random.default_rng(0)

    def sharing(idx: np.ndarray) -> float:
        sets = [set(pop.members[i].tolist()) for i in idx[:sample]]
        pairs = [bool(a & b) for k, a in enumerate(sets) for b in sets[k + 1 :]]
        return float(np.mean(pairs))

    random_pairs = sharing(rng.choice(len(fps), sample, replace=False))
    out = []
    for block in range(4):
        values = ((fps >> np.uint64(16 * block)) & np.uint64(0xFFFF)).astype(np.int64)
        counts = np.bincount(values, minlength=1 << 16)
        idx = np.flatnonzero(values == counts.argmax())
        dominant = [lengths[m].max() / lengths[m].sum() for m in (pop.members[i] for i in idx[:sample])]
        out.append({
            "fullest_vs_uniform": float(counts.max() / (len(fps) / 65536)),
            "pairs_sharing_a_paragraph": sharing(idx),
            "random_pairs_sharing": random_pairs,
            "median_longest_paragraph_share": float(np.median(dominant)),
        })  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m research.centring", description=__doc__)
    parser.add_argument("--rows", type=int, default=500_000, help="articles per language")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "centring.json")
    parser.add_argument("--table", type=Path, default=None, metavar="ORIGINALITY_JSON",
                        help="print the candidate table from an originality run (and --out's sweep) and exit")
    parser.add_argument("--crowding", action="store_true",
                        help="only: why oracle-centred v2 buckets still crowd (Chinese), printed as JSON")
    parser.add_argument("--population", choices=balance.POPULATIONS, default="paragraphs",
                        help="articles of research.balance (the sweep and --crowding of BENCHMARKS.md: paragraphs)")
    args = parser.parse_args(argv)
    if args.table is not None:
        print(candidate_table(args.table, args.out))
        return 0
    if args.crowding:
        if args.population == "paragraphs":
            pop = Population("zh", args.rows, Fingerprinter())
            r, _, _ = pop.sums(prior_table().weights(pop.vocab.features))
            print(json.dumps(crowding(pop, pack(r > r.mean(axis=0)[None, :]), pop.source.lengths), indent=1))
            return 0
        out = {}
        for lang in ("en", "zh"):
            pop = Population(lang, args.rows, Fingerprinter(), args.population)
            r, _, _ = pop.sums(prior_table().weights(pop.vocab.features))
            oracle = pack(r > r.mean(axis=0)[None, :])
            out[lang] = {"oracle-centred": summary(oracle), "crowding": balance.crowding(pop.source, oracle)}
        print(json.dumps(out, indent=1))
        return 0
    fp = Fingerprinter()
    pops = {lang: Population(lang, args.rows, fp, args.population) for lang in ("en", "zh")}
    results = {name: evaluate(pops, name, weight) for name, weight in candidates().items()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows_per_language": args.rows, "results": results}, indent=1) + "\n")
    return 0



LIGHT = ("header_footer", "sub_1", "sub_2", "sentence_in", "sentence_out", "shuffle", "mix")


def candidate_table(originality: Path, centred: Path | None = None) -> str:
    """Markdown: balance, light-evasion recall at find_original's threshold and false matches per
    candidate, from ``python -m research.originality --balance --out ...`` (and the centring
    sweep for the centred rows)."""
    t = ORIGINALITY_DISTANCE

    data = json.loads(originality.read_text())
    header = ["configuration", "bits of entropy (1M, mixed)", "fullest 16-bit bucket", "en: light evasions, worst kind (tuning / held out)",
              "zh: the same", "en per-pair false-match rate (tuning / held-out pairs seen)", "zh the same (assembled pairs)"]  # fmt: skip
    rows = []
    for name in data["descriptions"]:
        cells = [f"`{name}`"]
        bal = data.get("balance", {}).get(name, {}).get("mixed")
        cells += [f"{bal['bit_entropy']:.2f}", f"{bal['worst_bucket_vs_uniform']:.0f}x"] if bal else ["-", "-"]
        for lang in ("en", "zh"):
            config = data["languages"][lang]["configs"][name]
            worst = {s: min(config["evasions"][s][k][t] for k in LIGHT) for s in ("tuning", "held_out")}
            kind = min(LIGHT, key=lambda k: config["evasions"]["tuning"][k][t])
            cells.append(f"{100 * worst['tuning']:.1f}% / {100 * worst['held_out']:.1f}% ({kind})")
        for lang, split in (("en", "real"), ("zh", "assembled")):
            fm = data["languages"][lang]["configs"][name]["false_match"]
            cells.append(f"{fm[split]['at_most'][t] / fm[split]['pairs']:.1e} / {fm['held_out']['at_most'][t]}")
        rows.append(cells)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]
    if centred is not None and centred.exists():
        sweep = json.loads(centred.read_text())
        lines += ["", f"Centring ({sweep['rows_per_language']:,} articles per language; bits of entropy, fullest bucket, mixed):", "",
                  "| weighting | uncentred | centred on the general background | centred on the population's own mean (oracle) |",
                  "|---|---|---|---|"]  # fmt: skip
        for name, entry in sweep["results"].items():
            lines.append(f"| `{name}` | " + " | ".join(f"{entry[tag]['mixed'][0]:.2f}, {entry[tag]['mixed'][1]:.0f}x"
                                                         for tag in ("plain", "general-centred", "oracle-centred")) + " |")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
