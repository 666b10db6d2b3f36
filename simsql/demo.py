"""``simsql demo``: the whole job on real text, with no server to set up.

The corpus is documentation that exists wherever simsql is installed: the docstrings of
Python's standard library, the language reference that ``help()`` shows (``pydoc_data``), and
the docstrings of SQLAlchemy (a dependency). Sources are read with :mod:`ast`, never imported,
so no module runs any code. Some articles get planted copies with a known answer (a few words
changed, a "Recommended for you" box added, paragraphs reordered), and the demo reports how
many of them simsql finds.

There is no Chinese in the corpus: no installed package ships Chinese prose (jieba ships only
dictionaries), and the demo downloads nothing.

This module is a front end: it prints to ``out`` (progress bars to stderr) and uses only
simsql's public API. It configures no logging.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import random
import re
import statistics
import sys
import sysconfig
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from sqlalchemy import Engine, MetaData, String, Text, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
from simsql.queries import ORIGINALITY_DISTANCE
from simsql.urls import engine_for, normalise_url

__all__ = ["SCHEMA", "DemoArticle", "PlantedCopy", "load_corpus", "main", "plant_copies", "run_demo"]

SCHEMA = "simsql_demo"
"""The demo's own schema: created if missing; only the demo's table in it is dropped and recreated."""

MAX_ARTICLES = 3000
ARTICLE_CHARS = 3000
"""An article is cut at the first paragraph break after this many characters."""
MIN_ARTICLE_CHARS = 1200
MIN_DOCSTRING_CHARS = 120
"""Shorter docstrings ("Return self.") are skipped: they are not prose."""

EDITED_SHARE = 0.05
BOILERPLATE_SHARE = 0.01
REORDERED_SHARE = 0.01
MAX_DISTANCE = 3
SEED = 7
_DEMO_LOCK = 0x73696D73716C  # "simsql": the advisory lock key that lets one demo run at a time

_SKIP_DIRS = frozenset({"site-packages", "dist-packages", "test", "tests", "idle_test", "testing"})
_WORD = re.compile(r"[A-Za-z]{4,}")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")

NEW_TEXT = (
    "The city council will vote on Thursday on a plan to close the riverside road to cars on "
    "weekends. Shop owners along the embankment fear losing customers who arrive by car, while "
    "residents' associations collected four thousand signatures in favour of the closure. A trial "
    "last summer brought more cyclists and families to the river, the council's report says, but "
    "also longer queues at the two bridges. The mayor has promised extra buses on Saturdays if the "
    "plan passes, and a second review after six months."
)
"""The originality check's genuinely new text: news prose, nothing like programming docs."""


class _Base(DeclarativeBase):
    metadata = MetaData(schema=SCHEMA)


class DemoArticle(simsql.SimHashMixin, _Base):
    """An article of the demo corpus; planted copies say what they were copied from."""

    __tablename__ = "demo_articles"
    __simhash_source__ = ("title", "body")

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    title: Mapped[str] = mapped_column(String(200))
    body: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(20))
    planted_from: Mapped[int | None]


# -- the corpus ------------------------------------------------------------------------------


def _docstrings(tree: ast.Module) -> list[str]:
    """Module, public class, function and method docstrings of one file, in source order."""
    found: list[str] = []
    doc = ast.get_docstring(tree)
    if doc and len(doc) >= MIN_DOCSTRING_CHARS:
        found.append(doc)

    def visit(node: ast.Module | ast.ClassDef, prefix: str) -> None:
        for child in node.body:
            if not isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if child.name.startswith("_") and not child.name.startswith("__"):
                continue
            name = prefix + child.name
            doc = ast.get_docstring(child)
            if doc and len(doc) >= MIN_DOCSTRING_CHARS:
                found.append(f"{name}{'' if isinstance(child, ast.ClassDef) else '()'}: {doc}")
            if isinstance(child, ast.ClassDef):
                visit(child, name + ".")

    visit(tree, "")
    return found


def _cut(name: str, texts: Sequence[str]) -> list[tuple[str, str]]:
    """Cut a module's documentation into articles at paragraph breaks; skip tiny ones."""
    paragraphs = [p.strip() for t in texts for p in _PARAGRAPH_BREAK.split(t) if p.strip()]
    chunks: list[list[str]] = []
    chunk: list[str] = []
    size = 0
    for paragraph in paragraphs:
        chunk.append(paragraph)
        size += len(paragraph) + 2
        if size >= ARTICLE_CHARS:
            chunks.append(chunk)
            chunk, size = [], 0
    if chunk:
        if size >= MIN_ARTICLE_CHARS or not chunks:
            chunks.append(chunk)
        else:
            chunks[-1].extend(chunk)  # a short tail joins the previous article
    bodies = [b for b in ("\n\n".join(c) for c in chunks) if len(b) >= MIN_ARTICLE_CHARS]
    if len(bodies) == 1:
        return [(name, bodies[0])]
    return [(f"{name} ({i})", body) for i, body in enumerate(bodies, 1)]


def _python_files(root: Path, package: str) -> Iterator[tuple[str, Path]]:
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if _SKIP_DIRS.intersection(relative.parts[:-1]) or relative.parts[0].startswith("config-"):
            continue
        parts = list(relative.with_suffix("").parts)
        if parts[-1] == "__main__":
            continue
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join([package, *parts] if package else parts), path


def _module_articles(name: str, path: Path) -> list[tuple[str, str]]:
    try:
        source = path.read_bytes()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. SyntaxWarning for old escape sequences
            tree = ast.parse(source, filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return []
    return _cut(name, _docstrings(tree))


def _language_reference() -> list[tuple[str, str]]:
    try:
        from pydoc_data.topics import topics  # plain data: the text help() shows
    except ImportError:
        return []
    articles: list[tuple[str, str]] = []
    for topic in sorted(topics):
        articles.extend(_cut(f"language reference: {topic}", [topics[topic]]))
    return articles


@dataclass(frozen=True)
class _Source:
    label: str
    files: list[tuple[str, Path]]
    extra: Callable[[], list[tuple[str, str]]] | None = None


def _sources() -> list[_Source]:
    import sqlalchemy

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return [
        _Source("Python standard library docstrings", list(_python_files(stdlib, "")) if stdlib.is_dir() else []),
        _Source("the Python language reference", [], _language_reference),
        _Source("SQLAlchemy docstrings", list(_python_files(Path(sqlalchemy.__file__).parent, "sqlalchemy"))),
    ]


def load_corpus(limit: int | None = None, progress: bool | None = None) -> tuple[list[tuple[str, str]], list[str]]:
    """The demo's articles as ``(title, body)``, and the names of the sources that gave any.

    Deterministic for a given installation. ``limit`` keeps that many articles spread evenly
    over the whole corpus (every source stays represented). ``progress`` shows a bar on stderr
    (None: only on a terminal).
    """
    from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

    sources = _sources()
    articles: list[tuple[str, str]] = []
    used: list[str] = []
    total = sum(len(s.files) for s in sources)
    disable = None if progress is None else not progress
    with tqdm(total=total, desc="reading docs", unit="file", file=sys.stderr, disable=disable, leave=False) as bar:
        for source in sources:
            found = source.extra() if source.extra is not None else []
            for name, path in source.files:
                found.extend(_module_articles(name, path))
                bar.update()
            if found:
                used.append(source.label)
            articles.extend(found)
    cap = MAX_ARTICLES if limit is None else min(limit, MAX_ARTICLES)
    if len(articles) > cap:
        articles = [articles[i * len(articles) // cap] for i in range(cap)]
    return articles, used


# -- planted copies --------------------------------------------------------------------------


@dataclass(frozen=True)
class PlantedCopy:
    """A copy planted in the corpus: its row id, the row it copies, and how it differs."""

    id: int
    source: int
    kind: str  # "edited", "boilerplate" or "reordered"
    change: str


def _vocabulary(articles: Sequence[tuple[str, str]]) -> list[str]:
    return sorted({word for _, body in articles for word in _WORD.findall(body)})


def _change_words(body: str, count: int, vocabulary: Sequence[str], rng: random.Random) -> str:
    spans = [match.span() for match in _WORD.finditer(body)]
    for index in sorted(rng.sample(range(len(spans)), min(count, len(spans))), reverse=True):
        start, end = spans[index]
        original = body[start:end]
        replacement = original
        while replacement == original:
            replacement = rng.choice(vocabulary)
        body = body[:start] + replacement + body[end:]
    return body


def plant_copies(
    articles: Sequence[tuple[str, str]], rng: random.Random
) -> tuple[list[tuple[str, str, str, int | None]], list[PlantedCopy]]:
    """All rows to insert as ``(title, body, kind, planted_from)`` (ids are 1-based positions:
    the originals first, then the copies), and the planted copies' ground truth.

    About 5% of the articles get a copy with 1-3 words changed, 1% a copy with a "Recommended
    for you" box appended, 1% a copy with its paragraphs in another order. No article is copied
    twice.
    """
    rows: list[tuple[str, str, str, int | None]] = [(title, body, "original", None) for title, body in articles]
    vocabulary = _vocabulary(articles)
    n = len(articles)
    counts = {
        "edited": max(2, round(n * EDITED_SHARE)),
        "boilerplate": max(1, round(n * BOILERPLATE_SHARE)),
        "reordered": max(1, round(n * REORDERED_SHARE)),
    }
    multi_paragraph = [i for i, (_, body) in enumerate(articles) if body.count("\n\n") >= 2]
    reordered_sources = rng.sample(multi_paragraph, min(counts["reordered"], len(multi_paragraph)))
    taken = set(reordered_sources)
    others = [i for i in range(n) if i not in taken]
    rest = rng.sample(others, min(counts["edited"] + counts["boilerplate"], len(others)))
    plan = (
        [("edited", i) for i in rest[: counts["edited"]]]
        + [("boilerplate", i) for i in rest[counts["edited"] :]]
        + [("reordered", i) for i in reordered_sources]
    )
    planted: list[PlantedCopy] = []
    for kind, index in plan:
        copy, change = _copy(kind, articles, index, vocabulary, rng)
        rows.append((articles[index][0], copy, kind, index + 1))
        planted.append(PlantedCopy(len(rows), index + 1, kind, change))
    return rows, planted


def _copy(
    kind: str, articles: Sequence[tuple[str, str]], index: int, vocabulary: Sequence[str], rng: random.Random
) -> tuple[str, str]:
    """The body of one planted copy of ``articles[index]``, and how it differs."""
    body = articles[index][1]
    if kind == "edited":
        words = rng.randint(1, 3)
        return _change_words(body, words, vocabulary, rng), f"{words} word{'s' if words > 1 else ''} changed"
    if kind == "boilerplate":
        related = "\n".join(f"  • {articles[i][0]}" for i in rng.sample(range(len(articles)), 3))
        copy = f"{body}\n\nRecommended for you\n{related}\n\nShare this article · Subscribe to our weekly newsletter"
        return copy, '"Recommended for you" box added'
    paragraphs = body.split("\n\n")
    shuffled = paragraphs[:]
    while shuffled == paragraphs:
        rng.shuffle(shuffled)
    return "\n\n".join(shuffled), f"{len(paragraphs)} paragraphs reordered"


# -- output helpers --------------------------------------------------------------------------


def _shorten(value: str, width: int) -> str:
    return value if len(value) <= width else value[: width - 1] + "…"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _kind_label(row: DemoArticle, planted: dict[int, PlantedCopy]) -> str:
    copy = planted.get(row.id)
    return f"planted: {copy.change}, copy of #{copy.source}" if copy else ""


Say = Callable[[str], None]
Timings = list[tuple[str, float]]


@contextlib.contextmanager
def _one_demo_at_a_time(engine: Engine, say: Say) -> Iterator[None]:
    """Every run drops and refills the same table, so a second demo on the same database (another
    terminal, a test run) waits for the first instead of colliding with its rows."""
    with engine.connect() as lock:
        if not lock.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": _DEMO_LOCK}).scalar_one():
            say("  waiting for another simsql demo on this database to finish ...")
            lock.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _DEMO_LOCK})
        lock.commit()  # the lock belongs to the session; do not sit idle in a transaction
        try:
            yield
        finally:
            lock.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _DEMO_LOCK})
            lock.commit()


# -- the demo --------------------------------------------------------------------------------


def run_demo(url: str | None, out: TextIO = sys.stdout, *, limit: int | None = None) -> int:
    """Load the corpus into ``url`` (the embedded PostgreSQL when None), in the schema
    ``simsql_demo``, and show what simsql finds. ``limit`` caps the number of articles.
    Returns 0."""

    def say(line: str = "") -> None:
        print(line.rstrip(), file=out, flush=True)

    started = time.perf_counter()
    timings: Timings = []
    say("simsql demo: near-duplicates and most similar articles inside PostgreSQL")
    say()

    if url is None:
        from .embedded import default_data_dir, embedded_url

        t0 = time.perf_counter()
        url = embedded_url()
        timings.append(("embedded PostgreSQL up", time.perf_counter() - t0))
        where = f"embedded PostgreSQL in {default_data_dir()} (nothing to set up)"
    else:
        where = normalise_url(url).render_as_string(hide_password=True)
    engine = engine_for(url)
    try:
        with _one_demo_at_a_time(engine, say):
            _run_steps(engine, say, where, timings, limit)
    finally:
        engine.dispose()

    say()
    say("Timings")
    for step, seconds in timings:
        say(f"   {step:<28} {seconds * 1000:9.1f} ms")
    say(f"   {'total':<28} {(time.perf_counter() - started) * 1000:9.1f} ms")
    say()
    say(f"The rows stay in {SCHEMA}.{DemoArticle.__tablename__}; `simsql demo --url URL` runs this on your own PostgreSQL.")
    return 0


def _run_steps(engine: Engine, say: Say, where: str, timings: Timings, limit: int | None) -> None:
    _prepare_database(engine, say, where, timings)
    articles, rows, planted = _corpus_section(say, timings, limit)
    kinds = {kind: [p for p in planted if p.kind == kind] for kind in ("edited", "boilerplate", "reordered")}
    _load(engine, say, rows, timings)
    with Session(engine) as session:
        by_id = {p.id: p for p in planted}
        _most_similar_section(session, say, articles, kinds, by_id, timings)
        _duplicates_section(session, say, planted, by_id, timings)
        _originality_section(session, say, articles, planted, timings)


def _prepare_database(engine: Engine, say: Say, where: str, timings: Timings) -> None:
    """The demo's schema, and its table dropped and created again (with the mixin's trigger)."""
    t0 = time.perf_counter()
    with engine.begin() as connection:
        version = str(connection.execute(text("SHOW server_version")).scalar_one())
        connection.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{SCHEMA}"'))
        _Base.metadata.drop_all(connection)
        _Base.metadata.create_all(connection)
    timings.append(("database ready", time.perf_counter() - t0))
    say(f"  database   {where}")
    say(f"             PostgreSQL {version.split()[0]}, table {SCHEMA}.{DemoArticle.__tablename__} (recreated each run)")


def _corpus_section(
    say: Say, timings: Timings, limit: int | None
) -> tuple[list[tuple[str, str]], list[tuple[str, str, str, int | None]], list[PlantedCopy]]:
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
    count = {kind: sum(p.kind == kind for p in planted) for kind in ("edited", "boilerplate", "reordered")}
    size = sum(len(body) for _, body in articles) / 1e6
    say(f"  corpus     {len(articles)} articles ({size:.1f} MB of real prose): {', '.join(used)}")
    say(f"  planted    {count['edited']} copies with 1-3 words changed, {count['boilerplate']} with a "
        '"Recommended for you" box,')
    say(f"             {count['reordered']} with paragraphs reordered ({len(rows)} rows in all; copies have ids "
        f"above {len(articles)})")
    say("             (no Chinese articles: no installed package ships Chinese prose)")
    return articles, rows, planted


def _load(engine: Engine, say: Say, rows: Sequence[tuple[str, str, str, int | None]], timings: Timings) -> None:
    from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

    say("")
    say("1. Load through the ORM (SimHashMixin fingerprints title + body on insert)")
    t0 = time.perf_counter()
    batch = 500
    with Session(engine) as session, tqdm(
        total=len(rows), desc="loading", unit="row", file=sys.stderr, leave=False, disable=None
    ) as bar:
        for start in range(0, len(rows), batch):
            session.add_all(
                DemoArticle(id=start + i + 1, title=title, body=body, kind=kind, planted_from=source)
                for i, (title, body, kind, source) in enumerate(rows[start : start + batch])
            )
            session.commit()
            bar.update(min(batch, len(rows) - start))
    with engine.begin() as connection:
        connection.execute(text(f'ANALYZE "{SCHEMA}"."{DemoArticle.__tablename__}"'))
    load_s = time.perf_counter() - t0
    timings.append(("load", load_s))
    say(f"   {len(rows)} rows in {load_s:.2f} s: {len(rows) / load_s:,.0f} rows/s, in batches of {batch}")


def _most_similar_section(
    session: Session,
    say: Say,
    articles: Sequence[tuple[str, str]],
    kinds: dict[str, list[PlantedCopy]],
    by_id: dict[int, PlantedCopy],
    timings: Timings,
) -> None:
    say("")
    say("2. Most similar articles: most_similar(select(DemoArticle), article, limit=5)")
    # The originals of one copy of each kind, and one article nobody copied.
    chosen = [min(p.source for p in kinds[kind]) for kind in ("edited", "boilerplate", "reordered") if kinds[kind]]
    planted_sources = {p.source for p in by_id.values()}
    titles = {title: i + 1 for i, (title, _) in enumerate(articles)}
    preferred = ["json", "json (1)", "sqlite3 (1)", "language reference: for", "sqlalchemy.orm.session (1)"]
    unplanted = [titles[t] for t in preferred if t in titles and titles[t] not in planted_sources]
    fallback = [i for i in range(len(articles) // 2, len(articles) + 1) if i not in planted_sources]
    chosen.extend((unplanted or fallback)[:1])
    for article_id in chosen:
        article = session.get(DemoArticle, article_id)
        assert article is not None
        t0 = time.perf_counter()
        similar = session.execute(simsql.most_similar(select(DemoArticle), article, limit=5)).all()
        elapsed = time.perf_counter() - t0
        timings.append((f"most_similar #{article_id}", elapsed))
        say("")
        say(f"   #{article.id} {_shorten(article.title, 60)}   ({_ms(elapsed)})")
        say(f"     {'bits':>4}  {'similar':>7}  {'id':>6}  {'title':<40}  note")
        for row, distance, similarity in similar:
            say(f"     {distance:>4}  {similarity:>7.1%}  {'#' + str(row.id):>6}  {_shorten(row.title, 40):<40}  "
                f"{_kind_label(row, by_id)}")


def _duplicates_section(
    session: Session,
    say: Say,
    planted: Sequence[PlantedCopy],
    by_id: dict[int, PlantedCopy],
    timings: Timings,
) -> None:
    say("")
    say(f"3. Duplicate groups: duplicate_groups(session, DemoArticle, max_distance={MAX_DISTANCE})")
    t0 = time.perf_counter()
    groups = simsql.duplicate_groups(session, DemoArticle, max_distance=MAX_DISTANCE)
    elapsed = time.perf_counter() - t0
    timings.append(("duplicate_groups", elapsed))
    say(f"   {len(groups)} groups, {sum(len(g) for g in groups)} rows, found in {_ms(elapsed)} "
        "(whole table, block self-joins)")
    fingerprints: dict[int, int] = {
        row.id: row.simhash for row in session.execute(select(DemoArticle.id, DemoArticle.simhash)) if row.simhash is not None
    }

    def distance(a: int, b: int) -> int:
        return simsql.hamming(fingerprints[a], fingerprints[b])

    _recall_table(say, groups, planted, distance)
    _nearest_neighbours(session, say, planted, fingerprints, timings)
    _unplanted_groups(session, say, groups, planted, by_id, distance)


def _recall_table(
    say: Say, groups: Sequence[Sequence[int]], planted: Sequence[PlantedCopy], distance: Callable[[int, int], int]
) -> None:
    """Per kind of copy: how many copies share a group with their original."""
    group_of = {key: index for index, group in enumerate(groups) for key in group}
    say("")
    say("   planted copies found (copy and original in one group)")
    say(f"     {'kind':<12} {'found':>9}  {'recall':>6}   missed (bits between copy and original)")
    for kind in ("edited", "boilerplate", "reordered", "all"):
        copies = [p for p in planted if kind in ("all", p.kind)]
        if not copies:
            continue
        found = [p for p in copies if p.id in group_of and group_of[p.id] == group_of.get(p.source)]
        missed = sorted(distance(p.id, p.source) for p in copies if p not in found)
        shown = ", ".join(str(d) for d in missed[:12]) + (", …" if len(missed) > 12 else "")
        say(f"     {kind:<12} {len(found):>4}/{len(copies):<4}  {len(found) / len(copies):>6.0%}   "
            f"{shown if kind != 'all' else ''}")


def _nearest_neighbours(
    session: Session, say: Say, planted: Sequence[PlantedCopy], fingerprints: dict[int, int], timings: Timings
) -> None:
    """The same copies searched the way "more like this" would: nearest neighbour, any distance."""
    t0 = time.perf_counter()
    latencies: list[float] = []
    nearest_is_source = 0
    for copy in planted:
        q0 = time.perf_counter()
        top = session.execute(
            simsql.most_similar(select(DemoArticle), fingerprints[copy.id], limit=1, exclude=copy.id)
        ).first()
        latencies.append(time.perf_counter() - q0)
        if top is not None and top[0].id == copy.source:
            nearest_is_source += 1
    timings.append((f"most_similar x{len(planted)}", time.perf_counter() - t0))
    say(f"   copies farther than {MAX_DISTANCE} bits are in no group; the same copies by nearest neighbour:")
    say(f"   nearest neighbour of the copy is its original: {nearest_is_source}/{len(planted)} "
        f"(most_similar(..., limit=1) per copy, median {_ms(statistics.median(latencies))})")


def _unplanted_groups(
    session: Session,
    say: Say,
    groups: Sequence[Sequence[int]],
    planted: Sequence[PlantedCopy],
    by_id: dict[int, PlantedCopy],
    distance: Callable[[int, int], int],
) -> None:
    """Groups simsql found that nobody planted: the corpus's own near-duplicates."""
    planted_pairs = {frozenset((p.id, p.source)) for p in planted}
    unplanted = [g for g in groups if not (len(g) == 2 and frozenset(g) in planted_pairs)]
    say("")
    say(f"   groups that are not a planted pair: {len(unplanted)}")
    for group in unplanted[:5]:
        members = session.scalars(select(DemoArticle).where(DemoArticle.id.in_(group)).order_by(DemoArticle.id)).all()
        say(f"     group of {len(members)}:")
        for row in members[:6]:
            bits, closest = min((distance(row.id, other.id), other.id) for other in members if other is not row)
            say(f"       {'#' + str(row.id):>6}  {_shorten(row.title, 44):<44}  {bits:>2} {'bit ' if bits == 1 else 'bits'} from #{closest:<6}  "
                f"{_kind_label(row, by_id)}")
        if len(members) > 6:
            say(f"       … {len(members) - 6} more")


def _originality_section(
    session: Session,
    say: Say,
    articles: Sequence[tuple[str, str]],
    planted: Sequence[PlantedCopy],
    timings: Timings,
) -> None:
    say("")
    say(
        "4. Originality check before publishing: find_original(session, DemoArticle, text)  "
        f"(up to {ORIGINALITY_DISTANCE} bits, then the candidates' text is compared)"
    )
    rng = random.Random(SEED + 1)
    copied = {p.source for p in planted}
    target = rng.choice([i + 1 for i in range(len(articles)) if i + 1 not in copied])
    title, body = articles[target - 1]
    edited = f"{title}\n{_change_words(body, 2, _vocabulary(articles), rng)}"
    submissions = [
        ("edited copy", f"#{target} with 2 words changed", edited),
        ("new text", "a new text (local news)", NEW_TEXT),
    ]
    for step, label, submission in submissions:
        t0 = time.perf_counter()
        match = simsql.find_original(session, DemoArticle, submission)
        elapsed = time.perf_counter() - t0
        timings.append((f"find_original ({step})", elapsed))
        if match is None:
            verdict = "original"
        else:
            verdict = f"not original: matches #{match.row.id} at {match.distance} bits ({_shorten(match.row.title, 40)})"
        say(f"   {label:<28} {verdict}   ({_ms(elapsed)})")
    _fresh_copies(session, say, articles, copied, rng, timings)


FRESH_COPIES = 20
"""Disguised copies per kind submitted to the originality check (never stored)."""


def _fresh_copies(
    session: Session,
    say: Say,
    articles: Sequence[tuple[str, str]],
    copied: set[int],
    rng: random.Random,
    timings: Timings,
) -> None:
    """Submit new disguised copies of stored articles, as a copier would, and count how many
    the defaults catch beside the 3-bit fingerprint-only check."""
    vocabulary = _vocabulary(articles)
    candidates = [i for i in range(len(articles)) if i + 1 not in copied]
    say("")
    say("   fresh disguised copies submitted (not stored), caught as copies of their original")
    say(f"     {'kind':<20} {'defaults':>8}  {'':>6}  fingerprints only, 3 bits")
    totals = [0, 0, 0]
    t0 = time.perf_counter()
    for kind in ("edited", "boilerplate", "reordered"):
        chosen = rng.sample(candidates, min(FRESH_COPIES, len(candidates)))
        caught = strict = 0
        for index in chosen:
            title, _ = articles[index]
            body, _ = _copy(kind, articles, index, vocabulary, rng)
            submission = f"{title}\n{body}"
            match = simsql.find_original(session, DemoArticle, submission)
            caught += match is not None and match.row.id == index + 1
            near = simsql.find_original(session, DemoArticle, submission, max_distance=3, min_containment=None)
            strict += near is not None and near.row.id == index + 1
        totals = [totals[0] + caught, totals[1] + strict, totals[2] + len(chosen)]
        say(f"     {'copy: ' + kind:<20} {caught:>5}/{len(chosen):<3} {caught / len(chosen):>5.0%}  {strict}/{len(chosen)}")
    timings.append((f"find_original x{2 * totals[2]}", time.perf_counter() - t0))
    say(
        f"   fresh copies caught: {totals[0]}/{totals[2]} at the defaults, "
        f"{totals[1]}/{totals[2]} fingerprints only within 3 bits"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simsql.demo", description="simsql's demo on real text")
    parser.add_argument("--url", default=None, help="a PostgreSQL URL (default: the embedded PostgreSQL)")
    parser.add_argument("--limit", type=int, default=None, help=f"articles to load (default: all, at most {MAX_ARTICLES})")
    args = parser.parse_args(argv)
    return run_demo(args.url, limit=args.limit)


if __name__ == "__main__":
    raise SystemExit(main())
