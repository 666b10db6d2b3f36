"""The submission pipeline as a platform runs it: check each new text, store it when it is original.

    python -m benchmarks.submissions --schema bench_originality_1m_bg --background /work/logs/bg-manpages-22.json \\
        --url postgresql+psycopg://postgres@127.0.0.1:5432/h_scale --submissions 400 --batch 20

On a table ``benchmarks.scale10m`` built (``--schema``, with the wide background file it was built
with), a stream of submissions: ``--copy-share`` of them disguised copies of the table's originals
(every light evasion, 5% substitutions, the 60% excerpt), the rest fresh articles (half from the
paragraphs the table's filler is drawn from, half from unseen ones). Three ways of running it take
turns batch by batch, each on its own session (the first of each turn rotates):

* **one**: ``simsql.find_original``, then, for an original, ``session.add`` and ``commit``: a
  transaction per accepted submission, as a web request handling one upload would;
* **batch**: the same checks for ``--batch`` submissions, then every original of the batch added
  and committed at once (a queue worker);
* **one, serializable**: as **one**, each submission's check and store in one SERIALIZABLE
  transaction, retried when the server refuses it (docs/originality.md, "A submission pipeline":
  what keeps two workers from storing the same text); one worker, so what it measures is the
  isolation's own cost;
* **check only**: the checks alone, nothing stored (what the check costs within the pipeline).

Reported per way: submissions a second (wall), the check's and the store's p50/p99, the client's
CPU a submission (``time.process_time``: the server's work and the waits left out), and the
statements sent a submission (a ``before_cursor_execute`` listener). The rows a way stores are
deleted after its turn (keys above the table's largest before the run, untimed), so every way
checks every submission against the same table, and the table is left as it was.
Accepted copies and false alarms on fresh articles are counted, so a faster way that answers
differently would show.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import delete, event, func, select
from sqlalchemy.orm import Session

import simsql
import simsql.fingerprint

from .manpages import CorpusUnavailable
from .originality import CORPUS_UNAVAILABLE, SOURCES, corpus, disguised, doc_model, engine_for, recorded_blocks
from .timing import summary

WAYS = ("one", "one_serializable", "batch", "check_only")
STORING = ("one", "one_serializable", "batch")


def stream(submissions: int, copy_share: float, seed: int, source: str = "manpages") -> list[tuple[str, int | None, str]]:
    """``(population, original id or None, text)`` in a shuffled order, deterministic in ``seed``,
    from the corpus ``benchmarks.scale10m --source`` built the table from."""
    data = corpus(1_000_000, 200, 1000, 22, source=source)
    rng = random.Random(seed)
    copies = round(submissions * copy_share)
    fresh = submissions - copies
    chosen: list[tuple[str, int | None, str]] = [("copy", index, body) for index, _, body in rng.sample(disguised(data, 22), copies)]
    chosen += [("fresh_pool", None, body) for body in rng.sample(data["fresh_shared"], fresh // 2)]
    chosen += [("fresh_unseen", None, body) for body in rng.sample(data["fresh_disjoint"], fresh - fresh // 2)]
    rng.shuffle(chosen)
    return chosen


class Counter:
    """Statements sent on one engine (a ``before_cursor_execute`` listener)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.count += 1


def run(
    url: str, schema: str, background_file: Path | None, submissions: int, copy_share: float, batch: int, seed: int,
    source: str = "manpages",
) -> dict[str, Any]:  # fmt: skip
    background = simsql.fingerprint.Background.load(background_file) if background_file else None
    items = stream(submissions, copy_share, seed, source)
    engines = {way: engine_for(url, schema=schema) for way in WAYS}
    model = doc_model(background, wide_blocks=recorded_blocks(engines["one"]))  # the table's own layout
    engines["one_serializable"] = engines["one_serializable"].execution_options(isolation_level="SERIALIZABLE")
    counters = {way: Counter() for way in WAYS}
    for way, engine in engines.items():
        event.listen(engine, "before_cursor_execute", counters[way])
    sessions = {way: Session(engine, expire_on_commit=False) for way, engine in engines.items()}
    first_key = int(sessions["one"].execute(select(func.max(model.id))).scalar_one()) + 1
    next_key = {way: first_key + index * submissions for index, way in enumerate(WAYS)}
    for way in WAYS:  # compile and prepare each way's statements before timing
        simsql.find_original(sessions[way], model, items[0][2])
        sessions[way].rollback()
    checks: dict[str, list[float]] = {way: [] for way in WAYS}
    stores: dict[str, list[float]] = {way: [] for way in WAYS}
    walls: dict[str, float] = dict.fromkeys(WAYS, 0.0)
    cpus: dict[str, float] = dict.fromkeys(WAYS, 0.0)
    answers: dict[str, dict[str, int]] = {way: {} for way in WAYS}
    statements_before = {way: counters[way].count for way in WAYS}
    load_before = list(os.getloadavg())
    for turn, start in enumerate(range(0, len(items), batch)):
        chunk = items[start : start + batch]
        order = WAYS[turn % len(WAYS) :] + WAYS[: turn % len(WAYS)]
        for way in order:
            session = sessions[way]
            wall, cpu = time.perf_counter(), time.process_time()
            accepted: list[Any] = []
            for population, original, body in chunk:
                started = time.perf_counter()
                match = simsql.find_original(session, model, body)
                checks[way].append(time.perf_counter() - started)
                tally(answers[way], population, original, match)
                if match is None and way != "check_only":
                    accepted.append(model(id=next_key[way], kind="submitted", body=body))
                    next_key[way] += 1
                    if way != "batch":
                        store(session, accepted, stores[way])
                        accepted = []
                elif way == "one_serializable":
                    session.commit()  # the check's transaction ends
            if way == "batch" and accepted:
                store(session, accepted, stores[way])
            if way == "check_only":
                session.rollback()
            walls[way] += time.perf_counter() - wall
            cpus[way] += time.process_time() - cpu
            forget_stored(session, model, first_key)  # untimed: every way checks against the same table
    load_after = list(os.getloadavg())
    for session in sessions.values():
        session.close()
    for engine in engines.values():
        engine.dispose()
    count = len(items)
    return {
        "schema": schema, "background": str(background_file) if background_file else None,
        "submissions": count, "copy_share": copy_share, "batch": batch, "seed": seed,
        "load_before": load_before, "load_after": load_after,
        "ways": {
            way: {
                "submissions_per_second": round(count / walls[way], 1),
                "check": summary(checks[way]),
                "store": summary(stores[way]) if stores[way] else None,
                "client_cpu_ms_per_submission": round(1000 * cpus[way] / count, 3),
                "statements_per_submission": round((counters[way].count - statements_before[way]) / count, 2),
                "answers": answers[way],
            }
            for way in WAYS
        },
    }  # fmt: skip


def forget_stored(session: Session, model: type, first_key: int) -> None:
    """Delete the rows a way's turn stored, so that no way checks against another's submissions."""
    session.execute(delete(model).where(model.id >= first_key))
    session.commit()
    session.expunge_all()


def store(session: Session, rows: Sequence[Any], times: list[float]) -> None:
    """Add ``rows`` and commit: the store step of the pipeline, timed."""
    started = time.perf_counter()
    session.add_all(rows)
    session.commit()
    times.append(time.perf_counter() - started)


def tally(counts: dict[str, int], population: str, original: int | None, match: Any) -> None:
    if population == "copy":
        outcome = "copy_found" if match is not None and match.row.id == original else ("copy_other" if match is not None else "copy_missed")
    else:
        outcome = f"{population}_alarm" if match is not None else f"{population}_accepted"
    counts[outcome] = counts.get(outcome, 0) + 1


def report(result: dict[str, Any], out: Callable[[str], None]) -> None:
    out(f"{result['submissions']} submissions ({result['copy_share']:.0%} copies), batches of {result['batch']}, "
        f"table {result['schema']}; load {result['load_before'][0]:.1f} -> {result['load_after'][0]:.1f}")  # fmt: skip
    out("| way | submissions/s | check p50 / p99 ms | store p50 / p99 ms | client CPU ms a submission | statements a submission |")
    out("| :-- | --: | --: | --: | --: | --: |")
    for way, figures in result["ways"].items():
        check, stored = figures["check"], figures["store"]
        stored_text = f"{stored['p50_ms']:.2f} / {stored['p99_ms']:.2f}" if stored else ""
        out(f"| {way} | {figures['submissions_per_second']:.1f} | {check['p50_ms']:.2f} / {check['p99_ms']:.2f} | {stored_text} | "
            f"{figures['client_cpu_ms_per_submission']:.2f} | {figures['statements_per_submission']:.2f} |")  # fmt: skip
    for way, figures in result["ways"].items():
        out(f"{way}: {json.dumps(figures['answers'], sort_keys=True)}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--schema", required=True, help="the schema of a table benchmarks.scale10m built")
    parser.add_argument("--background", type=Path, help="the wide background file the table was built with")
    parser.add_argument("--url", default="postgresql+psycopg://postgres@127.0.0.1:5432/h_scale")
    parser.add_argument("--submissions", type=int, default=400)
    parser.add_argument("--copy-share", type=float, default=0.2, help="share of the submissions that are disguised copies")
    parser.add_argument("--batch", type=int, default=20, help="submissions a turn, and a queue worker's batch")
    parser.add_argument("--seed", type=int, default=43)
    parser.add_argument("--source", choices=SOURCES, default="manpages", help="the corpus the table was built from (benchmarks.scale10m --source)")
    parser.add_argument("--results", type=Path, help="also write the report (JSON) here")
    args = parser.parse_args(argv)
    try:
        result = run(args.url, args.schema, args.background, args.submissions, args.copy_share, args.batch, args.seed, args.source)
    except CorpusUnavailable as error:
        print(f"corpus unavailable: {error}", file=sys.stderr)
        return CORPUS_UNAVAILABLE
    report(result, print)
    if args.results:
        args.results.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
