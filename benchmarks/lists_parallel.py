"""Whether reading the probed lists in parallel would pay (issue 41; a what-if, nothing changed).

    python -m benchmarks.lists_parallel --rows 300000 --source heldout --probes 64 \\
        --url postgresql+psycopg://postgres@127.0.0.1:5432/lead_par

The keys-only scan simsql's lists are compared with runs with PostgreSQL's two parallel workers;
the lists' statement reads its probed lists serially (the planner's choice at default costs). On
a table ``benchmarks.lists_collateral --keep`` left fitted, this takes the statement
``most_similar(..., probes=N)`` sends for each query and runs it as sent, once at the session's
default costs and once with parallel plans made free (``parallel_setup_cost``,
``parallel_tuple_cost`` and ``min_parallel_index_scan_size`` at 0, set for the session only),
taking turns query by query, beside the keys-only scan; the first query's two plans are printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, create_engine, event, select
from sqlalchemy.orm import Session

import simsql

from .lists_data import text_set
from .lists_models import TextDoc

FREE_PARALLEL = {"parallel_setup_cost": "0", "parallel_tuple_cost": "0", "min_parallel_index_scan_size": "0"}


def costs(connection: Connection, parallel: bool) -> None:
    for name, value in FREE_PARALLEL.items():
        connection.exec_driver_sql(f"SET {name} = {value}" if parallel else f"RESET {name}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--rows", type=int, required=True, help="rows of the kept table (for its queries)")
    parser.add_argument("--queries", type=int, default=50, help="as the table was loaded with")
    parser.add_argument("--source", choices=("manpages", "heldout"), default="manpages")
    parser.add_argument("--probes", type=int, default=64)
    parser.add_argument("--timed", type=int, default=30, help="queries timed")
    parser.add_argument("--out", help="also write the report here (JSON)")
    args = parser.parse_args(argv)
    engine = create_engine(args.url)
    queries = [int(q) for q in text_set(args.rows, args.queries, source=args.source).queries[: args.timed]]
    sent: list[tuple[str, Any]] = []
    event.listen(engine, "before_cursor_execute", lambda conn, cursor, statement, params, context, many: sent.append((statement, params)))
    times: dict[str, list[float]] = {"serial (default costs)": [], "parallel made free": [], "keys-only scan": []}
    report: dict[str, Any] = {"rows": args.rows, "probes": args.probes, "source": args.source}
    with engine.connect() as connection:
        for number, query in enumerate(queries):
            sent.clear()
            with Session(bind=connection) as session:
                session.execute(simsql.most_similar(select(TextDoc), query, limit=10, probes=args.probes)).all()
            statement, params = max(sent, key=lambda item: len(item[0]))
            if number == 0:
                for parallel in (False, True):
                    costs(connection, parallel)
                    plan = connection.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS) " + statement, params).scalars().all()
                    report[f"first_plan_{'parallel' if parallel else 'serial'}"] = plan
            for parallel in (False, True) if number % 2 else (True, False):
                costs(connection, parallel)
                started = time.perf_counter()
                connection.exec_driver_sql(statement, params).all()
                times["parallel made free" if parallel else "serial (default costs)"].append(time.perf_counter() - started)
            costs(connection, False)
            signed = query - (1 << 64) if query >= 1 << 63 else query
            started = time.perf_counter()
            connection.exec_driver_sql(
                f"SELECT id FROM {TextDoc.__tablename__} WHERE simhash IS NOT NULL "  # type: ignore[attr-defined]
                "ORDER BY bit_count(CAST((simhash # %(q)s::BIGINT) AS BIT(64))) LIMIT 10",
                {"q": signed},
            ).all()
            times["keys-only scan"].append(time.perf_counter() - started)
    report["p50_ms"] = {name: round(1000 * statistics.median(values), 2) for name, values in times.items()}
    print(json.dumps(report, indent=1))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
