"""Where exact ``most_similar``'s time goes against the keys-only scan (issue 41): the server's
planning and execution time of each statement, from ``EXPLAIN (ANALYZE, SUMMARY, TIMING OFF)``,
p50 over the same queries, PostgreSQL.

    python -m benchmarks.lists_plans --rows 100000 --queries 40 \\
        --url postgresql+psycopg://postgres@127.0.0.1:5432/bench_parts

Statements: the keys-only scan; ``most_similar`` as sent (below ``BANDS_FROM_ROWS`` estimated
rows: band 0 and the scan); the same with the bands forced (``BANDS_FROM_ROWS = 0``, the plan of
a large table); and ``probe_radius=0`` built directly. The table is :mod:`benchmarks.lists`' real
text (loaded when missing, kept).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sqlalchemy import create_engine, event, select
from sqlalchemy.engine import Engine

import simsql
from simsql.queries import plan_size

from . import lists_load as load
from .lists_data import TOP, text_set
from .lists_models import TextDoc
from .scale import TEXT_SOURCES

EXPLAIN = "EXPLAIN (ANALYZE, SUMMARY, TIMING OFF, COSTS OFF) "


def measure(engine: Engine, queries: Sequence[int], make: Callable[[int], Any]) -> dict[str, float]:
    planning, execution = [], []
    with engine.connect() as connection:
        connection.execute(make(queries[0])).cursor.fetchall()  # warm: the row estimate and the checks
        connection.info["simsql_explain"] = True
        try:
            for q in queries:
                out = "\n".join(r[0] for r in connection.execute(make(q)).cursor.fetchall())
                planning.append(float(re.search(r"Planning Time: ([\d.]+)", out).group(1)))  # type: ignore[union-attr]
                execution.append(float(re.search(r"Execution Time: ([\d.]+)", out).group(1)))  # type: ignore[union-attr]
        finally:
            connection.info.pop("simsql_explain", None)
    return {"planning_p50_ms": round(float(np.median(planning)), 3), "execution_p50_ms": round(float(np.median(execution)), 3)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lists_plans", description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql+psycopg://postgres@127.0.0.1:5432/bench_parts")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--source", choices=TEXT_SOURCES, default="manpages")
    args = parser.parse_args(argv)
    engine = create_engine(args.url)
    data = text_set(args.rows, 100, args.source)
    if not (load.loaded(engine, TextDoc.__tablename__, args.rows) and load.same_text(engine, TextDoc.__tablename__, data)):
        load.load_text(engine, TextDoc.__table__, data, args.rows)  # type: ignore[attr-defined]
    load.analyze(engine, TextDoc.__tablename__)

    @event.listens_for(engine, "before_cursor_execute", retval=True)
    def explain(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> Any:
        if conn.info.get("simsql_explain") and TextDoc.__tablename__ in statement and "simsql_registry" not in statement:
            statement = EXPLAIN + statement
        return statement, parameters

    queries = [int(q) for q in data.queries[: args.queries]]
    distance = TextDoc.simhash.hamming_distance
    report: dict[str, Any] = {"command": "python -m benchmarks.lists_plans " + " ".join(sys.argv[1:]), "rows": args.rows}
    report["keys-only scan"] = measure(engine, queries, lambda q: select(TextDoc.id, distance(q)).order_by(distance(q)).limit(TOP))
    report["most_similar (as sent)"] = measure(engine, queries, lambda q: simsql.most_similar(select(TextDoc), q, limit=TOP))
    report["most_similar probe_radius=0"] = measure(engine, queries, lambda q: simsql.most_similar(select(TextDoc), q, limit=TOP, probe_radius=0))
    plan_size.BANDS_FROM_ROWS = 0
    report["most_similar with bands (a large table's plan)"] = measure(engine, queries, lambda q: simsql.most_similar(select(TextDoc), q, limit=TOP))
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
