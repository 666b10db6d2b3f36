"""Running the demo and writing its report: the one place that writes to the output stream.

``simsql demo`` (the CLI) and ``python -m simsql.demo`` call :func:`run_demo`; it opens the
database, runs the steps in order and hands each one a ``say`` that writes a line to ``out``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from sqlalchemy import Engine
from sqlalchemy.orm import Session

import simsql

from ..urls import engine_for, normalise_url
from .corpus import MAX_ARTICLES, Article, load_corpus
from .database import LOAD_BATCH, SCHEMA, DemoArticle, analyze, insert_rows, one_demo_at_a_time, recreate_table
from .planting import KINDS, SEED, PlantedCopy, Row, plant_copies
from .progress import progress_bar
from .report import Say, Timings
from .sections import duplicates_section, most_similar_section, originality_section

__all__ = ["main", "run_demo"]


def run_demo(url: str | None, out: TextIO = sys.stdout, *, limit: int | None = None) -> int:
    """Load the corpus into ``url`` (the embedded PostgreSQL when None), in the schema
    ``simsql_demo``, and show what simsql finds. ``limit`` caps the number of articles.
    Returns 0."""

    def say(line: str = "") -> None:
        print(line.rstrip(), file=out, flush=True)

    started = time.perf_counter()
    timings: Timings = []
    say("simsql demo: near-duplicates and most similar articles inside your database")
    say()
    url, where = _database(url, timings)
    engine = engine_for(url)
    try:
        with one_demo_at_a_time(engine, lambda: say("  waiting for another simsql demo on this database to finish ...")):
            _run_steps(engine, say, where, timings, limit)
    finally:
        engine.dispose()
    _timings_section(say, timings, time.perf_counter() - started)
    say()
    say(f"The rows stay in {SCHEMA}.{DemoArticle.__tablename__}; `simsql demo --url URL` runs this on your own PostgreSQL or MySQL/MariaDB.")
    return 0


def _database(url: str | None, timings: Timings) -> tuple[str, str]:
    """The URL to run on and how the report names it: the embedded PostgreSQL when None."""
    if url is not None:
        return url, normalise_url(url).render_as_string(hide_password=True)
    from ..embedded import default_data_dir, embedded_url

    t0 = time.perf_counter()
    url = embedded_url()
    timings.append(("embedded PostgreSQL up", time.perf_counter() - t0))
    return url, f"embedded PostgreSQL in {default_data_dir()} (nothing to set up)"


def _run_steps(engine: Engine, say: Say, where: str, timings: Timings, limit: int | None) -> None:
    _database_section(engine, say, where, timings)
    articles, rows, planted = _corpus_section(say, timings, limit)
    _load_section(engine, say, rows, timings)
    with Session(engine) as session:
        most_similar_section(session, say, articles, planted, timings)
        duplicates_section(session, say, planted, timings)
        originality_section(session, say, articles, planted, timings)


def _database_section(engine: Engine, say: Say, where: str, timings: Timings) -> None:
    t0 = time.perf_counter()
    server = recreate_table(engine)
    timings.append(("database ready", time.perf_counter() - t0))
    say(f"  database   {where}")
    say(f"             {server}, table {SCHEMA}.{DemoArticle.__tablename__} (recreated each run)")


def _corpus_section(say: Say, timings: Timings, limit: int | None) -> tuple[list[Article], list[Row], list[PlantedCopy]]:
    """Read the documentation, plant the copies, say what was planted."""
    t0 = time.perf_counter()
    articles, used = load_corpus(limit)
    if len(articles) < 20:
        raise simsql.SimsqlError(
            f"found only {len(articles)} articles of documentation in this Python installation; "
            "the demo needs the standard library's .py sources"
        )
    rows, planted = plant_copies(articles, random.Random(SEED))
    timings.append(("read documentation", time.perf_counter() - t0))
    count = {kind: sum(p.kind == kind for p in planted) for kind in KINDS}
    size = sum(len(body) for _, body in articles) / 1e6
    say(f"  corpus     {len(articles)} articles ({size:.1f} MB of real prose): {', '.join(used)}")
    say(f"  planted    {count['edited']} copies with 1-3 words changed, {count['boilerplate']} with a "
        '"Recommended for you" box,')
    say(f"             {count['reordered']} with paragraphs reordered ({len(rows)} rows in all; copies have ids "
        f"above {len(articles)})")
    say("             (no Chinese articles: no installed package ships Chinese prose)")
    return articles, rows, planted


def _load_section(engine: Engine, say: Say, rows: Sequence[Row], timings: Timings) -> None:
    say("")
    say("1. Load through the ORM (SimHashMixin fingerprints title + body on insert)")
    t0 = time.perf_counter()
    with progress_bar(len(rows), "loading", "row") as bar:
        for stored in insert_rows(engine, rows):
            bar.update(stored)
    analyze(engine)
    load_s = time.perf_counter() - t0
    timings.append(("load", load_s))
    say(f"   {len(rows)} rows in {load_s:.2f} s: {len(rows) / load_s:,.0f} rows/s, in batches of {LOAD_BATCH}")


def _timings_section(say: Say, timings: Timings, total_s: float) -> None:
    say("")
    say("Timings")
    for step, seconds in timings:
        say(f"   {step:<28} {seconds * 1000:9.1f} ms")
    say(f"   {'total':<28} {total_s * 1000:9.1f} ms")


def main(argv: list[str] | None = None) -> int:
    """``python -m simsql.demo [--url URL] [--limit N]``."""
    parser = argparse.ArgumentParser(prog="python -m simsql.demo", description="simsql's demo on real text")
    parser.add_argument("--url", default=None, help="a PostgreSQL or MySQL/MariaDB URL (default: the embedded PostgreSQL)")
    parser.add_argument("--limit", type=int, default=None, help=f"articles to load (default: all, at most {MAX_ARTICLES})")
    args = parser.parse_args(argv)
    return run_demo(args.url, limit=args.limit)
