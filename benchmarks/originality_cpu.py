"""The client's share of ``simsql.find_original`` on a wide table: CPU per check, and where it goes.

    python -m benchmarks.originality_cpu --rows 100000 --url postgresql+psycopg://postgres@127.0.0.1:5432/<db>
    python -m benchmarks.originality_cpu --rows 100000 --url ... --repeat 5    # the least of 5 per text
    python -m benchmarks.originality_cpu --rows 100000 --url ... --profile     # cProfile, top functions
    python -m benchmarks.originality_cpu --rows 100000 --url ... --compare benchmarks/results/<earlier>.json

The table, the disguised copies and the fresh articles are :mod:`benchmarks.originality`'s
(same corpus, same seed; a table it already loaded is reused). Each check is timed twice over:
``time.process_time`` (this process's CPU: fingerprinting, shingling, building and reading the
statements) and ``time.perf_counter`` (wall, the server's work and the waits included), so the
client's cost reads apart from the server's on a loaded machine. Every answer (the row's key and
distance, or None) is saved with the figures; ``--compare`` checks them against an earlier run's,
so a faster client is shown to answer exactly as before.

Results go to ``benchmarks/results/originality-cpu-<server>-<rows>.json`` and are printed.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

import simsql

from . import log
from .originality import DEFAULT_URL, EVASIONS, RESULTS, Doc, build, corpus, disguise, engine_for


def texts(data: dict[str, Any], count: int, seed: int) -> dict[str, list[str]]:
    """``count`` disguised copies (originals and evasions taken in turn, as
    :func:`benchmarks.originality.recall` disguises them) and ``count`` fresh articles assembled
    from the table's own paragraphs (the costly case: many rows within the bound, none a copy)."""
    rng = random.Random(seed)
    copies = []
    for number in range(count):
        index = number % len(data["originals"])
        kind = EVASIONS[number % len(EVASIONS)]
        copies.append(disguise(kind, data["originals"][index], random.Random(f"{seed}/{index + 1}/{kind}"), data["donors"]))
    return {"copies": copies, "fresh": rng.sample(data["fresh_shared"], min(count, len(data["fresh_shared"])))}


def measure(session: Session, bodies: Sequence[str], profile: cProfile.Profile | None, repeat: int = 1) -> dict[str, Any]:
    """CPU and wall time of ``find_original`` on each text (after two untimed warm-up checks,
    so the statements are compiled and prepared), and its answers. With ``repeat``, each text is
    checked that many times in a row and its least CPU and wall kept: on a machine shared with
    other work, the least is the check's own cost, the rest other processes' interference. The
    session is emptied before each check, as a new request's would be (a row it already holds
    costs the ORM less to load, which flattered the repeats of the same text)."""
    for body in bodies[:2]:
        simsql.find_original(session, Doc, body)
    cpu, wall, answers = [], [], []
    for body in bodies:
        times = []
        for _ in range(repeat):
            session.expunge_all()  # as a new request's session: no candidate already loaded
            if profile is not None:
                profile.enable()
            started_cpu, started_wall = time.process_time(), time.perf_counter()
            match = simsql.find_original(session, Doc, body)
            times.append((time.process_time() - started_cpu, time.perf_counter() - started_wall))
            if profile is not None:
                profile.disable()
        cpu.append(min(spent for spent, _ in times))
        wall.append(min(spent for _, spent in times))
        answers.append(None if match is None else [match.row.id, match.distance])
    return {
        "cpu_p50_ms": 1000 * statistics.median(cpu),
        "cpu_mean_ms": 1000 * statistics.fmean(cpu),
        "wall_p50_ms": 1000 * statistics.median(wall),
        "wall_mean_ms": 1000 * statistics.fmean(wall),
        "found": sum(answer is not None for answer in answers),
        "answers": answers,
    }


def top(profile: cProfile.Profile, lines: int = 30) -> str:
    """The functions that took the most time of their own (cProfile's ``tottime``)."""
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(lines)
    return out.getvalue()


def run(url: str, rows: int, count: int, seed: int, profiled: bool, repeat: int = 1) -> dict[str, Any]:
    engine = engine_for(url)
    log(f"corpus and table of {rows:,} rows")
    data = corpus(rows, 200, 1000, seed)
    result: dict[str, Any] = {"server": engine.dialect.name, "rows": rows, "repeat": repeat, "build": build(engine, data, reuse=True)}
    population = texts(data, count, seed)
    result["load_before"] = os.getloadavg()
    profile = cProfile.Profile(time.process_time) if profiled else None
    with Session(engine) as session:
        for name, bodies in population.items():
            log(f"{len(bodies)} {name}")
            result[name] = measure(session, bodies, profile, repeat)
            session.expunge_all()
    result["load_after"] = os.getloadavg()
    if profile is not None:
        result["profile"] = top(profile)
    engine.dispose()
    return result


def compare(result: dict[str, Any], earlier: dict[str, Any]) -> list[str]:
    """The checks whose answer differs from ``earlier``'s (same texts: same rows, seed and count)."""
    differences = []
    for name in ("copies", "fresh"):
        for number, (now, then) in enumerate(zip(result[name]["answers"], earlier[name]["answers"])):
            if now != then:
                differences.append(f"{name} #{number}: {now} now, {then} before")
    return differences


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--texts", type=int, default=100, help="copies and fresh articles checked")
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--repeat", type=int, default=1, help="checks per text, the least CPU and wall kept")
    parser.add_argument("--profile", action="store_true", help="cProfile the checks (slower: read its shares, not its times)")
    parser.add_argument("--compare", type=Path, help="an earlier run's results: every answer must be the same")
    args = parser.parse_args(argv)
    result = run(args.url, args.rows, args.texts, args.seed, args.profile, args.repeat)
    if args.compare is not None:
        result["differences"] = compare(result, json.loads(args.compare.read_text()))
    RESULTS.mkdir(exist_ok=True)
    suffix = "-profile" if args.profile else ""
    path = RESULTS / f"originality-cpu-{result['server']}-{args.rows}{suffix}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    shown = {key: value for key, value in result.items() if key != "profile"}
    for name in ("copies", "fresh"):
        shown[name] = {key: value for key, value in result[name].items() if key != "answers"}
    json.dump(shown, sys.stdout, indent=2)
    sys.stdout.write("\n" + result.get("profile", ""))
    return 1 if result.get("differences") else 0


if __name__ == "__main__":
    raise SystemExit(main())
