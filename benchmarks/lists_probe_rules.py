"""Which lists to probe for the fewest rows read at a recall (issue 41, "fewer rows read for the
same recall"): on a table :mod:`benchmarks.lists_collateral` kept (``--keep``), lists fitted,
its fingerprints, lists and current centres read once, the fresh queries' recall@10 (within the
true 10th distance) and the rows read computed in numpy for each rule of ordering the lists, at
the fewest probes whose mean recall over the queries reaches 0.9 and 0.95.

    python -m benchmarks.lists_probe_rules --rows 1000000 --source heldout \\
        --url postgresql+psycopg://postgres@127.0.0.1:5432/bench41_x

Rules: by the Hamming distance to the centre (what simsql probes; ties by list), ties by size,
the distance plus or minus ``beta * log2(size / mean size)``, and the nearest of the centre and
``m`` sampled members of each list. Also: the probes ``recall=0.9/0.95/0.99`` would get from a
curve measured on 200 and on 1,000 held-out rows of the table (:func:`simsql.text.lists.recall_curve`,
two draws each), and how long each curve took.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import psycopg

from simsql.text.lists import recall_curve

from .lists_data import text_set

K = 10


def _table(dsn: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fingerprints (unsigned), their list (0-based) and the current generation's centres."""
    with psycopg.connect(dsn) as connection:
        generation = connection.execute(
            "SELECT generation FROM simsql_partitions WHERE table_name = 'parts_text' AND state = 'current'"
        ).fetchone()[0]  # type: ignore[index]
        centres = connection.execute(
            "SELECT list_value, centre FROM simsql_partition_centres WHERE table_name = 'parts_text' AND generation = %s "
            "ORDER BY list_value", (generation,),
        ).fetchall()  # fmt: skip
        rows = connection.execute("SELECT simhash, simhash_part FROM parts_text WHERE simhash IS NOT NULL").fetchall()
    base = centres[0][0]
    fingerprints = np.array([r[0] for r in rows], dtype=np.int64).view(np.uint64)
    lists = np.array([r[1] for r in rows], dtype=np.int64) - base
    return fingerprints, lists, np.array([c[1] for c in centres], dtype=np.int64).view(np.uint64)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lists_probe_rules", description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--source", default="heldout")
    args = parser.parse_args(argv)
    data = text_set(args.rows, 100, args.source)
    fingerprints, lists, centres = _table(args.url.replace("postgresql+psycopg", "postgresql"))
    count = len(centres)
    size = np.bincount(lists, minlength=count)
    logs = np.log2(np.maximum(size, 1) / size.mean())
    per_query = []
    for q, tenth in zip(data.queries, data.tenth):
        within = np.bincount(lists[np.bitwise_count(fingerprints ^ q) <= tenth], minlength=count)
        per_query.append((q, within, np.bitwise_count(centres ^ q).astype(np.float64)))
    rng = np.random.default_rng(0)
    by_list = np.split(np.argsort(lists, kind="stable"), np.cumsum(size)[:-1])
    samples = {m: np.stack([fingerprints[rng.choice(rows, size=m, replace=len(rows) < m)] for rows in by_list]) for m in (4, 16)}

    def sampled(m: int) -> Callable[[int, np.ndarray], np.ndarray]:
        return lambda q, d: np.minimum(d, np.bitwise_count(samples[m] ^ q).min(axis=1))

    rules: dict[str, Callable[[int, np.ndarray], np.ndarray]] = {
        "distance to the centre (simsql)": lambda q, d: d,
        "distance, ties smallest list first": lambda q, d: d + 1e-3 * size,
        "distance, ties largest list first": lambda q, d: d - 1e-3 * size,
        **{f"distance + {b} log2(size / mean)": (lambda q, d, b=b: d + b * logs) for b in (0.25, 0.5, 1.0, 2.0)},
        **{f"distance - {b} log2(size / mean)": (lambda q, d, b=b: d - b * logs) for b in (0.5, 1.0)},
        **{f"nearest of the centre and {m} sampled members": sampled(m) for m in (4, 16)},
    }
    report: dict[str, Any] = {"command": "python -m benchmarks.lists_probe_rules " + " ".join(sys.argv[1:]), "rows": len(fingerprints),
                              "lists": count, "mean_list": float(size.mean()), "queries": len(per_query), "rules": {}}  # fmt: skip
    depth = min(count, 400)
    for name, score in rules.items():
        recall = np.zeros((len(per_query), depth))
        read = np.zeros((len(per_query), depth))
        for i, (q, within, distances) in enumerate(per_query):
            order = np.lexsort((np.arange(count), distances, score(q, distances)))[:depth]
            recall[i] = np.minimum(np.cumsum(within[order]), K) / K
            read[i] = np.cumsum(size[order])
        mean = recall.mean(axis=0)
        found = {}
        for target in (0.9, 0.95):
            probes = int(np.argmax(mean >= target)) + 1
            found[str(target)] = {"probes": probes, "rows_read_p50": float(np.median(read[:, probes - 1]))}
        report["rules"][name] = found
    curves = []
    for queries in (200, 200, 1000, 1000):
        held = np.random.default_rng(len(curves)).choice(len(fingerprints), size=queries, replace=False)
        started = time.perf_counter()
        curve = recall_curve(fingerprints, held, centres)
        curves.append({"held_out_rows": queries, "seconds": round(time.perf_counter() - started, 2),
                       "probes_at_90_95_99": [curve.probes_at[p] for p in (90, 95, 99)]})  # fmt: skip
    report["curves"] = curves
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
