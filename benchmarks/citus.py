"""Single-row queries on a distributed table against the same rows in one plain PostgreSQL table
(issue 24): p50 of ``most_similar`` top-10, ``similar_to`` (3 bits) and ``find_original``.

    SIMSQL_TEST_CITUS_URL=$(.ci/citus-cluster) python -m benchmarks.citus --rows 20000 \\
        --plain postgresql+psycopg://postgres@127.0.0.1:5432/postgres

Each server gets a schema of its own, dropped afterwards; the distributed table has Citus's
default shard count (32) unless ``--shards`` says otherwise. Prints one line per server and the
ratios. On a shared 2-core machine the absolute figures say little: report the ratios.
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


def _rows(count: int, rng: random.Random) -> list[dict[str, Any]]:
    def body() -> str:
        return " ".join(rng.choice(WORDS) if rng.random() < 0.5 else f"w{rng.randrange(10**6)}" for _ in range(40))

    return [{"id": i, "title": f"t{i}", "body": body()} for i in range(1, count + 1)]


def _load(engine: Engine, rows: list[dict[str, Any]], shards: int | None) -> None:
    simsql.alembic.upgrade(engine)
    Base.metadata.create_all(engine)
    if shards is not None:
        with engine.begin() as connection:
            connection.execute(text("SELECT set_config('citus.shard_count', :n, true)"), {"n": str(shards)})
            simsql.citus.distribute(connection, BenchNote, "id")
    with engine.begin() as connection:
        for start in range(0, len(rows), 2000):
            connection.execute(text("INSERT INTO bench_notes (id, title, body) VALUES (:id, :title, :body)"), rows[start : start + 2000])
    simsql.backfill(engine, BenchNote, workers=0)
    with engine.begin() as connection:
        connection.execute(text("ANALYZE bench_notes"))


def _p50(session: Session, targets: list[str]) -> dict[str, float]:
    queries: dict[str, Callable[[str], Any]] = {
        "most_similar": lambda t: session.execute(simsql.most_similar(select(BenchNote), t, limit=10)).all(),
        "similar_to": lambda t: session.execute(select(BenchNote.id).where(simsql.similar_to(BenchNote, t, 3))).all(),
        "find_original": lambda t: simsql.find_original(session, BenchNote, t),
    }
    found = {}
    for name, query in queries.items():
        query(targets[0])  # warm
        times = []
        for target in targets:
            started = time.perf_counter()
            query(target)
            times.append(time.perf_counter() - started)
        found[name] = statistics.median(times) * 1000
    return found


def measure(url: str, rows: list[dict[str, Any]], targets: list[str], shards: int | None) -> dict[str, float]:
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(url)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    engine = create_engine(url, connect_args={"options": f"-csearch_path={schema},public"})
    try:
        _load(engine, rows, shards)
        with Session(engine) as session:
            return _p50(session, targets)
    finally:
        engine.dispose()
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--citus", default=os.environ.get("SIMSQL_TEST_CITUS_URL"))
    parser.add_argument("--plain", default=os.environ.get("SIMSQL_TEST_DATABASE_URL"))
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--shards", type=int, default=32)
    parser.add_argument("--queries", type=int, default=40)
    arguments = parser.parse_args()
    if not arguments.citus or not arguments.plain:
        parser.error("needs --citus (or SIMSQL_TEST_CITUS_URL) and --plain (or SIMSQL_TEST_DATABASE_URL)")
    rng = random.Random(5)
    rows = _rows(arguments.rows, rng)
    targets = [f"{rng.choice(rows)['title']}\n{rng.choice(rows)['body']}" for _ in range(arguments.queries)]
    citus = measure(arguments.citus, rows, targets, arguments.shards)
    plain = measure(arguments.plain, rows, targets, None)
    for label, found in ((f"citus, {arguments.shards} shards", citus), ("plain", plain)):
        print(f"{label:>18}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in found.items()))
    print(f"{'ratio':>18}: " + ", ".join(f"{k} {citus[k] / plain[k]:.1f}x" for k in citus))


if __name__ == "__main__":
    main()
