"""Bit balance at a million rows of real text, for a user who fits nothing.

Articles are assembled from real text of the tuning sources (:mod:`benchmarks.sources`, never
the held-out one), half English and half Chinese, in one of two populations:

* ``sentences`` (default): random sets of distinct real sentences (:func:`benchmarks.edits.sentences`,
  at most a third of the shortest article each) drawn from the whole tuning corpus. Two articles
  share a sentence rarely, and then a few percent of their text: "a million articles made of real
  sentences", none of them a near-duplicate of another.
* ``paragraphs``: random runs of real paragraphs. The tuning corpus holds only 23k Chinese
  paragraphs, so each lands in about 440 of 500k articles and article pairs sharing one make up
  most of the fullest 16-bit buckets: near-duplicates the benchmark manufactures, which a store
  of a million distinct articles would not hold. Kept to compare with earlier figures.

Fingerprinting a million articles one by one is hours of CPU, so every unit's (sentence's or
paragraph's) feature counts are computed once and an article's counts are the sum of its units'.
Units are joined with whitespace and cut at whitespace or punctuation, so no word and no Han
bigram crosses a unit boundary and the sum is exact for word features (shingle size 1); weights
then come from ``Fingerprinter.feature_weights`` and the bits from simsql's own
``weighted_fingerprints`` (with a :class:`~simsql.text.background.Background`: per-script sums and its
exact integer rule). :func:`verify` checks the result equals ``fingerprint_many``
on the article texts.

``--table-background`` adds :data:`TABLE_BACKGROUND`: the v2 default centred on a background
fitted on a random sample of the very population measured (what a user who runs
``Background.fit`` on a sample of their table gets), beside any fitted elsewhere (the
``"v2 + background"`` configuration of :mod:`research.originality`, fitted on tuning articles).

Reported per configuration: bits of entropy (sum over the 64 bits of the binary entropy of "bit
set"; 64 is ideal) and, for each of the four 16-bit blocks the index uses, the fullest bucket
over the uniform expectation ``rows / 65536``; per population, how much text two articles share
(:func:`text_sharing`), and per language and configuration whether the fullest buckets are
made of text-sharing pairs (:func:`crowding`).

Run: ``python -m research.balance [--population sentences|paragraphs|both] [--rows 1000000]
[--configs "v2 default,v1 (0.1 default),fitted IdfTable"] [--table-background]
[--out research/results/balance-population.json]``
(``--table`` prints BENCHMARKS.md's tables from the results);
``python -m research.originality --balance [--balance-population ...]`` measures the default
population alongside the originality benchmark.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from benchmarks import edits, log, sources
from benchmarks.internals import feature_hashes
from benchmarks.manpages import Lang
from simsql import Fingerprinter
from simsql.fingerprint import Background
from simsql.text import tokenize
from simsql.text.bitsums import weighted_fingerprints
from simsql.text.weighting import quantize

from .configurations import configurations

_BATCH = 4096

PopulationName = Literal["sentences", "paragraphs"]
POPULATIONS: tuple[PopulationName, ...] = ("sentences", "paragraphs")
DEFAULT_POPULATION: PopulationName = "sentences"
ARTICLE_CHARS: dict[str, tuple[int, int]] = {"en": (1500, 6000), "zh": (600, 3000)}
"""Article length range per language, drawn uniformly (chars of assembled text)."""
_JOIN: dict[PopulationName, str] = {"sentences": " ", "paragraphs": "\n\n"}
_MAX_UNITS: dict[PopulationName, int] = {"sentences": 400, "paragraphs": 40}
RESULTS = Path(__file__).resolve().parent / "results" / "balance-population.json"
CONFIGS = ("v2 default", "v1 (0.1 default)", "fitted IdfTable")
TABLE_BACKGROUND = "v2 + table background"
"""The configuration a user gets by fitting a background on a sample of the very table measured:
``Fingerprinter(background=Background.fit(sample))`` (:func:`table_background`)."""
TABLE_SAMPLE = 5000
"""Random articles per language the table background is fitted on (10,000 in all)."""
TABLE_SEED = 30


def _paragraphs(lang: Lang) -> list[str]:
    paras: list[str] = []
    for source, langs in sources.SOURCES.items():
        if lang in langs and source != sources.HELD_OUT:
            paras.extend(p for d in sources.articles(source, lang) for p in d.text.split("\n\n") if len(p) >= 20)
    return sorted(set(paras))


def _sentences(lang: Lang) -> list[str]:
    """Distinct sentences of the tuning paragraphs, none longer than a third of the shortest
    article (a table or listing without full stops would otherwise be most of an article)."""
    shortest = ARTICLE_CHARS[lang][0]
    out = {s.strip() for p in _paragraphs(lang) for s in edits.sentences(p)}
    return sorted(s for s in out if (20 if lang == "en" else 8) <= len(s) <= shortest // 3)


@dataclass
class Population:
    """One language's articles: distinct text ``units`` and each article's unit indices."""

    name: PopulationName
    lang: str
    units: list[str]
    lengths: np.ndarray
    members: list[np.ndarray]

    @classmethod
    def build(cls, name: PopulationName, lang: Lang, rows: int) -> Population:
        units = _sentences(lang) if name == "sentences" else _paragraphs(lang)
        lengths = np.array([len(u) for u in units])
        lo, hi = ARTICLE_CHARS[lang]
        seed = (1 if lang == "en" else 2) + (0 if name == "paragraphs" else 10)
        members = _article_members(len(units), lengths, rows, seed, lo, hi, _MAX_UNITS[name])
        return cls(name, lang, units, lengths, members)

    def text(self, article: int) -> str:
        return _JOIN[self.name].join(self.units[i] for i in self.members[article])


class Vocabulary:
    """Paragraph feature counts in CSR form over one vocabulary."""

    def __init__(self, paragraphs: Sequence[str], fp: Fingerprinter) -> None:
        index: dict[bytes, int] = {}
        ptr, ids, counts = [0], [], []
        for text in paragraphs:
            for feature, count in fp.feature_counts(text).items():
                ids.append(index.setdefault(feature, len(index)))
                counts.append(count)
            ptr.append(len(ids))
        self.features = list(index)
        self.ptr = np.array(ptr, dtype=np.int64)
        self.ids = np.array(ids, dtype=np.int64)
        self.counts = np.array(counts, dtype=np.float64)


def _article_members(
    n_paragraphs: int, lengths: np.ndarray, n: int, seed: int, min_chars: int, max_chars: int, max_units: int = 40
) -> list[np.ndarray]:
    """``n`` articles, each distinct units drawn uniformly until a length drawn in the range."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        target = rng.randint(min_chars, max_chars)
        chosen: list[int] = []
        seen: set[int] = set()
        size = 0
        while size < target and len(chosen) < max_units:
            i = rng.randrange(n_paragraphs)
            if i not in seen:
                seen.add(i)
                chosen.append(i)
                size += int(lengths[i]) + 2
        out.append(np.array(chosen, dtype=np.int64))
    return out


def article_counts(batch: list[np.ndarray], vocab: Vocabulary) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(article within ``batch``, feature id, count) of every feature of every article, sorted by
    article: the articles' units' cached counts summed, without tokenizing their text again."""
    size = np.int64(len(vocab.features))
    starts = np.concatenate([vocab.ptr[m] for m in batch])
    ends = np.concatenate([vocab.ptr[m + 1] for m in batch])
    owner_of_unit = np.repeat(np.arange(len(batch)), [len(m) for m in batch])
    lengths = ends - starts
    index = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths) + np.arange(int(lengths.sum()))
    keys = np.repeat(owner_of_unit.astype(np.int64), lengths) * size + vocab.ids[index]
    unique, inverse = np.unique(keys, return_inverse=True)
    return unique // size, unique % size, np.bincount(inverse, weights=vocab.counts[index])


def _fingerprints(members: list[np.ndarray], vocab: Vocabulary, fp: Fingerprinter) -> np.ndarray:
    """simsql's fingerprints of the articles ``members`` from their units' cached counts.

    With a background, the weighted sums are taken per script (Latin, Han) as
    ``Fingerprinter._script_sums`` does, and reduced by simsql's own exact integer rule
    (``weighted_fingerprints``), so the result is the library's, not a float approximation of it.
    """
    hashes = feature_hashes(vocab.features, fp.seed)
    han = (
        np.fromiter(map(tokenize.is_han_feature, vocab.features), np.int64, len(vocab.features))
        if fp.background is not None
        else None
    )
    ones = np.ones(len(vocab.features))
    idf = fp.feature_weights(vocab.features, ones)  # log-type weightings: 1 + ln 1 = 1
    out = np.zeros(len(members), dtype=np.uint64)
    for lo in range(0, len(members), _BATCH):
        batch = members[lo : lo + _BATCH]
        owner, feature, counts = article_counts(batch, vocab)
        if fp.weighting == "count":
            weights = counts
        else:
            raw = (1.0 + np.log(counts)) * idf[feature]
            bounds = np.flatnonzero(np.diff(np.concatenate(([-1], owner))))
            top = np.maximum.reduceat(raw, bounds)
            weights = np.rint(raw * np.repeat(quantize(np.array([1.0]))[0] / top, np.diff(np.concatenate((bounds, [len(owner)])))))
        packed = weighted_fingerprints(hashes[feature], weights, owner, len(batch), fp.background, None if han is None else han[feature])
        out[lo : lo + len(batch)] = np.array(packed, dtype=np.uint64)
    return out


def verify(fp: Fingerprinter, pop: Population, vocab: Vocabulary, sample: int = 300) -> None:
    """Raise unless summed unit counts give exactly ``fingerprint_many`` of the article texts
    (with a background too: the per-script sums and the integer centring are checked alike)."""
    texts = [pop.text(i) for i in range(min(sample, len(pop.members)))]
    expected = np.array(fp.fingerprint_many(texts), dtype=np.uint64)
    got = _fingerprints(pop.members[: len(texts)], vocab, fp)
    if not np.array_equal(expected, got):
        raise AssertionError(
            f"cached-count fingerprints differ from fingerprint_many ({int((expected != got).sum())} of {len(texts)})"
        )


def table_background(pops: Sequence[Population], base: Fingerprinter, per_lang: int = TABLE_SAMPLE, seed: int = TABLE_SEED) -> Background:
    """``Background.fit`` on ``per_lang`` random articles of each population, as text.

    What a user does: fit on a sample of their own table. The sample is joined to text exactly
    as the population's articles are (:meth:`Population.text`) and goes through
    ``Background.fit`` itself, so the centres are the library's, not recomputed from counts.
    """
    texts: list[str] = []
    for pop in pops:
        chosen = random.Random(f"{seed}:{pop.name}:{pop.lang}").sample(range(len(pop.members)), min(per_lang, len(pop.members)))
        texts.extend(pop.text(i) for i in chosen)
    return Background.fit(texts, base)


def stats(fps: np.ndarray) -> dict[str, Any]:
    n = len(fps)
    bits = np.unpackbits(fps.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    p = bits.mean(axis=0, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.nan_to_num(-(p * np.log2(p) + (1 - p) * np.log2(1 - p)))
    fullest = []
    for block in range(4):
        values = ((fps >> np.uint64(16 * block)) & np.uint64(0xFFFF)).astype(np.int64)
        fullest.append(float(np.bincount(values, minlength=1 << 16).max() / (n / 65536)))
    return {
        "rows": n,
        "bit_entropy": float(h.sum()),
        "min_bit_entropy": float(h.min()),
        "fullest_bucket_vs_uniform": fullest,
        "worst_bucket_vs_uniform": max(fullest),
    }


def _block(fps: np.ndarray, block: int) -> np.ndarray:
    return ((fps >> np.uint64(16 * block)) & np.uint64(0xFFFF)).astype(np.int64)


def _pairs_sharing(pop: Population, idx: np.ndarray) -> tuple[int, np.ndarray]:
    """(pairs among articles ``idx``, the share of text of every pair that shares a unit).

    A pair's share is the length of the units both hold over the length of the shorter article:
    1 for an article wholly inside another, 0 for articles with nothing in common.
    """
    holders: dict[int, list[int]] = {}
    for a in idx.tolist():
        for u in pop.members[a].tolist():
            holders.setdefault(u, []).append(a)
    shared: dict[tuple[int, int], int] = {}
    for u, arts in holders.items():
        for k, a in enumerate(arts):
            for b in arts[k + 1 :]:
                shared[(a, b)] = shared.get((a, b), 0) + int(pop.lengths[u])
    size = {a: int(pop.lengths[pop.members[a]].sum()) for a in idx.tolist()}
    shares = np.array([c / min(size[a], size[b]) for (a, b), c in shared.items()])
    return len(idx) * (len(idx) - 1) // 2, shares


def _sharing_summary(pairs: int, shares: np.ndarray) -> dict[str, Any]:
    return {
        "pairs": pairs,
        "sharing_a_unit": len(shares) / pairs if pairs else 0.0,
        "mean_share": float(shares.sum() / pairs) if pairs else 0.0,
        "share_above_half": int((shares > 0.5).sum()) / pairs if pairs else 0.0,
        "max_share": float(shares.max()) if len(shares) else 0.0,
    }


def text_sharing(pop: Population, sample: int = 3000, seed: int = 0) -> dict[str, Any]:
    """How much text articles have in common: every pair among ``sample`` random articles, and
    how many articles hold each unit (a unit used by many articles is shared text)."""
    idx = np.random.default_rng(seed).choice(len(pop.members), min(sample, len(pop.members)), replace=False)
    uses = np.bincount(np.concatenate(pop.members), minlength=len(pop.units))
    sizes = np.array([pop.lengths[m].sum() for m in pop.members])
    return {
        "units": len(pop.units),
        "unit_chars_mean": float(pop.lengths.mean()),
        "article_chars_mean": float(sizes.mean()),
        "units_per_article_mean": float(np.mean([len(m) for m in pop.members])),
        "articles_per_unit_mean": float(uses.mean()),
        "articles_per_unit_max": int(uses.max()),
        "longest_unit_share_median": float(np.median([pop.lengths[m].max() / pop.lengths[m].sum() for m in pop.members[:20000]])),
        "random_pairs": _sharing_summary(*_pairs_sharing(pop, idx)),
    }


def crowding(pop: Population, fps: np.ndarray, sample: int = 1000) -> list[dict[str, Any]]:
    """Per 16-bit block: the fullest bucket over uniform, what independent bits with the measured
    per-bit balance would predict for it, and whether its articles share text (against random
    pairs, :func:`text_sharing`): crowding by near-duplicates the population holds, or by bits."""
    n = len(fps)
    bits = np.unpackbits(fps.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    p = bits.mean(axis=0, dtype=np.float64)
    out = []
    for block in range(4):
        values = _block(fps, block)
        counts = np.bincount(values, minlength=1 << 16)
        idx = np.flatnonzero(values == counts.argmax())[:sample]
        q = p[16 * block : 16 * block + 16]
        out.append({
            "fullest_vs_uniform": float(counts.max() / (n / 65536)),
            "independent_bits_fullest_vs_uniform": float(np.prod(np.maximum(q, 1 - q)) * 65536),
            "articles_in_it": int(counts.max()),
            "pairs": _sharing_summary(*_pairs_sharing(pop, idx)),
        })  # fmt: skip
    return out


def run(
    rows: int,
    configs: dict[str, Fingerprinter],
    population: PopulationName = DEFAULT_POPULATION,
    details: dict[str, Any] | None = None,
    table_backgrounds: dict[str, Fingerprinter] | None = None,
) -> dict[str, Any]:
    """Balance of each configuration over ``rows`` articles of ``population``, half per language.

    ``details``, when given, receives the population's text sharing per language and the
    crowding check of every configuration's fullest buckets per language (and, for
    ``table_backgrounds``, the fitted centres). ``table_backgrounds`` maps a name to a base
    configuration to fit a background for on this very population (:func:`table_background`,
    both languages together, as a mixed table would be sampled); those are measured as
    ``Fingerprinter(background=...)`` after ``configs``.
    """
    result: dict[str, Any] = {}
    per_lang: dict[str, dict[str, np.ndarray]] = {}
    pops = [Population.build(population, lang, rows // 2) for lang in ("en", "zh")]  # type: ignore[arg-type]
    configs = dict(configs)
    for name, base in (table_backgrounds or {}).items():
        t0 = time.perf_counter()
        background = table_background(pops, base)
        configs[name] = replace(base, background=background)
        log(f"balance {population} {name}: fitted on {background.documents} articles in {time.perf_counter() - t0:.0f} s")
        if details is not None:
            details.setdefault("backgrounds", {})[name] = {"documents": background.documents, **background.settings}
    for pop in pops:
        lang = pop.lang
        log(f"balance {population} {lang}: {len(pop.units)} units, {len(pop.members)} articles")
        if details is not None:
            details.setdefault("sharing", {})[lang] = text_sharing(pop)
            log(f"balance {population} {lang} sharing: {details['sharing'][lang]}")
        vocabularies: dict[str, Vocabulary] = {}
        for name, fp in configs.items():
            if fp.tokenizer != "words" or fp.shingle_size != 1:
                continue
            vocab = vocabularies.get(fp.chinese) or vocabularies.setdefault(fp.chinese, Vocabulary(pop.units, fp))
            verify(fp, pop, vocab)
            fps = per_lang.setdefault(name, {})[lang] = _fingerprints(pop.members, vocab, fp)
            if details is not None:
                details.setdefault("crowding", {}).setdefault(name, {})[lang] = crowding(pop, fps)
            log(f"balance {population} {lang} {name}: done")
    for name, by_lang in per_lang.items():
        both = np.concatenate([by_lang["en"], by_lang["zh"]])
        result[name] = {"mixed": stats(both), **{lang: stats(v) for lang, v in by_lang.items()}}
    return result


def _pct(x: float) -> str:
    return f"{100 * x:.2g}%" if x < 0.995 else f"{100 * x:.0f}%"


def table(path: Path = RESULTS) -> str:
    """Markdown for BENCHMARKS.md from a results file of :func:`main`: balance per population and
    configuration, the text the articles share, and the crowding check of the fullest buckets."""
    data = json.loads(path.read_text())
    pops = data["populations"]
    lines = [("| configuration | population | bits of entropy (mixed) | fullest 16-bit bucket / uniform, 4 blocks (mixed) "
             "| en alone: entropy, worst bucket | zh alone: the same |"), "|---|---|---|---|---|---|"]  # fmt: skip
    names = list(dict.fromkeys(n for pop in pops.values() for n in pop["balance"]))
    for name in names:
        for population, pop in pops.items():
            entry = pop["balance"].get(name)
            if entry:
                m = entry["mixed"]
                alone = [f"{entry[lang]['bit_entropy']:.2f}, {entry[lang]['worst_bucket_vs_uniform']:.0f}x" for lang in ("en", "zh")]
                lines.append(f"| `{name}` | {population} | {m['bit_entropy']:.2f} | "
                             + " / ".join(f"{x:.0f}x" for x in m["fullest_bucket_vs_uniform"]) + f" | {alone[0]} | {alone[1]} |")  # fmt: skip
    lines += ["", ("Text the articles share (every pair among 3,000 random articles of a language; share = text both hold "
              "over the shorter article's):"), "",
              ("| population | language | distinct units | units per article | articles holding a unit (mean / max) "
              "| random pairs sharing a unit | mean share | largest share |"), "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for population, pop in pops.items():
        for lang, sh in pop.get("sharing", {}).items():
            r = sh["random_pairs"]
            lines.append(f"| {population} | {lang} | {sh['units']:,} | {sh['units_per_article_mean']:.0f} | "
                         f"{sh['articles_per_unit_mean']:.3g} / {sh['articles_per_unit_max']} | {_pct(r['sharing_a_unit'])} | "
                         f"{_pct(r['mean_share'])} | {_pct(r['max_share'])} |")  # fmt: skip
    lines += ["", ("Crowding check: the fullest bucket of each block (per language), what independent bits with the measured "
              "per-bit balance would put there, and the article pairs in it (up to 1,000 articles):"), "",
              ("| population | configuration | language | fullest bucket / uniform, 4 blocks | independent-bits expectation "
              "| pairs sharing a unit | mean share | pairs sharing over half | largest share |"),
              "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for population, pop in pops.items():
        for name, by_lang in pop.get("crowding", {}).items():
            for lang, blocks in by_lang.items():
                cells = [" / ".join(f"{b['fullest_vs_uniform']:.0f}x" for b in blocks),
                         " / ".join(f"{b['independent_bits_fullest_vs_uniform']:.0f}x" for b in blocks)]
                for key in ("sharing_a_unit", "mean_share", "share_above_half", "max_share"):
                    cells.append(" / ".join(_pct(b["pairs"][key]) for b in blocks))
                lines.append(f"| {population} | `{name}` | {lang} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m research.balance", description=__doc__)
    parser.add_argument("--population", choices=(*POPULATIONS, "both"), default="both")
    parser.add_argument("--rows", type=int, default=1_000_000, help="articles in all, half per language")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated names of research.originality configurations")
    parser.add_argument(
        "--table-background", action="store_true",
        help=f"also measure {TABLE_BACKGROUND!r}: v2 default with a background fitted on {TABLE_SAMPLE} random articles per language of the population",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--table", action="store_true", help="print BENCHMARKS.md's tables from --out and exit")
    args = parser.parse_args(argv)
    if args.table:
        print(table(args.out))
        return 0
    configs = {k: v[1] for k, v in configurations(args.configs.split(",")).items() if v[1] is not None}
    results: dict[str, Any] = {"rows": args.rows, "article_chars": ARTICLE_CHARS, "populations": {}}
    if args.out.exists():
        previous = json.loads(args.out.read_text())
        if previous.get("rows") == args.rows:
            results = previous
    for population in POPULATIONS if args.population == "both" else (args.population,):
        details: dict[str, Any] = {}
        table_backgrounds = {TABLE_BACKGROUND: Fingerprinter()} if args.table_background else None
        balance = run(args.rows, configs, population, details, table_backgrounds)  # type: ignore[arg-type]
        results["populations"][population] = {"balance": balance, **details}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n")
        log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
