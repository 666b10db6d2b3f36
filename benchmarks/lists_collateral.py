"""Partition lists without collateral (issue 41): one table, measured before and after a fit in
one run, the systems interleaved query by query.

    python -m benchmarks.lists_collateral --rows 100000 --queries 100 \\
        --url postgresql+psycopg://postgres@127.0.0.1:5432/bench_parts
    python -m benchmarks.lists_collateral --rows 100000 --queries 100 --url mysql+pymysql://root@127.0.0.1:3306/test

The table is :mod:`benchmarks.lists`' real-text one (articles of man-page paragraphs, text in the
row, :func:`benchmarks.lists_data.text_set`; ``--source heldout``: of Debian's manuals, a set
never tuned on), loaded and analysed, without lists. Before the
fit and after it, the same queries race (each system on its own connection, a shuffled order per
query): the keys-only scan (``select id ... order by bit_count(...) limit 10``), the same scan
joined to its 10 whole rows (the floor of any answer that returns the rows), simsql's exact
``most_similar``, ``find_original`` of each query article's text and ``similar_to`` within 3
bits (the queries a fit must not slow down); after the fit also ``probes=N`` and ``recall=r``
with their recall@10 against the exact top-10 (within the true 10th distance). Reported: each
index's bytes a row before and after, the fit's time and the indexes it rebuilt, the recall
curve it recorded, p50s and their ratios to the keys-only scan of the same phase.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

import simsql
from simsql.lists import drop_lists, fit_lists

from . import lists_load as load
from . import scale
from .lists import race, text_recalls, timing
from .lists_data import TOP, TextSet, text_set
from .lists_models import ListsBase, TextDoc, as_dict, lists_status
from .scale import TEXT_SOURCES

RESULTS = Path(__file__).resolve().parent / "results"
KEYS_SCAN = "plain scan (keys)"
EXACT = "simsql most_similar (exact)"
ROWS_SCAN = "plain scan, then the 10 rows by key"


def _systems(engine: Engine, data: TextSet, probes: Sequence[int], recalls: Sequence[float]) -> tuple[dict[str, Any], list[Session]]:
    distance = TextDoc.simhash.hamming_distance
    sessions: list[Session] = []

    def session() -> Session:
        sessions.append(Session(engine))
        return sessions[-1]

    def keys(s: Session) -> Any:
        return lambda q: [(r[0], r[1]) for r in s.execute(select(TextDoc.id, distance(q[0])).order_by(distance(q[0])).limit(TOP))]

    def rows_by_key(s: Session) -> Any:  # the floor of any answer with its rows: the scan, then 10 rows by key
        def run(q: Any) -> Any:
            top = select(TextDoc.id, distance(q[0]).label("d")).order_by(distance(q[0]), TextDoc.id).limit(TOP).subquery()
            found = s.execute(select(TextDoc, top.c.d).join(top, top.c.id == TextDoc.id).order_by(top.c.d, TextDoc.id))
            return [(r[0].id, r[1]) for r in found]

        return run

    def similar(s: Session, **options: Any) -> Any:
        return lambda q: [(r[0].id, r.distance) for r in s.execute(simsql.most_similar(select(TextDoc), q[0], limit=TOP, **options))]

    def original(s: Session) -> Any:
        return lambda q: simsql.find_original(s, TextDoc, q[1]) and None

    def within(s: Session) -> Any:
        return lambda q: s.execute(select(func.count()).select_from(TextDoc).where(simsql.similar_to(TextDoc, q[0], 3))).scalar() and None

    found = {KEYS_SCAN: keys(session()), ROWS_SCAN: rows_by_key(session()), EXACT: similar(session()), "find_original": original(session()), "similar_to (3 bits)": within(session())}
    for n in probes:
        found[f"probes={n}"] = similar(session(), probes=n)
    for r in recalls:
        found[f"recall={r}"] = similar(session(), recall=r)
    return found, sessions


def phase(engine: Engine, data: TextSet, probes: Sequence[int], recalls: Sequence[float], seed: int) -> dict[str, Any]:
    queries = [(int(q), scale.article_text(data.paragraphs, m)) for q, m in zip(data.queries, data.query_members)]
    systems, sessions = _systems(engine, data, probes, recalls)
    try:
        load_before = os.getloadavg()
        times, answers = race(systems, queries, seed)
    finally:
        for s in sessions:
            s.close()
    ranked = {k: v for k, v in answers.items() if k not in ("find_original", "similar_to (3 bits)")}
    recall = text_recalls(ranked, data)
    rows = {name: {**timing(seconds), **({"recall@10": round(recall[name], 4)} if name in recall else {})} for name, seconds in times.items()}
    for row in rows.values():
        row["p50_over_keys_scan"] = round(row["p50_ms"] / rows[KEYS_SCAN]["p50_ms"], 3)
    return {"load_average": [load_before, os.getloadavg()], "systems": rows}


def sizes(engine: Engine, rows: int) -> dict[str, Any]:
    load.analyze(engine, TextDoc.__tablename__)
    found = load.index_sizes(engine, TextDoc.__tablename__)
    heap = load.relation_bytes(engine, TextDoc.__tablename__)
    return {"index_bytes_per_row": {k: round(v / rows, 1) for k, v in sorted(found.items())},
            "all_indexes_bytes_per_row": round(sum(found.values()) / rows, 1), "heap_bytes_per_row": round(heap / rows, 1)}  # fmt: skip


def run(args: argparse.Namespace) -> dict[str, Any]:
    engine = create_engine(args.url, pool_size=20)
    data = text_set(args.rows, args.queries, args.source)
    report: dict[str, Any] = {"command": "python -m benchmarks.lists_collateral " + " ".join(sys.argv[1:]), "rows": args.rows,
                              "queries": args.queries, "source": args.source, "server": engine.dialect.name,
                              "load_average_start": os.getloadavg()}  # fmt: skip
    with engine.connect() as connection:
        report["server_version"] = connection.exec_driver_sql("SELECT version()").scalar()
    if not (args.reuse and load.loaded(engine, TextDoc.__tablename__, args.rows) and load.same_text(engine, TextDoc.__tablename__, data)):
        report["load_seconds"] = load.load_text(engine, TextDoc.__table__, data, args.rows)  # type: ignore[attr-defined]
    drop_lists(engine, TextDoc.__tablename__)
    report["before"] = {"sizes": sizes(engine, args.rows), **phase(engine, data, (), (), args.rows)}
    print(json.dumps(report["before"]), file=sys.stderr, flush=True)
    started = time.perf_counter()
    fitted = fit_lists(engine, TextDoc.__tablename__, lists=args.lists)
    report["fit"] = {"seconds": round(time.perf_counter() - started, 1), "result": as_dict(fitted), "status": lists_status(engine, TextDoc.__tablename__)}
    print(json.dumps(report["fit"]), file=sys.stderr, flush=True)
    report["after"] = {"sizes": sizes(engine, args.rows), **phase(engine, data, args.probes, args.recalls, args.rows + 1)}
    report["load_average_end"] = os.getloadavg()
    if not args.keep:
        ListsBase.metadata.drop_all(engine, tables=[TextDoc.__table__])  # type: ignore[attr-defined]
    engine.dispose()
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lists_collateral", description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql+psycopg://postgres@127.0.0.1:5432/bench_parts")
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--source", choices=TEXT_SOURCES, default="manpages",
                        help="where the articles' paragraphs come from: man pages, or Debian's manuals (heldout, never tuned on)")
    parser.add_argument("--lists", type=int, default=None)
    parser.add_argument("--probes", default="8,16,32,64")
    parser.add_argument("--recalls", default="0.9,0.95,0.99")
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    args.probes = [int(x) for x in args.probes.split(",") if x]
    args.recalls = [float(x) for x in args.recalls.split(",") if x]
    report = run(args)
    origin = "" if args.source == "manpages" else f"-{args.source}"
    out = args.out or RESULTS / f"lists-collateral-{report['server']}-{args.rows}{origin}.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
