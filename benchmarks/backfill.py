"""Backfill throughput: the same rows on MariaDB/MySQL and on PostgreSQL.

Each server gets a ``SimHashMixin`` table (columns mode) and an ``attach()`` side table (side-table
mode) made by ``create_all``, loaded by raw SQL with ``--rows`` rows and no fingerprints (what a
bulk loader leaves); then ``simsql.backfill()`` runs over them ``--repeat`` times (fingerprints and
cursor cleared between runs) for each ``--workers`` count. The best run is reported as rows/s,
with the load average the machine had (``os.getloadavg``), since the figures mean little without it.

``--strategies`` also times, on MySQL/MariaDB only, three ways to store a batch of precomputed
fingerprints where there are no arrays (one ``UPDATE ... JOIN`` each): from a temporary table
loaded by a multi-row INSERT (what simsql does), from ``JSON_TABLE`` over one bound JSON document,
and from a ``UNION ALL`` of one-row SELECTs.

    python -m benchmarks.backfill --rows 20000 --workers 0 2 --repeat 3 --strategies

The MySQL database and PostgreSQL schema (both ``simsql_bench_backfill``) are dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, String, Text, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

import simsql
import simsql.store
from simsql.schema.names import metadata
from simsql.store.storage import text_digest
from simsql.urls import normalise_url

from . import log

DEFAULT_MYSQL = "mysql+pymysql://root@127.0.0.1:3306/test"
DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
PLACE = "simsql_bench_backfill"


class _Base(DeclarativeBase):
    pass


class BackfillArticle(simsql.SimHashMixin, _Base):
    __tablename__ = "bench_backfill_articles"
    __simhash_source__ = ("title", "body")
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


class BackfillPost(_Base):
    __tablename__ = "bench_backfill_posts"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


simsql.attach_model(BackfillPost, source=("title", "body"))
MODELS = {"columns": BackfillArticle, "side_table": BackfillPost}


def rows(n: int, seed: int = 1) -> list[dict[str, Any]]:
    """``n`` articles of 100 words from a 50,000-word vocabulary (about 700 bytes each)."""
    rng = random.Random(seed)
    return [{"id": i, "title": f"title {i}", "body": " ".join(f"w{rng.randrange(50_000)}" for _ in range(100))} for i in range(1, n + 1)]


@contextmanager
def _mysql(url: str) -> Iterator[Engine]:
    target = normalise_url(url)
    admin = create_engine(target)
    with admin.begin() as connection:
        connection.execute(text(f"DROP DATABASE IF EXISTS {PLACE}"))
        connection.execute(text(f"CREATE DATABASE {PLACE} CHARACTER SET utf8mb4"))
    engine = create_engine(target.set(database=PLACE))
    try:
        yield engine
    finally:
        engine.dispose()
        with admin.begin() as connection:
            connection.execute(text(f"DROP DATABASE IF EXISTS {PLACE}"))
        admin.dispose()


@contextmanager
def _postgresql(url: str) -> Iterator[Engine]:
    admin = create_engine(normalise_url(url))
    with admin.begin() as connection:
        connection.execute(text(f"DROP SCHEMA IF EXISTS {PLACE} CASCADE"))
        connection.execute(text(f"CREATE SCHEMA {PLACE}"))
    engine = create_engine(normalise_url(url), connect_args={"options": f"-csearch_path={PLACE}"})
    try:
        yield engine
    finally:
        engine.dispose()
        with admin.begin() as connection:
            connection.execute(text(f"DROP SCHEMA IF EXISTS {PLACE} CASCADE"))
        admin.dispose()


def _load(engine: Engine, data: list[dict[str, Any]]) -> None:
    metadata.create_all(engine)
    _Base.metadata.create_all(engine)
    with engine.begin() as connection:
        for model in MODELS.values():
            table = model.__tablename__  # type: ignore[attr-defined]
            for start in range(0, len(data), 2000):
                connection.execute(text(f"INSERT INTO {table} (id, title, body) VALUES (:id, :title, :body)"), data[start : start + 2000])


def _clear(engine: Engine, mode: str) -> None:
    with engine.begin() as connection:
        if mode == "columns":
            connection.execute(text(f"UPDATE {BackfillArticle.__tablename__} SET simhash = NULL, simhash_src = NULL"))
        else:
            connection.execute(text(f"DELETE FROM {simsql.store.binding_for(BackfillPost).table.name}"))
        connection.execute(text("DELETE FROM simsql_backfill"))


def measure(engine: Engine, size: int, workers: list[int], repeat: int) -> dict[str, Any]:
    """Best-of-``repeat`` backfill rows/s per storage mode and worker count."""
    out: dict[str, Any] = {}
    for mode, model in MODELS.items():
        for count in workers:
            best = None
            for _ in range(repeat):
                _clear(engine, mode)
                result = simsql.backfill(engine, model, workers=count)
                assert result.rows_fingerprinted == size, result
                best = result if best is None or result.seconds < best.seconds else best
            assert best is not None
            out[f"{mode}, workers={count}"] = {"seconds": round(best.seconds, 3), "rows_per_second": round(best.rows_per_second)}
            log(f"{engine.dialect.name} {mode} workers={count}: {best.rows_per_second:,.0f} rows/s")
    return out


# -- MySQL: three ways to write a batch without arrays ---------------------------------------------


def _strategies(batch: list[tuple[Any, int | None, str]]) -> dict[str, Callable[[Any], None]]:
    table = BackfillArticle.__tablename__
    update = "SET b.simhash = v.fp, b.simhash_src = v.src WHERE b.simhash IS NULL OR b.simhash_src IS NULL"

    def temporary(connection: Any) -> None:
        connection.execute(text("DELETE FROM bench_batch"))
        connection.execute(text("INSERT INTO bench_batch (k_0, fp, src) VALUES (:k, :fp, :src)"), [{"k": k, "fp": f, "src": s} for k, f, s in batch])
        connection.execute(text(f"UPDATE {table} AS b JOIN bench_batch AS v ON b.id = v.k_0 {update}"))

    def json_table(connection: Any) -> None:
        columns = "k_0 INT PATH '$[0]', fp BIGINT UNSIGNED PATH '$[1]', src CHAR(32) PATH '$[2]'"
        connection.execute(
            text(f"UPDATE {table} AS b JOIN JSON_TABLE(:doc, '$[*]' COLUMNS ({columns})) AS v ON b.id = v.k_0 {update}"),
            {"doc": json.dumps(batch)},
        )

    def union_all(connection: Any) -> None:
        selects = " UNION ALL ".join(f"SELECT :k{i} AS k_0, :f{i} AS fp, :s{i} AS src" for i in range(len(batch)))
        params = {f"{name}{i}": value for i, row in enumerate(batch) for name, value in zip("kfs", row)}
        connection.execute(text(f"UPDATE {table} AS b JOIN ({selects}) AS v ON b.id = v.k_0 {update}"), params)

    return {"temporary table": temporary, "JSON_TABLE": json_table, "UNION ALL": union_all}


def strategies(engine: Engine, data: list[dict[str, Any]], repeat: int, batch_size: int = 2000) -> dict[str, float]:
    """Seconds (best of ``repeat``) to store every row's precomputed fingerprint, per strategy."""
    fingerprinter = simsql.store.binding_for(BackfillArticle).fingerprinter
    texts = [f"{r['title']}\n{r['body']}" for r in data]
    prepared = [(r["id"], fp, text_digest(t).hex) for r, fp, t in zip(data, fingerprinter.fingerprint_many(texts), texts)]
    batches = [prepared[i : i + batch_size] for i in range(0, len(prepared), batch_size)]
    best: dict[str, float] = {}
    with engine.connect() as connection:
        connection.execute(text("CREATE TEMPORARY TABLE bench_batch (k_0 INT NOT NULL PRIMARY KEY, fp BIGINT UNSIGNED, src CHAR(32))"))
        for _ in range(repeat):
            for name in _strategies([]):
                _clear(engine, "columns")
                started = time.perf_counter()
                for batch in batches:
                    _strategies(batch)[name](connection)
                    connection.commit()
                best[name] = min(best.get(name, float("inf")), time.perf_counter() - started)
        stored = connection.execute(text(f"SELECT COUNT(*) FROM {BackfillArticle.__tablename__} WHERE simhash IS NOT NULL")).scalar_one()
        assert stored == len(data), stored
    for name, seconds in best.items():
        log(f"write strategy {name}: {seconds:.2f} s for {len(data)} rows")
    return {name: round(seconds, 3) for name, seconds in best.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.backfill", description=__doc__.splitlines()[0])
    parser.add_argument("--mysql-url", default=DEFAULT_MYSQL)
    parser.add_argument("--pg-url", default=DEFAULT_PG, help="'' to skip PostgreSQL")
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--strategies", action="store_true", help="also time three ways to write a batch on MySQL")
    args = parser.parse_args(argv)
    data = rows(args.rows)
    results: dict[str, Any] = {"rows": args.rows, "load_average_before": os.getloadavg()}
    servers = [("mysql", _mysql, args.mysql_url)] + ([("postgresql", _postgresql, args.pg_url)] if args.pg_url else [])
    for name, place, url in servers:
        with place(url) as engine:
            _load(engine, data)
            with engine.connect() as connection:
                version = connection.execute(text("SELECT version()")).scalar_one()
            results[name] = {"server": str(version).split(",")[0], "backfill": measure(engine, args.rows, args.workers, args.repeat)}
            if name == "mysql" and args.strategies:
                results[name]["write_strategies_seconds"] = strategies(engine, data, args.repeat)
    results["load_average_after"] = os.getloadavg()
    results["mysql_url"] = make_url(normalise_url(args.mysql_url)).render_as_string(hide_password=True)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
