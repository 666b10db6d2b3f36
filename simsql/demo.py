"""``simsql demo``: the whole job on real text, with no server to set up.

The corpus is the documentation of Python's own standard library (module, class and function
docstrings), so it is real prose present on every machine that can install simsql. Some
articles get planted copies (a few words changed, a "Recommended for you" block added,
paragraphs swapped) so the duplicate search has a known answer to find.

This module is a front end: it prints. Everything it does goes through simsql's public API.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import inspect
import io
import pkgutil
import random
import sys
import time
import warnings
from typing import TextIO

from sqlalchemy import String, Text, create_engine, func, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql

SCHEMA = "simsql_demo"
_SKIP = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "pydoc", "webbrowser", "lib2to3", "ensurepip", "venv", "__phello__", "xxsubtype"}


class _Base(DeclarativeBase):
    pass


class DemoArticle(simsql.SimHashMixin, _Base):
    __tablename__ = "demo_articles"
    __simhash_source__ = ("title", "body")

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    title: Mapped[str] = mapped_column(String(200))
    body: Mapped[str] = mapped_column(Text)
    planted_from: Mapped[int | None]
    kind: Mapped[str] = mapped_column(String(20), default="original")


def _module_text(name: str) -> str | None:
    """A module's docstring and the docstrings of its public classes and functions."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _read_module_text(name)


def _read_module_text(name: str) -> str | None:
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            module = importlib.import_module(name)
    except BaseException:  # noqa: BLE001 - some modules exit or need a display on import
        return None
    parts = [inspect.getdoc(module) or ""]
    for attribute, value in sorted(vars(module).items()):
        if attribute.startswith("_") or getattr(value, "__module__", None) != name:
            continue
        if inspect.isclass(value) or inspect.isfunction(value):
            doc = inspect.getdoc(value)
            if doc and len(doc) > 80:
                parts.append(f"{attribute}: {doc}")
    joined = "\n\n".join(p for p in parts if p)
    return joined if len(joined) > 400 else None


def _stdlib_modules() -> list[str]:
    """Standard-library modules and their public submodules (``email.message``, ``http.client``...)."""
    names = []
    for name in sorted(sys.stdlib_module_names):
        if name in _SKIP or name.startswith("_"):
            continue
        names.append(name)
        spec = importlib.util.find_spec(name) if name not in sys.builtin_module_names else None
        # The codecs under encodings share one boilerplate docstring: duplicates, not articles.
        if spec is not None and spec.submodule_search_locations and name != "encodings":
            for info in pkgutil.iter_modules(spec.submodule_search_locations):
                if not info.name.startswith("_") and info.name not in ("test", "tests", "idle_test"):
                    names.append(f"{name}.{info.name}")
    return names


def corpus(limit: int) -> list[tuple[str, str]]:
    """Article-length (title, body) pairs cut from the standard library's documentation."""
    articles: list[tuple[str, str]] = []
    for name in _stdlib_modules():
        body = _module_text(name)
        if body is None:
            continue
        chunk: list[str] = []
        size = 0
        part = 1
        for paragraph in body.split("\n\n"):
            chunk.append(paragraph)
            size += len(paragraph)
            if size > 3000:
                articles.append((f"{name} ({part})", "\n\n".join(chunk)))
                chunk, size, part = [], 0, part + 1
        if size > 600:
            articles.append((f"{name} ({part})", "\n\n".join(chunk)))
        if len(articles) >= limit:
            break
    return articles[:limit]


def _edit_words(body: str, rate: float, rng: random.Random) -> str:
    words = body.split(" ")
    for _ in range(max(1, int(len(words) * rate))):
        words[rng.randrange(len(words))] = rng.choice(words)
    return " ".join(words)


def _plant(articles: list[tuple[str, str]], rng: random.Random) -> list[tuple[str, str, int, str]]:
    rows = [(title, body, 0, "original") for title, body in articles]
    sources = rng.sample(range(len(articles)), max(3, len(articles) // 20))
    for i, source in enumerate(sources):
        title, body = articles[source]
        if i % 3 == 0:
            copy, kind = _edit_words(body, 0.01, rng), "edited"
        elif i % 3 == 1:
            copy = "Recommended for you: Python tips, weekly digest, more articles\n\n" + body + "\n\nShare this article"
            kind = "boilerplate"
        else:
            paragraphs = body.split("\n\n")
            if len(paragraphs) > 2:
                paragraphs[0], paragraphs[1] = paragraphs[1], paragraphs[0]
            copy, kind = "\n\n".join(paragraphs), "reordered"
        rows.append((title, copy, source + 1, kind))
    return rows


def planted_rows(session: Session) -> list[tuple[int, int, str]]:
    """(copy id, source id, kind) of every planted copy."""
    query = select(DemoArticle.id, DemoArticle.planted_from, DemoArticle.kind).where(DemoArticle.planted_from.is_not(None))
    return [(int(a), int(b or 0), str(c)) for a, b, c in session.execute(query.order_by(DemoArticle.id))]


def run_demo(url: str | None, out: TextIO = sys.stdout, *, limit: int | None = None) -> int:
    """Load the corpus into ``url`` (the embedded PostgreSQL when None) and show what simsql finds."""
    from tqdm import tqdm

    if url is None:
        from .embedded import embedded_url

        url = embedded_url()
        print("database: embedded PostgreSQL (no server to set up)", file=out)
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{SCHEMA}"'))
    engine = create_engine(url, connect_args={"options": f"-csearch_path={SCHEMA}"})
    _Base.metadata.drop_all(engine)
    _Base.metadata.create_all(engine)

    started = time.perf_counter()
    articles = corpus(limit or 2000)
    rng = random.Random(7)
    rows = _plant(articles, rng)
    print(f"corpus: {len(articles)} articles from the Python standard library's documentation "
          f"({sum(len(b) for _, b in articles) / 1e6:.1f} MB), {len(rows) - len(articles)} planted copies "
          f"({time.perf_counter() - started:.1f} s)", file=out)

    started = time.perf_counter()
    with Session(engine) as session:
        for start in tqdm(range(0, len(rows), 250), desc="loading", unit="batch", file=sys.stderr, disable=out is not sys.stdout):
            for offset, (title, body, source, kind) in enumerate(rows[start : start + 250]):
                session.add(DemoArticle(id=start + offset + 1, title=title, body=body, planted_from=source or None, kind=kind))
            session.commit()
        elapsed = time.perf_counter() - started
        print(f"loaded {len(rows)} rows through the ORM, fingerprinted on insert: {len(rows) / elapsed:.0f} rows/s", file=out)

        print("\nMost similar articles", file=out)
        showcase = [source for _, source, _ in planted_rows(session)[:2]] + [len(articles) // 3]
        for article_id in showcase:
            article = session.get(DemoArticle, article_id)
            assert article is not None
            t0 = time.perf_counter()
            similar = session.execute(simsql.most_similar(select(DemoArticle), article, limit=5)).all()
            print(f"  #{article.id} {article.title}  ({1000 * (time.perf_counter() - t0):.1f} ms)", file=out)
            for row, distance, similarity in similar:
                print(f"      {distance:2d} bits  {similarity:6.1%}  #{row.id} {row.title} [{row.kind}]", file=out)

        t0 = time.perf_counter()
        groups = simsql.duplicate_groups(session, DemoArticle, max_distance=3)
        elapsed = 1000 * (time.perf_counter() - t0)
        planted = planted_rows(session)
        together = {frozenset(g) for g in groups}
        found = {kind: 0 for kind in ("edited", "boilerplate", "reordered")}
        totals = dict.fromkeys(found, 0)
        for copy_id, source_id, kind in planted:
            totals[kind] += 1
            if any(copy_id in g and source_id in g for g in together):
                found[kind] += 1
        print(f"\nDuplicate groups within 3 bits: {len(groups)} groups ({elapsed:.0f} ms for the whole table)", file=out)
        for kind in found:
            print(f"  planted {kind:<12} copies found: {found[kind]}/{totals[kind]}", file=out)
        planted_ids = {c for c, _, _ in planted} | {s for _, s, _ in planted}
        natural = [g for g in groups if not set(g) <= planted_ids]
        print(f"  groups the standard library itself contains (not planted): {len(natural)}", file=out)
        for group in natural[:3]:
            titles = session.scalars(select(DemoArticle.title).where(DemoArticle.id.in_(group)).order_by(DemoArticle.id)).all()
            more = f", ... ({len(titles)} articles)" if len(titles) > 6 else ""
            print(f"    {', '.join(titles[:6])}{more}", file=out)

        print("\nOriginality check before accepting a new article", file=out)
        original = session.get(DemoArticle, len(articles) // 2)
        assert original is not None
        submissions = {
            "a lightly edited copy": original.title + "\n" + _edit_words(original.body, 0.01, random.Random(1)),
            "a new text": "Tomorrow the city council votes on the new cycling lanes along the river, after a year "
            "of public hearings where residents, shop owners and commuters argued about parking, safety and noise.",
        }
        for label, submission in submissions.items():
            t0 = time.perf_counter()
            match = simsql.find_original(session, DemoArticle, submission)
            ms = 1000 * (time.perf_counter() - t0)
            if match is None:
                print(f"  {label}: original ({ms:.1f} ms)", file=out)
            else:
                print(f"  {label}: not original, matches #{match.row.id} {match.row.title} at {match.distance} bits ({ms:.1f} ms)", file=out)
        total = session.scalar(select(func.count()).select_from(DemoArticle))
        print(f"\n{total} rows in {SCHEMA}.demo_articles; rerun with --url to use your own PostgreSQL.", file=out)
    engine.dispose()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simsql.demo")
    parser.add_argument("--url", default=None)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args(argv)
    return run_demo(args.url, limit=args.limit)


if __name__ == "__main__":
    raise SystemExit(main())
