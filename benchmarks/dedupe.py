"""Whole-table deduplication (issue 42): ``simsql.near_duplicates`` on a wide table, beside
datasketch's MinHash LSH on the same real texts and edits, and timed on a whole table.

    python -m benchmarks.dedupe quality                          # man pages (tuned on), en and zh
    python -m benchmarks.dedupe quality --source heldout         # Debian's manuals, never tuned on
    python -m benchmarks.dedupe quality --url mysql+pymysql://root@127.0.0.1:3306/test
    python -m benchmarks.dedupe quality --repeat 5                # times: the median of 5 rounds
    python -m benchmarks.dedupe phases --lang zh --repeat 3       # the text mode's time, stage by stage
    python -m benchmarks.dedupe scale --schema bench_dedupe_1m --url postgresql+psycopg://postgres@127.0.0.1:5432/bench42

``quality``: per language, ``--docs`` real documents of 1,000-8,000 characters, none sharing
more than a fifth of its word 5-shingles with another (so a pair of them is a false pair), and
a variant of each at 1%, 2% and 5% edits (Chinese: Han characters replaced by others of the same
document; English: words replaced by words of the same document; :func:`benchmarks.edits.substitute_words`),
stored in a ``WideSimHashMixin`` table. Measured: planted pairs (original, variant) found per
rate, false pairs (rows of two different documents) and wall time of

* ``near_duplicates(session, Doc)``: by text, the default (on a table this small radius 3 and
  80 bits, :data:`simsql.queries.wide_duplicates.DEDUPE_REACH`), and the larger tables'
  defaults (radius 2 and 1, within 64 bits) on the same rows;
* ``near_duplicates(session, Doc, by_text=False)``: the 64-bit fingerprint within 3 bits;
* datasketch's ``MinHashLSH`` (128 permutations, threshold 0.5; Chinese character 3-grams,
  English word 5-grams): its candidate pairs, in memory, MinHash signatures included.

``copy`` puts the first ``--rows`` rows of such a table and its copies on another server
(MySQL/MariaDB: the scale table is built by ``COPY`` on PostgreSQL), for ``scale`` there::

    python -m benchmarks.dedupe copy --from-url postgresql+psycopg://postgres@127.0.0.1:5432/bench42 \
        --from-schema bench_dedupe_200k --rows 100000 --url mysql+pymysql://root@127.0.0.1:3306/test --schema bench_dedupe_100k

``phases``: where the default text mode's time goes on the quality set (the block self-joins,
reading texts, shingling, containment), each stage timed apart (``--repeat`` rounds, medians).

``joins``: the first ``--blocks`` block self-joins of a scale table alone, one-sided against
split radius 2 and PostgreSQL's JIT on against off, and the 64-bit rule's statement (issue 42's
"where the time went")::

    python -m benchmarks.dedupe joins --schema bench_dedupe_50k --probe-radius 2 --blocks 2

``reach``: the block self-joins of such a table at a radius, in the split and the halves forms
(timed, same pairs), and the candidate pairs within each 256-bit bound::

    python -m benchmarks.dedupe reach --schema bench42_20k --probe-radius 3 --url postgresql+psycopg://postgres@127.0.0.1:5432/postgres

``scale``: the table :mod:`benchmarks.scale10m` builds (real man pages and articles assembled
from shared man-page paragraphs, PostgreSQL), plus copies of its 200 originals at 1%, 2% and 5%
edits, deduplicated whole by text with the time of each phase (the block self-joins, the texts).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from sqlalchemy import Engine, String, Text, create_engine, func, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.fingerprint
import simsql.store

from .corpus import Document, chinese_documents, english_documents
from .edits import substitute_words
from .originality import doc_model

RATES = (0.01, 0.02, 0.05)
MIN_CHARS, MAX_CHARS = 1000, 8000
DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
SCHEMA = "bench_dedupe"


class Base(DeclarativeBase):
    pass


class DedupeDoc(simsql.WideSimHashMixin, Base):
    __tablename__ = "bench_dedupe_docs"
    __simhash_source__ = ("body",)

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    kind: Mapped[str] = mapped_column(String(12))
    body: Mapped[str] = mapped_column(Text)


def centred_model(texts: Sequence[str]) -> type:
    """``--centred``: a model of the same table whose signatures are centred on a wide background
    fitted on ``texts`` (the set's own rows: what ``fit_background`` reads from a table)."""
    base = DedupeDoc.__simhash_fingerprinter__
    assert isinstance(base, simsql.Fingerprinter)
    return doc_model(simsql.fingerprint.Background.fit(texts, base, wide=True), DedupeDoc.__tablename__)


def engine_for(url: str, schema: str) -> Engine:
    """An engine on the benchmark's own schema (PostgreSQL) or database (MySQL/MariaDB)."""
    parsed = make_url(url)
    admin = create_engine(parsed)
    with admin.begin() as connection:
        if parsed.get_backend_name() == "postgresql":
            connection.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{schema}"'))
            admin.dispose()
            return create_engine(parsed.update_query_dict({"options": f"-csearch_path={schema}"}))
        database = f"{parsed.database}_{schema}" if parsed.database else schema
        connection.execute(text(f"CREATE DATABASE IF NOT EXISTS `{database}` CHARACTER SET utf8mb4"))
    admin.dispose()
    return create_engine(parsed.set(database=database))


def documents(source: str, lang: str) -> list[Document]:
    if source == "heldout":
        from .heldout import heldout_documents

        return heldout_documents("zh" if lang == "zh" else "en")
    return chinese_documents() if lang == "zh" else english_documents()


def shingle_set(body: str, lang: str, size: int = 3) -> set[str]:
    """The anchor's shingles: Chinese character ``size``-grams (spaces dropped; 3 for MinHash),
    English word 5-grams."""
    if lang == "zh":
        chars = "".join(body.split())
        return {chars[i : i + size] for i in range(max(1, len(chars) - size + 1))}
    words = body.lower().split()
    return {" ".join(words[i : i + 5]) for i in range(max(1, len(words) - 4))}


def unrelated(docs: Sequence[Document], count: int, lang: str, seed: int) -> list[Document]:
    """``count`` documents of 1,000-8,000 characters, none holding more than a fifth of another's
    5-shingles (natural near-duplicates, such as two versions of one manual page, left out;
    Chinese character 3-grams are too common a currency to tell them)."""
    rng = random.Random(seed)
    pool = [doc for doc in docs if MIN_CHARS <= len(doc.text) <= MAX_CHARS]
    rng.shuffle(pool)
    chosen: list[Document] = []
    sets: list[set[str]] = []
    for doc in pool:
        mine = shingle_set(doc.text, lang, 5)
        if all(len(mine & theirs) <= 0.2 * min(len(mine), len(theirs)) for theirs in sets):
            chosen.append(doc)
            sets.append(mine)
        if len(chosen) == count:
            return chosen
    raise SystemExit(f"only {len(chosen)} unrelated documents of {lang} (asked for {count})")


def planted(docs: Sequence[Document], lang: str, seed: int) -> tuple[list[tuple[int, str, str]], dict[int, int]]:
    """Rows ``(id, kind, body)``: each document, then its variants; and each row's document."""
    rng = random.Random(seed)
    unit = "char" if lang == "zh" else "word"
    rows, family = [], {}
    for number, doc in enumerate(docs):
        rows.append((len(rows) + 1, "original", doc.text))
        family[len(rows)] = number
        for rate in RATES:
            rows.append((len(rows) + 1, f"edit{round(rate * 100)}", substitute_words(doc.text, rate, rng, unit=unit)))
            family[len(rows)] = number
    return rows, family


def score(pairs: set[tuple[int, int]], rows: Sequence[tuple[int, str, str]], family: dict[int, int]) -> dict[str, Any]:
    """Planted pairs found per rate, and false pairs (two documents) of all such pairs."""
    kind = {key: k for key, k, _ in rows}
    originals = {family[key]: key for key, k, _ in rows if k == "original"}
    found: dict[str, Any] = {}
    for rate in RATES:
        label = f"edit{round(rate * 100)}"
        planted_pairs = [(originals[family[key]], key) for key in kind if kind[key] == label]
        found[label] = sum(1 for pair in planted_pairs if pair in pairs) / len(planted_pairs)
    false = sum(1 for a, b in pairs if family[a] != family[b])
    members = len(rows) // len(originals)
    possible = len(rows) * (len(rows) - members) // 2
    return {**found, "false_pairs": false, "false_rate": false / possible, "pairs": len(pairs)}


def timed_pairs(engine: Engine, model: type = DedupeDoc, **kwargs: Any) -> tuple[float, set[tuple[int, int]]]:
    with Session(engine) as session:
        started = time.perf_counter()
        pairs = simsql.near_duplicates(session, model, **kwargs)
        return time.perf_counter() - started, {(p.a, p.b) for p in pairs}


def minhash_pairs(rows: Sequence[tuple[int, str, str]], lang: str) -> tuple[float, set[tuple[int, int]]]:
    """datasketch's MinHash LSH over the rows, in memory: signatures, index, one query a row."""
    from datasketch import MinHash, MinHashLSH

    started = time.perf_counter()
    lsh = MinHashLSH(threshold=0.5, num_perm=128)
    signatures = {}
    for key, _, body in rows:
        signature = MinHash(num_perm=128)
        signature.update_batch([s.encode("utf-8") for s in shingle_set(body, lang)])
        signatures[key] = signature
        lsh.insert(key, signature)
    pairs = {(min(key, other), max(key, other)) for key, signature in signatures.items() for other in lsh.query(signature) if other != key}
    return time.perf_counter() - started, pairs


def load_set(
    engine: Engine, source: str, lang: str, count: int, seed: int, centred: bool = False
) -> tuple[list[Document], list[tuple[int, str, str]], dict[int, int], type]:
    """The quality set of ``lang`` (documents, rows, each row's document, the model that stored
    them: ``centred``, signatures centred on a wide background fitted on the rows), stored afresh."""
    docs = unrelated(documents(source, lang), count, lang, seed)
    rows, family = planted(docs, lang, seed)
    model = centred_model([body for _, _, body in rows]) if centred else DedupeDoc
    Base.metadata.drop_all(engine)
    model.metadata.drop_all(engine)
    model.metadata.create_all(engine)
    with Session(engine) as session:
        session.add_all([model(id=key, kind=kind, body=body) for key, kind, body in rows])
        session.commit()
    return docs, rows, family, model


def phases(url: str, source: str, langs: Sequence[str], count: int, seed: int, repeat: int) -> dict[str, Any]:
    """Where the default text mode's time goes on the quality set, each stage through the
    module's own functions as ``wide_near_duplicates`` runs them: counting the rows (the
    radius), the block self-joins, reading the candidates' texts, shingling each text once, the
    containment of every candidate pair; and the whole call. Medians of ``repeat`` rounds."""
    from simsql.queries.wide import wide_binding
    from simsql.queries.wide_duplicates import candidate_pairs, default_reach, pair_containment, read_texts
    from simsql.text.containment import shingled

    engine = engine_for(url, SCHEMA)
    report: dict[str, Any] = {"source": source, "documents": count, "server": engine.dialect.name, "repeat": repeat}
    binding = wide_binding(DedupeDoc)
    for lang in langs:
        load_set(engine, source, lang, count, seed)
        times: dict[str, list[float]] = {}
        for _ in range(repeat):
            with Session(engine) as session:
                clock = [time.perf_counter()]

                def lap(name: str) -> None:
                    clock.append(time.perf_counter())
                    times.setdefault(name, []).append(round(clock[-1] - clock[-2], 3))

                reach = default_reach(session, binding)
                radius = reach.probe_radius
                lap("count rows")
                candidates = candidate_pairs(session, DedupeDoc, reach.wide_distance, radius, None)
                lap("block self-joins")
                texts = read_texts(session, binding, sorted({key for pair in candidates for key in pair}))
                lap("read texts")
                shingles = {key: shingled(body) for key, body in texts.items() if body is not None}
                lap("shingle texts")
                kept = [pair for pair in candidates if pair_containment(shingles[pair[0]], shingles[pair[1]]) >= 0.5]
                lap("containment")
            times.setdefault("whole call", []).append(round(timed_pairs(engine)[0], 3))
        counts = {"radius": radius, "candidates": len(candidates), "texts": len(texts), "confirmed": len(kept)}
        report[lang] = {**counts, **{name: {"seconds": round(statistics.median(t), 3), "rounds_s": t} for name, t in times.items()}}
        print(json.dumps({lang: report[lang]}), file=sys.stderr)
    engine.dispose()
    return report


def quality(url: str, source: str, langs: Sequence[str], count: int, seed: int, repeat: int = 1, centred: bool = False) -> dict[str, Any]:
    """Each method's pairs scored, and its time: the median of ``repeat`` rounds, each round
    running every method once in turn (so a busy machine slows them alike); every round must
    give the same pairs."""
    engine = engine_for(url, SCHEMA)
    report: dict[str, Any] = {"source": source, "documents": count, "server": engine.dialect.name, "repeat": repeat, "centred": centred}
    for lang in langs:
        docs, rows, family, model = load_set(engine, source, lang, count, seed, centred)
        result: dict[str, Any] = {"rows": len(rows), "mean_chars": round(sum(len(d.text) for d in docs) / len(docs))}
        methods: dict[str, Callable[[], tuple[float, set[tuple[int, int]]]]] = {
            name: partial(timed_pairs, engine, model, **kwargs) for name, kwargs in (
                ("simsql by text (default: radius 3, 80 bits here)", {}),
                ("simsql by text, radius 2, 64 bits (200,000 rows)", {"probe_radius": 2, "wide_distance": 64}),
                ("simsql by text, radius 1, 64 bits (larger tables)", {"probe_radius": 1, "wide_distance": 64}),
                ("simsql 64-bit, 3 bits", {"by_text": False}),
            )
        }  # fmt: skip
        methods["datasketch MinHashLSH"] = partial(minhash_pairs, rows, lang)
        times: dict[str, list[float]] = {name: [] for name in methods}
        answers: dict[str, set[tuple[int, int]]] = {}
        for _ in range(repeat):
            for name, method in methods.items():
                seconds, pairs = method()
                if answers.setdefault(name, pairs) != pairs:
                    raise SystemExit(f"{name}: a different answer in a later round")
                times[name].append(round(seconds, 3))
        for name, pairs in answers.items():
            result[name] = {**score(pairs, rows, family), "seconds": round(statistics.median(times[name]), 2), "rounds_s": times[name]}
        report[lang] = result
        print(json.dumps({lang: result}), file=sys.stderr)
    engine.dispose()
    return report


def add_copies(engine: Engine, seed: int) -> int:
    """Copies of the scale table's 200 originals at each rate (ids after the last), once."""
    from .originality import Doc

    with Session(engine) as session:
        if session.scalar(select(func.count()).select_from(Doc).where(Doc.kind.like("edit%"))):
            return 0
        last = session.scalar(select(func.max(Doc.id))) or 0
        originals = session.execute(select(Doc.id, Doc.body).where(Doc.kind == "original").order_by(Doc.id)).all()
        rng = random.Random(seed)
        copies = [
            Doc(id=last + 1 + n, kind=f"edit{round(rate * 100)}", body=substitute_words(body, rate, rng, unit="word"))
            for n, (rate, (_, body)) in enumerate((rate, row) for row in originals for rate in RATES)
        ]
        session.add_all(copies)
        session.commit()
        return len(copies)


def scale(
    url: str, schema: str, seed: int, probe_radius: int | None, by_text: bool = True, wide_distance: int | None = None,
    minhash: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """``near_duplicates`` on the scale table and its planted copies (the radius and bound given,
    else the library's for the table's size), with the time of each phase; ``minhash``: then
    datasketch's MinHash LSH on the same rows (English word 5-grams: man pages), read from the
    table, scored alike."""
    from .originality import Doc

    engine = engine_for(url, schema)
    added = add_copies(engine, seed)
    with engine.begin() as connection:
        connection.execute(text("ANALYZE" if engine.dialect.name == "postgresql" else f"ANALYZE TABLE {Doc.__tablename__}"))
    phases: dict[str, float] = {}
    started = time.perf_counter()

    def progress(phase: str, done: int, total: int) -> None:
        phases[phase] = round(time.perf_counter() - started, 1)
        print(f"[{time.strftime('%H:%M:%S')}] {phase} {done}/{total}", file=sys.stderr, flush=True)

    with Session(engine) as session:
        rows = session.scalar(select(func.count()).select_from(Doc))
        originals = session.scalars(select(Doc.id).where(Doc.kind == "original").order_by(Doc.id)).all()
        copies = session.execute(select(Doc.id, Doc.kind).where(Doc.kind.like("edit%")).order_by(Doc.id)).all()
        options: dict[str, Any] = {"probe_radius": probe_radius, "wide_distance": wide_distance} if by_text else {"by_text": False}
        pairs = simsql.near_duplicates(session, Doc, progress=progress, **options)
        wall = time.perf_counter() - started
        texts = session.execute(select(Doc.id, Doc.kind, Doc.body).order_by(Doc.id)).all() if minhash else []

    def planted_found(found: set[tuple[int, int]]) -> dict[str, int]:
        counts = {f"edit{round(rate * 100)}": 0 for rate in RATES}
        for n, (key, kind) in enumerate(copies):  # add_copies: each original's copies in RATES order
            counts[kind] += (originals[n // len(RATES)], key) in found
        return counts

    report = {"rows": rows, "copies_added": added, "by_text": by_text, "probe_radius": probe_radius,
              "wide_distance": wide_distance, "seconds": round(wall, 1), "phases_end_s": phases, "pairs": len(pairs),
              f"planted_found_of_{len(originals)}": planted_found({(p.a, p.b) for p in pairs})}  # fmt: skip
    if minhash:
        seconds, found = minhash_pairs([(key, kind, body) for key, kind, body in texts], "en")
        report["minhash"] = {"seconds": round(seconds, 1), "pairs": len(found), f"planted_found_of_{len(originals)}": planted_found(found)}
    engine.dispose()
    return report


def copy_table(source_url: str, source_schema: str, url: str, schema: str, rows: int) -> dict[str, Any]:
    """The first ``rows`` rows of a scale table (and its planted copies) copied to another server,
    signatures and digests as stored (MySQL/MariaDB have no ``COPY``; this skips recomputing)."""
    from .originality import Base as ScaleBase
    from .originality import Doc

    source, target = engine_for(source_url, source_schema), engine_for(url, schema)
    ScaleBase.metadata.drop_all(target)
    ScaleBase.metadata.create_all(target)
    table = Doc.__table__
    columns = [c for c in table.columns if c.computed is None]
    started = time.perf_counter()
    wanted = (Doc.id <= rows) | Doc.kind.like("edit%")
    with source.connect() as reading, target.begin() as writing:
        result = reading.execution_options(yield_per=2000).execute(select(*columns).where(wanted).order_by(Doc.id))
        for chunk in result.partitions():
            writing.execute(table.insert(), [dict(row._mapping) for row in chunk])
    source.dispose()
    target.dispose()
    return {"rows": rows, "copy_s": round(time.perf_counter() - started, 1)}


def joins(url: str, schema: str, probe_radius: int, blocks: int, wide_distance: int = 64) -> dict[str, Any]:
    """The first ``blocks`` block self-joins of the scale table at ``probe_radius``, one-sided
    (each row's 211 variants at radius 2 probing the other side) and split (one bit flipped on
    each side), with PostgreSQL's JIT on and off; and the 64-bit rule's statement, JIT on and
    off. Each in its own transaction, the settings ``prepare_self_join`` makes besides JIT."""
    from simsql.queries.duplicates import near_duplicates_query
    from simsql.queries.wide_duplicates import wide_pairs_statement

    from .originality import Doc

    engine = engine_for(url, schema)
    report: dict[str, Any] = {"rows": None, "probe_radius": probe_radius, "blocks": blocks}

    def timed(statements: list[Any], jit: str, parameters: dict[str, Any]) -> dict[str, Any]:
        with Session(engine) as session:
            session.execute(text("SET LOCAL work_mem = '256MB'"))
            session.execute(text(f"SET LOCAL jit = {jit}"))
            started = time.perf_counter()
            rows = {tuple(row) for statement in statements for row in session.execute(statement, parameters)}
            return {"seconds": round(time.perf_counter() - started, 2), "pairs": len(rows)}

    with Session(engine) as session:
        report["rows"] = session.scalar(select(func.count()).select_from(Doc))
    for split in (False, True):
        statements = [wide_pairs_statement(Doc, block, probe_radius, split=split) for block in range(blocks)]
        for jit in ("on", "off"):
            report[f"wide blocks, {'split' if split else 'one-sided'}, jit {jit}"] = timed(statements, jit, {"simsql_bound": wide_distance})
            print(json.dumps(report), file=sys.stderr, flush=True)
    for jit in ("on", "off"):
        report[f"64-bit rule, 3 bits, jit {jit}"] = timed([near_duplicates_query(Doc, 3, engine.dialect)], jit, {})
    engine.dispose()
    return report


def reach(url: str, schema: str, probe_radius: int, forms: Sequence[str], bounds: Sequence[int]) -> dict[str, Any]:
    """The eight block self-joins of a scale table at ``probe_radius`` within the widest of
    ``bounds``, in each of ``forms`` (``split``: one bit flipped on a's side, the rest on b's;
    ``halves``: each block half within one bit, radius 2 or 3), timed, as ``near_duplicates``
    runs them (``candidate_pairs``, its own transaction and settings); both forms must give the
    same pairs. Then the candidate pairs within each of ``bounds``: what each bound would send
    to the text stage."""
    from simsql.queries.wide_duplicates import candidate_pairs

    from .originality import Doc

    engine = engine_for(url, schema)
    report: dict[str, Any] = {"probe_radius": probe_radius, "forms": {}}
    with Session(engine) as session:
        report["rows"] = session.scalar(select(func.count()).select_from(Doc))
    answers = {}
    for form in forms:
        with Session(engine) as session:
            started = time.perf_counter()
            answers[form] = candidate_pairs(session, Doc, max(bounds), probe_radius, None, halves=form == "halves")
            report["forms"][form] = {"seconds": round(time.perf_counter() - started, 1), "pairs": len(answers[form])}
        print(json.dumps(report), file=sys.stderr, flush=True)
    if len({frozenset(a.items()) for a in answers.values()}) > 1:
        raise SystemExit("the forms found different pairs")
    distances = sorted(next(iter(answers.values())).values())
    report["pairs_within"] = {str(bound): sum(1 for d in distances if d <= bound) for bound in bounds}
    engine.dispose()
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("part", choices=("quality", "phases", "scale", "copy", "joins", "reach"))
    parser.add_argument("--forms", default="halves,split", help="reach: the join forms timed (halves, split)")
    parser.add_argument("--bounds", default="48,56,64,72,80,88,96", help="reach: the 256-bit bounds counted")
    parser.add_argument("--blocks", type=int, default=2, help="joins: the block self-joins timed (of 8)")
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--source", choices=("manpages", "heldout"), default="manpages")
    parser.add_argument("--lang", default="zh,en", help="comma-separated: zh, en")
    parser.add_argument("--docs", type=int, default=150, help="documents per language (quality)")
    parser.add_argument("--schema", default="bench_dedupe_1m", help="the scale10m table's schema (scale)")
    parser.add_argument("--probe-radius", type=int, default=None, help="scale: the radius of the self-joins (default: the library's)")
    parser.add_argument("--wide-distance", type=int, default=None, help="scale: the 256-bit bound (default: the library's)")
    parser.add_argument("--minhash", action="store_true", help="scale: MinHash LSH on the same rows after simsql")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--repeat", type=int, default=1, help="quality: rounds timed (the median is reported)")
    parser.add_argument("--centred", action="store_true", help="quality: signatures centred on a wide background fitted on the set's own rows")
    parser.add_argument("--by", choices=("text", "fingerprint"), default="text", help="scale: the rule (fingerprint: 3 bits of 64)")
    parser.add_argument("--from-url", default=DEFAULT_URL, help="copy: the server holding the scale table")
    parser.add_argument("--from-schema", default="bench_dedupe_200k", help="copy: its schema")
    parser.add_argument("--rows", type=int, default=100_000, help="copy: rows to copy (and the planted copies)")
    args = parser.parse_args(argv)
    if args.part == "quality":
        result = quality(args.url, args.source, args.lang.split(","), args.docs, args.seed, args.repeat, args.centred)
    elif args.part == "phases":
        result = phases(args.url, args.source, args.lang.split(","), args.docs, args.seed, args.repeat)
    elif args.part == "joins":
        result = joins(args.url, args.schema, 2 if args.probe_radius is None else args.probe_radius, args.blocks)
    elif args.part == "copy":
        result = copy_table(args.from_url, args.from_schema, args.url, args.schema, args.rows)
    elif args.part == "reach":
        bounds = [int(b) for b in args.bounds.split(",")]
        result = reach(args.url, args.schema, 3 if args.probe_radius is None else args.probe_radius, args.forms.split(","), bounds)
    else:
        result = scale(args.url, args.schema, args.seed, args.probe_radius, args.by == "text", args.wide_distance, args.minhash)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
