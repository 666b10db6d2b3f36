"""The demo's corpus: documentation that exists wherever simsql is installed, cut into articles.

The docstrings of Python's standard library, the language reference that ``help()`` shows
(``pydoc_data``), and the docstrings of SQLAlchemy (a dependency). Sources are read with
:mod:`ast`, never imported, so no module runs any code. There is no Chinese in the corpus: no
installed package ships Chinese prose (jieba ships only dictionaries), and the demo downloads
nothing.
"""

from __future__ import annotations

import ast
import re
import sysconfig
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .progress import progress_bar

__all__ = ["ARTICLE_CHARS", "MAX_ARTICLES", "MIN_ARTICLE_CHARS", "MIN_DOCSTRING_CHARS", "Article", "load_corpus"]

MAX_ARTICLES = 3000
ARTICLE_CHARS = 3000
"""An article is cut at the first paragraph break after this many characters."""
MIN_ARTICLE_CHARS = 1200
MIN_DOCSTRING_CHARS = 120
"""Shorter docstrings ("Return self.") are skipped: they are not prose."""

Article = tuple[str, str]
"""``(title, body)``."""

_SKIP_DIRS = frozenset({"site-packages", "dist-packages", "test", "tests", "idle_test", "testing"})
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


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


def _cut(name: str, texts: Sequence[str]) -> list[Article]:
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


def _module_articles(name: str, path: Path) -> list[Article]:
    try:
        source = path.read_bytes()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. SyntaxWarning for old escape sequences
            tree = ast.parse(source, filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return []
    return _cut(name, _docstrings(tree))


def _language_reference() -> list[Article]:
    try:
        from pydoc_data.topics import topics  # plain data: the text help() shows
    except ImportError:
        return []
    articles: list[Article] = []
    for topic in sorted(topics):
        articles.extend(_cut(f"language reference: {topic}", [topics[topic]]))
    return articles


@dataclass(frozen=True)
class _Source:
    label: str
    files: list[tuple[str, Path]]
    extra: Callable[[], list[Article]] | None = None


def _sources() -> list[_Source]:
    import sqlalchemy

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return [
        _Source("Python standard library docstrings", list(_python_files(stdlib, "")) if stdlib.is_dir() else []),
        _Source("the Python language reference", [], _language_reference),
        _Source("SQLAlchemy docstrings", list(_python_files(Path(sqlalchemy.__file__).parent, "sqlalchemy"))),
    ]


def load_corpus(limit: int | None = None, progress: bool | None = None) -> tuple[list[Article], list[str]]:
    """The demo's articles as ``(title, body)``, and the names of the sources that gave any.

    Deterministic for a given installation. ``limit`` keeps that many articles spread evenly
    over the whole corpus (every source stays represented). ``progress`` shows a bar on stderr
    (None: only on a terminal) while the sources are read; they are read once per process (a
    few seconds of parsing), so later calls return at once.
    """
    articles, used = _read_sources(progress)
    cap = MAX_ARTICLES if limit is None else min(limit, MAX_ARTICLES)
    if len(articles) > cap:
        return [articles[i * len(articles) // cap] for i in range(cap)], list(used)
    return list(articles), list(used)


_READ: list[tuple[tuple[Article, ...], tuple[str, ...]]] = []
"""The sources as read by the first call of this process (the installation does not change under it)."""


def _read_sources(progress: bool | None) -> tuple[tuple[Article, ...], tuple[str, ...]]:
    if _READ:
        return _READ[0]
    sources = _sources()
    articles: list[Article] = []
    used: list[str] = []
    total = sum(len(s.files) for s in sources)
    with progress_bar(total, "reading docs", "file", progress) as bar:
        for source in sources:
            found = source.extra() if source.extra is not None else []
            for name, path in source.files:
                found.extend(_module_articles(name, path))
                bar.update()
            if found:
                used.append(source.label)
            articles.extend(found)
    _READ.append((tuple(articles), tuple(used)))
    return _READ[0]
