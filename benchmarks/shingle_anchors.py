"""Anchor shingles: what a negative originality answer could cost without one probe per block value (issue 43, a what-if).

    python -m benchmarks.shingle_anchors --schema bench_1m --rows 1000000 --build --url postgresql+psycopg://postgres@127.0.0.1:5432/h_scale
    python -m benchmarks.shingle_anchors --schema bench_1m --rows 1000000 --rate-bits 4,5,6 --texts 300 --url ...

Why: at ten million rows a fresh article's :func:`simsql.find_original` costs its probes, about
5,100 btree descents on 10 x 24 blocks (BENCHMARKS.md, "Ten million rows with 10 x 24 blocks"),
and no stopping rule over the same probes cut them ("Stopping a fresh text's probes by margin").
The check's own question is "does most of the submission come from one stored text", which the
confirmation answers with word 5-shingles. So: keep, for each row, the few shingles whose hash
falls in a fixed sample of the hash space (``hash >> (64 - bits) == 0``: one shingle in
``2**bits``, the same rule for every text), in a side table ``(anchor, id)`` with a btree on
``anchor``. A submission whose words mostly lie in a row's shingles shares most of its sampled
shingles with that row, so the rows sharing the most anchors are the candidates; a fresh text
looks up only its own sampled shingles (a few dozen descents, against thousands), and most of
them are in no row.

Hash-threshold sampling, not bottom-k: an excerpt or a padded copy keeps the anchors of the part
it keeps, whatever the rest of either text holds. Anchors held by more than ``--stop-rows`` rows
(boilerplate, quotations) are left out of lookups: their rows would be read for every text that
quotes them, and a copy is found by its rarer anchors (a library would keep the document
frequency beside the table; here it is counted once, after the build).

The table (``benchmarks.scale10m``'s: ids 1..200 the originals of
``benchmarks.originality.corpus(rows, 200, 1000, 22)``) is read, never written; the side table
is ``<schema>.anchors_what_if``, built at the finest rate asked for (a coarser rate is a subset:
its anchors are those with more leading zero bits). Each text is checked both ways in turn, on
one connection: ``simsql.find_original`` (the library) and the anchors (this module's
:func:`anchor_check`, the same confirmation: the share of the submission's words in shingles of
the candidate's text at least 0.5, nearest candidates first, at most four read).

Nothing here is a library feature: no trigger keeps the anchors current, and the stop list is
counted once. It measures what such an index would read and cost.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from multiprocessing import Pool
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

import simsql
from simsql.text.containment import MIN_CONTAINMENT, Shingled, share_of_submission, shingled

from .originality import EVASIONS, corpus, disguised, doc_model, engine_for, recorded_blocks, words_from_row
from .timing import emit, summary

TABLE = "anchors_what_if"


class Side(NamedTuple):
    """The side table looked up, and how its ids name rows of the text table: ``replicas`` > 1
    for :func:`replicate`'s table, whose id ``i + k * rows`` is a copy of row ``i``'s anchors."""

    table: str = TABLE
    rows: int = 0
    replicas: int = 1

    def text_id(self, column: str) -> str:
        return column if self.replicas == 1 else f"(({column} - 1) % {self.rows} + 1)"
CANDIDATES = 4
"""Candidates whose text is read, most shared anchors first: find_original's first stage reads four."""


def anchors_of(shingles: Shingled, bits: int) -> np.ndarray:
    """The distinct shingle hashes (plain and within lines) of a text whose ``bits`` leading bits
    are zero, as signed 64-bit values (the column type), sorted."""
    hashes = np.concatenate([shingles.plain_runs.hashes, shingles.line_runs.hashes])
    kept = np.unique(hashes[(hashes >> np.uint64(64 - bits)) == 0])
    return kept.view(np.int64)


def _rows_anchors(job: tuple[int, list[tuple[int, str]]]) -> bytes:
    bits, rows = job
    lines = []
    for row_id, body in rows:
        for anchor in anchors_of(shingled(body), bits).tolist():
            lines.append(f"{anchor}\t{row_id}\n")
    return "".join(lines).encode()


def _batches(connection: Any, schema: str, size: int, bits: int) -> Iterator[tuple[int, list[tuple[int, str]]]]:
    with connection.cursor(name="anchor_rows") as cursor:
        cursor.itersize = size
        cursor.execute(f"SELECT id, body FROM {schema}.bench_wide_docs ORDER BY id")
        while rows := cursor.fetchmany(size):
            yield bits, rows


def build(url: str, schema: str, bits: int, workers: int) -> dict[str, Any]:
    """The side table at ``1 / 2**bits``: every row's anchors, COPY'd, then the index, then
    ANALYZE; times and sizes."""
    import psycopg

    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    started = time.perf_counter()
    with psycopg.connect(dsn) as reader, psycopg.connect(dsn, autocommit=True) as writer:
        writer.execute(f"DROP TABLE IF EXISTS {schema}.{TABLE}")
        writer.execute(f"CREATE TABLE {schema}.{TABLE} (anchor bigint NOT NULL, id integer NOT NULL)")
        with Pool(workers) as pool, writer.cursor() as cursor:
            with cursor.copy(f"COPY {schema}.{TABLE} (anchor, id) FROM STDIN") as copy:
                for chunk in pool.imap(_rows_anchors, _batches(reader, schema, 2000, bits)):
                    copy.write(chunk)
        loaded = time.perf_counter() - started
        writer.execute("SET maintenance_work_mem = '1GB'")
        writer.execute(f"CREATE INDEX {TABLE}_anchor ON {schema}.{TABLE} (anchor) INCLUDE (id)")
        writer.execute(f"VACUUM ANALYZE {schema}.{TABLE}")
        entries = writer.execute(f"SELECT count(*) FROM {schema}.{TABLE}").fetchone()[0]  # type: ignore[index]
        heap, index = writer.execute(
            f"SELECT pg_table_size('{schema}.{TABLE}'), pg_relation_size('{schema}.{TABLE}_anchor')"
        ).fetchone()  # type: ignore[misc]
        rows = writer.execute(f"SELECT count(*) FROM {schema}.bench_wide_docs").fetchone()[0]  # type: ignore[index]
    return {"bits": bits, "rows": rows, "entries": entries, "entries_per_row": entries / rows, "load_s": round(loaded, 1),
            "total_s": round(time.perf_counter() - started, 1), "heap_bytes_per_row": heap / rows, "index_bytes_per_row": index / rows}  # fmt: skip


def replicate(url: str, schema: str, bits: int, replicas: int) -> dict[str, Any]:
    """A side table as ``replicas`` times the rows would have it: the anchors (at ``1 / 2**bits``)
    of every row, and of every row past the 200 originals ``replicas - 1`` times more under ids
    offset by the table's rows, as a table ``replicas`` times larger built from the same
    paragraph pool repeats each paragraph ``replicas`` times as often (``benchmarks.scale10m``:
    its 10M table is exactly that). Lookups then read a side table of that size, with
    that many postings an anchor; candidates' texts are read from the row they copy."""
    import psycopg

    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    side = f"{TABLE}_x{replicas}"
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as writer:
        rows = writer.execute(f"SELECT count(*) FROM {schema}.bench_wide_docs").fetchone()[0]  # type: ignore[index]
        writer.execute(f"DROP TABLE IF EXISTS {schema}.{side}")
        writer.execute(f"CREATE UNLOGGED TABLE {schema}.{side} (anchor bigint NOT NULL, id integer NOT NULL)")
        top = 1 << (64 - bits)
        writer.execute(f"INSERT INTO {schema}.{side} SELECT anchor, id FROM {schema}.{TABLE} WHERE anchor >= 0 AND anchor < %s", [top])
        for replica in range(1, replicas):
            writer.execute(
                f"INSERT INTO {schema}.{side} SELECT anchor, id + %s FROM {schema}.{TABLE} WHERE anchor >= 0 AND anchor < %s AND id > 200",
                [replica * rows, top],
            )
        writer.execute("SET maintenance_work_mem = '2GB'")
        writer.execute(f"CREATE INDEX {side}_anchor ON {schema}.{side} (anchor) INCLUDE (id)")
        writer.execute(f"VACUUM ANALYZE {schema}.{side}")
        entries = writer.execute(f"SELECT count(*) FROM {schema}.{side}").fetchone()[0]  # type: ignore[index]
        heap, index = writer.execute(f"SELECT pg_table_size('{schema}.{side}'), pg_relation_size('{schema}.{side}_anchor')").fetchone()  # type: ignore[misc]
    named = rows * replicas
    return {"bits": bits, "replicas": replicas, "rows_named": named, "entries": entries, "entries_per_row": entries / named,
            "seconds": round(time.perf_counter() - started, 1), "heap_bytes_per_row": heap / named, "index_bytes_per_row": index / named}  # fmt: skip


def stop_anchors(connection: Connection, schema: str, stop_rows: int, side: Side) -> set[int]:
    """Anchors held by more than ``stop_rows`` rows."""
    found = connection.execute(text(f"SELECT anchor FROM {schema}.{side.table} GROUP BY anchor HAVING count(*) > :n"), {"n": stop_rows})
    return {row[0] for row in found}


CANDIDATES_SQL = """
WITH shared AS (
    SELECT id, count(*) AS anchors FROM {schema}.{table} WHERE anchor = ANY(CAST(:anchors AS bigint[]))
    GROUP BY id ORDER BY anchors DESC, id LIMIT :limit
)
SELECT shared.id, d.body FROM shared JOIN {schema}.bench_wide_docs AS d ON d.id = {text_id} ORDER BY shared.anchors DESC, shared.id
"""


def anchor_check(session: Session, schema: str, body: str, bits: int, stop: set[int], side: Side) -> tuple[int | None, int, int]:
    """The row most of ``body`` comes from by its anchors, or None; the anchors looked up; the
    anchors left out as too common."""
    submitted = shingled(body)
    anchors = anchors_of(submitted, bits).tolist()
    wanted = [anchor for anchor in anchors if anchor not in stop]
    if not wanted:
        return None, 0, len(anchors)
    statement = text(CANDIDATES_SQL.format(schema=schema, table=side.table, text_id=side.text_id("shared.id")))
    for row_id, stored in session.execute(statement, {"anchors": wanted, "limit": CANDIDATES}).all():
        if share_of_submission(submitted, shingled(stored)) >= MIN_CONTAINMENT:
            return row_id, len(wanted), len(anchors) - len(wanted)
    return None, len(wanted), len(anchors) - len(wanted)


def hybrid_check(session: Session, model: type, schema: str, body: str, bits: int, stop: set[int], side: Side) -> tuple[int | None, int]:
    """:func:`anchor_check`, and when it finds nothing for a text at least half of whose anchors
    are too common to look up (a text made of much-quoted material), ``simsql.find_original``:
    the anchors answer the text they can, the signature's probes the rest."""
    found, looked_up, common = anchor_check(session, schema, body, bits, stop, side)
    if found is None and common >= looked_up and common:
        match = simsql.find_original(session, model, body)
        return (None if match is None else match.row.id), looked_up
    return found, looked_up


def postings_read(session: Session, schema: str, body: str, bits: int, stop: set[int], side: Side) -> int:
    """Index entries the lookup of ``body``'s anchors reads (EXPLAIN ANALYZE's rows of the scan)."""
    wanted = [anchor for anchor in anchors_of(shingled(body), bits).tolist() if anchor not in stop]
    if not wanted:
        return 0
    plan = session.execute(
        text(f"EXPLAIN (ANALYZE, FORMAT JSON) SELECT id FROM {schema}.{side.table} WHERE anchor = ANY(CAST(:a AS bigint[]))"), {"a": wanted}
    ).scalar_one()
    return int(plan[0]["Plan"]["Actual Rows"])


def _alarm_kind(body: str, stored: str) -> str:
    """An alarm is a true overlap when most of the text's words lie in paragraphs the row holds
    (:func:`benchmarks.originality.words_from_row`), as the originality benchmark counts them."""
    return "true_overlaps" if words_from_row(body, stored)[0] >= 0.5 else "false_alarms"


def measure(
    url: str, schema: str, rows: int, rates: Sequence[int], texts: int, stop_rows: int, seed: int, source: str, lang: str,
    side: Side, with_library: bool, originals: int = 200, fresh: int = 1000,
) -> dict[str, Any]:  # fmt: skip
    data = corpus(rows, originals, fresh, 22, lang, source)
    rng = random.Random(seed)
    copies = disguised(data, 22)
    populations = {"fresh_pool": rng.sample(data["fresh_shared"], texts), "fresh_unseen": rng.sample(data["fresh_disjoint"], texts)}
    engine = engine_for(url, schema=schema)
    model = doc_model(None, wide_blocks=recorded_blocks(engine))
    session = Session(engine)
    stop = stop_anchors(session.connection(), schema, stop_rows, side)
    result: dict[str, Any] = {"schema": schema, "rows": rows, "source": source, "lang": lang, "stop_rows": stop_rows, "stop_anchors": len(stop),
                              "side": side._asdict(), "load_before": list(os.getloadavg()), "rates": {}}  # fmt: skip
    simsql.find_original(session, model, populations["fresh_unseen"][0])  # compile and prepare
    library: dict[str, list[float]] = {"copies": [], "fresh_pool": [], "fresh_unseen": []}
    library_found: dict[str, int] = {kind: 0 for kind in EVASIONS}
    library_alarms = {kind: {name: 0 for name in populations} for kind in ("false_alarms", "true_overlaps")}
    per_rate: dict[Any, dict[str, Any]] = {
        bits: {"times": {"copies": [], "fresh_pool": [], "fresh_unseen": []}, "found": {kind: 0 for kind in EVASIONS},
               "alarms": {kind: {name: 0 for name in populations} for kind in ("false_alarms", "true_overlaps")}, "looked_up": {"copies": [], "fresh_pool": [], "fresh_unseen": []}}
        for bits in [*rates, *((("hybrid", b) for b in rates) if with_library else ())]
    }  # fmt: skip
    timed_copies = [copy for number, copy in enumerate(copies) if number % max(1, len(copies) // texts) == 0][:texts]
    for index, kind, body in copies:
        if with_library:
            match = simsql.find_original(session, model, body)
            library_found[kind] += match is not None and match.row.id == index
        for bits in rates:
            found, _, _ = anchor_check(session, schema, body, bits, stop, side)
            per_rate[bits]["found"][kind] += found == index
            if with_library:
                found, _ = hybrid_check(session, model, schema, body, bits, stop, side)
                per_rate[("hybrid", bits)]["found"][kind] += found == index
    work = [("copies", body) for _, _, body in timed_copies] + [(name, body) for name, bodies in populations.items() for body in bodies]
    rng.shuffle(work)
    ways: list[Any] = [None, *rates, *(("hybrid", b) for b in rates)] if with_library else [*rates]  # None: the library
    for turn, (name, body) in enumerate(work):  # every way takes each text in turn, the first rotating
        for way in ways[turn % len(ways) :] + ways[: turn % len(ways)]:
            started = time.perf_counter()
            if way is None:
                match = simsql.find_original(session, model, body)
                library[name].append(time.perf_counter() - started)
                if name != "copies" and match is not None:
                    library_alarms[_alarm_kind(body, match.row.body)][name] += 1
                continue
            if isinstance(way, tuple):
                found, looked_up = hybrid_check(session, model, schema, body, way[1], stop, side)
            else:
                found, looked_up, _ = anchor_check(session, schema, body, way, stop, side)
            per_rate[way]["times"][name].append(time.perf_counter() - started)
            per_rate[way]["looked_up"][name].append(looked_up)
            if name != "copies" and found is not None:
                stored = session.execute(text(f"SELECT body FROM {schema}.bench_wide_docs WHERE id = {side.text_id(':id')}"), {"id": found}).scalar_one()
                per_rate[way]["alarms"][_alarm_kind(body, stored)][name] += 1
    sampled = [body for name, body in work if name != "copies"][:60]
    for way in per_rate:
        bits = way[1] if isinstance(way, tuple) else way
        entries = session.execute(
            text(f"SELECT count(*) FROM {schema}.{side.table} WHERE anchor >= 0 AND anchor < :top"), {"top": 1 << (64 - bits)}
        ).scalar_one() / side.replicas
        measured = per_rate[way]
        result["rates"][f"hybrid {bits}" if isinstance(way, tuple) else str(bits)] = {
            "rate": f"1/{2**bits}", "entries_per_row": entries / rows,
            "recall": {kind: hits / (len(copies) // len(EVASIONS)) for kind, hits in measured["found"].items()},
            "alarms": measured["alarms"],
            "latency": {name: summary(times) for name, times in measured["times"].items()},
            "anchors_looked_up_p50": {name: statistics.median(values) for name, values in measured["looked_up"].items()},
            "fresh_postings_read_p50": statistics.median(postings_read(session, schema, body, bits, stop, side) for body in sampled),
        }  # fmt: skip
    result["library"] = None if not with_library else {
        "recall": {kind: hits / (len(copies) // len(EVASIONS)) for kind, hits in library_found.items()},
        "alarms": library_alarms, "latency": {name: summary(times) for name, times in library.items()},
    }  # fmt: skip
    result["load_after"] = list(os.getloadavg())
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="PostgreSQL")
    parser.add_argument("--schema", required=True, help="a table built by benchmarks.scale10m (read only)")
    parser.add_argument("--rows", type=int, required=True, help="its rows (names the corpus its originals come from)")
    parser.add_argument("--source", default="manpages", choices=("manpages", "heldout"))
    parser.add_argument("--lang", default="en", choices=("en", "zh"))
    parser.add_argument("--originals", type=int, default=200, help="the table's originals (benchmarks.originality --originals)")
    parser.add_argument("--fresh", type=int, default=1000, help="fresh articles of its corpus (benchmarks.originality --fresh)")
    parser.add_argument("--build", action="store_true", help="(re)build the side table at the finest rate of --rate-bits")
    parser.add_argument("--rate-bits", default="5", help="sampling rates to measure, 1/2**bits each, comma-separated")
    parser.add_argument("--texts", type=int, default=300, help="timed texts per population")
    parser.add_argument("--stop-rows", type=int, default=1000, help="anchors held by more rows are not looked up")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--replicas", type=int, default=1, help="look up a side table this many times the rows (built with --build); the library is not run")
    parser.add_argument("--seed", type=int, default=43)
    parser.add_argument("--results", type=Path)
    args = parser.parse_args(argv)
    rates = sorted(int(bits) for bits in args.rate_bits.split(","))
    report: dict[str, Any] = {"argv": sys.argv[1:]}
    if args.build and args.replicas == 1:
        report["build"] = build(args.url, args.schema, rates[0], args.workers)
    elif args.build:
        report["build"] = replicate(args.url, args.schema, rates[0], args.replicas)
    if args.build:
        print(json.dumps(report["build"]), flush=True)
    side = Side() if args.replicas == 1 else Side(f"{TABLE}_x{args.replicas}", args.rows, args.replicas)
    report["measured"] = measure(args.url, args.schema, args.rows, rates, args.texts, args.stop_rows, args.seed, args.source, args.lang, side, args.replicas == 1, args.originals, args.fresh)
    emit(report, args.results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
