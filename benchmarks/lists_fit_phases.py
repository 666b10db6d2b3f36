"""Where a fit of partition lists spends its time (issue 41): one ``fit_lists`` (a refit when the
table has lists) on :mod:`benchmarks.lists`' real-text table, every statement it sends timed by
kind on the client, PostgreSQL or MySQL/MariaDB.

    python -m benchmarks.lists_fit_phases --rows 1000000 \\
        --url postgresql+psycopg://postgres@127.0.0.1:5432/bench41

The table is the one :mod:`benchmarks.lists_collateral` loads (loaded here when missing, kept).
Reported: the fit's own result, seconds by statement kind (the batches read, the batches
written, the vacuums between slices, the online rebuilds, the rest), the time outside
statements (sampling, fitting the centres, the recall curve, placing in Python), and the
seconds to the end of sampling, of the first pass and of the rebuilds from ``progress``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import create_engine, event

from simsql.lists import fit_lists

from . import lists_load as load
from .lists_data import text_set
from .lists_models import TextDoc, as_dict
from .scale import TEXT_SOURCES

KINDS = (("VACUUM", "vacuum"), ("REINDEX", "rebuild"), ("ALTER TABLE", "rebuild"), ("ANALYZE", "analyze"), ("UPDATE", "write batches"),
         ("SELECT", "read batches and catalog"))  # fmt: skip


def kind_of(statement: str) -> str:
    head = statement.lstrip().upper()
    return next((name for prefix, name in KINDS if head.startswith(prefix)), "other statements")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lists_fit_phases", description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql+psycopg://postgres@127.0.0.1:5432/bench_parts")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--lists", type=int, default=None)
    parser.add_argument("--source", choices=TEXT_SOURCES, default="manpages")
    args = parser.parse_args(argv)
    engine = create_engine(args.url)
    data = text_set(args.rows, 100, args.source)
    if not (load.loaded(engine, TextDoc.__tablename__, args.rows) and load.same_text(engine, TextDoc.__tablename__, data)):
        load.load_text(engine, TextDoc.__table__, data, args.rows)  # type: ignore[attr-defined]
    spent: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)

    @event.listens_for(engine, "before_cursor_execute")
    def before(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        conn.info["fit_phases_started"] = time.perf_counter()

    @event.listens_for(engine, "after_cursor_execute")
    def after(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        kind = kind_of(statement)
        spent[kind] += time.perf_counter() - conn.info.pop("fit_phases_started")
        counts[kind] += 1

    marks: dict[str, float] = {}
    started = time.perf_counter()

    def progress(phase: str, done: int, total: int) -> None:
        marks[phase] = time.perf_counter() - started

    load_before = os.getloadavg()
    result = fit_lists(engine, TextDoc.__tablename__, lists=args.lists, progress=progress)
    total = time.perf_counter() - started
    report = {
        "command": "python -m benchmarks.lists_fit_phases " + " ".join(sys.argv[1:]), "rows": args.rows,
        "load_average": [load_before, os.getloadavg()], "seconds": round(total, 1), "result": as_dict(result),
        "statements_seconds": {k: round(v, 1) for k, v in sorted(spent.items())}, "statements": dict(counts),
        "outside_statements_seconds": round(total - sum(spent.values()), 1),
        "last_progress_seconds": {k: round(v, 1) for k, v in marks.items()},
    }  # fmt: skip
    engine.dispose()
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
