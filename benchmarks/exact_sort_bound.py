"""Exact ``most_similar`` with its scan bounded before the sort, against the same statement
unbounded and the keys-only scan, interleaved in one run (issue 41, item 3).

    python -m benchmarks.exact_sort_bound --rows 300000 --queries 60 --rounds 2 --url mysql+pymysql://root@127.0.0.1:3308/bench

The table is :mod:`benchmarks.lists_collateral`'s (real-text articles, text in the row, no
lists), loaded unless it already holds the same rows. Systems, each on its own session, in a
shuffled order per query:

* ``plain scan (keys)``: ``select(id, distance).order_by(distance).limit(10)``, the baseline;
* ``plain scan, then the 10 rows by key``: the scan ordered by (distance, id) joined to its rows;
* ``simsql most_similar (exact)``: this code (MySQL and MariaDB: the scan keeps the rows within
  the bound of :func:`simsql.queries.planner._answer_bound` before sorting);
* ``simsql most_similar (exact, scan unbounded)``: the same statement with
  :class:`simsql.dialects.SortBound` compiled as its ``rows`` (the statement before the bound),
  compiled once on an engine of its own (SQLAlchemy caches a compiled statement per engine;
  every statement that engine sends is checked to hold no bound).

Every exact answer is checked against the brute-force top 10 (ties by key), computed here. Reported: p50 and
p25/p99 (ms), each p50's ratio to the keys-only scan's, and the median of the per-query ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, select
from sqlalchemy.orm import Session

import simsql
from simsql.dialects import SortBound

from . import lists_load as load
from .lists_data import TOP, hamming_truth, text_set
from .lists_models import TextDoc

RESULTS = Path(__file__).resolve().parent / "results"
KEYS = "plain scan (keys)"
ROWS = "plain scan, then the 10 rows by key"
EXACT = "simsql most_similar (exact)"
UNBOUNDED = "simsql most_similar (exact, scan unbounded)"
BOUND_MARK = "count(*) >="  # the bound's CASE WHEN (count(*) >= limit)


def _unbounded_engine(url: str, warm: Callable[[Session], Any]) -> Any:
    """An engine whose compiled cache holds the statement with :class:`SortBound` as its ``rows``:
    the rule swapped while ``warm`` compiles it, then put back."""
    engine = create_engine(url)
    specs = SortBound._compiler_dispatcher.specs  # type: ignore[attr-defined]
    family = engine.dialect.name
    original = specs[family]

    def as_rows(element: SortBound, compiler: Any, **kw: Any) -> str:
        return str(compiler.process(element.rows, **kw))

    specs[family] = as_rows
    try:
        with Session(engine) as session:
            warm(session)
    finally:
        specs[family] = original
    return engine


def run(args: argparse.Namespace) -> dict[str, Any]:
    data = text_set(args.rows, max(args.queries, 100), args.source)
    engine = create_engine(args.url)
    if not (load.loaded(engine, TextDoc.__tablename__, args.rows) and load.same_text(engine, TextDoc.__tablename__, data)):
        load.load_text(engine, TextDoc.__table__, data, args.rows)  # type: ignore[attr-defined]
    load.analyze(engine, TextDoc.__tablename__)
    queries = [int(q) for q in data.queries[: args.queries]]
    # computed here, not read from text_set's cache: that cache is named by rows and queries, not
    # by the corpus, and a corpus rendered again (man pages installed meanwhile) leaves it stale
    truth = {q: [int(k) for k in keys] for q, keys in zip(queries, hamming_truth(data.fingerprints, data.queries[: args.queries])[0])}
    distance = TextDoc.simhash.hamming_distance

    def exact(s: Session, q: int) -> list[int]:
        return [r[0].id for r in s.execute(simsql.most_similar(select(TextDoc), q, limit=TOP))]

    old = _unbounded_engine(args.url, lambda s: exact(s, queries[0]))
    sent: list[str] = []
    event.listen(old, "before_cursor_execute", lambda *a: sent.append(a[2]))
    s_keys, s_rows, s_exact, s_old = Session(engine), Session(engine), Session(engine), Session(old)

    def rows_by_key(q: int) -> list[int]:
        top = select(TextDoc.id, distance(q).label("d")).order_by(distance(q), TextDoc.id).limit(TOP).subquery()
        return [r[0].id for r in s_rows.execute(select(TextDoc, top.c.d).join(top, top.c.id == TextDoc.id).order_by(top.c.d, TextDoc.id))]

    systems: dict[str, Callable[[int], list[int]]] = {
        KEYS: lambda q: [r[0] for r in s_keys.execute(select(TextDoc.id, distance(q)).order_by(distance(q)).limit(TOP))],
        ROWS: rows_by_key,
        EXACT: lambda q: exact(s_exact, q),
        UNBOUNDED: lambda q: exact(s_old, q),
    }
    report: dict[str, Any] = {"command": "python -m benchmarks.exact_sort_bound " + " ".join(sys.argv[1:]), "rows": args.rows,
                              "queries": args.queries, "rounds": args.rounds, "source": args.source, "load_average_start": os.getloadavg()}  # fmt: skip
    with engine.connect() as connection:
        report["server_version"] = connection.exec_driver_sql("SELECT version()").scalar()
    for run_ in systems.values():
        run_(queries[0])
    times: dict[str, list[float]] = {name: [] for name in systems}
    wrong = {EXACT: 0, UNBOUNDED: 0}
    order = random.Random(args.rows)
    for _ in range(args.rounds):
        for q in queries:
            for name in order.sample(list(systems), len(systems)):
                started = time.perf_counter()
                got = systems[name](q)
                times[name].append(time.perf_counter() - started)
                if name in wrong and got != truth[q]:
                    wrong[name] += 1
    for s in (s_keys, s_rows, s_exact, s_old):
        s.close()
    assert not any(BOUND_MARK in sql for sql in sent), "the unbounded engine sent a bounded statement"
    base = statistics.median(times[KEYS])
    report["systems"] = {
        name: {
            "p25_ms": round(1000 * statistics.quantiles(ts, n=4)[0], 2),
            "p50_ms": round(1000 * statistics.median(ts), 2),
            "p99_ms": round(1000 * sorted(ts)[int(0.99 * (len(ts) - 1))], 2),
            "p50_over_keys_scan": round(statistics.median(ts) / base, 3),
            "per_query_ratio_p50": round(statistics.median(t / k for t, k in zip(ts, times[KEYS])), 3),
            **({"answers_not_exact": wrong[name]} if name in wrong else {}),
        }
        for name, ts in times.items()
    }
    report["load_average_end"] = os.getloadavg()
    engine.dispose()
    old.dispose()
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.exact_sort_bound", description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--source", default="manpages")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    report = run(args)
    out = args.out or RESULTS / f"exact-sort-bound-{create_engine(args.url).dialect.name}-{args.rows}.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
