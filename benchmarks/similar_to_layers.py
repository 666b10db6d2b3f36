"""Where a ``similar_to`` query's time goes: the server and driver, SQLAlchemy Core, the ORM session (issue 43).

    python -m benchmarks.similar_to_layers --schema bench_1m --url postgresql+psycopg://postgres@127.0.0.1:5432/h_scale

Issue 43 asks ``similar_to`` (3 bits) for p50 <= 0.5 ms at ten million rows. The statement
:func:`simsql.similar_to` builds is one index-only scan per 16-bit block, distance filtered inside
it, so the server's part hardly grows with the table; what a caller waits for is that plus the
layers the call goes through. Each of the table's own fingerprints (one in ``--step`` rows, the
first ``--queries`` of them) is asked for four ways, taking turns query by query:

* ``driver``: the statement SQLAlchemy compiled for the first query, its parameters filled in by
  hand, executed by psycopg as a prepared statement (``prepare=True``): the floor of any caller
  that goes through a driver;
* ``core``: ``connection.execute(select(Model.id).where(similar_to(...)))``;
* ``orm``: ``session.execute(...)`` of the same, as the README shows it;
* ``construct``: building the ``select(...).where(similar_to(...))`` alone, no execution.

The table (``benchmarks.scale10m``'s) is read, never written.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.orm import Session

import simsql
from simsql.text.bits import blocks, to_signed, to_unsigned

from .originality import doc_model, engine_for, recorded_blocks
from .timing import emit, summary


def run(url: str, schema: str, queries: int, step: int, rounds: int) -> dict[str, Any]:
    engine = engine_for(url, schema=schema)
    model = doc_model(None, wide_blocks=recorded_blocks(engine))
    session = Session(engine)
    rows = session.execute(text("SELECT count(*) FROM bench_wide_docs")).scalar_one()
    fingerprints = [
        to_unsigned(value)
        for (value,) in session.execute(text("SELECT simhash FROM bench_wide_docs WHERE id % :step = 0 ORDER BY id LIMIT :n"), {"step": step, "n": queries})
    ]  # fmt: skip
    statement = select(model.id).where(simsql.similar_to(model, fingerprints[0], max_distance=3))
    compiled = statement.compile(engine)
    rendered = str(compiled)
    # each block's parameter follows its column, the fingerprint's follows the XOR, wherever SQLAlchemy numbered them
    block_names = [re.search(rf"simhash_b{block} = %\((\w+)\)s", rendered).group(1) for block in range(4)]  # type: ignore[union-attr]
    fingerprint_name = re.search(r"simhash # %\((\w+)\)s", rendered).group(1)  # type: ignore[union-attr]
    sql = re.sub(r"\bbench_wide_docs\b", f"{schema}.bench_wide_docs", rendered)
    driver_connection = session.connection().connection.dbapi_connection
    assert driver_connection is not None

    def driver(fingerprint: int) -> list[Any]:
        parameters = dict(compiled.params)
        for name, value in zip(block_names, blocks(fingerprint)):
            parameters[name] = value
        parameters[fingerprint_name] = to_signed(fingerprint)
        cursor = driver_connection.cursor()
        cursor.execute(sql, parameters, prepare=True)
        return cursor.fetchall()

    connection = session.connection()
    ways: dict[str, Callable[[int], Any]] = {
        "driver": driver,
        "core": lambda fp: connection.execute(select(model.id).where(simsql.similar_to(model, fp, max_distance=3))).all(),
        "orm": lambda fp: session.execute(select(model.id).where(simsql.similar_to(model, fp, max_distance=3))).all(),
        "construct": lambda fp: select(model.id).where(simsql.similar_to(model, fp, max_distance=3)),
    }
    for fingerprint in fingerprints[:20]:  # compile, prepare, warm
        answers = {name: way(fingerprint) for name, way in ways.items() if name != "construct"}
        assert sorted(answers["driver"]) == sorted(answers["core"]) == sorted(answers["orm"]), "the ways must agree"
    times: dict[str, list[float]] = {name: [] for name in ways}
    order = list(ways)
    for _ in range(rounds):
        for turn, fingerprint in enumerate(fingerprints):
            for name in order[turn % len(order) :] + order[: turn % len(order)]:
                started = time.perf_counter()
                ways[name](fingerprint)
                times[name].append(time.perf_counter() - started)
    explained = [
        session.execute(text(f"EXPLAIN (ANALYZE, FORMAT JSON) {_literal(sql, compiled.params, block_names, fingerprint_name, fp)}")).scalar_one()[0]
        for fp in fingerprints[:100]
    ]  # fmt: skip
    server = sorted(plan["Execution Time"] for plan in explained)
    result = {name: summary(values) for name, values in times.items()}
    return {
        "schema": schema, "rows": rows, "queries": len(fingerprints), "rounds": rounds, "load": list(os.getloadavg()),
        "server_execution_p50_ms": server[len(server) // 2], "ways": result,
        "ratios_to_driver_p50": {name: result[name]["p50_ms"] / result["driver"]["p50_ms"] for name in result},
    }  # fmt: skip


def _literal(sql: str, params: dict[str, Any], block_names: list[str], fingerprint_name: str, fingerprint: int) -> str:
    values = dict(params)
    values.update(zip(block_names, blocks(fingerprint)))
    values[fingerprint_name] = to_signed(fingerprint)
    return re.sub(r"%\((\w+)\)s", lambda found: str(int(values[found.group(1)])), sql)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="PostgreSQL")
    parser.add_argument("--schema", required=True, help="a table built by benchmarks.scale10m (read only)")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--step", type=int, default=997, help="one fingerprint of the table in this many rows")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--results", type=Path)
    args = parser.parse_args(argv)
    report = {"argv": sys.argv[1:], **run(args.url, args.schema, args.queries, args.step, args.rounds)}
    emit(report, args.results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
