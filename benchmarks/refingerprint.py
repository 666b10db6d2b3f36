"""Online refingerprint: throughput, and what writers feel while it runs and at its switch.

    python -m benchmarks.refingerprint --url postgresql://... [--rows 20000] [--side-table]

Builds ``bench_refingerprint`` (server-generated text, 80 words a row) in the URL's database,
attaches it with version 1 and backfills it, then moves it to today's default while two writer
threads update rows one transaction at a time, and prints the run's figures and the slowest
write (the switch's lock is the only wait writers can meet). Drops the table afterwards.
"""

from __future__ import annotations

import argparse
import random
import threading
import time

from sqlalchemy import text

import simsql
import simsql.alembic
from simsql.lifecycle import refingerprint
from simsql.urls import engine_for


def _writer(engine, rows: int, stop: threading.Event, latencies: list[float], seed: int) -> None:
    rng = random.Random(seed)
    with engine.connect() as connection:
        while not stop.is_set():
            started = time.perf_counter()
            connection.execute(
                text("UPDATE bench_refingerprint SET body = body || ' edited' WHERE id = :id"), {"id": rng.randrange(1, rows + 1)}
            )
            connection.commit()
            latencies.append(time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--side-table", action="store_true")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    engine = engine_for(args.url)
    simsql.alembic.upgrade(engine)
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE IF EXISTS bench_refingerprint CASCADE"))
        connection.execute(text("CREATE TABLE bench_refingerprint (id int PRIMARY KEY, body text)"))
        connection.execute(
            text(
                "INSERT INTO bench_refingerprint SELECT g, (SELECT string_agg('w' || floor(random() * 50000)::int, ' ') "
                "FROM generate_series(1, 80 + g % 2 - g % 2)) FROM generate_series(1, :n) AS g"
            ),
            {"n": args.rows},
        )
    try:
        simsql.attach_table(engine, "bench_refingerprint", ["body"], side_table=args.side_table,
                            fingerprinter=simsql.Fingerprinter(version=1))
        simsql.backfill(engine, "bench_refingerprint", workers=args.workers)
        stop, latencies = threading.Event(), [[], []]
        writers = [threading.Thread(target=_writer, args=(engine, args.rows, stop, latencies[i], i)) for i in range(2)]
        for writer in writers:
            writer.start()
        try:
            result = refingerprint(engine, "bench_refingerprint", to=simsql.Fingerprinter(), workers=args.workers)
        finally:
            stop.set()
            for writer in writers:
                writer.join()
        writes = sorted(latencies[0] + latencies[1])
        print(f"mode: {'side_table' if args.side_table else 'columns'}, rows: {args.rows}, workers: {args.workers}")
        print(f"refingerprint: {result.seconds:.1f} s ({args.rows / result.seconds:,.0f} rows/s), "
              f"{result.rows_at_switch} rows fingerprinted at the switch, lock held {result.switch_seconds * 1000:.0f} ms")
        print(f"concurrent writes: {len(writes)}, p50 {writes[len(writes) // 2] * 1000:.1f} ms, "
              f"max {writes[-1] * 1000:.0f} ms")
    finally:
        with engine.begin() as connection:
            connection.execute(text("DELETE FROM simsql_registry WHERE table_name = 'bench_refingerprint'"))
            connection.execute(text("DELETE FROM simsql_backfill WHERE table_name LIKE 'bench_refingerprint%'"))
            connection.execute(text("DROP TABLE IF EXISTS bench_refingerprint CASCADE"))
        engine.dispose()


if __name__ == "__main__":
    main()
