"""List queries before and after a change, in one run (issue 41): two client processes, each
importing one version of simsql (``--before``: a checkout, e.g. ``git archive <commit>``; the
other this tree), take turns query by query in a shuffled order with the keys-only scan, on a
table :mod:`benchmarks.lists_collateral` kept (``--keep``), lists fitted.

    git archive cde6147 | tar -x -C /tmp/b41main      # and a link to benchmarks/.cache
    python -m benchmarks.lists_query_ab --rows 300000 --queries 100 --source heldout --before /tmp/b41main \\
        --url postgresql+psycopg://postgres@127.0.0.1:5432/bench41_x

Reported: p25/p50 and recall@10 of each system (client wall time: statement, Python, rows), the keys-only
scan's p50 over each p50 (the speed-up), and for each system the median over the queries of the
per-query ratio after / before (paired: the same query, the same turn; steadier than the ratio of
two p50s at this machine's load). ``--repeat``: each query that many turns. Each version on its
own connection, in its own process.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
SYSTEMS = (("recall", "0.95"), ("probes", "16"), ("probes", "32"))


def worker(root: str, url: str) -> None:
    """Answer ``kind value fingerprint`` lines with the milliseconds each query took and the
    distances of the rows it found."""
    sys.path.insert(0, root)
    from sqlalchemy import create_engine, select
    from sqlalchemy.orm import Session

    import simsql
    from benchmarks.lists_models import TextDoc

    assert simsql.__file__ is not None and simsql.__file__.startswith(root), simsql.__file__
    session = Session(create_engine(url))
    distance = TextDoc.simhash.hamming_distance
    print("ready", flush=True)
    for line in sys.stdin:
        kind, value, text = line.split()
        q = int(text)
        started = time.perf_counter()
        if kind == "keys":
            found = [int(r[1]) for r in session.execute(select(TextDoc.id, distance(q)).order_by(distance(q)).limit(10))]
        else:
            options: dict[str, Any] = {"probes": int(value)} if kind == "probes" else {"recall": float(value)}
            found = [int(r.distance) for r in session.execute(simsql.most_similar(select(TextDoc), q, limit=10, **options))]
        took = round((time.perf_counter() - started) * 1000, 3)
        print(took, ",".join(map(str, found)), flush=True)


def race(args: argparse.Namespace) -> dict[str, Any]:
    from .lists_data import text_set

    data = text_set(args.rows, args.queries, args.source)
    procs = {}
    for name, root in (("before", str(Path(args.before).resolve())), ("after", str(HERE))):
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", root, "--url", args.url]  # this file, the other tree's simsql
        procs[name] = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=root,
                                       env={**os.environ, "PYTHONPATH": root})  # fmt: skip
        assert procs[name].stdout is not None and procs[name].stdout.readline().strip() == "ready"
    asked = [tuple(s.split("=")) for s in args.systems.split(",")]
    systems = [("keys-only scan", "after", "keys 0")]
    systems += [(f"{kind}={value} {name}", name, f"{kind} {value}") for kind, value in asked for name in ("before", "after")]
    times: dict[str, list[float]] = {label: [] for label, _, _ in systems}
    recalls: dict[str, list[float]] = {label: [] for label, _, _ in systems}
    load = [os.getloadavg()]
    order = random.Random(args.rows)
    for i in [i for i in range(min(args.queries, len(data.queries))) for _ in range(args.repeat)]:
        q = data.queries[i]
        turn = systems[:]
        order.shuffle(turn)
        for label, name, command in turn:
            proc = procs[name]
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(f"{command} {int(q)}\n")
            proc.stdin.flush()
            took, _, found = proc.stdout.readline().strip().partition(" ")
            times[label].append(float(took))
            within = sum(int(d) <= int(data.tenth[i]) for d in found.split(",") if d)
            recalls[label].append(min(10, within) / 10)  # recall@10 counted within the true 10th distance
    load.append(os.getloadavg())
    for proc in procs.values():
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    keys = statistics.median(times["keys-only scan"])
    report: dict[str, Any] = {"command": "python -m benchmarks.lists_query_ab " + " ".join(sys.argv[1:]), "rows": args.rows,
                              "queries": args.queries, "load_average": load}  # fmt: skip
    for label, seconds in times.items():
        p50 = statistics.median(seconds)
        report[label] = {"p25_ms": round(statistics.quantiles(seconds, n=4)[0], 2), "p50_ms": round(p50, 2),
                         "speed_up_vs_keys_scan": round(keys / p50, 2), "recall@10": round(statistics.mean(recalls[label]), 3)}  # fmt: skip
    for kind, value in asked:
        before, after = times[f"{kind}={value} before"], times[f"{kind}={value} after"]
        report[f"{kind}={value} after / before"] = {"paired_median_ratio": round(statistics.median(a / b for a, b in zip(after, before)), 3)}
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lists_query_ab", description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--source", default="heldout")
    parser.add_argument("--repeat", type=int, default=1, help="turns a query")
    parser.add_argument("--systems", default=",".join(f"{k}={v}" for k, v in SYSTEMS), help="e.g. recall=0.95,probes=32")
    parser.add_argument("--before", help="a checkout of the version to compare with")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.url)
        return 0
    report = race(args)
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
