"""The originality check on the wide signature, end to end through ``simsql.find_original``.

    python -m benchmarks.originality --rows 100000                 # PostgreSQL (127.0.0.1:5432)
    python -m benchmarks.originality --rows 20000 --url mysql+pymysql://root@127.0.0.1:3306/test
    python -m benchmarks.originality --lang zh --rows 20000 --originals 100   # Chinese man pages
    python -m benchmarks.originality --source heldout --lang zh --rows 20000  # Debian's manuals, never tuned on
    python -m benchmarks.originality --rows 1000000 --workers 2               # a million rows, loaded by COPY
    python -m benchmarks.originality --rows 1000000 --reuse --parts latency   # rerun the timing on a kept table
    python -m benchmarks.originality --rows 1000000 --reuse --budget 512      # every check with 512 probes (the old default)

A table of ``WideSimHashMixin`` rows is filled with real man pages (the originals) and articles
assembled from shared man-page paragraphs (so stored rows share sentences, as real platforms'
do); ``--source heldout`` takes both from Debian's manuals instead (:mod:`benchmarks.heldout`),
a source no default was tuned on. The table is loaded as a bulk loader would: signatures
computed in ``--workers`` processes, rows written by ``COPY`` (PostgreSQL) or multi-row
``INSERT`` (MySQL/MariaDB) with the indexes built afterwards; it is kept, so ``--reuse`` runs
the checks again on it. Measured, with ``find_original``'s defaults:

* **recall per light evasion**: each original disguised (header/footer, 1/2/5% word
  substitutions, a sentence in or out, shuffled paragraphs, shuffled lines, their mixes) must
  be reported as that original;
* **false alarms** on fresh documents: articles assembled from paragraphs the table never saw
  (any alarm is false), and from the table's own paragraph pool (an alarm where most of the
  submission's words lie in paragraphs the reported row holds, whole or near-identical, is a
  true overlap, counted apart);
* **latency** p50/p99 of the check against the plain scan (``ORDER BY`` the 256-bit
  ``bit_count`` distance, ``LIMIT`` the same candidates, same confirmation);
* **storage**: bytes per row of the heap and of each kind of index, index writes per insert.

Results go to ``benchmarks/results/originality-<server>-<rows>[-<lang>][-heldout].json`` and
are printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import pickle
import random
import statistics
import sys
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import (
    Engine,
    String,
    Text,
    create_engine,
    delete,
    func,
    insert,
    select,
    text,
)
from sqlalchemy.engine import make_url
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.fingerprint
import simsql.store
from simsql.queries.wide import WIDE_DISTANCE, wide_distance, wide_search
from simsql.queries.wide_original import find_wide_original
from simsql.store import SimHash
from simsql.text.containment import share_of_submission, shingled

from .corpus import (
    CACHE_DIR,
    Document,
    assembled_articles,
    build_cache,
    chinese_documents,
    english_documents,
    is_chinese,
    paragraphs,
)
from .edits import add_boilerplate, evade, substitute_words
from .heldout import APT_INSTALL as HELDOUT_APT_INSTALL
from .heldout import files as heldout_files
from .heldout import heldout_documents
from .heldout import missing as heldout_missing
from .manpages import APT_INSTALL as MANPAGES_APT_INSTALL
from .manpages import CorpusUnavailable
from .timing import summary

RESULTS = Path(__file__).resolve().parent / "results"
T = TypeVar("T")
DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
SCHEMA = "bench_originality"
SOURCES = ("manpages", "heldout")
PARTS = ("recall", "alarms", "latency", "storage")
MAX_ORIGINAL_CHARS = 30_000
"""The longest document stored (and disguised) as an original."""
EXTRA_PARTS = ("revisions",)
"""Run only when asked (``--parts revisions``): it needs ``python -m benchmarks.sources --fetch``."""
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


def doc_model(
    background: simsql.fingerprint.Background | None, tablename: str = "bench_wide_docs", wide_blocks: str | None = None
) -> type:
    """A model of a table shaped as :class:`Doc` (``tablename``: another benchmark's table of the
    same columns) whose signatures are centred on ``background`` (None: the default wide
    configuration), cut into the blocks of ``wide_blocks`` (None: 8 x 20). One mapped class per
    call: the binding, and so the configuration checked against the registry, is per model."""

    base = Doc.__simhash_fingerprinter__
    assert isinstance(base, simsql.Fingerprinter)

    class OwnBase(DeclarativeBase):
        pass

    class CentredDoc(simsql.WideSimHashMixin, OwnBase):
        __tablename__ = tablename
        __simhash_source__ = ("body",)
        __simhash_fingerprinter__ = simsql.Fingerprinter(version=base.version, background=background)
        __simhash_wide_blocks__ = wide_blocks

        id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
        kind: Mapped[str] = mapped_column(String(12))
        body: Mapped[str] = mapped_column(Text)

    return CentredDoc


def engine_for(url: str, lang: str = "en", source: str = "manpages", schema: str | None = None) -> Engine:
    """An engine on the benchmark's own schema (PostgreSQL) or database (MySQL/MariaDB:
    ``<the URL's database>_bench_originality``), one per language and source unless ``schema``
    names one."""
    parsed = make_url(url)
    schema = schema or SCHEMA + ("" if lang == "en" else f"_{lang}") + ("" if source == "manpages" else f"_{source}")
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


_WORKER: dict[str, Any] = {}


BACKGROUND_SAMPLE = 5000
"""Filler articles a ``--background`` is fitted on when its file does not exist yet: a random
sample of the table's own rows, as ``simsql.fit_background`` would read (its default sample)."""


def recorded_blocks(engine: Engine) -> str | None:
    """The wide block layout the registry records for the engine's schema's ``bench_wide_docs``
    (``benchmarks.scale10m --wide-blocks``), as text (``"10x24"``), for :func:`doc_model`; None:
    8 x 20 or no record. simsql refuses a model of another layout than the table's."""
    from simsql.schema.names import layout_text

    with engine.connect() as connection:
        entry = simsql.store.registry.read(connection, "bench_wide_docs")
    return None if entry is None or entry.layout is None else layout_text(entry.layout)


def centre_on(path: Path, data: dict[str, Any], seed: int) -> simsql.fingerprint.Background:
    """``--background FILE``: the table is fingerprinted with a wide background (every word of the
    signature centred on the table's own text; ``Background.fit(..., wide=True)``), loaded from
    ``path`` or, when it does not exist, fitted on the first :data:`BACKGROUND_SAMPLE` filler
    articles (a random sample of the table: the filler is drawn at random) and saved there. Call
    before anything reads the model's binding; the registry then records the centred configuration,
    and a table built without it is refused by ``--reuse`` (other config_id)."""
    if path.exists():
        background = simsql.fingerprint.Background.load(path)
    else:
        background = simsql.fingerprint.Background.fit(filler(data, BACKGROUND_SAMPLE, seed), Doc.__simhash_fingerprinter__, wide=True)
        background.save(path)
    base = Doc.__simhash_fingerprinter__
    assert isinstance(base, simsql.Fingerprinter)
    Doc.__simhash_fingerprinter__ = simsql.Fingerprinter(version=base.version, background=background)
    return background


def benchmark_fingerprinter() -> simsql.Fingerprinter:
    fingerprinter = simsql.store.binding_for(Doc).fingerprinter
    assert isinstance(fingerprinter, simsql.Fingerprinter)
    return fingerprinter


def _start_worker() -> None:
    _WORKER["fingerprinter"] = benchmark_fingerprinter()


def _signed(job: tuple[int, list[tuple[str, str]]]) -> tuple[list[tuple[Any, ...]], float]:
    """One batch's rows with their signatures (in a worker process): ``(id, kind, body, digest,
    word 0..3)``, words unsigned, ``None`` for a text without features; and the CPU seconds the
    signatures took (the rate a 10M load can be planned by, whatever the machine's load)."""
    first, chunk = job
    fingerprinter = _WORKER.get("fingerprinter") or benchmark_fingerprinter()
    cpu = time.process_time()
    signatures = fingerprinter.signatures_many([body for _, body in chunk], empty="none")
    cpu = time.process_time() - cpu
    return [
        (first + offset, kind, body, digest(body), *(signature.words if signature else (None,) * 4))
        for offset, ((kind, body), signature) in enumerate(zip(chunk, signatures))
    ], cpu


def batches(rows: Iterable[T], size: int, first: int = 1) -> Iterator[tuple[int, list[T]]]:
    """``(id of the chunk's first row, chunk)`` of ``rows`` cut into chunks of ``size``, ids
    counted from ``first``: the jobs of the loaders' worker processes."""
    chunk: list[T] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == size:
            yield first, chunk
            first, chunk = first + size, []
    if chunk:
        yield first, chunk


def _writer(connection: Any) -> Callable[[list[tuple[Any, ...]]], None]:
    """Writes signed rows: ``COPY`` on PostgreSQL (words as the column type stores them), a
    multi-row ``INSERT`` elsewhere (the driver's executemany)."""
    names = simsql.store.binding_for(Doc).names
    columns = ["id", "kind", "body", names.digest, *names.signature_words]
    if connection.dialect.name != "postgresql":
        return lambda rows: connection.execute(insert(Doc), [dict(zip(columns, row)) for row in rows]) and None
    to_db = SimHash().process_bind_param  # the words' column type
    dialect = connection.dialect
    cursor = connection.connection.driver_connection.cursor()
    statement = f"COPY {names.table} ({', '.join(columns)}) FROM STDIN"

    def write(rows: list[tuple[Any, ...]]) -> None:
        with cursor.copy(statement) as copy:
            for row in rows:
                copy.write_row((*row[:3], str(row[3]), *(None if word is None else to_db(word, dialect) for word in row[4:])))

    return write


def load(engine: Engine, rows: Iterable[tuple[str, str]], workers: int, batch: int = 1000) -> dict[str, Any]:
    """Write ``(kind, body)`` rows (ids from 1) with their signatures, as a bulk loader would:
    signatures computed in ``workers`` processes, a batch at a time, while the main process
    writes the previous batches; the table's indexes (all but the key) are dropped first and
    built once the rows are in. Returns rows per second of the load (wall, and of the workers'
    CPU for the signatures) and the index build's time."""
    table = simsql.store.binding_for(Doc).table
    with engine.begin() as connection:
        for index in table.indexes:
            index.drop(connection)
    started = time.perf_counter()
    count, cpu = 0, 0.0
    with engine.begin() as connection:
        writer = _writer(connection)

        def write(signed: tuple[list[tuple[Any, ...]], float]) -> None:
            nonlocal cpu
            writer(signed[0])
            cpu += signed[1]

        if workers <= 1:
            for job in batches(rows, batch):
                write(_signed(job))
                count += len(job[1])
        else:
            with multiprocessing.get_context("fork").Pool(workers, initializer=_start_worker) as pool:
                pending: deque[Any] = deque()
                for job in batches(rows, batch):
                    pending.append(pool.apply_async(_signed, (job,)))
                    count += len(job[1])
                    if len(pending) >= 2 * workers:  # bounded: the rows are never all in memory
                        write(pending.popleft().get())
                while pending:
                    write(pending.popleft().get())
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SET LOCAL maintenance_work_mem = '1GB'"))
        for index in table.indexes:
            index.create(connection)
    return {"rows_per_s": count / loaded, "load_s": round(loaded, 1), "signature_cpu_rows_per_s": count / max(cpu, 1e-9),
            "index_build_s": round(time.perf_counter() - started, 1), "workers": workers}  # fmt: skip


def source_documents(source: str, lang: str) -> list[Document]:
    if source == "heldout":
        return heldout_documents("zh" if lang == "zh" else "en")
    return chinese_documents() if lang == "zh" else english_documents()


def corpus(rows: int, originals: int, fresh: int, seed: int, lang: str = "en", source: str = "manpages") -> dict[str, Any]:
    """Originals (whole documents), the pool the table's filler is assembled from, and fresh
    articles from a disjoint pool, kept in ``benchmarks/.cache`` beside the rendered pages they
    come from. The filler itself is assembled while it is loaded (:func:`filler`): a million
    articles are gigabytes."""
    if source == "heldout":
        key = hashlib.sha256("\n".join(heldout_files("zh" if lang == "zh" else "en")).encode()).hexdigest()[:16]
    else:
        key = build_cache("zh" if lang == "zh" else "en")["fingerprint"][:16]  # the rendered pages they come from
    path = CACHE_DIR / f"originality-{source}-{key}-{originals}-{fresh}-{seed}.pickle"
    if path.exists():
        with path.open("rb") as handle:
            cached: dict[str, Any] = pickle.load(handle)
        return cached
    data = assemble(originals, fresh, seed, lang, source)
    CACHE_DIR.mkdir(exist_ok=True)
    with path.open("wb") as handle:
        pickle.dump(data, handle)
    return data


def assemble(originals: int, fresh: int, seed: int, lang: str = "en", source: str = "manpages") -> dict[str, Any]:
    docs = source_documents(source, lang)
    low, high = (300, 1500) if lang == "zh" else (800, 4000)  # Chinese says as much in fewer characters
    rng = random.Random(seed)
    chosen = sample_originals(docs, originals, rng, source, lang)
    chosen_ids = {doc.doc_id for doc in chosen}
    pool = paragraphs([doc for doc in docs if doc.doc_id not in chosen_ids])
    rng.shuffle(pool)
    held_out, shared = pool[: len(pool) // 5], pool[len(pool) // 5 :]
    return {
        "originals": [doc.text for doc in chosen],
        "shared": shared,
        "lengths": (low, high),
        "fresh_disjoint": list(assembled_articles(held_out, fresh, seed + 1, min_chars=low, max_chars=high)),
        "fresh_shared": list(assembled_articles(shared, fresh, seed + 2, min_chars=low, max_chars=high)),
        "donors": [p for p in held_out[:500]],
    }


def sample_originals(docs: Sequence[Document], originals: int, rng: random.Random, source: str, lang: str) -> list[Document]:
    """``originals`` documents of at most 30,000 characters, drawn from ``docs``; with fewer
    than that (only some of the source's packages installed), :class:`CorpusUnavailable`
    saying how many there are, which manuals are missing and how to install them."""
    eligible = [doc for doc in docs if len(doc.text) <= MAX_ORIGINAL_CHARS]
    if len(eligible) < originals:
        absent = heldout_missing("zh" if lang == "zh" else "en") if source == "heldout" else []
        install = HELDOUT_APT_INSTALL if source == "heldout" else MANPAGES_APT_INSTALL
        raise CorpusUnavailable(
            f"the {source} corpus ({lang}) has {len(eligible)} documents of at most {MAX_ORIGINAL_CHARS:,} characters, "
            f"fewer than the {originals} originals asked for"
            + (f"; not installed: {', '.join(absent)}" if absent else "")
            + f". Install the rest (as root: {install}) or ask for fewer with --originals"
        )
    return rng.sample(eligible, originals)


def filler(data: dict[str, Any], count: int, seed: int) -> Iterator[str]:
    """The table's ``count`` filler articles, assembled from the shared pool (deterministic in ``seed``)."""
    low, high = data["lengths"]
    return assembled_articles(data["shared"], count, seed, min_chars=low, max_chars=high)


BUDGET: int | None = None
"""``--budget``: a fixed number of probes for every check instead of find_original's default
(:func:`simsql.queries.wide.probe_budget`); 512 is the default before it grew for short texts."""


def check(session: Session, body: str) -> Any:
    """``simsql.find_original`` with its defaults, or with ``--budget`` probes."""
    if BUDGET is None:
        return simsql.find_original(session, Doc, body)
    return find_wide_original(session, Doc, body, budget=BUDGET)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    answer = fn()
    return time.perf_counter() - started, answer


def scan_check(session: Session, body: str, candidates: int = 16) -> Any:
    """The plain scan: every row ordered by its 256-bit distance, the nearest ``candidates``
    confirmed as find_original confirms them."""
    binding = simsql.store.binding_for(Doc)
    signature = benchmark_fingerprinter().signature(body)
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
    signature = benchmark_fingerprinter().signature(body)
    rows = session.execute(wide_search(Doc, signature, WIDE_DISTANCE, budget=BUDGET, limit=candidates)).all()
    submitted = shingled(body)
    for row, _ in rows:
        if share_of_submission(submitted, shingled(row.body)) >= 0.5:
            return row.id
    return None


def interleaved(session: Session, texts: Sequence[str]) -> dict[str, Any]:
    """find_original, the one-statement check and the plain scan on the same texts, taking
    turns text by text (so the machine's load weighs on all three alike), the two index checks
    first in turn (so neither alone pays the cold reads of a text's candidates), the scan last."""
    checks = {
        "find_original": lambda body: check(session, body),
        "one_statement": lambda body: one_statement_check(session, body),
        "scan": lambda body: scan_check(session, body),
    }
    times: dict[str, list[float]] = {name: [] for name in checks}
    for turn, body in enumerate(texts):
        # find_original and the one statement go first on every other text, the scan last: the
        # first to read a text's candidates pays for the pages the next finds in memory, and the
        # scan's read of every row pushes them out again (find_original, always first, measured
        # 30.9 ms p50 against the one statement's 13.8 on MariaDB, 12.6 / 10.7 once warm)
        order = ("find_original", "one_statement") if turn % 2 == 0 else ("one_statement", "find_original")
        for name in (*order, "scan"):
            times[name].append(timed(lambda: checks[name](body))[0])
    return {name: summary(values) for name, values in times.items()}


def parts(session: Session, copies: Sequence[str]) -> dict[str, Any]:
    """Where a check's time goes: the submission's signature (Python), the index stage alone
    (the probe statement, candidates' rows included) and how many candidates it returns."""
    fingerprinter = simsql.Fingerprinter()
    signing, probing, found = [], [], []
    for copy in copies:
        elapsed, signature = timed(lambda: fingerprinter.signature(copy))
        signing.append(elapsed)
        elapsed, rows = timed(lambda: session.execute(wide_search(Doc, signature, WIDE_DISTANCE, budget=BUDGET, limit=1000)).all())
        probing.append(elapsed)
        found.append(len(rows))
    return {"signature": summary(signing), "index_stage": summary(probing),
            "candidates_within_bound_p50": statistics.median(found), "candidates_max": max(found)}  # fmt: skip


def disguised(data: dict[str, Any], seed: int) -> list[tuple[int, str, str]]:
    """Every original disguised every way: ``(its id, the evasion, the copy)``, deterministic in ``seed``."""
    return [
        (index, kind, disguise(kind, original, random.Random(f"{seed}/{index}/{kind}"), data["donors"]))
        for index, original in enumerate(data["originals"], 1)
        for kind in EVASIONS
    ]


def recall(session: Session, copies: Sequence[tuple[int, str, str]]) -> tuple[dict[str, Any], list[float]]:
    """Share of disguised copies reported as their original, per evasion; the check's times."""
    found: dict[str, list[int]] = {kind: [] for kind in EVASIONS}
    times = []
    for index, kind, copy in copies:
        elapsed, match = timed(lambda: check(session, copy))
        times.append(elapsed)
        found[kind].append(int(match is not None and match.row.id == index))
    return {kind: statistics.fmean(hits) for kind, hits in found.items()}, times


NEAR_IDENTICAL = 0.8
"""A submitted paragraph counts as the row's when it is one of the row's paragraphs, or when this
share of its words lies in word 5-shingles of one of them: another release of the same man-page
paragraph (a flag added, a sentence reworded) is the same text by content."""


def words_from_row(body: str, stored_body: str) -> tuple[float, list[tuple[int, bool]], int]:
    """The share of ``body``'s words in paragraphs ``stored_body`` holds, whole or near-identical
    (:data:`NEAR_IDENTICAL`); each paragraph's words and whether it is held; how many were held
    near-identical rather than whole."""
    stored = stored_body.split("\n\n")
    whole, near, words = set(stored), 0, []
    for paragraph in body.split("\n\n"):
        held = paragraph in whole
        if not held and any(share_of_submission(paragraph, theirs) >= NEAR_IDENTICAL for theirs in stored):
            held, near = True, near + 1
        words.append((shingled(paragraph).words, held))
    return sum(count for count, held in words if held) / max(1, sum(count for count, _ in words)), words, near


def false_alarms(session: Session, texts: Sequence[str]) -> dict[str, Any]:
    """Alarms on fresh texts; an alarm where most of the text's words lie in paragraphs the
    reported row holds, whole or near-identical (:data:`NEAR_IDENTICAL`), is a true overlap (the
    platform would want it), counted apart. Each alarm is listed: the confirmation's share, the
    share of words really from the row, the row."""
    alarms = overlaps = 0
    listed = []
    for number, body in enumerate(texts):
        match = check(session, body)
        if match is None:
            continue
        really, words, near = words_from_row(body, match.row.body)
        overlaps += really >= 0.5
        alarms += really < 0.5
        listed.append({"text": number, "row": match.row.id, "distance": match.distance, "true_overlap": really >= 0.5,
                       "share": round(share_of_submission(body, match.row.body), 3), "words_from_row": round(really, 3),
                       "paragraphs_from_row": f"{sum(held for _, held in words)}/{len(words)}", "near_identical": near})  # fmt: skip
    return {"checks": len(texts), "false_alarms": alarms, "true_overlaps": overlaps, "alarms": listed}


def revisions(session: Session, lang: str) -> dict[str, Any]:
    """Real revisions (:func:`benchmarks.sources.real_revisions`: sections of the Debian Edu manual
    for bullseye and bookworm, and of Django's documentation 4.2 and 5.1, at least 80% unchanged
    and not identical): each old release is added to the table for the run, each new one
    checked, and counted found when the check reports its old release. The added rows are
    deleted again, so the table stays what ``--reuse`` expects."""
    from benchmarks.sources import real_revisions

    pairs = real_revisions("zh" if lang == "zh" else "en")
    first = (session.execute(select(func.max(Doc.id))).scalar_one() or 0) + 1
    session.add_all(Doc(id=first + number, kind="revision", body=old) for number, (_, old, _, _) in enumerate(pairs))
    session.commit()
    try:
        found, missed = 0, []
        for number, (key, old, new, unchanged) in enumerate(pairs):
            match = check(session, new)
            if match is not None and match.row.id == first + number:
                found += 1
                continue
            missed.append({"section": key, "unchanged": round(unchanged, 3), "share": round(share_of_submission(new, old), 3),
                           "reported": None if match is None else match.row.id})  # fmt: skip
    finally:
        session.rollback()
        session.execute(delete(Doc).where(Doc.id >= first))
        session.commit()
    return {"pairs": len(pairs), "found": found, "recall": found / max(1, len(pairs)), "missed": missed}


def storage(engine: Engine) -> dict[str, Any]:
    """Bytes per row (PostgreSQL: heap, 64-bit block indexes, wide block indexes, primary key)
    and index writes per insert (every index of the table)."""
    names = simsql.store.binding_for(Doc).names
    narrow = [index for index in names.indexes if index not in names.wide_indexes]  # names.indexes lists every index
    writes = 1 + len(narrow) + len(names.wide_indexes)  # the key's too
    with engine.connect() as connection:
        count = connection.execute(select(func.count()).select_from(Doc)).scalar_one()
        if connection.dialect.name != "postgresql":
            return {"rows": count, "index_writes_per_insert": writes}
        size = lambda name: connection.execute(text("SELECT pg_relation_size(CAST(:n AS regclass))"), {"n": name}).scalar_one()  # noqa: E731
        heap = size(names.table)
        v2 = sum(size(index) for index in narrow)
        toast = connection.execute(text("SELECT pg_total_relation_size(reltoastrelid) FROM pg_class WHERE oid = CAST(:n AS regclass)"),
                                   {"n": names.table}).scalar_one()  # fmt: skip
        wide = sum(size(index) for index in names.wide_indexes)
        widths = connection.execute(text(
            f"SELECT avg(pg_column_size(simhash_w1) + pg_column_size(simhash_w2) + pg_column_size(simhash_w3)), "
            f"avg({' + '.join(f'pg_column_size({b})' for b in names.wide_blocks)}) FROM {names.table}"
        )).one()  # fmt: skip
    return {
        "rows": count,
        "heap_bytes_per_row": heap / count,
        "toast_bytes_per_row": toast / count,
        "wide_words_bytes_per_row": float(widths[0]),
        "wide_blocks_heap_bytes_per_row": float(widths[1]),
        "v2_block_indexes_bytes_per_row": v2 / count,
        "wide_block_indexes_bytes_per_row": wide / count,
        "index_writes_per_insert": writes,
    }


def build(engine: Engine, data: dict[str, Any], rows: int, seed: int, reuse: bool, workers: int) -> dict[str, Any]:
    """The table: the originals (ids 1..), then the filler; kept as it is with ``reuse`` when it
    holds these rows (their count and the first original)."""
    with engine.connect() as connection:
        exists = engine.dialect.has_table(connection, Doc.__tablename__)
        present = connection.execute(select(func.count()).select_from(Doc)).scalar_one() if exists else 0
        first = connection.execute(select(Doc.body).where(Doc.id == 1)).scalar() if present else None
    if reuse and present == rows and first == data["originals"][0]:
        return {"reused": True}
    if reuse:
        raise SystemExit(f"--reuse: {Doc.__tablename__} holds {present} rows, not these {rows}: run without --reuse to load them")
    Doc.metadata.drop_all(engine)
    Doc.metadata.create_all(engine)
    originals = [("original", body) for body in data["originals"]]
    made = (("filler", body) for body in filler(data, rows - len(originals), seed))
    loaded = load(engine, _chain(originals, made), workers)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        # VACUUM: the visibility map lets the probes be index-only scans, as on a settled table
        connection.execute(text(f"{'VACUUM ANALYZE ' if engine.dialect.name == 'postgresql' else 'ANALYZE TABLE '}{Doc.__tablename__}"))
    return {"reused": False, **loaded}


def _chain(*parts: Iterable[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    for part in parts:
        yield from part


def run(url: str, rows: int, originals: int, fresh: int, scans: int, seed: int, reuse: bool, lang: str = "en",
        source: str = "manpages", workers: int = 2, parts_run: Sequence[str] = PARTS, schema: str | None = None) -> dict[str, Any]:  # fmt: skip
    data = corpus(rows, originals, fresh, seed, lang, source)  # first: without it, nothing is made on the server
    engine = engine_for(url, lang, source, schema)
    result: dict[str, Any] = {"server": engine.dialect.name, "lang": lang, "source": source, "rows": rows, "originals": originals, "budget": BUDGET or "default",
                              "load_average_before": list(os.getloadavg()), "build": build(engine, data, rows, seed, reuse, workers)}  # fmt: skip
    where = f"{engine.url.database}.{engine_schema(engine)}" if engine.dialect.name == "postgresql" else engine.url.database
    result["table"] = f"{where}.{Doc.__tablename__}"  # kept: --reuse checks it again
    copies = disguised(data, seed)
    with Session(engine) as session:
        if "recall" in parts_run:
            result["recall"], times = recall(session, copies)
            result["check"] = summary(times)
            result["load_average_after_recall"] = list(os.getloadavg())
        if "alarms" in parts_run:
            result["false_alarms"] = {
                "fresh_disjoint": false_alarms(session, data["fresh_disjoint"]),
                "fresh_shared": false_alarms(session, data["fresh_shared"]),
            }
            result["load_average_after_alarms"] = list(os.getloadavg())
        if "latency" in parts_run:
            rng = random.Random(seed)
            texts = [copy for _, _, copy in copies]
            result["interleaved_copies"] = interleaved(session, rng.sample(texts, min(scans, len(texts))))
            result["interleaved_fresh"] = interleaved(session, rng.sample(data["fresh_shared"], min(scans, len(data["fresh_shared"]))))
            result["parts"] = parts(session, texts[:: max(1, len(texts) // 200)])
            result["scan"] = result["interleaved_copies"]["scan"]
            result["speedup_p50"] = {
                population: result[f"interleaved_{population}"]["scan"]["p50_ms"] / result[f"interleaved_{population}"]["find_original"]["p50_ms"]
                for population in ("copies", "fresh")
            }
            result["load_average_after_latency"] = list(os.getloadavg())
    if "revisions" in parts_run:
        with Session(engine) as session:
            result["revisions"] = revisions(session, lang)
    if "storage" in parts_run:
        result["storage"] = storage(engine)
    engine.dispose()
    return result


def engine_schema(engine: Engine) -> str:
    options = str(engine.url.query.get("options", ""))
    return options.split("search_path=", 1)[-1] if "search_path=" in options else "public"


CORPUS_UNAVAILABLE = 3
"""Exit status when the source's packages are not (all) installed: the smoke tests skip on it."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--originals", type=int, default=200, help="man pages stored and disguised")
    parser.add_argument("--fresh", type=int, default=1000, help="fresh documents per population")
    parser.add_argument("--scans", type=int, default=60, help="copies and fresh texts timed interleaved with the plain scan")
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--reuse", action="store_true", help="check the table already loaded with these rows (refuse if it holds others)")
    parser.add_argument("--lang", choices=("en", "zh"), default="en", help="English or Chinese documents")
    parser.add_argument("--source", choices=SOURCES, default="manpages",
                        help="man pages (what the defaults were chosen on) or Debian's manuals (held out, never tuned on)")  # fmt: skip
    parser.add_argument("--workers", type=int, default=2, help="processes computing signatures while the table loads")
    parser.add_argument("--schema", help="the PostgreSQL schema (MySQL: database) of the table, instead of one per language and source")
    parser.add_argument("--results-dir", type=Path, default=RESULTS, help="where the JSON goes")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"which measurements, comma-separated, of {','.join(PARTS + EXTRA_PARTS)}")
    parser.add_argument("--budget", type=int, help="a fixed number of probes per check instead of the default (512: the default before it grew for short texts)")
    parser.add_argument("--wide-blocks", help="the table's wide block layout, e.g. 10x24 (benchmarks.scale10m --wide-blocks; default 8x20)")
    parser.add_argument("--background", type=Path, help="a wide background file (fitted on the table's filler and saved there if missing): the table's signatures centred")
    args = parser.parse_args(argv)
    global BUDGET, Doc
    BUDGET = args.budget
    background = None
    if args.background is not None:
        background = centre_on(args.background, corpus(args.rows, args.originals, args.fresh, args.seed, args.lang, args.source), args.seed)
    if args.wide_blocks is not None:  # the table's model cut into these blocks (a --reuse'd table must record them)
        Doc = doc_model(background, wide_blocks=args.wide_blocks)
    chosen = [part for part in args.parts.split(",") if part]
    if unknown := set(chosen) - set(PARTS) - set(EXTRA_PARTS):
        parser.error(f"--parts: unknown {sorted(unknown)}")
    try:
        result = run(args.url, args.rows, args.originals, args.fresh, args.scans, args.seed, args.reuse, args.lang, args.source, args.workers, chosen, args.schema)
    except CorpusUnavailable as error:
        print(f"corpus unavailable: {error}", file=sys.stderr)
        return CORPUS_UNAVAILABLE
    args.results_dir.mkdir(exist_ok=True)
    suffix = ("" if args.lang == "en" else f"-{args.lang}") + ("" if args.source == "manpages" else f"-{args.source}")
    suffix += "" if set(chosen) == set(PARTS) else "-" + "-".join(chosen)
    suffix += "" if args.budget is None else f"-budget{args.budget}"
    path = args.results_dir / f"originality-{result['server']}-{args.rows}{suffix}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
