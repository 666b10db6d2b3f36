"""Whether the probes of a fresh text could stop early by margin (issue 43; no database).

    python -m benchmarks.probe_stop

A fresh article makes its whole probe budget (it is the check's common case), so at ten million
rows its cost is its probes. simsql's budget is a count that grows as a submission's distinct
features shrink (:func:`simsql.queries.wide.probe_budget`). The alternative scored here stops by
margin: probe every variant whose cost (the total margin it flips,
:func:`simsql.text.signature.probe_costs`) is at most ``k / features ** a`` (an edit moves a
bit's normalized sum by about ``1 / sqrt(features)``), never fewer than the first stage's
:data:`~simsql.queries.wide.WIDE_FIRST_STAGE` probes. A text of confident bits then stops after
few probes, whichever it turns out to be.

For each source and language of :mod:`benchmarks.probe_budget` (man pages, tuned on; Debian's
manuals, held out), signatures centred on a wide background fitted on the source's filler, and
each layout (8 x 20, 10 x 24): every light copy's first reaching probe (its rank and its cost),
and every fresh article's probe costs. For each exponent ``a``, ``k`` is the least that reaches
every light copy of the man pages (then 1.2 times it, a margin); the score is the copies missed
on each source and the probes fresh articles make, against the default budget's.
Results go to ``benchmarks/results/probe-stop.json`` and are printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from simsql import Fingerprinter
from simsql.fingerprint import Background
from simsql.queries.wide import WIDE_FIRST_STAGE, probe_budget
from simsql.schema.names import WIDE_LAYOUT
from simsql.text.signature import BlockLayout, Signature, probe_costs, probe_values

from .originality import benchmark_fingerprinter, corpus, disguised, filler
from .probe_budget import BACKGROUND_SAMPLE, FRESH, LIGHT, SOURCES

RESULTS = Path(__file__).resolve().parent / "results"
LAYOUTS = {"8 x 20": WIDE_LAYOUT, "10 x 24": BlockLayout(count=10, width=24)}
DEEPEST = 16384
EXPONENTS = (0.0, 0.25, 0.5)


def first_reach(copy: Signature, original: Signature, layout: BlockLayout) -> tuple[int, float] | None:
    """Rank and cost of the first of ``copy``'s probes that equals ``original``'s value in its block."""
    theirs = original.blocks(layout)
    costs = probe_costs(copy, layout, budget=DEEPEST)
    rank = next((rank for rank, (block, value) in enumerate(probe_values(copy, layout, budget=DEEPEST)) if theirs[block] == value), None)
    return None if rank is None else (rank, float(costs[rank]))


def collect(source: str, lang: str, originals: int, seed: int) -> dict[str, Any]:
    data = corpus(0, originals, 1000, seed, lang, source)
    base = benchmark_fingerprinter()
    background = Background.fit(list(filler(data, BACKGROUND_SAMPLE, seed)), base, wide=True)
    fingerprinter = Fingerprinter(version=base.version, background=background)
    stored = [fingerprinter.signature(original) for original in data["originals"]]
    copies = [(fingerprinter.signature(copy), stored[index - 1]) for index, kind, copy in disguised(data, seed) if kind in LIGHT]
    fresh = [signature for signature in fingerprinter.signatures_many(data["fresh_disjoint"][:FRESH]) if signature]
    found: dict[str, Any] = {}
    for name, layout in LAYOUTS.items():
        found[name] = {
            "copies": [(copy.features, first_reach(copy, original, layout), probe_budget(copy, True, layout)) for copy, original in copies],
            "fresh": [(signature.features, probe_costs(signature, layout, budget=DEEPEST), probe_budget(signature, True, layout)) for signature in fresh],
        }  # fmt: skip
    return found


def score(collected: dict[str, Any], k: float, a: float) -> tuple[int, float]:
    """Light copies missed and mean probes of fresh articles when probes stop above ``k / features ** a``."""
    missed = 0
    for features, reach, _ in collected["copies"]:
        limit = k / max(features, 1) ** a
        missed += reach is None or not (reach[0] < WIDE_FIRST_STAGE or reach[1] <= limit)
    probes = [max(WIDE_FIRST_STAGE, int(np.searchsorted(costs, k / max(features, 1) ** a, side="right"))) for features, costs, _ in collected["fresh"]]
    return missed, float(np.mean(probes))


def default_score(collected: dict[str, Any]) -> tuple[int, float]:
    missed = sum(reach is None or reach[0] >= budget for _, reach, budget in collected["copies"])
    return missed, float(np.mean([budget for _, _, budget in collected["fresh"]]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=22)
    args = parser.parse_args(argv)
    sources = {f"{source} {lang}": collect(source, lang, originals, args.seed) for source, lang, originals in SOURCES}
    results: list[dict[str, Any]] = []
    for name in LAYOUTS:
        tuned = [found[name] for key, found in sources.items() if key.startswith("manpages")]
        rules: dict[str, dict[str, tuple[int, float]]] = {"default (by features)": {key: default_score(found[name]) for key, found in sources.items()}}
        for a in EXPONENTS:
            k = next((float(k) for k in np.linspace(0.005, 3.0, 1200) if all(score(found, float(k), a)[0] == 0 for found in tuned)), None)
            if k is None:
                continue
            for scale in (1.0, 1.2):
                rules[f"k / features^{a}, k = {k * scale:.4f}"] = {key: score(found[name], k * scale, a) for key, found in sources.items()}
        results.append({"layout": name, "rules": {rule: {key: {"missed": m, "fresh_probes_mean": round(p)} for key, (m, p) in by.items()} for rule, by in rules.items()}})
        print(f"\n{name}: light copies missed / fresh articles' mean probes, per source")
        for rule, by in rules.items():
            print(f"  {rule:<34} " + "  ".join(f"{key}: {m} / {round(p)}" for key, (m, p) in by.items()))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "probe-stop.json").write_text(json.dumps({"seed": args.seed, "layouts": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
