"""Fault injection: ``simsql backfill`` and ``simsql refingerprint`` killed with SIGKILL at random
points while writer processes insert, update and delete rows; then every run is resumed and
every row checked.

    python -m benchmarks.faults --url postgresql://... --rounds 5 [--rows 5000] [--writers 2] [--seed 0] [--longest 3]

Builds ``faults_docs`` (id, title, body; text made in Python) in the URL's database (schema: the
connection's current one), attaches it (columns mode) without a backfill, and per round:

1. changes every row's title (so the backfill has the whole table to do), and starts
   ``--writers`` writer processes (raw SQL, one row per transaction: the triggers clear a
   changed row's fingerprint, so every write makes work for the backfill);
2. starts ``simsql backfill --workers 2`` and SIGKILLs it a random time (up to ``--longest``
   seconds) after its fingerprinting workers start;
3. where the server refingerprints online (PostgreSQL), starts ``simsql refingerprint`` to the
   other configuration (shingle size 1 <-> 2) and SIGKILLs it the same way, then runs it
   again to the end while the writers still write;
4. stops the writers, runs ``simsql backfill`` to the end, and checks every row: its fingerprint
   must be the registry's configuration's fingerprint of its text (NULL for text without
   words), and no row may lack one.

After each kill it also checks that the killed command's worker processes are gone within
:data:`ORPHAN_GRACE_S` (issue 21, item 1). It prints one line per round and a summary; the exit
status is 1 if any row is wrong or missing, or any worker was orphaned. Drops the table at the
end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import psutil
from sqlalchemy import Engine, text

import simsql
import simsql.alembic
import simsql.bits
from simsql.dialects import backend
from simsql.store import registry
from simsql.store.storage import join_text
from simsql.urls import engine_for

TABLE = "faults_docs"
ORPHAN_GRACE_S = 5.0
WORDS = "index query planner vacuum replication backup schema table column tuple page buffer lock snapshot".split()


@dataclass
class Summary:
    """What the rounds did and found; ``rows_wrong``, ``rows_missing`` and ``orphans`` must be 0."""

    rounds: int = 0
    kills: int = 0
    finished_before_kill: int = 0
    rows_checked: int = 0
    rows_wrong: int = 0
    rows_missing: int = 0
    orphans: int = 0
    writes: int = 0
    writer_errors: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.rows_wrong == 0 and self.rows_missing == 0 and self.orphans == 0 and not self.failures


def _text(rng: random.Random) -> str | None:
    if rng.random() < 0.02:
        return None
    if rng.random() < 0.02:
        return "!!! ..."  # no words
    return " ".join(rng.choice(WORDS) if rng.random() < 0.4 else f"w{rng.randrange(50_000)}" for _ in range(rng.randrange(5, 60)))


def build(engine: Engine, rows: int, seed: int) -> None:
    """The table and its attachment (no fingerprints yet)."""
    rng = random.Random(seed)
    simsql.alembic.upgrade(engine)
    with engine.connect() as connection:
        left = registry.read(connection, TABLE) is not None  # by a run with --keep, or one that failed
    if left:
        simsql.detach_table(engine, TABLE)
    with engine.begin() as connection:
        connection.execute(text(f"DROP TABLE IF EXISTS {TABLE}"))
        connection.execute(text(f"CREATE TABLE {TABLE} (id INT PRIMARY KEY, title TEXT, body TEXT)"))
        connection.execute(
            text(f"INSERT INTO {TABLE} (id, title, body) VALUES (:id, :title, :body)"),
            [{"id": i, "title": f"doc {i}", "body": _text(rng)} for i in range(1, rows + 1)],
        )
    simsql.attach_table(engine, TABLE, ["title", "body"])


def _write(url: str, rows: int, seed: int, stop: Any, counts: Any) -> None:
    """A writer process: inserts, updates and deletes, one row per transaction, until ``stop``."""
    rng = random.Random(seed)
    engine = engine_for(url)
    next_id = rows + 1_000_000 * (seed + 1)
    writes = errors = 0
    with engine.connect() as connection:
        while not stop.is_set():
            choice = rng.random()
            try:
                if choice < 0.6:
                    sql, params = f"UPDATE {TABLE} SET body = :b WHERE id = :id", {"b": _text(rng), "id": rng.randrange(1, rows + 1)}
                elif choice < 0.9:
                    next_id += 1
                    sql, params = f"INSERT INTO {TABLE} (id, title, body) VALUES (:id, 'new', :b)", {"id": next_id, "b": _text(rng)}
                else:
                    sql, params = f"DELETE FROM {TABLE} WHERE id = :id", {"id": rng.randrange(1, rows + 1)}
                connection.execute(text(sql), params)
                connection.commit()
                writes += 1
            except Exception:  # noqa: BLE001 - a writer that meets a lock timeout or deadlock counts it and goes on
                connection.rollback()
                errors += 1
            if writes + errors == 1:  # this writer's first statement is done: the round may start its kills
                with counts.get_lock():
                    counts[2] += 1
            time.sleep(0.002)
    engine.dispose()
    with counts.get_lock():
        counts[0] += writes
        counts[1] += errors


def _until_writing(writers: list[Any], counts: Any, wanted: int, timeout: float = 120.0) -> None:
    """Wait until every writer has made its first write: a spawned writer imports simsql and
    connects first (seconds on a loaded machine), and a kill that falls before any write
    tests nothing concurrent (CI once saw a round with 0 writes)."""
    deadline = time.monotonic() + timeout
    while counts[2] < wanted:
        if time.monotonic() > deadline or not all(p.is_alive() for p in writers):
            raise RuntimeError(f"{counts[2]} of {wanted} writers began writing within {timeout:.0f} s")
        time.sleep(0.02)


def _simsql(url: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "simsql.cli", "--url", url, *args, "--no-progress"]


def _run_to_end(url: str, *args: str) -> None:
    done = subprocess.run(_simsql(url, *args), capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError(f"simsql {' '.join(args)} failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")


def kill_at_random(url: str, args: list[str], rng: random.Random, summary: Summary, longest: float) -> str:
    """Start ``simsql <args>``, SIGKILL it after a random delay, check its workers went with it."""
    process = subprocess.Popen(
        _simsql(url, *args), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    started = time.monotonic()
    while process.poll() is None and not psutil.Process(process.pid).children() and time.monotonic() < started + 60:
        time.sleep(0.01)  # until its workers exist: the kill falls while batches are in flight
    delay = rng.uniform(0.0, longest)
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.01)
    delay = time.monotonic() - started
    if process.poll() is not None:
        summary.finished_before_kill += 1
        return f"{args[0]} ended (exit {process.returncode}) before its kill at {delay:.1f} s"
    children = [c.pid for c in psutil.Process(process.pid).children(recursive=True)]
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    summary.kills += 1
    grace = time.monotonic() + ORPHAN_GRACE_S
    while (alive := [p for p in children if _alive(p)]) and time.monotonic() < grace:
        time.sleep(0.05)
    for pid in alive:
        summary.orphans += 1
        os.kill(pid, signal.SIGKILL)
    return f"{args[0]} killed at {delay:.1f} s ({len(children)} workers, {len(alive)} orphaned)"


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def check(engine: Engine, summary: Summary) -> tuple[int, int, int]:
    """Every row against the registry's configuration: (rows, wrong, missing)."""
    with engine.connect() as connection:
        entry = registry.read(connection, TABLE)
        assert entry is not None
        names = entry.names
        rows = connection.execute(text(f"SELECT title, body, {names.fingerprint} FROM {TABLE}")).all()
    fingerprinter = registry.fingerprinter_from_settings(entry.settings)
    texts = [join_text([title, body]) for title, body, _ in rows]
    present = [t for t in texts if t is not None]
    computed = iter(fingerprinter.fingerprint_many(present, empty="none"))
    wrong = missing = 0
    for (_, _, stored), joined in zip(rows, texts):
        want = next(computed) if joined is not None else None
        got = None if stored is None else (stored if stored >= 0 else simsql.bits.to_unsigned(stored))
        if got is None and want is not None:
            missing += 1
        elif got != want:
            wrong += 1
    summary.rows_checked += len(rows)
    summary.rows_wrong += wrong
    summary.rows_missing += missing
    return len(rows), wrong, missing


def one_round(url: str, engine: Engine, number: int, rng: random.Random, options: argparse.Namespace, summary: Summary) -> str:
    """Writers, a killed backfill, a killed and resumed refingerprint (where online), a final
    backfill with the writers stopped, and the check."""
    online = backend(engine).refingerprints_online
    with engine.begin() as connection:  # every row changes: the triggers clear every fingerprint, a whole table to do
        connection.execute(text(f"UPDATE {TABLE} SET title = :title"), {"title": f"round {number}"})
    context = multiprocessing.get_context("spawn")
    stop, counts = context.Event(), context.Array("l", 3)  # writes, errors, writers that have begun
    writers = [
        context.Process(target=_write, args=(url, options.rows, options.seed * 100 + number * 10 + i, stop, counts))
        for i in range(options.writers)
    ]
    for process in writers:
        process.start()
    events = []
    try:
        _until_writing(writers, counts, len(writers))
        events.append(kill_at_random(url, ["backfill", "--table", TABLE, "--workers", "2", "--batch-size", "100"], rng, summary, options.longest))
        if online:
            shingles = "2" if number % 2 == 0 else "1"
            move = ["refingerprint", "--table", TABLE, "--shingle-size", shingles, "--workers", "2", "--batch-size", "100"]
            events.append(kill_at_random(url, move, rng, summary, options.longest))
            _run_to_end(url, *move)
    finally:
        stop.set()
        for process in writers:
            process.join()
    summary.writes += counts[0]
    summary.writer_errors += counts[1]
    _run_to_end(url, "backfill", "--table", TABLE, "--workers", "2")
    rows, wrong, missing = check(engine, summary)
    summary.rounds += 1
    return f"round {number}: {'; '.join(events)}; {rows} rows checked, {wrong} wrong, {missing} missing"


def run(
    url: str, rounds: int, rows: int = 5000, writers: int = 2, seed: int = 0, longest: float = 3.0, keep: bool = False,
    report: Any = None,
) -> Summary:
    """The whole experiment; ``report(line)`` gets one line per round."""
    options = argparse.Namespace(rows=rows, writers=writers, seed=seed, longest=longest)
    rng = random.Random(seed)
    summary = Summary()
    engine = engine_for(url)
    try:
        build(engine, rows, seed)
        for number in range(1, rounds + 1):
            try:
                line = one_round(url, engine, number, rng, options, summary)
            except RuntimeError as error:
                summary.failures.append(str(error))
                line = f"round {number}: FAILED: {error}"
            if report is not None:
                report(line)
        if not keep:
            simsql.detach_table(engine, TABLE)
            with engine.begin() as connection:
                connection.execute(text(f"DROP TABLE {TABLE}"))
    finally:
        engine.dispose()
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--longest", type=float, default=3.0, help="latest kill, seconds after the workers start")
    parser.add_argument("--keep", action="store_true", help="keep faults_docs afterwards")
    args = parser.parse_args()
    started = time.perf_counter()
    summary = run(args.url, args.rounds, args.rows, args.writers, args.seed, args.longest, args.keep, report=print)
    print(
        f"{summary.rounds} rounds in {time.perf_counter() - started:.0f} s: {summary.kills} kills "
        f"({summary.finished_before_kill} runs ended before their kill), {summary.orphans} orphaned workers; "
        f"writers: {summary.writes} transactions, {summary.writer_errors} errors; "
        f"rows checked {summary.rows_checked}, rows wrong {summary.rows_wrong}, rows missing {summary.rows_missing}"
    )
    for failure in summary.failures:
        print(f"failure: {failure}")
    sys.exit(0 if summary.ok else 1)


if __name__ == "__main__":
    main()
