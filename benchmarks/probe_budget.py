"""How many probes the originality check needs, by the size of the submitted text (no database).

    python -m benchmarks.probe_budget                 # man pages (tuned on) and Debian's manuals (held out)
    python -m benchmarks.probe_budget --seeds 22,23   # also edits made with another seed
    python -m benchmarks.probe_budget --seeds 22,23 --centred   # also on signatures centred on a wide background
    python -m benchmarks.probe_budget --time --url postgresql+psycopg://postgres@127.0.0.1:5432/h_scale

For each source and language, the originals of ``python -m benchmarks.originality`` (same
sampling, same seed) are disguised every light way it uses; for each copy the rank of the first
of its margin-directed probes (:func:`simsql.text.signature.probe_values`, the wide layout) that
equals one of its original's block values is computed: the index stage reaches the original
exactly when that rank is below the budget. Each budget rule is then scored by

* **misses** per light evasion: copies no probe of the rule's budget reaches (the check cannot
  find them, whatever the table's size; at 20k rows these were all of its misses), and how
  many of them hold less than ``MIN_CONTAINMENT`` of their original (no budget makes the
  check report those: the edit made them another text by its own measure);
* **probes** made for fresh articles on average (each a lookup in one block index): what a new
  text costs, the check's slow case, since it makes the whole budget.

Rules: a fixed 512, 1,024 and 2,048, and simsql's default (:func:`simsql.queries.wide.probe_budget`:
512 x 500 / the submission's distinct features, between 512 and 2,048). The default was chosen
on the man pages; Debian's manuals (``--source heldout`` of the originality benchmark) check it.

``--time`` then times what the default costs on a table ``python -m benchmarks.originality``
loaded and kept (``--url``, ``--lang``, ``--source``, ``--seed`` as it was loaded with):
``find_original`` with the default budget and with a fixed 512, taking turns on each text (each
goes first on every other one), on disguised copies and on fresh articles.

Results go to ``benchmarks/results/probe-budget.json`` (``probe-budget-time-<server>.json``) and
are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from simsql import Fingerprinter
from simsql.fingerprint import Background
from simsql.queries.wide import WIDE_MAX_BUDGET, probe_budget
from simsql.schema.names import WIDE_LAYOUT
from simsql.text.containment import MIN_CONTAINMENT, share_of_submission, shingled
from simsql.text.signature import Signature, probe_values

from .originality import DEFAULT_URL, EVASIONS, Doc, benchmark_fingerprinter, corpus, disguised, engine_for, filler, timed
from .timing import summary

RESULTS = Path(__file__).resolve().parent / "results"
LIGHT = tuple(kind for kind in EVASIONS if kind not in ("sub_5", "excerpt_60"))
SOURCES = (("manpages", "en", 200), ("manpages", "zh", 100), ("heldout", "en", 100), ("heldout", "zh", 100))
FRESH = 300
Rule = Callable[[Signature], int]
RULES: dict[str, Rule] = {
    "fixed 512": lambda signature: 512,
    "fixed 1024": lambda signature: 1024,
    "fixed 2048": lambda signature: 2048,
    "default (by features)": probe_budget,
}


def reach_rank(copy: Signature, original: Signature) -> int | None:
    """The position of the first probe of ``copy`` that finds ``original``'s block value, among
    ``2 * WIDE_MAX_BUDGET`` cheapest (a centred table's deepest budget; None: none of them does)."""
    theirs = original.blocks(WIDE_LAYOUT)
    probed = probe_values(copy, WIDE_LAYOUT, budget=2 * WIDE_MAX_BUDGET)
    return next((rank for rank, (block, value) in enumerate(probed) if theirs[block] == value), None)


CENTRED_RULES: dict[str, Rule] = {
    "default (by features)": probe_budget,
    "centred default (x2)": lambda signature: probe_budget(signature, True),
}
"""``--centred``: the rules scored on signatures centred on a wide background."""

BACKGROUND_SAMPLE = 3000
"""``--centred``: filler articles of the source (the table's own kind of text) the wide background is fitted on."""


def measure(source: str, lang: str, originals: int, seed: int, centred: bool = False) -> dict[str, Any]:
    """Every rule's misses per light evasion and mean probes on fresh articles, for one corpus
    (``centred``: signatures centred on a wide background fitted on the source's filler)."""
    data = corpus(0, originals, 1000, seed, lang, source)
    fingerprinter = benchmark_fingerprinter()
    rules_scored = RULES
    if centred:
        sample = list(filler(data, BACKGROUND_SAMPLE, seed))
        fingerprinter = Fingerprinter(version=fingerprinter.version, background=Background.fit(sample, fingerprinter, wide=True))
        rules_scored = CENTRED_RULES
    stored = [fingerprinter.signature(original) for original in data["originals"]]
    copies = [(kind, copy, index) for index, kind, copy in disguised(data, seed) if kind in LIGHT]
    ranks = []
    for kind, copy, index in copies:
        signature = fingerprinter.signature(copy)
        held = share_of_submission(shingled(copy), shingled(data["originals"][index - 1])) >= MIN_CONTAINMENT
        ranks.append((kind, signature, reach_rank(signature, stored[index - 1]), held))
    fresh = fingerprinter.signatures_many(data["fresh_disjoint"][:FRESH])
    rules = {}
    for name, rule in rules_scored.items():
        missed, unheld = {kind: 0 for kind in LIGHT}, 0
        for kind, signature, rank, held in ranks:
            miss = rank is None or rank >= rule(signature)
            missed[kind] += miss
            unheld += miss and not held
        rules[name] = {
            "misses": sum(missed.values()),
            "misses_under_containment": unheld,
            "worst_recall": round(1 - max(missed.values()) / originals, 3),
            "misses_per_evasion": {kind: count for kind, count in missed.items() if count},
            "fresh_probes_mean": round(statistics.fmean(rule(signature) for signature in fresh if signature)),
        }
    return {
        "source": source, "lang": lang, "seed": seed, "centred": centred, "copies": len(ranks),
        "copy_features_p10_p50": statistics.quantiles([s.features for _, s, _, _ in ranks], n=10)[0:5:4],
        "fresh_features_p50": statistics.median(s.features for s in fresh if s),
        "rules": rules,
    }  # fmt: skip


def time_budgets(url: str, lang: str, source: str, seed: int, texts: int) -> dict[str, Any]:
    """``find_original`` with the default budget against a fixed 512 on the kept table, in turns."""
    from simsql.queries.wide_original import find_wide_original

    data = corpus(0, 200 if (source, lang) == ("manpages", "en") else 100, 1000, seed, lang, source)
    engine = engine_for(url, lang, source)
    copies = [copy for _, _, copy in disguised(data, seed)][:: max(1, 11 * len(data["originals"]) // texts)][:texts]
    populations = {"copies": copies, "fresh articles": data["fresh_shared"][:texts]}
    result: dict[str, Any] = {"server": engine.dialect.name, "lang": lang, "source": source, "load_average_before": list(os.getloadavg())}
    with Session(engine) as session:
        result["rows"] = session.execute(select(func.count()).select_from(Doc)).scalar_one()
        checks = {"default": lambda body: find_wide_original(session, Doc, body), "512": lambda body: find_wide_original(session, Doc, body, budget=512)}
        for population, bodies in populations.items():
            for body in bodies[:5]:  # warm: statements built, compiled, prepared
                for check in checks.values():
                    check(body)
            times: dict[str, list[float]] = {name: [] for name in checks}
            for turn, body in enumerate(bodies):
                for name in (("default", "512") if turn % 2 == 0 else ("512", "default")):
                    times[name].append(timed(lambda: checks[name](body))[0])
            result[population] = {name: summary(values) for name, values in times.items()}
            result[population]["ratio_p50"] = round(result[population]["default"]["p50_ms"] / result[population]["512"]["p50_ms"], 2)
    engine.dispose()
    result["load_average_after"] = list(os.getloadavg())
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="22", help="comma-separated seeds of the originals and edits (22: the originality benchmark's)")
    parser.add_argument("--time", action="store_true", help="time the default against 512 probes on a kept table instead")
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--lang", choices=("en", "zh"), default="en")
    parser.add_argument("--source", choices=("manpages", "heldout"), default="manpages")
    parser.add_argument("--texts", type=int, default=100, help="texts timed per population")
    parser.add_argument("--centred", action="store_true", help="also score signatures centred on a wide background fitted on each source's filler")
    args = parser.parse_args(argv)
    if args.time:
        timing = time_budgets(args.url, args.lang, args.source, int(args.seeds.split(",")[0]), args.texts)
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"probe-budget-time-{timing['server']}.json").write_text(json.dumps(timing, indent=2) + "\n")
        print(json.dumps(timing, indent=2))
        return 0
    results = []
    for seed in (int(seed) for seed in args.seeds.split(",")):
        for source, lang, originals, centred in ((*spec, c) for spec in SOURCES for c in ((False, True) if args.centred else (False,))):
            result = measure(source, lang, originals, seed, centred)
            results.append(result)
            print(f"\n{source} {lang}, seed {seed}{', centred' if centred else ''}: {result['copies']} light copies, "
                  f"features p10/p50 {result['copy_features_p10_p50']}, fresh p50 {result['fresh_features_p50']}")  # fmt: skip
            for name, scored in result["rules"].items():
                print(f"  {name:<22} misses {scored['misses']:>3} ({scored['misses_under_containment']} under containment)  worst recall {scored['worst_recall']:.2f}  "
                      f"fresh probes {scored['fresh_probes_mean']:>5}  {scored['misses_per_evasion']}")  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"probe-budget{'-centred' if args.centred else ''}.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
