"""The copy check's round trips and statement length (issue 43): ``find_original`` before and after.

    python -m benchmarks.check_round_trips --baseline /tmp/simsql-before \\
        --url postgresql+psycopg://postgres@127.0.0.1:5432/h_scale --schema bench_200k \\
        --out benchmarks/results/check-round-trips-postgresql-200k-10x24.json

Reads (never writes) a wide table ``benchmarks.scale10m`` built (``bench_wide_docs`` in
``--schema``, its layout as the registry records it), as ``benchmarks.originality``'s corpus for
``--rows`` fills it (the originals are ids 1..200). Checks 150 disguised copies of originals
(``disguised(data, 22)``) and 150 fresh texts (``data["fresh_disjoint"]``), sampled as the lead's
measurements were (``random.Random(5)``). Two trees take turns, each in a process of its own, in
the order A B B A (``--cycles`` times): A is ``--baseline``, a directory holding the code before
(``git archive <commit> simsql | tar -x -C DIR``), put first on ``sys.path``; B is this tree.
Each process warms up on 10 checks, then times every check (copies, then fresh texts), counts the
statements each issues (``before_cursor_execute``) and their lengths, and records what it answered
(the row's id and distance, or None); the report compares the answers of A and B. The engine
qualifies names by ``schema_translate_map`` (the table's schema written in every statement, as an
application using it sends them) and sets ``search_path`` to the schema (simsql's registry).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
CHECKS = 150
WARM_UP = 10


def texts(rows: int) -> dict[str, list[str]]:
    """The copies and fresh texts every run checks: 150 of each, sampled as issue 43 was measured."""
    from .originality import corpus, disguised

    data = corpus(rows, 200, 1000, 22)
    rng = random.Random(5)
    copies = rng.sample(disguised(data, 22), CHECKS)
    fresh = rng.sample(data["fresh_disjoint"], CHECKS)
    return {"copies": [body for _, _, body in copies], "fresh": list(fresh)}


def child(url: str, schema: str, path: str) -> dict[str, Any]:
    """One tree's measurements (run in a process whose ``sys.path`` picks the tree's simsql)."""
    from sqlalchemy import event
    from sqlalchemy.orm import Session

    import simsql

    from .originality import doc_model, engine_for, recorded_blocks

    with open(path, "rb") as handle:
        bodies: dict[str, list[str]] = pickle.load(handle)
    engine = engine_for(url, schema=schema).execution_options(schema_translate_map={None: schema})
    model = doc_model(None, wide_blocks=recorded_blocks(engine))
    sent: list[str] = []
    last: list[Any] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, *rest: Any) -> None:
        sent.append(statement)
        last[:] = [statement, parameters]

    event.listen(engine, "before_cursor_execute", record)
    report: dict[str, Any] = {"simsql": str(Path(simsql.__file__).parent)}
    with Session(engine) as session:
        for body in bodies["fresh"][-WARM_UP // 2 :] + bodies["copies"][-WARM_UP // 2 :]:
            simsql.find_original(session, model, body)
        for label, checked in bodies.items():
            times, answers, statements, lengths = [], [], [], []
            for body in checked:
                session.expunge_all()  # each check as a fresh request's: no row held from the last one
                sent.clear()
                start = time.perf_counter()
                match = simsql.find_original(session, model, body)
                times.append((time.perf_counter() - start) * 1000)
                answers.append(None if match is None else [match.row.id, match.distance])
                statements.append(len(sent))
                lengths.extend(len(statement.encode()) for statement in sent)
            report[label] = {
                "p50_ms": statistics.median(times), "mean_ms": statistics.fmean(times), "times_ms": times,
                "answers": answers, "statements_per_check": statistics.fmean(statements),
                "statement_bytes_max": max(lengths), "statements_over_4096": sum(n > 4096 for n in lengths),
            }  # fmt: skip
        report["first_stage"] = first_stage(session, model, bodies)
        simsql.find_original(session, model, bodies["fresh"][0])  # its last statement: the second stage's
        report["psycopg_convert_us"] = psycopg_convert(session, *last)
    engine.dispose()
    return report


def psycopg_convert(session: Any, statement: str, parameters: Any) -> float:
    """Microseconds psycopg takes to turn ``statement`` and its parameters into what it sends
    (``PostgresQuery.convert``, p50 of 200): its placeholders parsed again every time for a
    statement over 4,096 bytes, looked up in its cache for a shorter one."""
    from psycopg import _queries
    from psycopg.adapt import Transformer

    transformer = Transformer(session.connection().connection.dbapi_connection)
    spent = []
    for _ in range(200):
        start = time.perf_counter()
        _queries.PostgresQuery(transformer).convert(statement, parameters)
        spent.append((time.perf_counter() - start) * 1e6)
    return statistics.median(spent)


def first_stage(session: Any, model: type, bodies: dict[str, list[str]]) -> dict[str, Any]:
    """What reading the first stage's candidates whole costs against reading their keys and
    text: the first stage's statement for each text, as entities (``wide_statement``) and as
    columns (``wide_text_statement``), taking turns, three times over; p50 ms and rows read."""
    from simsql.queries import wide

    binding = wide.wide_binding(model)
    layout, fingerprinter = binding.names.layout, binding.fingerprinter
    limit = wide.WIDE_FIRST_CANDIDATES
    statements = {"entities": wide.wide_statement(model, limit), "columns": wide.wide_text_statement(model, limit)}
    report: dict[str, Any] = {}
    for label, checked in bodies.items():
        signatures = [fingerprinter.signature(body) for body in checked]
        parameters = [wide.wide_parameters(s, 96, wide.probe_groups(s, wide.WIDE_FIRST_STAGE, 0, layout), layout) for s in signatures]
        times: dict[str, list[float]] = {kind: [] for kind in statements}
        rows = 0
        for turn in range(3):
            for bound in parameters:
                for kind in sorted(statements, reverse=turn % 2 == 1):
                    session.expunge_all()
                    start = time.perf_counter()
                    found = session.execute(statements[kind], bound).all()
                    times[kind].append((time.perf_counter() - start) * 1000)
                    rows += len(found)
        report[label] = {f"{kind}_p50_ms": statistics.median(spent) for kind, spent in times.items()}
        report[label]["rows_per_statement"] = rows / (2 * len(times["columns"]))
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="postgresql+psycopg://postgres@127.0.0.1:5432/h_scale")
    parser.add_argument("--schema", default="bench_200k")
    parser.add_argument("--rows", type=int, default=200_000, help="rows the table was built with (its corpus)")
    parser.add_argument("--baseline", help="a directory holding the code before (its simsql/ package)")
    parser.add_argument("--cycles", type=int, default=1, help="A B B A cycles")
    parser.add_argument("--out", help="also write the report here (JSON)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.url, args.schema, args.child)))
        return 0
    if not args.baseline:
        parser.error("--baseline DIR is required")
    with tempfile.NamedTemporaryFile(suffix=".pickle", delete=False) as handle:
        pickle.dump(texts(args.rows), handle)
    runs: list[dict[str, Any]] = []
    elsewhere = tempfile.mkdtemp()  # the children's working directory: not this tree, which ``-m`` would put first on sys.path
    try:
        for tree in "ABBA" * args.cycles:
            path = [str(Path(args.baseline).resolve()), str(HERE)] if tree == "A" else [str(HERE)]
            environment = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
            command = [sys.executable, "-m", "benchmarks.check_round_trips", "--url", args.url, "--schema", args.schema, "--child", handle.name]
            done = subprocess.run(command, env=environment, cwd=elsewhere, capture_output=True, text=True, check=True)
            run = {"tree": tree, **json.loads(done.stdout.splitlines()[-1])}
            assert Path(run["simsql"]).parent == Path(path[0]), (tree, run["simsql"])
            runs.append(run)
            print(tree, run["simsql"], *(f"{label} p50 {run[label]['p50_ms']:.2f} ms, {run[label]['statements_per_check']:.2f} statements, "
                  f"longest {run[label]['statement_bytes_max']} bytes" for label in ("copies", "fresh")), sep="\n  ")  # fmt: skip
            print(f"  psycopg's conversion of the second stage's statement: {run['psycopg_convert_us']:.0f} us", flush=True)
    finally:
        os.unlink(handle.name)
        os.rmdir(elsewhere)
    report: dict[str, Any] = {"url": args.url, "schema": args.schema, "rows": args.rows, "checks": CHECKS, "order": "ABBA" * args.cycles}
    for label in ("copies", "fresh"):
        before = [run[label] for run in runs if run["tree"] == "A"]
        after = [run[label] for run in runs if run["tree"] == "B"]
        same = all(run["answers"] == before[0]["answers"] for run in before + after)
        p50_before = statistics.median(t for run in before for t in run["times_ms"])
        p50_after = statistics.median(t for run in after for t in run["times_ms"])
        report[label] = {
            "p50_ms_before": p50_before, "p50_ms_after": p50_after, "ratio_after_before": p50_after / p50_before,
            "p50_ms_each_run": [[run["tree"], run[label]["p50_ms"]] for run in runs],
            "statements_per_check_before": before[0]["statements_per_check"], "statements_per_check_after": after[0]["statements_per_check"],
            "statement_bytes_max_before": before[0]["statement_bytes_max"], "statement_bytes_max_after": after[0]["statement_bytes_max"],
            "found": sum(answer is not None for answer in before[0]["answers"]), "same_answers": same,
        }  # fmt: skip
        print(f"{label}: p50 {p50_before:.2f} -> {p50_after:.2f} ms (x{p50_after / p50_before:.3f}), "
              f"found {report[label]['found']}/{CHECKS}, the same answers: {same}")  # fmt: skip
    report["first_stage_after"] = {
        label: {key: statistics.median(run["first_stage"][label][key] for run in runs if run["tree"] == "B") for key in runs[0]["first_stage"][label]}
        for label in ("copies", "fresh")
    }  # fmt: skip
    print("first stage (after), medians of the runs:", json.dumps(report["first_stage_after"]))
    for tree, name in (("A", "before"), ("B", "after")):
        report[f"psycopg_convert_us_{name}"] = statistics.median(run["psycopg_convert_us"] for run in runs if run["tree"] == tree)
    print(f"psycopg's conversion, us: {report['psycopg_convert_us_before']:.0f} -> {report['psycopg_convert_us_after']:.0f}")
    report["runs"] = runs
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
