"""The originality check on the wide signature, end to end through ``simsql.find_original``.

    python -m benchmarks.originality --rows 100000                 # PostgreSQL (127.0.0.1:5432)
    python -m benchmarks.originality --rows 20000 --url mysql+pymysql://root@127.0.0.1:3306/test
    python -m benchmarks.originality --lang zh --rows 20000 --originals 100   # Chinese man pages

A table of ``WideSimHashMixin`` rows is filled with real man pages (the originals) and articles
assembled from shared man-page paragraphs (so stored rows share sentences, as real platforms'
do). Measured, with ``find_original``'s defaults:

* **recall per light evasion**: each original disguised (header/footer, 1/2/5% word
  substitutions, a sentence in or out, shuffled paragraphs, shuffled lines, their mixes) must
  be reported as that original;
* **false alarms** on fresh documents: articles assembled from paragraphs the table never saw
  (any alarm is false), and from the table's own paragraph pool (an alarm where most of the
  submission's paragraphs are in the reported row is a true overlap, counted apart);
* **latency** p50/p99 of the check against the plain scan (``ORDER BY`` the 256-bit
  ``bit_count`` distance, ``LIMIT`` the same candidates, same confirmation);
* **storage**: bytes per row of the heap and of each kind of index, index writes per insert.

Results go to ``benchmarks/results/originality-<server>-<rows>.json`` and are printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, String, Text, create_engine, func, insert, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
from simsql.containment import share_of_submission, shingled
from simsql.queries.wide import WIDE_DISTANCE, wide_distance, wide_search

from .corpus import CACHE_DIR, assembled_articles, build_cache, chinese_documents, english_documents, is_chinese, paragraphs
from .edits import add_boilerplate, evade, substitute_words
from .timing import summary

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
SCHEMA = "bench_originality"
EVASIONS = (
    "header_footer", "sub_1", "sub_2", "sub_5", "sentence_in", "sentence_out", "shuffle",
    "mix", "shuffle_lines", "lines_mix", "excerpt_60",
)  # fmt: skip


class Base(DeclarativeBase):
    pass


class Doc(simsql.WideSimHashMixin, Base):
    __tablename__ = "bench_wide_docs"
    __simhash_source__ = ("body",)

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    kind: Mapped[str] = mapped_column(String(12))
    body: Mapped[str] = mapped_column(Text)


def shuffle_lines(body: str, rng: random.Random) -> str:
    lines = [line for line in body.split("\n") if line.strip()]
    rng.shuffle(lines)
    return "\n".join(lines)


def excerpt(body: str, share: float, rng: random.Random) -> str:
    """A contiguous ``share`` of the text's words (Chinese: characters), nothing added (the
    issue's stretch case)."""
    separator = "" if is_chinese(body) else " "
    words = list(body) if not separator else body.split(separator)
    size = max(1, int(len(words) * share))
    start = rng.randrange(len(words) - size + 1)
    return separator.join(words[start : start + size])


def disguise(kind: str, body: str, rng: random.Random, donors: Sequence[str]) -> str:
    if kind == "shuffle_lines":
        return shuffle_lines(body, rng)
    if kind == "lines_mix":
        unit: Any = "char" if is_chinese(body) else "word"
        return add_boilerplate(shuffle_lines(substitute_words(body, 0.01, rng, unit=unit), rng), rng, recommended=False)
    if kind == "excerpt_60":
        return excerpt(body, 0.6, rng)
    return evade(kind, body, rng, donors)


def engine_for(url: str, lang: str = "en") -> Engine:
    """An engine on the benchmark's own schema (PostgreSQL) or database (MySQL/MariaDB:
    ``<the URL's database>_bench_originality``)."""
    parsed = make_url(url)
    schema = SCHEMA if lang == "en" else f"{SCHEMA}_{lang}"
    admin = create_engine(parsed)
    with admin.begin() as connection:
        if parsed.get_backend_name() == "postgresql":
            connection.execute(text(f"CREATE SCHEMA IF NOT EXISTS {schema}"))
            admin.dispose()
            return create_engine(parsed.update_query_dict({"options": f"-csearch_path={schema}"}))
        database = f"{parsed.database}_{schema}" if parsed.database else schema  # beside the URL's own
        connection.execute(text(f"CREATE DATABASE IF NOT EXISTS {database}"))
    admin.dispose()
    return create_engine(parsed.set(database=database))


def digest(body: str) -> uuid.UUID:
    return uuid.UUID(hashlib.md5(body.encode("utf-8", "surrogatepass")).hexdigest())


def load(engine: Engine, rows: list[tuple[str, str]], batch: int = 2000) -> float:
    """Insert ``(kind, body)`` rows with their signatures (computed in batches, as a bulk loader
    would: one ``signatures_many`` call per batch); returns rows per second."""
    fingerprinter = simsql.Fingerprinter()
    names = simsql.binding_for(Doc).names
    started = time.perf_counter()
    with engine.begin() as connection:
        for start in range(0, len(rows), batch):
            chunk = rows[start : start + batch]
            signatures = fingerprinter.signatures_many([body for _, body in chunk], empty="none")
            values = []
            for offset, ((kind, body), signature) in enumerate(zip(chunk, signatures)):
                row: dict[str, Any] = {"id": start + offset + 1, "kind": kind, "body": body, names.digest: digest(body)}
                row.update(dict(zip(names.signature_words, signature.words if signature else (None,) * 4)))
                values.append(row)
            connection.execute(insert(Doc), values)
    return len(rows) / (time.perf_counter() - started)


def corpus(rows: int, originals: int, fresh: int, seed: int, lang: str = "en") -> dict[str, Any]:
    """Originals (whole man pages), the table's filler and fresh articles from disjoint pools
    (kept in ``benchmarks/.cache`` beside the rendered pages they come from: assembling a
    million articles takes minutes)."""
    pages = build_cache("zh" if lang == "zh" else "en")["fingerprint"][:16]  # the rendered pages they come from
    path = CACHE_DIR / f"originality-{pages}-{rows}-{originals}-{fresh}-{seed}.pickle"
    if path.exists():
        with path.open("rb") as handle:
            cached: dict[str, Any] = pickle.load(handle)
        return cached
    data = assemble(rows, originals, fresh, seed, lang)
    with path.open("wb") as handle:
        pickle.dump(data, handle)
    return data


def assemble(rows: int, originals: int, fresh: int, seed: int, lang: str = "en") -> dict[str, Any]:
    docs = chinese_documents() if lang == "zh" else english_documents()
    low, high = (300, 1500) if lang == "zh" else (800, 4000)  # Chinese says as much in fewer characters
    rng = random.Random(seed)
    chosen = rng.sample([doc for doc in docs if len(doc.text) <= 30_000], originals)
    chosen_ids = {doc.doc_id for doc in chosen}
    pool = paragraphs([doc for doc in docs if doc.doc_id not in chosen_ids])
    rng.shuffle(pool)
    held_out, shared = pool[: len(pool) // 5], pool[len(pool) // 5 :]
    return {
        "originals": [doc.text for doc in chosen],
        "filler": list(assembled_articles(shared, rows - originals, seed, min_chars=low, max_chars=high)),
        "fresh_disjoint": list(assembled_articles(held_out, fresh, seed + 1, min_chars=low, max_chars=high)),
        "fresh_shared": list(assembled_articles(shared, fresh, seed + 2, min_chars=low, max_chars=high)),
        "donors": [p for p in held_out[:500]],
    }


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    answer = fn()
    return time.perf_counter() - started, answer


def scan_check(session: Session, body: str, candidates: int = 16) -> Any:
    """The plain scan: every row ordered by its 256-bit distance, the nearest ``candidates``
    confirmed as find_original confirms them."""
    binding = simsql.binding_for(Doc)
    signature = binding.fingerprinter.signature(body)
    distance = wide_distance(binding, signature).label("distance")
    rows = session.execute(select(Doc.id, Doc.body, distance).order_by(distance).limit(candidates)).all()
    submitted = shingled(body)
    for key, stored, _ in rows:
        if share_of_submission(submitted, shingled(stored)) >= 0.5:
            return key
    return None


def one_statement_check(session: Session, body: str, candidates: int = 16) -> Any:
    """The check before staging: every probe of the budget in one statement, the nearest
    ``candidates`` confirmed as find_original confirms them."""
    signature = simsql.binding_for(Doc).fingerprinter.signature(body)
    rows = session.execute(wide_search(Doc, signature, WIDE_DISTANCE, limit=candidates)).all()
    submitted = shingled(body)
    for row, _ in rows:
        if share_of_submission(submitted, shingled(row.body)) >= 0.5:
            return row.id
    return None


def interleaved(session: Session, texts: Sequence[str]) -> dict[str, Any]:
    """find_original, the one-statement check and the plain scan on the same texts, taking
    turns text by text (so the machine's load weighs on all three alike)."""
    checks = {
        "find_original": lambda body: simsql.find_original(session, Doc, body),
        "one_statement": lambda body: one_statement_check(session, body),
        "scan": lambda body: scan_check(session, body),
    }
    times: dict[str, list[float]] = {name: [] for name in checks}
    for body in texts:
        for name, check in checks.items():
            times[name].append(timed(lambda: check(body))[0])
    return {name: summary(values) for name, values in times.items()}


def parts(session: Session, copies: Sequence[str]) -> dict[str, Any]:
    """Where a check's time goes: the submission's signature (Python), the index stage alone
    (the probe statement, candidates' rows included) and how many candidates it returns."""
    fingerprinter = simsql.Fingerprinter()
    signing, probing, found = [], [], []
    for copy in copies:
        elapsed, signature = timed(lambda: fingerprinter.signature(copy))
        signing.append(elapsed)
        elapsed, rows = timed(lambda: session.execute(wide_search(Doc, signature, WIDE_DISTANCE, limit=1000)).all())
        probing.append(elapsed)
        found.append(len(rows))
    return {"signature": summary(signing), "index_stage": summary(probing),
            "candidates_within_bound_p50": statistics.median(found), "candidates_max": max(found)}  # fmt: skip


def recall(session: Session, data: dict[str, Any], seed: int) -> tuple[dict[str, Any], list[float], list[str]]:
    """Share of disguised copies reported as their original, per evasion; the check's times; the copies."""
    found: dict[str, list[int]] = {kind: [] for kind in EVASIONS}
    times, copies = [], []
    for index, original in enumerate(data["originals"], 1):
        for kind in EVASIONS:
            rng = random.Random(f"{seed}/{index}/{kind}")
            copy = disguise(kind, original, rng, data["donors"])
            elapsed, match = timed(lambda: simsql.find_original(session, Doc, copy))
            times.append(elapsed)
            copies.append(copy)
            found[kind].append(int(match is not None and match.row.id == index))
    return {kind: statistics.fmean(hits) for kind, hits in found.items()}, times, copies


def false_alarms(session: Session, texts: Sequence[str]) -> dict[str, Any]:
    """Alarms on fresh texts; an alarm where most of the text's words lie in paragraphs the
    reported row holds is a true overlap (the platform would want it), counted apart. Each
    alarm is listed: the confirmation's share, the share of words really from the row, the row."""
    alarms = overlaps = 0
    listed = []
    for number, body in enumerate(texts):
        match = simsql.find_original(session, Doc, body)
        if match is None:
            continue
        stored = set(match.row.body.split("\n\n"))
        words = [(shingled(p).words, p in stored) for p in body.split("\n\n")]
        really = sum(count for count, held in words if held) / max(1, sum(count for count, _ in words))
        overlaps += really >= 0.5
        alarms += really < 0.5
        listed.append({"text": number, "row": match.row.id, "distance": match.distance, "true_overlap": really >= 0.5,
                       "share": round(share_of_submission(body, match.row.body), 3), "words_from_row": round(really, 3),
                       "paragraphs_from_row": f"{sum(held for _, held in words)}/{len(words)}"})  # fmt: skip
    return {"checks": len(texts), "false_alarms": alarms, "true_overlaps": overlaps, "alarms": listed}


def storage(engine: Engine) -> dict[str, Any]:
    """Bytes per row (PostgreSQL: heap, 64-bit block indexes, wide block indexes, primary key)
    and index writes per insert (every index of the table)."""
    names = simsql.binding_for(Doc).names
    with engine.connect() as connection:
        count = connection.execute(select(func.count()).select_from(Doc)).scalar_one()
        if connection.dialect.name != "postgresql":
            return {"rows": count, "index_writes_per_insert": 1 + len(names.indexes) + len(names.wide_indexes)}
        size = lambda name: connection.execute(text("SELECT pg_relation_size(CAST(:n AS regclass))"), {"n": name}).scalar_one()  # noqa: E731
        heap = size(names.table)
        v2 = sum(size(index) for index in names.indexes)
        wide = sum(size(index) for index in names.wide_indexes)
        widths = connection.execute(text(
            f"SELECT avg(pg_column_size(simhash_w1) + pg_column_size(simhash_w2) + pg_column_size(simhash_w3)), "
            f"avg({' + '.join(f'pg_column_size({b})' for b in names.wide_blocks)}) FROM {names.table}"
        )).one()  # fmt: skip
    return {
        "rows": count,
        "heap_bytes_per_row": heap / count,
        "wide_words_bytes_per_row": float(widths[0]),
        "wide_blocks_heap_bytes_per_row": float(widths[1]),
        "v2_block_indexes_bytes_per_row": v2 / count,
        "wide_block_indexes_bytes_per_row": wide / count,
        "index_writes_per_insert": 1 + len(names.indexes) + len(names.wide_indexes),
    }


def build(engine: Engine, data: dict[str, Any], reuse: bool) -> dict[str, Any]:
    rows = [("original", body) for body in data["originals"]] + [("filler", body) for body in data["filler"]]
    with engine.connect() as connection:
        exists = engine.dialect.has_table(connection, Doc.__tablename__)
        present = connection.execute(select(func.count()).select_from(Doc)).scalar_one() if exists else 0
    if reuse and present == len(rows):
        return {"reused": True}
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    rate = load(engine, rows)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        # VACUUM: the visibility map lets the probes be index-only scans, as on a settled table
        connection.execute(text(f"{'VACUUM ANALYZE ' if engine.dialect.name == 'postgresql' else 'ANALYZE TABLE '}{Doc.__tablename__}"))
    return {"reused": False, "load_rows_per_s": rate}


def run(url: str, rows: int, originals: int, fresh: int, scans: int, seed: int, reuse: bool, lang: str = "en") -> dict[str, Any]:
    engine = engine_for(url, lang)
    data = corpus(rows, originals, fresh, seed, lang)
    result: dict[str, Any] = {"server": engine.dialect.name, "lang": lang, "rows": rows, "originals": originals, "build": build(engine, data, reuse)}
    with Session(engine) as session:
        result["recall"], times, copies = recall(session, data, seed)
        result["check"] = summary(times)
        result["false_alarms"] = {
            "fresh_disjoint": false_alarms(session, data["fresh_disjoint"]),
            "fresh_shared": false_alarms(session, data["fresh_shared"]),
        }
        rng = random.Random(seed)
        result["interleaved_copies"] = interleaved(session, rng.sample(copies, min(scans, len(copies))))
        result["interleaved_fresh"] = interleaved(session, rng.sample(data["fresh_shared"], min(scans, len(data["fresh_shared"]))))
        result["parts"] = parts(session, copies[:: max(1, len(copies) // 200)])
    result["scan"] = result["interleaved_copies"]["scan"]
    result["speedup_p50"] = {
        population: result[f"interleaved_{population}"]["scan"]["p50_ms"] / result[f"interleaved_{population}"]["find_original"]["p50_ms"]
        for population in ("copies", "fresh")
    }
    result["storage"] = storage(engine)
    engine.dispose()
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--originals", type=int, default=200, help="man pages stored and disguised")
    parser.add_argument("--fresh", type=int, default=1000, help="fresh documents per population")
    parser.add_argument("--scans", type=int, default=60, help="copies and fresh texts timed interleaved with the plain scan")
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--reuse", action="store_true", help="keep a table already loaded with these rows")
    parser.add_argument("--lang", choices=("en", "zh"), default="en", help="English or Chinese man pages")
    args = parser.parse_args(argv)
    result = run(args.url, args.rows, args.originals, args.fresh, args.scans, args.seed, args.reuse, args.lang)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"originality-{result['server']}-{args.rows}{'' if args.lang == 'en' else '-' + args.lang}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
