"""Exact ``most_similar`` against the plain scan (issue 34), side by side in one run.

    python -m benchmarks.exact_scan --rows 1000000 --queries 40 --url postgresql+psycopg://postgres@127.0.0.1:5432/wt_exact_bench

Two tables of ``--rows`` rows, loaded one after the other into the same model's table (the
mixin's columns and block indexes, ``VACUUM ANALYZE``d):

* **uniform**: random 64-bit fingerprints, no text, plus 200 planted clusters of 12 rows 1-5
  bits from a centre. Targets: ``far`` (a random fingerprint), ``near`` (a stored row with 2 bits
  flipped: a copy exists, the rest is far), ``clustered`` (a cluster's centre: ten near rows);
* **real text**: the articles of :mod:`benchmarks.scale` (real man-page paragraphs, English and
  Chinese, planted variants and series), their text stored in the row (so the heap is as wide as
  a user's) and their fingerprints computed from it. Targets: the ``near-dup``, ``top-10
  clustered`` and ``top-10 spread`` workloads of :func:`benchmarks.queries.make_workloads`.

Systems, each answering the same targets, taking turns query by query in a shuffled order (so
none always runs on a cache another warmed):

* ``simsql most_similar``: ``most_similar(select(Model), q, limit=10)``, exact, today's plan;
* ``simsql, bands always tried``: the same with the band-or-scan decision off
  (:data:`simsql.queries.plan_choice.EXPECTED_ROWS` = 0, compiled on an engine of its own): the
  plan before issue 34;
* ``plain scan``: ``select(Model, distance).order_by(distance).limit(10)`` (the seeds' query);
* ``plain scan, keys``: ``select(Model.id, distance).order_by(distance).limit(10)``, the narrowest.

``--sets decision`` scores the decision itself from the fingerprints, without a database
(:func:`decision_quality`). Per target kind: p25/p50/p99 (ms; p25 shows the share of targets the bands answer), the ratio of each p50 to the plain scan's, and the load average
before and after. PostgreSQL only. Results go to ``benchmarks/results/exact-scan-<rows>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import BigInteger, Engine, create_engine, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.bits
from simsql.queries import plan_choice

from . import scale
from .hamming import distances
from .queries import make_workloads
from .timing import summary

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
CLUSTERS = 200


class _Base(DeclarativeBase):
    pass


class ScanDoc(simsql.SimHashMixin, _Base):
    """The table both data sets are loaded into: the mixin's columns and indexes, and the text."""

    __tablename__ = "exact_scan_docs"
    __simhash_source__ = ("body",)
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    body: Mapped[str | None]


def _load(engine: Engine, rows: Iterator[tuple[int, int, str | None]]) -> float:
    """Recreate the table, COPY ``(id, fingerprint, text)`` rows, build the indexes, vacuum."""
    table: Any = ScanDoc.__table__
    with engine.begin() as connection:
        table.drop(connection, checkfirst=True)
        table.create(connection)
        for index in table.indexes:
            connection.execute(text(f'DROP INDEX "{index.name}"'))
    started = time.perf_counter()
    with engine.begin() as connection:
        raw = connection.connection.driver_connection
        with raw.cursor().copy("COPY exact_scan_docs (id, simhash, body) FROM STDIN") as copy:  # type: ignore[union-attr]
            for key, fingerprint, body in rows:
                copy.write_row((key, simsql.bits.to_signed(fingerprint), body))
        for index in table.indexes:
            index.create(connection)
    with engine.connect() as connection:
        connection.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM ANALYZE exact_scan_docs"))
    return time.perf_counter() - started


def _flip(rng: np.random.Generator, value: int, bits: int) -> int:
    for bit in rng.choice(64, size=bits, replace=False):
        value ^= 1 << int(bit)
    return value


def uniform_set(rows: int, queries: int, seed: int = 34) -> tuple[np.ndarray, dict[str, list[int]]]:
    """Random fingerprints with planted clusters, and the three kinds of target."""
    rng = np.random.default_rng(seed)
    fingerprints = rng.integers(0, 2**64, size=rows, dtype=np.uint64)
    centres = [int(c) for c in rng.integers(0, 2**64, size=CLUSTERS, dtype=np.uint64)]
    slots = rng.choice(rows, size=CLUSTERS * 12, replace=False)
    for i, slot in enumerate(slots):
        fingerprints[slot] = _flip(rng, centres[i // 12], int(rng.integers(1, 6)))
    stored = rng.choice(rows, size=queries, replace=False)
    targets = {
        "far": [int(t) for t in rng.integers(0, 2**64, size=queries, dtype=np.uint64)],
        "near": [_flip(rng, int(fingerprints[i]), 2) for i in stored],
        "clustered": centres[:queries],
    }
    return fingerprints, targets


def _systems(sessions: list[Session]) -> dict[str, Callable[[int], list[int]]]:
    """One session (one connection, one server process) per system, so none runs on another's
    process state."""
    distance = ScanDoc.simhash.hamming_distance
    entity = select(ScanDoc)
    mine, before, scan, keys = sessions
    return {
        "simsql most_similar": lambda q: [r.distance for r in mine.execute(simsql.most_similar(entity, q, limit=10))],
        "simsql, bands always tried": lambda q: [r.distance for r in before.execute(simsql.most_similar(entity, q, limit=10))],
        "plain scan": lambda q: [r[1] for r in scan.execute(select(ScanDoc, distance(q)).order_by(distance(q)).limit(10))],
        "plain scan, keys": lambda q: [r[1] for r in keys.execute(select(ScanDoc.id, distance(q)).order_by(distance(q)).limit(10))],
    }


def _always_bands(engine: Engine, target: int) -> Engine:
    """An engine (same pool, its own compiled cache) whose most_similar statement was compiled
    with the band-or-scan decision off: the plan before issue 34, in the same run."""
    before = engine.execution_options(compiled_cache={})
    saved = plan_choice.EXPECTED_ROWS
    plan_choice.EXPECTED_ROWS = 0.0
    try:
        with Session(before) as session:
            session.execute(simsql.most_similar(select(ScanDoc), target, limit=10)).all()
    finally:
        plan_choice.EXPECTED_ROWS = saved
    return before


def measure(engine: Engine, targets: dict[str, list[int]]) -> dict[str, Any]:
    """Every system on every target kind, interleaved query by query."""
    before_engine = _always_bands(engine, next(iter(targets.values()))[0])
    out: dict[str, Any] = {}
    sessions = [Session(engine), Session(before_engine), Session(engine), Session(engine)]
    try:
        systems = _systems(sessions)
        names = list(systems)
        for kind, queries in targets.items():
            for q in queries[:2]:  # warm-up
                for fn in systems.values():
                    fn(q)
            times: dict[str, list[float]] = {name: [] for name in names}
            answers: dict[str, list[list[int]]] = {name: [] for name in names}
            order = np.random.default_rng(len(queries))
            for q in queries:
                for name in order.permutation(names).tolist():
                    started = time.perf_counter()
                    answers[name].append(systems[name](q))
                    times[name].append(time.perf_counter() - started)
            out[kind] = _rows(times, answers)
    finally:
        for session in sessions:
            session.close()
    return out


def _rows(times: dict[str, list[float]], answers: dict[str, list[list[int]]]) -> dict[str, Any]:
    scan = summary(times["plain scan"])["p50_ms"]
    keys = summary(times["plain scan, keys"])["p50_ms"]
    rows: dict[str, Any] = {}
    for name, timed in times.items():
        row = summary(timed)
        row["p25_ms"] = 1000 * float(np.quantile(timed, 0.25))
        row["x_plain_scan_p50"] = row["p50_ms"] / scan
        row["x_keys_scan_p50"] = row["p50_ms"] / keys
        row["same_distances_as_scan"] = all(a == b for a, b in zip(answers[name], answers["plain scan"]))
        rows[name] = row
    rows["tenth_distance_p50"] = float(np.median([a[-1] for a in answers["plain scan"]]))
    return rows


def decision_quality(fingerprints: np.ndarray, targets: dict[str, list[int]], probe_radius: int = 2, limit: int = 10) -> dict[str, Any]:
    """How the band-or-scan decision sorts each kind of target, from the fingerprints alone (no
    database: the statistic of :func:`simsql.queries.plan_choice.expected_within` with exact
    bucket counts and the true row count): the share of targets whose top-``limit`` the bands
    would fill (the ``limit``-th neighbour within ``4 * probe_radius + 3`` bits), the share the
    rule sends to the bands, and its two mistakes (fills but scanned: slower than the bands;
    runs the bands but the scan follows: a band's reads wasted). The per-band budget is left out."""
    rows = len(fingerprints)
    shifts = [np.uint64(16 * (3 - j)) for j in range(4)]
    counts = [np.bincount(((fingerprints >> shift) & np.uint64(0xFFFF)).astype(np.int64), minlength=65536) for shift in shifts]
    reach = 4 * probe_radius + 3
    out: dict[str, Any] = {}
    for kind, queries in targets.items():
        fills, runs = [], []
        for q in queries:
            d = distances(fingerprints, q)
            fills.append(int(np.partition(d, limit - 1)[limit - 1]) <= reach)
            buckets = [float(counts[j][(q >> int(shifts[j])) & 0xFFFF]) for j in range(4)]
            expected = plan_choice.expected_within(buckets, rows, reach)
            runs.append(expected >= plan_choice.EXPECTED_ROWS or int(d.min()) <= 3)
        f, r = np.array(fills), np.array(runs)
        out[kind] = {"bands_fill": f.mean(), "rule_runs_bands": r.mean(), "fills_but_scanned": (f & ~r).mean(), "bands_wasted": (~f & r).mean()}
    return {kind: {k: float(v) for k, v in row.items()} for kind, row in out.items()}


def real_text_rows(data: scale.ScaleSet, paragraphs: Sequence[str]) -> Iterator[tuple[int, int, str | None]]:
    for i, (fingerprint, members) in enumerate(zip(data.fingerprints.tolist(), data.members)):
        yield i + 1, int(fingerprint), scale.article_text(paragraphs, members)


def run(args: argparse.Namespace) -> dict[str, Any]:
    engine = create_engine(args.url)
    result: dict[str, Any] = {"command": "python -m benchmarks.exact_scan " + " ".join(sys.argv[1:]), "rows": args.rows}
    result["load_average_before"] = list(os.getloadavg())
    if "uniform" in args.sets:
        fingerprints, targets = uniform_set(args.rows, args.queries)
        seconds = 0.0 if args.reuse else _load(engine, ((i + 1, int(fp), None) for i, fp in enumerate(fingerprints.tolist())))
        result["uniform"] = {"load_seconds": seconds, **measure(engine, targets)}
        result["load_average_after_uniform"] = list(os.getloadavg())
    if "decision" in args.sets:  # no database: how the rule sorts each set's targets
        fingerprints, targets = uniform_set(args.rows, args.queries)
        result["decision uniform"] = decision_quality(fingerprints, targets)
        real = scale.real_text("default")
        data = scale.build_cached(real, args.rows, seed=args.rows)
        workloads = make_workloads(data, real.features, args.queries, seed=args.rows + 1)
        result["decision real text"] = decision_quality(data.fingerprints, {w.name: w.queries for w in workloads})
    if "real" in args.sets:
        real = scale.real_text("default")
        data = scale.build_cached(real, args.rows, seed=args.rows)
        workloads = make_workloads(data, real.features, args.queries, seed=args.rows + 1)
        seconds = 0.0 if args.reuse else _load(engine, real_text_rows(data, real.paragraphs))
        result["real text"] = {"load_seconds": seconds, **measure(engine, {w.name: w.queries for w in workloads})}
    result["load_average_after"] = list(os.getloadavg())
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--sets", default="uniform,real", help="comma-separated: uniform, real, decision (no database)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--reuse", action="store_true", help="the table already holds the (one) set: measure only")
    args = parser.parse_args(argv)
    args.sets = args.sets.split(",")
    if args.reuse and len(args.sets) != 1:
        parser.error("--reuse measures one set, the one the table holds")
    result = run(args)
    out = args.out or RESULTS / f"exact-scan-{args.rows}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
