"""What one batch write of a fit costs the server, and where (issue 41): ``EXPLAIN (ANALYZE,
BUFFERS, WAL)`` of the statement a fit sends for 2,000 rows, in a transaction rolled back, on
:mod:`benchmarks.lists_collateral`'s real-text table (PostgreSQL).

    python -m benchmarks.lists_write_batch --rows 200000 --repeats 5 \\
        --url postgresql+psycopg://postgres@127.0.0.1:5432/bench41_s

Ways, taking turns in a shuffled order per repeat, each on 2,000 consecutive rows from a random
start: ``as before`` (the statement without ``simsql.lists_write``: simsql's row trigger hashes
every row's text), ``as sent`` (with it, as a fit now sends it), ``unnest`` (the rows as three
arrays instead of one JSON value), ``trigger disabled`` and ``without the list index`` (what the
trigger and the list index cost; neither is something a fit may do under writers). Reported: p50
of the server's execution time, of the trigger's time within it, WAL bytes and full-page images.
The table must be loaded (``python -m benchmarks.lists_collateral --keep`` or
``benchmarks.lists_fit_phases``); rolled-back writes leave dead versions, so run it on a table kept
for it.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections.abc import Sequence
from typing import Any

from sqlalchemy import create_engine

from simsql.dialects.postgresql.ddl import LISTS_WRITE
from simsql.schema.names import Names

from .lists_models import TextDoc

WAYS = ("as before", "as sent", "unnest", "trigger disabled", "without the list index")


def _statement(way: str, rows: list[tuple[int, int]], names: Names) -> tuple[str, Any]:
    table, part, fp = TextDoc.__tablename__, names.part, names.fingerprint
    values = [(key, fingerprint, 90_000_000 + key % 500) for key, fingerprint in rows]
    if way == "unnest":
        sql = (f"UPDATE {table} AS t SET {part} = v.p FROM unnest(%s::bigint[], %s::bigint[], %s::int[]) AS v(k, f, p) "
               f"WHERE t.id = v.k AND t.{fp} = v.f")  # fmt: skip
        return sql, ([v[0] for v in values], [v[1] for v in values], [v[2] for v in values])
    sql = (f"UPDATE {table} AS t SET {part} = v.{part} FROM jsonb_populate_recordset(NULL::{table}, CAST(%s AS jsonb)) AS v "
           f"WHERE t.id = v.id AND t.{fp} = v.{fp}")  # fmt: skip
    return sql, (json.dumps([{"id": k, fp: f, part: p} for k, f, p in values]),)


def run(cursor: Any, way: str, start: int, names: Names) -> dict[str, float]:
    cursor.execute(f"SELECT id, {names.fingerprint} FROM {TextDoc.__tablename__} WHERE id >= %s ORDER BY id LIMIT 2000", (start,))
    rows = cursor.fetchall()
    if way != "as before":
        cursor.execute("SELECT set_config(%s, 'on', true)", (LISTS_WRITE,))
    if way == "trigger disabled":
        cursor.execute(f"ALTER TABLE {TextDoc.__tablename__} DISABLE TRIGGER {names.row_function}")
    if way == "without the list index":
        cursor.execute(f"DROP INDEX {names.part_index}")
    sql, params = _statement(way, rows, names)
    cursor.execute("EXPLAIN (ANALYZE, BUFFERS, WAL, FORMAT JSON) " + sql, params)
    plan = cursor.fetchone()[0][0]
    cursor.connection.rollback()
    top = plan["Plan"]
    return {"execution_ms": plan["Execution Time"], "trigger_ms": sum(t["Time"] for t in plan.get("Triggers", [])),
            "wal_bytes": top.get("WAL Bytes", 0), "wal_fpi": top.get("WAL FPI", 0)}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lists_write_batch", description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql+psycopg://postgres@127.0.0.1:5432/bench_parts")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=41)
    args = parser.parse_args(argv)
    names = Names(TextDoc.__tablename__)
    engine = create_engine(args.url)
    rng = random.Random(args.seed)
    found: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        for _ in range(args.repeats):
            for way in rng.sample(WAYS, len(WAYS)):
                found[way].append(run(cursor, way, rng.randrange(1, args.rows - 2000), names))
    finally:
        raw.close()
        engine.dispose()
    report: dict[str, Any] = {"command": "python -m benchmarks.lists_write_batch " + " ".join(sys.argv[1:]), "rows_a_batch": 2000}
    for way, runs in found.items():
        report[way] = {k: round(statistics.median(r[k] for r in runs), 1) for k in runs[0]}
    sent = report["as before"]["execution_ms"]
    for way in WAYS:
        report[way]["over_as_before"] = round(report[way]["execution_ms"] / sent, 3)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
