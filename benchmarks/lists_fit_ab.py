"""A fit of partition lists before and after a change, in one run (issue 41): refits of one
table, the two versions taking turns, each run by :mod:`benchmarks.lists_fit_phases` from its own
source tree.

    git archive <commit> | tar -x -C /tmp/simsql-before
    python -m benchmarks.lists_fit_ab --rows 1000000 --before /tmp/simsql-before --rounds 2 \\
        --url postgresql+psycopg://postgres@127.0.0.1:5432/bench41

The table is the one :mod:`benchmarks.lists_collateral` loads (loaded by the first run when
missing). Before each fit the table's row trigger function is made the one its version writes, so
each version runs as on a table it created. ``--trigger-only`` runs this tree's fit both times with
the trigger of each version (what the trigger's part alone is worth). Reported per fit: seconds, seconds by statement kind,
and every index's and the heap's bytes a row after it (PostgreSQL).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine

from . import lists_load as load
from .lists_models import TextDoc

HERE = Path(__file__).resolve().parent.parent


FUNCTION_OF = (
    "from simsql.dialects.postgresql.ddl import create_trigger_sql; from simsql.schema.names import Names; "
    "print(create_trigger_sql({schema!r}, Names({table!r}), {source!r}, ('id',))[0])"
)


def _trigger(url: str, tree: Path) -> None:
    """The table's row trigger function made the one ``tree``'s simsql writes."""
    code = FUNCTION_OF.format(schema="public", table=TextDoc.__tablename__, source=tuple(TextDoc.__simhash_source__))
    env = {**os.environ, "PYTHONPATH": str(tree)}
    made = subprocess.run([sys.executable, "-c", code], cwd=tree, env=env, check=True, capture_output=True, text=True).stdout
    with create_engine(url).begin() as connection:
        connection.exec_driver_sql(made.strip().replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))


def _sizes(url: str, rows: int) -> dict[str, Any]:
    engine = create_engine(url)
    found = load.index_sizes(engine, TextDoc.__tablename__)
    heap = load.relation_bytes(engine, TextDoc.__tablename__)
    engine.dispose()
    return {"all_indexes_bytes_per_row": round(sum(found.values()) / rows, 1), "heap_bytes_per_row": round(heap / rows, 1),
            "index_bytes_per_row": {k: round(v / rows, 1) for k, v in sorted(found.items())}}  # fmt: skip


def fit(tree: Path, url: str, rows: int, lists: int | None) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.lists_fit_phases", "--rows", str(rows), "--url", url]
    if lists:
        command += ["--lists", str(lists)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(command, cwd=tree, env=env, check=True, capture_output=True, text=True)
    report = json.loads(done.stdout)
    result = report["result"]
    return {"seconds": report["seconds"], "statements_seconds": report["statements_seconds"],
            "outside_statements_seconds": report["outside_statements_seconds"], "load_average": report["load_average"],
            "rows_placed": result["rows_placed"], "left_behind": result["left_behind"], "rebuilt": result["rebuilt"]}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lists_fit_ab", description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql+psycopg://postgres@127.0.0.1:5432/bench_parts")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--lists", type=int, default=None)
    parser.add_argument("--before", type=Path, required=True, help="a source tree of the version before (git archive)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--trigger-only", action="store_true", help="this tree's fit both times; only the trigger differs")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for round_ in range(args.rounds):
        for version in ("before", "after") if round_ % 2 == 0 else ("after", "before"):
            tree = HERE if (version == "after" or args.trigger_only) else args.before.resolve()  # the fit's code
            if load.loaded(create_engine(args.url), TextDoc.__tablename__, args.rows):
                _trigger(args.url, HERE if version == "after" else args.before.resolve())
            run = fit(tree, args.url, args.rows, args.lists)
            run["sizes"] = _sizes(args.url, args.rows)
            runs[version].append(run)
            print(version, json.dumps(run), file=sys.stderr, flush=True)
    mean = {v: sum(r["seconds"] for r in rs) / len(rs) for v, rs in runs.items()}
    report = {"command": "python -m benchmarks.lists_fit_ab " + " ".join(sys.argv[1:]), "rows": args.rows, "runs": runs,
              "mean_seconds": {k: round(v, 1) for k, v in mean.items()}, "after_over_before": round(mean["after"] / mean["before"], 3)}  # fmt: skip
    text_out = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text_out + "\n")
    print(text_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
