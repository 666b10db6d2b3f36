"""Where a list row's time goes (issue 41), PostgreSQL: the server time (``EXPLAIN (ANALYZE,
TIMING OFF)``, planning + execution) of the statement ``most_similar(..., recall=0.95)`` sends,
against hand-written floors over the same lists and the keys-only scan, interleaved query by
query, on a table :mod:`benchmarks.lists_collateral` kept (``--keep``), lists fitted.

    python -m benchmarks.lists_row_cost --rows 300000 --queries 60 --source heldout \\
        --url postgresql+psycopg://postgres@127.0.0.1:5432/bench41_x

Floors: ``= ANY(<the lists>)`` with the top-10 sort, the distance alone (``max``), the rows
alone (``count(*)``). Also reported: the rows the probed lists hold, and the heap fetches and
buffers of the list index scans in one ``EXPLAIN (ANALYZE, BUFFERS)`` of the statement. With
``--before <checkout>`` (e.g. ``git archive <commit>``), the statement that version sends races
too, and the median over queries of after / before is reported. A statement sent with its lists
chosen by the client (bound ``simsql_lists_*``) is replayed with each query's own lists.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import psycopg
from sqlalchemy import create_engine, event, select

import simsql

from .lists_data import text_set
from .lists_models import TextDoc

DISTANCE = "bit_count(CAST((simhash # %(target)s::BIGINT) AS BIT(64)))"
PROBED = ("SELECT list_value FROM simsql_partition_centres WHERE table_name = 'parts_text' "
          "ORDER BY bit_count((centre # %(target)s::bigint)::bit(64)), list_value LIMIT %(probes)s")  # fmt: skip


def sent_statement(url: str, rows: int, source: str) -> tuple[str, dict[str, Any], str]:
    """The ranking statement simsql sends, its parameters, and the name of its target's."""
    engine = create_engine(url)
    data = text_set(rows, 100, source)
    seen: dict[str, Any] = {}

    @event.listens_for(engine, "before_cursor_execute")
    def keep(conn: Any, cursor: Any, sql: str, parameters: Any, context: Any, executemany: bool) -> None:
        if "simsql_ranked" in sql:
            seen["sql"], seen["parameters"] = sql, dict(parameters)

    first = int(data.queries[0])
    with engine.connect() as connection:
        connection.execute(simsql.most_similar(select(TextDoc), first, limit=10, recall=0.95)).all()
    engine.dispose()
    signed = first - (1 << 64) if first >= 1 << 63 else first
    name = next(k for k, v in seen["parameters"].items() if v == signed)
    return seen["sql"], seen["parameters"], name


def sent_by(root: str, url: str, rows: int, source: str) -> tuple[str, dict[str, Any], str]:
    """:func:`sent_statement` of the simsql in the checkout ``root`` (run there, in a process of its own)."""
    code = ("import importlib.util, json, sys; sys.path.insert(0, sys.argv[1]); import benchmarks, simsql; "
            "assert simsql.__file__.startswith(sys.argv[1]); "
            "spec = importlib.util.spec_from_file_location('benchmarks.lists_row_cost', sys.argv[2]); "
            "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module); "
            "print(json.dumps(module.sent_statement(sys.argv[3], int(sys.argv[4]), sys.argv[5])))")  # fmt: skip
    root = os.path.abspath(root)
    found = subprocess.run([sys.executable, "-c", code, root, os.path.abspath(__file__), url, str(rows), source], check=True,
                           capture_output=True, text=True, cwd=root, env={**os.environ, "PYTHONPATH": root})  # fmt: skip
    sql, parameters, target = json.loads(found.stdout.strip().splitlines()[-1])
    return sql, parameters, target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lists_row_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--source", default="heldout")
    parser.add_argument("--before", default=None, help="a checkout of the version whose statement races too")
    args = parser.parse_args(argv)
    sql, parameters, target = sent_statement(args.url, args.rows, args.source)
    before: tuple[str, dict[str, Any], str] | None = sent_by(args.before, args.url, args.rows, args.source) if args.before else None
    data = text_set(args.rows, 100, args.source)
    dsn = args.url.replace("postgresql+psycopg", "postgresql")
    parallel = psycopg.connect(dsn, autocommit=True)
    serial = psycopg.connect(dsn, autocommit=True)
    serial.execute("SET max_parallel_workers_per_gather = 0")
    probes = int(parallel.execute("SELECT (settings #>> '{recall,probes_at,95}')::int FROM simsql_partitions "
                                  "WHERE table_name = 'parts_text' AND state = 'current'").fetchone()[0])  # type: ignore[index]  # fmt: skip
    sent = re.sub(r"%\(" + target + r"\)s", "%(target)s", sql)
    ways = {
        "keys-only scan (parallel workers, as the benchmark)": (parallel, f"SELECT id, {DISTANCE} AS d FROM parts_text ORDER BY d LIMIT 10"),
        "keys-only scan, serial": (serial, f"SELECT id, {DISTANCE} AS d FROM parts_text ORDER BY d LIMIT 10"),
        "simsql's statement as sent": (parallel, sent),
        **({"the statement before": (parallel, re.sub(r"%\(" + before[2] + r"\)s", "%(target)s", before[0]))} if before else {}),
        "floor: = ANY(lists), top-10 by (distance, key)": (parallel, f"SELECT id, {DISTANCE} AS d FROM parts_text WHERE simhash_part = ANY(%(lists)s) ORDER BY d, id LIMIT 10"),
        "floor: max(distance) of the lists' rows": (parallel, f"SELECT max({DISTANCE}) FROM parts_text WHERE simhash_part = ANY(%(lists)s)"),
        "floor: count(*) of the lists' rows": (parallel, "SELECT count(*) FROM parts_text WHERE simhash_part = ANY(%(lists)s)"),
    }
    times: dict[str, list[float]] = {k: [] for k in ways}
    counts = []
    order = random.Random(args.rows)
    for q in data.queries[: args.queries]:
        signed = int(q) - (1 << 64) if int(q) >= 1 << 63 else int(q)
        values = {**(before[1] if before else {}), **parameters, "target": signed, "probes": probes}
        values["lists"] = [r[0] for r in parallel.execute(PROBED, values).fetchall()]
        chosen = sorted((k for k in values if k.startswith("simsql_lists_")), key=lambda k: int(k.rsplit("_", 1)[1]))
        assert not chosen or len(chosen) == len(values["lists"]), (len(chosen), len(values["lists"]))
        values.update(zip(chosen, values["lists"]))  # a statement sent with its lists chosen: this query's
        counts.append(parallel.execute("SELECT count(*) FROM parts_text WHERE simhash_part = ANY(%(lists)s)", values).fetchone()[0])  # type: ignore[index]
        turn = list(ways)
        order.shuffle(turn)
        for name in turn:
            connection, statement = ways[name]
            plan = "\n".join(r[0] for r in connection.execute("EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) " + statement, values).fetchall())
            times[name].append(sum(float(x) for x in re.findall(r"(?:Planning|Execution) Time: ([\d.]+)", plan)))
    read = statistics.median(counts)
    report: dict[str, Any] = {"command": "python -m benchmarks.lists_row_cost " + " ".join(sys.argv[1:]), "rows": args.rows,
                              "probes": probes, "rows_in_the_probed_lists_p50": read}  # fmt: skip
    for name, found in times.items():
        p50 = statistics.median(found)
        per_row = p50 * 1000 / (args.rows if "scan" in name else read)
        report[name] = {"server_p50_ms": round(p50, 2), "us_a_row_read": round(per_row, 3)}
    if before:
        ratios = [a / b for a, b in zip(times["simsql's statement as sent"], times["the statement before"])]
        report["median over queries of as sent / before"] = round(statistics.median(ratios), 3)
    explained = parallel.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + sent, {**parameters, "target": signed}).fetchall()
    report["list index scans in one EXPLAIN (ANALYZE, BUFFERS)"] = [r[0].strip() for r in explained if re.search(r"ix_parts_text_simhash_part|Heap Fetches|Index Cond: \(simhash_part = ANY", r[0])]
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
