"""The originality check on tables of different sizes and bit balance, side by side in one run.

    python -m benchmarks.originality_scale \\
        --table bench_originality_1m_plain --table bench_originality_1m_bg:/work/logs/bg-manpages-22.json \\
        --table bench_originality_10m:/work/logs/bg-manpages-22.json \\
        --url postgresql+psycopg://postgres@127.0.0.1:5432/h_scale --texts 100
    python -m benchmarks.originality_scale --table ... --dedupe 1     # whole-table dedupe of each, radius 1

Each ``--table SCHEMA[:BACKGROUND]`` names a table ``benchmarks.scale10m`` (or
``benchmarks.originality``) built in that schema, with the wide background file it was built with
(``--background``), if any. Every table is checked through ``simsql.find_original`` with its
defaults, on the same texts, taking turns text by text (the first table of each turn rotates, so
none pays alone for the pages the others leave in memory or push out):

* **copies**: disguised copies of the originals (ids 1..200 of every table; every light
  evasion, 5% substitutions and the 60% excerpt of ``benchmarks.originality``), the answer
  checked (found, or another row or none);
* **fresh (pool)**: articles assembled from the paragraphs the table's filler is drawn from (the
  hard case: at 10M rows each paragraph is stored about 2,100 times);
* **fresh (unseen)**: articles of paragraphs no table holds (any alarm is false).

Reported per table and population: p50, p99, mean and checks per second one after another (the
submission pipeline's rate, one connection), answers, plus ``similar_to`` (the 64-bit path, 3
bits, given the copies' fingerprints: the server's part, the text's fingerprint is the client's)
and the index stage's rows read for fresh texts (EXPLAIN ANALYZE's
rows out of the block indexes, on ``--explain`` texts). The machine's load is recorded: compare
ratios within a run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.orm import Session

import simsql
import simsql.fingerprint
import simsql.store

from .manpages import CorpusUnavailable
from .originality import CORPUS_UNAVAILABLE, corpus, disguised, doc_model, engine_for, recorded_blocks
from .timing import summary


def rows_read(session: Session, model: type, body: str) -> int:
    """Rows the whole budget's index stage reads for ``body`` (EXPLAIN ANALYZE: rows out of the
    block index scans, before the distance filter): what a fresh text costs the server."""
    return explained(session, model, body)[0]


def explained(session: Session, model: type, body: str) -> tuple[int, float]:
    """:func:`rows_read`, and the server's execution time of that statement (ms, EXPLAIN
    ANALYZE's: the probes' index descents and the rows they read, no client work)."""
    from simsql.queries.wide import probe_groups, table_budget, wide_keys_statement, wide_parameters

    binding = simsql.store.binding_for(model)
    layout = binding.names.layout
    signature = binding.fingerprinter.signature(body)  # type: ignore[union-attr]
    groups = probe_groups(signature, table_budget(binding, signature), 0, layout)
    compiled = wide_keys_statement(model, 16).params(wide_parameters(signature, 96, groups, layout)).compile(
        dialect=session.get_bind().dialect, compile_kwargs={"literal_binds": True}
    )
    plan = session.execute(text(f"EXPLAIN (ANALYZE, FORMAT JSON) {compiled}")).scalar_one()
    total = 0

    def walk(node: dict[str, Any]) -> None:
        nonlocal total
        if node.get("Node Type") in ("Index Only Scan", "Index Scan"):
            total += int(node.get("Actual Rows", 0)) + int(node.get("Rows Removed by Filter", 0))
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    return total, float(plan[0]["Execution Time"])


def run(url: str, tables: Sequence[tuple[str, Path | None]], texts: int, explain: int, seed: int) -> dict[str, Any]:
    data = corpus(1_000_000, 200, 1000, 22)
    rng = random.Random(seed)
    copies = rng.sample(disguised(data, 22), texts)
    populations = {
        "copies": [body for _, _, body in copies],
        "fresh_pool": rng.sample(data["fresh_shared"], texts),
        "fresh_unseen": rng.sample(data["fresh_disjoint"], texts),
    }
    checked = []
    for schema, background_file in tables:
        background = simsql.fingerprint.Background.load(background_file) if background_file else None
        engine = engine_for(url, schema=schema)
        model = doc_model(background, wide_blocks=recorded_blocks(engine))
        session = Session(engine)
        rows = session.execute(text("SELECT reltuples::bigint FROM pg_class WHERE oid = 'bench_wide_docs'::regclass")).scalar_one()
        checked.append({"schema": schema, "background": str(background_file) if background_file else None, "rows": rows,
                        "model": model, "session": session, "engine": engine})  # fmt: skip
    result: dict[str, Any] = {"load_before": list(os.getloadavg()), "texts": texts, "tables": {}}
    times: dict[str, dict[str, list[float]]] = {t["schema"]: {p: [] for p in populations} for t in checked}
    answers: dict[str, dict[str, dict[str, int]]] = {t["schema"]: {p: {} for p in populations} for t in checked}
    similar: dict[str, list[float]] = {t["schema"]: [] for t in checked}
    for warm in checked:  # compile and prepare each table's statements once before timing
        simsql.find_original(warm["session"], warm["model"], populations["fresh_pool"][0])
    for turn in range(texts):
        for population, bodies in populations.items():
            order = checked[turn % len(checked) :] + checked[: turn % len(checked)]
            for table in order:
                started = time.perf_counter()
                match = simsql.find_original(table["session"], table["model"], bodies[turn])
                times[table["schema"]][population].append(time.perf_counter() - started)
                if population == "copies":
                    outcome = "none" if match is None else ("found" if match.row.id == copies[turn][0] else "other")
                else:
                    outcome = "none" if match is None else "alarm"
                tally = answers[table["schema"]][population]
                tally[outcome] = tally.get(outcome, 0) + 1
        for table in checked:
            model = table["model"]
            fingerprint = simsql.store.binding_for(model).fingerprinter.fingerprint(populations["copies"][turn])  # type: ignore[union-attr]
            started = time.perf_counter()
            table["session"].execute(select(model.id).where(simsql.similar_to(model, fingerprint, max_distance=3))).all()
            similar[table["schema"]].append(time.perf_counter() - started)
    for table in checked:
        schema = table["schema"]
        plans = [explained(table["session"], table["model"], body) for body in populations["fresh_pool"][:explain]]
        read = sorted(rows for rows, _ in plans)
        executed = sorted(ms for _, ms in plans)
        result["tables"][schema] = {
            "rows": table["rows"], "background": table["background"],
            "find_original": {population: summary(values) for population, values in times[schema].items()},
            "answers": answers[schema],
            "similar_to_3_bits": summary(similar[schema]),
            "fresh_pool_rows_read_p50": read[len(read) // 2] if read else None,
            "fresh_pool_index_stage_ms_p50": round(executed[len(executed) // 2], 2) if executed else None,
        }  # fmt: skip
        table["session"].close()
        table["engine"].dispose()
    result["load_after"] = list(os.getloadavg())
    return result


def dedupe(url: str, tables: Sequence[tuple[str, Path | None]], radius: int) -> dict[str, Any]:
    """``--dedupe R``: ``simsql.near_duplicates`` by text at ``probe_radius=R`` over each whole
    table, one after another: seconds and pairs (what a wide background costs the dedupe job)."""
    result: dict[str, Any] = {"load_before": list(os.getloadavg()), "probe_radius": radius, "tables": {}}
    for schema, background_file in tables:
        background = simsql.fingerprint.Background.load(background_file) if background_file else None
        engine = engine_for(url, schema=schema)
        with Session(engine) as session:
            started = time.perf_counter()
            model = doc_model(background, wide_blocks=recorded_blocks(engine))
            pairs = simsql.near_duplicates(session, model, by_text=True, probe_radius=radius)
            result["tables"][schema] = {"seconds": round(time.perf_counter() - started, 1), "pairs": len(pairs),
                                        "background": str(background_file) if background_file else None}  # fmt: skip
        engine.dispose()
    result["load_after"] = list(os.getloadavg())
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--table", action="append", required=True, help="SCHEMA[:BACKGROUND_FILE], repeated")
    parser.add_argument("--url", default="postgresql+psycopg://postgres@127.0.0.1:5432/h_scale")
    parser.add_argument("--texts", type=int, default=100, help="texts per population")
    parser.add_argument("--explain", type=int, default=20, help="fresh texts whose index-stage rows are counted")
    parser.add_argument("--seed", type=int, default=43)
    parser.add_argument("--results", type=Path, help="also write the report (JSON) here")
    parser.add_argument("--dedupe", type=int, metavar="RADIUS", help="instead: deduplicate each whole table by text at this probe_radius")
    parser.add_argument("--centred-scale", type=int, help="probes of a centred table, in budgets (default: simsql.queries.wide.CENTRED_BUDGET_SCALE)")
    parser.add_argument("--wider-scale", type=int, help="probes of a table of blocks wider than 20 bits, in budgets (default: simsql.queries.wide.WIDER_BUDGET_SCALE)")
    args = parser.parse_args(argv)
    if args.wider_scale is not None:  # a what-if, as --centred-scale
        import simsql.queries.wide

        simsql.queries.wide.WIDER_BUDGET_SCALE = args.wider_scale
    if args.centred_scale is not None:  # a what-if: the library's own constant, set for this run
        import simsql.queries.wide

        simsql.queries.wide.CENTRED_BUDGET_SCALE = args.centred_scale
    tables = [(spec.split(":", 1)[0], Path(spec.split(":", 1)[1]) if ":" in spec else None) for spec in args.table]
    try:
        result = dedupe(args.url, tables, args.dedupe) if args.dedupe is not None else run(args.url, tables, args.texts, args.explain, args.seed)
    except CorpusUnavailable as error:
        print(f"corpus unavailable: {error}", file=sys.stderr)
        return CORPUS_UNAVAILABLE
    if args.results:
        args.results.write_text(json.dumps(result, indent=2) + "\n")
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
