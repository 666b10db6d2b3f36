"""How near a candidate must be for ``find_original(..., accept_distance=D)`` to take it unread.

    python -m benchmarks.accept_distance --url postgresql+psycopg://postgres@127.0.0.1:5432/h_scale
    python -m benchmarks.accept_distance --lang zh --originals 100 --url postgresql+psycopg://postgres@127.0.0.1:5432/dur

On a table ``python -m benchmarks.originality`` loaded and kept (same ``--lang``, ``--source``,
``--originals`` and ``--seed``), four measurements:

* **random pairs**: the 256-bit distance of ``--pairs`` random pairs of the table's stored
  signatures (the filler rows), its lower tail, and the distance at which a log-linear fit of
  that tail (from the 1e-7 to the 1e-3 quantile; real text's tail is heavier than independent
  bits', and a straight line in log scale falls slower than it does) reaches 1e-12 per pair;
* **the nearest non-copy**: for each fresh article, the nearest candidate ``find_original``'s
  index stage returns that its text does *not* confirm (share below ``MIN_CONTAINMENT``):
  the related texts (shared paragraphs) an unread acceptance would risk;
* **copies**: each disguised copy's distance to its original, per evasion (what a threshold
  spares the text of);
* **time**: ``find_original`` with ``accept_distance`` against without, taking turns per text.

Results go to ``benchmarks/results/accept-distance-<server>-<lang>.json`` and are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

import simsql
import simsql.store
from simsql.queries.wide import WIDE_DISTANCE, wide_search
from simsql.text.containment import MIN_CONTAINMENT, share_of_submission, shingled

from .originality import DEFAULT_URL, Doc, benchmark_fingerprinter, corpus, disguised, engine_for, timed
from .timing import summary

RESULTS = Path(__file__).resolve().parent / "results"
PROPOSED = 32


def popcounts(words: np.ndarray) -> np.ndarray:
    """Set bits of each row of ``words`` (``[n, 4]`` uint64)."""
    as_bytes = np.ascontiguousarray(words).view(np.uint8).reshape(len(words), -1)
    return np.unpackbits(as_bytes, axis=1).sum(axis=1, dtype=np.int64)


def random_pairs(session: Session, pairs: int, seed: int) -> dict[str, Any]:
    """The distance distribution of random pairs of stored filler signatures, and its fitted tail."""
    rows = session.execute(select(*simsql.store.binding_for(Doc).words).where(Doc.kind == "filler")).all()
    words = np.array([[word & 0xFFFF_FFFF_FFFF_FFFF for word in row] for row in rows], dtype=np.uint64)
    rng = np.random.default_rng(seed)
    distances = []
    for start in range(0, pairs, 1_000_000):
        size = min(1_000_000, pairs - start)
        a, b = rng.integers(0, len(words), size), rng.integers(0, len(words), size)
        distances.append(popcounts(words[a[a != b]] ^ words[b[a != b]]))
    found = np.concatenate(distances)
    low, high = int(np.quantile(found, 1e-7)) + 2, int(np.quantile(found, 1e-3))
    xs = np.arange(low, high + 1)
    shares = np.array([(found <= x).mean() for x in xs])
    slope, intercept = np.polyfit(xs, np.log10(shares), 1)
    at = lambda d: float(10 ** (intercept + slope * d))  # noqa: E731
    return {
        "pairs": int(len(found)), "mean": float(found.mean()), "sd": float(found.std()), "min": int(found.min()),
        "share_within": {d: float((found <= d).mean()) for d in (64, 70, 80, 90)},
        "fit_range": [low, high], "fit_log10_per_bit": float(slope),
        "fitted_share_within": {d: at(d) for d in (24, 32, 37, 48)},
        "distance_at_1e-12": float((-12 - intercept) / slope),
    }  # fmt: skip


def nearest_non_copies(session: Session, texts: Sequence[str]) -> dict[str, Any]:
    """Per fresh text, the distance of the nearest candidate its text does not confirm."""
    fingerprinter = benchmark_fingerprinter()
    nearest = []
    for body in texts:
        submitted = shingled(body)
        for row, distance in session.execute(wide_search(Doc, fingerprinter.signature(body), WIDE_DISTANCE)).all():
            if share_of_submission(submitted, shingled(row.body)) < MIN_CONTAINMENT:
                nearest.append(int(distance))
                break
    return {"texts": len(texts), "with_a_non_copy_candidate": len(nearest), "min": min(nearest, default=None),
            "p1": float(np.percentile(nearest, 1)) if nearest else None, "within_32": sum(d <= PROPOSED for d in nearest)}  # fmt: skip


def copy_distances(data: dict[str, Any], seed: int) -> dict[str, Any]:
    fingerprinter = benchmark_fingerprinter()
    originals = [fingerprinter.signature(body) for body in data["originals"]]
    by_kind: dict[str, list[int]] = {}
    for index, kind, copy in disguised(data, seed):
        by_kind.setdefault(kind, []).append(originals[index - 1].distance(fingerprinter.signature(copy)))
    return {kind: {"p50": statistics.median(found), "within_32": round(sum(d <= PROPOSED for d in found) / len(found), 3)} for kind, found in by_kind.items()}


def timing(session: Session, copies: Sequence[str], fresh: Sequence[str]) -> dict[str, Any]:
    checks = {"read every candidate": None, f"accept_distance={PROPOSED}": PROPOSED}
    result: dict[str, Any] = {"load_average_before": list(os.getloadavg())}
    for population, bodies in (("copies", copies), ("fresh articles", fresh)):
        times: dict[str, list[float]] = {name: [] for name in checks}
        for turn, body in enumerate(bodies):
            names = list(checks) if turn % 2 == 0 else list(reversed(checks))
            for name in names:
                times[name].append(timed(lambda: simsql.find_original(session, Doc, body, accept_distance=checks[name]))[0])
        result[population] = {name: summary(values) for name, values in times.items()}
    result["load_average_after"] = list(os.getloadavg())
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--lang", choices=("en", "zh"), default="en")
    parser.add_argument("--source", choices=("manpages", "heldout"), default="manpages")
    parser.add_argument("--originals", type=int, default=200)
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--pairs", type=int, default=20_000_000)
    parser.add_argument("--texts", type=int, default=100, help="texts timed per population")
    args = parser.parse_args(argv)
    data = corpus(0, args.originals, 1000, args.seed, args.lang, args.source)
    engine = engine_for(args.url, args.lang, args.source)
    with Session(engine) as session:
        result: dict[str, Any] = {"server": engine.dialect.name, "lang": args.lang, "source": args.source}
        result["random_pairs"] = random_pairs(session, args.pairs, args.seed)
        result["nearest_non_copy"] = nearest_non_copies(session, data["fresh_shared"] + data["fresh_disjoint"])
        result["copies"] = copy_distances(data, args.seed)
        copies = [copy for _, _, copy in disguised(data, args.seed)][:: max(1, 11 * args.originals // args.texts)][: args.texts]
        result["time"] = timing(session, copies, data["fresh_shared"][: args.texts])
    engine.dispose()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"accept-distance-{result['server']}-{args.lang}.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
