"""The client's part of one copy check, step by step (issue 43: the floor of ``find_original`` on copies).

    python -m benchmarks.check_components --schema bench_200k --rows 200000 --url postgresql+psycopg://postgres@127.0.0.1:5432/h_scale

Issue 43 asks ``find_original`` for p50 <= 2 ms on copies. What a copy's check must do in the
client whatever the server costs: the submission's signature, its first-stage probe values, its
shingles, and the confirmation (the original's shingles and the share of the submission in
them); then one statement. Each step is timed alone on the disguised copies of
``benchmarks.originality.corpus(rows, 200, 1000, 22)`` (``random.Random(5)``, 150 of them),
beside the whole check, on the table ``benchmarks.scale10m`` built (read, never written).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

import simsql
from simsql.queries.wide import WIDE_FIRST_STAGE, probe_groups, wide_binding
from simsql.text.containment import share_of_submission, shingled

from .originality import corpus, disguised, doc_model, engine_for, recorded_blocks
from .timing import emit, summary


def run(url: str, schema: str, rows: int, texts: int, rounds: int) -> dict[str, Any]:
    data = corpus(rows, 200, 1000, 22)
    rng = random.Random(5)
    copies = rng.sample(disguised(data, 22), texts)
    bodies = [body for _, _, body in copies]
    originals = {body: data["originals"][index - 1] for index, _, body in copies}
    engine = engine_for(url, schema=schema)
    model = doc_model(None, wide_blocks=recorded_blocks(engine))
    session = Session(engine)
    binding = wide_binding(model)
    fingerprinter = binding.fingerprinter
    assert isinstance(fingerprinter, simsql.Fingerprinter)
    layout = binding.names.layout
    signatures = {body: fingerprinter.signature(body) for body in bodies}
    submitted = {body: shingled(body) for body in bodies}
    steps: dict[str, Callable[[str], Any]] = {
        "signature": fingerprinter.signature,
        "first_stage_probe_values": lambda body: probe_groups(signatures[body], WIDE_FIRST_STAGE, 0, layout),
        "shingles_of_the_submission": shingled,
        "confirmation (the original's shingles, the share)": lambda body: share_of_submission(submitted[body], shingled(originals[body])),
        "find_original (whole)": lambda body: simsql.find_original(session, model, body),
    }  # fmt: skip
    for body in bodies[:20]:
        for step in steps.values():
            step(body)
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for body in bodies:
            for name, step in steps.items():
                started = time.perf_counter()
                step(body)
                times[name].append(time.perf_counter() - started)
    result = {name: summary(values) for name, values in times.items()}
    client = sum(result[name]["p50_ms"] for name in list(steps)[:-1])
    return {"schema": schema, "texts": texts, "rounds": rounds, "load": list(os.getloadavg()),
            "mean_characters": sum(map(len, bodies)) / len(bodies), "steps": result,
            "client_steps_p50_sum_ms": client}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="PostgreSQL")
    parser.add_argument("--schema", required=True, help="a table built by benchmarks.scale10m (read only)")
    parser.add_argument("--rows", type=int, required=True, help="its rows (names the corpus its originals come from)")
    parser.add_argument("--texts", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--results", type=Path)
    args = parser.parse_args(argv)
    report = {"argv": sys.argv[1:], **run(args.url, args.schema, args.rows, args.texts, args.rounds)}
    emit(report, args.results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
