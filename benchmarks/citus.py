"""Single-row queries on a distributed table against the same rows in one plain PostgreSQL table
(issue 24): p50 of ``most_similar`` top-10, ``similar_to`` (3 bits) and ``find_original``.

    SIMSQL_TEST_CITUS_URL=$(.ci/citus-cluster) python -m benchmarks.citus --rows 20000 \\
        --plain postgresql+psycopg://postgres@127.0.0.1:5432/postgres

Each table gets a schema of its own, dropped afterwards (``--keep``: kept under a name of its
row and shard counts, and reused by the next run); one distributed table per ``--shards`` count
(4 and 32 by default). The servers take turns target by target, so the ratios are measured side
by side. Prints the load average, one line per table (with the backfill's rows per second when
it loaded, and ``duplicate_groups`` over the whole table with ``--dupes``) and the ratios to the
plain table. On a shared 2-core machine the absolute figures say little: report the ratios.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, String, Text, create_engine, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.alembic
import simsql.citus

WORDS = "the of and to in a is that for it as was with be by on not he this are or his from at which".split()


class Base(DeclarativeBase):
    pass


class BenchNote(simsql.SimHashMixin, Base):
    __tablename__ = "bench_notes"
    __simhash_source__ = ("title", "body")

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


def random_rows(count: int, rng: random.Random) -> list[dict[str, Any]]:
    def body() -> str:
        return " ".join(rng.choice(WORDS) if rng.random() < 0.5 else f"w{rng.randrange(10**6)}" for _ in range(40))

    return [{"id": i, "title": f"t{i}", "body": body()} for i in range(1, count + 1)]


def load_rows(engine: Engine, rows: list[dict[str, Any]], shards: int | None) -> None:
    """The table, distributed over ``shards`` (None: a plain table), and its rows, without
    fingerprints."""
    simsql.alembic.upgrade(engine)
    Base.metadata.create_all(engine)
    if shards is not None:
        with engine.begin() as connection:
            connection.execute(text("SELECT set_config('citus.shard_count', :n, true)"), {"n": str(shards)})
            simsql.citus.distribute(connection, BenchNote, "id")
    with engine.begin() as connection:
        for start in range(0, len(rows), 2000):
            connection.execute(text("INSERT INTO bench_notes (id, title, body) VALUES (:id, :title, :body)"), rows[start : start + 2000])


def _load(engine: Engine, rows: list[dict[str, Any]], shards: int | None) -> float:
    """:func:`load_rows`, then the rows' fingerprints; returns the backfill's throughput in rows
    per second."""
    load_rows(engine, rows, shards)
    started = time.perf_counter()
    simsql.backfill(engine, BenchNote, workers=0)
    throughput = len(rows) / (time.perf_counter() - started)
    with engine.begin() as connection:
        connection.execute(text("ANALYZE bench_notes"))
    return throughput


def _queries(session: Session) -> dict[str, Callable[[str], Any]]:
    return {
        "most_similar": lambda t: session.execute(simsql.most_similar(select(BenchNote), t, limit=10)).all(),
        "similar_to": lambda t: session.execute(select(BenchNote.id).where(simsql.similar_to(BenchNote, t, 3))).all(),
        "find_original": lambda t: simsql.find_original(session, BenchNote, t),
    }


def _p50(sessions: dict[str, Session], targets: list[str]) -> dict[str, dict[str, float]]:
    """p50 in ms per server and query, the servers taking turns target by target (a load
    spike on the shared machine then hits every server alike)."""
    times: dict[str, dict[str, list[float]]] = {label: {} for label in sessions}
    for name in _queries(next(iter(sessions.values()))):
        for label, session in sessions.items():
            _queries(session)[name](targets[0])  # warm
        for target in targets:
            for label, session in sessions.items():
                query = _queries(session)[name]
                started = time.perf_counter()
                query(target)
                times[label].setdefault(name, []).append(time.perf_counter() - started)
    return {label: {name: statistics.median(t) * 1000 for name, t in found.items()} for label, found in times.items()}


def _dupes(session: Session) -> float:
    """``duplicate_groups`` over the whole table: rows per second."""
    started = time.perf_counter()
    simsql.duplicate_groups(session, BenchNote, max_distance=3)
    elapsed = time.perf_counter() - started
    return float(session.execute(text("SELECT count(*) FROM bench_notes")).scalar_one()) / elapsed


class Server:
    """One table on one server: a schema of its own, loaded once (kept with ``keep``)."""

    def __init__(self, url: str, rows: list[dict[str, Any]], shards: int | None, keep: bool) -> None:
        self.schema = f"bench_citus_{len(rows)}_{shards or 'plain'}" if keep else f"bench_{uuid.uuid4().hex[:8]}"
        self.admin = create_engine(url)
        self.keep = keep
        with self.admin.begin() as connection:
            found = connection.execute(text("SELECT to_regclass(:t) IS NOT NULL"), {"t": f'"{self.schema}".bench_notes'}).scalar_one()
            if not found:
                connection.execute(text(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE'))
                connection.execute(text(f'CREATE SCHEMA "{self.schema}"'))
        self.engine = create_engine(url, connect_args={"options": f"-csearch_path={self.schema},public"})
        self.backfill = _load(self.engine, rows, shards) if not found else float("nan")

    def close(self) -> None:
        self.engine.dispose()
        if not self.keep:
            with self.admin.begin() as connection:
                connection.execute(text(f'DROP SCHEMA "{self.schema}" CASCADE'))
        self.admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--citus", default=os.environ.get("SIMSQL_TEST_CITUS_URL"))
    parser.add_argument("--plain", default=os.environ.get("SIMSQL_TEST_DATABASE_URL"))
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--shards", type=int, nargs="+", default=[4, 32])
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--keep", action="store_true", help="keep the loaded schemas, and reuse them when there")
    parser.add_argument("--dupes", action="store_true", help="also time duplicate_groups over the whole table")
    arguments = parser.parse_args()
    if not arguments.citus or not arguments.plain:
        parser.error("needs --citus (or SIMSQL_TEST_CITUS_URL) and --plain (or SIMSQL_TEST_DATABASE_URL)")
    rng = random.Random(5)
    rows = random_rows(arguments.rows, rng)
    targets = [f"{rng.choice(rows)['title']}\n{rng.choice(rows)['body']}" for _ in range(arguments.queries)]
    servers = {"plain": Server(arguments.plain, rows, None, arguments.keep)}
    for shards in arguments.shards:
        servers[f"citus, {shards} shards"] = Server(arguments.citus, rows, shards, arguments.keep)
    try:
        sessions = {label: Session(server.engine) for label, server in servers.items()}
        found = _p50(sessions, targets)
        throughput = {label: {"backfill rows/s": server.backfill} for label, server in servers.items()}
        if arguments.dupes:
            for label, session in sessions.items():
                throughput[label]["duplicate_groups rows/s"] = _dupes(session)
        for session in sessions.values():
            session.close()
    finally:
        for server in servers.values():
            server.close()
    print(f"{arguments.rows} rows; load average {' '.join(f'{v:.1f}' for v in os.getloadavg())} (1, 5, 15 min)")
    plain = found["plain"]
    for label, times in found.items():
        extra = ", ".join(f"{k} {v:.0f}" for k, v in throughput[label].items())
        print(f"{label:>18}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in times.items()) + f"; {extra}")
        if label != "plain":
            print(f"{'ratio':>18}: " + ", ".join(f"{k} {times[k] / plain[k]:.1f}x" for k in times))


if __name__ == "__main__":
    main()
