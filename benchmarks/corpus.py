"""Real-text benchmark corpus built from the Debian manual pages installed on this machine.

Man pages are the only sizeable body of real prose that this offline machine can install from
Debian's mirror: thousands of English pages (``manpages``, ``manpages-dev`` and whatever other
packages put in ``/usr/share/man/man*``) and several hundred Chinese ones (``manpages-zh``).
They are rendered once with groff into ``benchmarks/.cache/`` as JSONL, so every later call is a
file read.

Build and print statistics with::

    python -m benchmarks.corpus            # add --rebuild to ignore the cache
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .manpages import (
    APT_INSTALL,
    MIN_CHARS,
    PIPELINE_VERSION,
    CorpusUnavailable,
    Lang,
    filtered,
    render_stream,
    require_groff,
    require_pages,
    source_fingerprint,
    sources,
)
from .neardup import CJK_GAP, HAN, is_chinese

__all__ = [
    "APT_INSTALL",
    "CACHE_DIR",
    "MIN_CHARS",
    "QUICK_DOCUMENTS",
    "CorpusUnavailable",
    "Document",
    "assembled_articles",
    "build_cache",
    "chinese_documents",
    "english_documents",
    "family",
    "is_chinese",
    "paragraphs",
]

CACHE_DIR = Path(__file__).resolve().parent / ".cache"

QUICK_DOCUMENTS = 200
"""Documents per language a ``--quick`` run reads: rendered on the fly when nothing is cached,
so the smoke run never renders the whole corpus."""


@dataclass(frozen=True)
class Document:
    """One rendered manual page.

    ``doc_id`` is ``"<lang>/<section dir>/<file name without .gz>"`` (e.g.
    ``"en/man3/pthread_create.3"``) so documents sort and group by section and name.
    """

    doc_id: str
    title: str
    text: str


# --------------------------------------------------------------------------------------------
# Building and reading the cache
# --------------------------------------------------------------------------------------------


def _cache_paths(lang: Lang, cache_dir: Path) -> tuple[Path, Path]:
    return cache_dir / f"manpages-{lang}.jsonl", cache_dir / f"manpages-{lang}.meta.json"



def build_cache(
    lang: Lang, *, cache_dir: Path = CACHE_DIR, processes: int | None = None, force: bool = False
) -> dict[str, Any]:
    """Render every page of ``lang`` into the JSONL cache unless a current cache exists.

    Returns the cache's metadata. The cache is keyed by the list of source files with their
    sizes and mtimes, so installing or upgrading man pages triggers a rebuild instead of
    silently serving a corpus that no longer matches the machine.
    """
    pages = sources(lang)
    require_pages(lang, pages)
    fingerprint = source_fingerprint(pages)
    data_path, meta_path = _cache_paths(lang, cache_dir)
    current = _current_cache(meta_path, data_path, fingerprint, force)
    if current is not None:
        return current
    require_groff()
    cache_dir.mkdir(parents=True, exist_ok=True)
    with _build_lock(cache_dir / f".build-{lang}.lock"):
        # another process (CI runs two test runs side by side) may have built it meanwhile
        current = _current_cache(meta_path, data_path, fingerprint, force)
        if current is not None:
            return current
        return _render_cache(lang, pages, fingerprint, data_path, meta_path, processes)


def _current_cache(meta_path: Path, data_path: Path, fingerprint: str, force: bool) -> dict[str, Any] | None:
    if not force and data_path.exists() and meta_path.exists():
        meta: dict[str, Any] = json.loads(meta_path.read_text())
        if meta.get("fingerprint") == fingerprint:
            return meta
    return None


@contextlib.contextmanager
def _build_lock(path: Path) -> Iterator[None]:
    """One process renders a language at a time; the others wait and then read its cache."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, each process renders its own copy
        yield
        return
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _render_cache(
    lang: Lang, pages: Sequence[tuple[str, str]], fingerprint: str, data_path: Path, meta_path: Path, processes: int | None
) -> dict[str, Any]:
    start = time.perf_counter()
    stats: dict[str, Any] = {}
    tmp = data_path.with_suffix(f".tmp{os.getpid()}")
    lengths: list[int] = []
    with tmp.open("w", encoding="utf-8") as out:
        stream = render_stream(lang, pages, processes or min(2, os.cpu_count() or 1))
        for record in filtered(lang, stream, stats):
            lengths.append(len(record["text"]))
            doc = {k: record[k] for k in ("doc_id", "title", "text")}
            out.write(json.dumps(doc, ensure_ascii=False) + "\n")
    os.replace(tmp, data_path)
    meta = {
        "lang": lang,
        "fingerprint": fingerprint,
        "pipeline_version": PIPELINE_VERSION,
        "sources": len(pages),
        "documents": len(lengths),
        "bytes": data_path.stat().st_size,
        "chars": sum(lengths),
        "build_seconds": round(time.perf_counter() - start, 1),
        **stats,
    }
    meta_path.write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n")
    return meta


_PREFIXES: dict[tuple[str, str, int], tuple[Document, ...]] = {}


def _rendered_prefix(lang: Lang, pages: Sequence[tuple[str, str]], limit: int, cache_dir: Path = CACHE_DIR) -> tuple[Document, ...]:
    """The first ``limit`` documents, rendered without the full cache (tests, the quick run):
    only as many pages as needed, which the keep-first filters make exactly the prefix of the
    full corpus. Kept for the process, and on disk (``manpages-<lang>.prefix.jsonl``, keyed by
    the sources like the full cache), so the smoke runs' processes do not each render the same
    pages again with groff (tens of seconds of CI)."""
    fingerprint = source_fingerprint(pages)
    key = (lang, fingerprint, limit)
    if key not in _PREFIXES:
        stored = _stored_prefix(lang, fingerprint, limit, cache_dir)
        if stored is None:
            docs: list[Document] = []
            stream = render_stream(lang, pages, processes=1) if limit else iter(())
            for record in filtered(lang, stream, {}):
                docs.append(Document(record["doc_id"], record["title"], record["text"]))
                if len(docs) >= limit:
                    break
            stored = tuple(docs)
            _store_prefix(lang, fingerprint, limit, stored, cache_dir)
        _PREFIXES[key] = stored
    return _PREFIXES[key]


def _prefix_paths(lang: Lang, cache_dir: Path) -> tuple[Path, Path]:
    return cache_dir / f"manpages-{lang}.prefix.jsonl", cache_dir / f"manpages-{lang}.prefix.meta.json"


def _stored_prefix(lang: Lang, fingerprint: str, limit: int, cache_dir: Path) -> tuple[Document, ...] | None:
    """The first ``limit`` documents of a stored prefix of the same sources, if one holds them
    (a prefix that ended short of its limit holds the whole corpus)."""
    data_path, meta_path = _prefix_paths(lang, cache_dir)
    try:
        meta = json.loads(meta_path.read_text())
        if meta.get("fingerprint") != fingerprint or meta.get("pipeline_version") != PIPELINE_VERSION:
            return None
        if meta["documents"] < limit and meta["documents"] == meta["limit"]:
            return None
        docs = []
        with data_path.open(encoding="utf-8") as f:
            for line in itertools.islice(f, limit):
                d = json.loads(line)
                docs.append(Document(d["doc_id"], d["title"], d["text"]))
        return tuple(docs) if len(docs) == min(limit, meta["documents"]) else None
    except (OSError, ValueError, KeyError):
        return None


def _store_prefix(lang: Lang, fingerprint: str, limit: int, docs: tuple[Document, ...], cache_dir: Path) -> None:
    """Keep the longest prefix rendered so far; a failure to write only costs a later render."""
    data_path, meta_path = _prefix_paths(lang, cache_dir)
    try:
        meta = json.loads(meta_path.read_text())
        if meta.get("fingerprint") == fingerprint and meta.get("pipeline_version") == PIPELINE_VERSION and meta["documents"] >= len(docs):
            return
    except (OSError, ValueError, KeyError):
        pass
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        suffix = f".{os.getpid()}.tmp"
        data_tmp, meta_tmp = data_path.with_suffix(suffix), meta_path.with_suffix(suffix)
        with data_tmp.open("w", encoding="utf-8") as out:
            for doc in docs:
                out.write(json.dumps({"doc_id": doc.doc_id, "title": doc.title, "text": doc.text}, ensure_ascii=False) + "\n")
        meta_tmp.write_text(json.dumps({"fingerprint": fingerprint, "pipeline_version": PIPELINE_VERSION, "limit": limit, "documents": len(docs)}))
        # the data first, then the meta that vouches for it: a reader never takes a meta for another data file
        meta_path.unlink(missing_ok=True)
        os.replace(data_tmp, data_path)
        os.replace(meta_tmp, meta_path)
    except OSError:
        return


def _documents(lang: Lang, limit: int | None, cache_dir: Path) -> list[Document]:
    if limit is not None and limit < 0:
        raise ValueError("limit must be >= 0 or None")
    pages = sources(lang)
    require_pages(lang, pages)
    data_path, meta_path = _cache_paths(lang, cache_dir)
    current = False
    if data_path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        current = meta.get("fingerprint") == source_fingerprint(pages)
    if not current:
        require_groff()
    if not current and limit is not None:
        return list(_rendered_prefix(lang, pages, limit, cache_dir))
    if not current:
        build_cache(lang, cache_dir=cache_dir)
    docs: list[Document] = []
    with data_path.open(encoding="utf-8") as f:
        for line in f:
            if limit is not None and len(docs) >= limit:
                break
            d = json.loads(line)
            docs.append(Document(d["doc_id"], d["title"], d["text"]))
    return docs


def english_documents(limit: int | None = None, *, cache_dir: Path = CACHE_DIR) -> list[Document]:
    """English man pages of at least 1,500 characters, sorted by ``doc_id``.

    With ``limit`` and no cache, only enough pages to satisfy it are rendered, which keeps
    tests fast on a fresh checkout; the result is always a prefix of the full corpus.

    Raises :class:`CorpusUnavailable` (naming the ``apt-get`` command) without the packages.
    """
    return _documents("en", limit, cache_dir)


def chinese_documents(limit: int | None = None, *, cache_dir: Path = CACHE_DIR) -> list[Document]:
    """Chinese (zh_CN) man pages of at least 500 characters, sorted by ``doc_id``.

    Same caching and ``limit`` behaviour as :func:`english_documents`.
    """
    return _documents("zh", limit, cache_dir)


# --------------------------------------------------------------------------------------------
# Paragraphs and assembled articles
# --------------------------------------------------------------------------------------------

_CODE_CHARS = re.compile(r"[{}\[\]<>|=;$#*/\\]")


def _is_english_prose(block: str, min_chars: int) -> bool:
    if len(block) < min_chars:
        return False
    words = block.split()
    if len(words) < 12:
        return False
    alpha = sum(1 for w in words if w.strip(".,;:()'\"!?").isalpha())
    # Option tables, synopses and code listings are not what a real article is made of.
    return alpha / len(words) >= 0.7 and len(_CODE_CHARS.findall(block)) / len(block) < 0.03


def paragraphs(docs: Iterable[Document], min_chars: int | None = None) -> list[str]:
    """Distinct prose paragraphs of ``docs``, in document order, each on a single line.

    Headings, synopses, option tables and code are left out so that articles assembled from
    the paragraphs read like prose rather than like reference cards; a paragraph must be in
    its document's language (zh_CN pages quote English examples), and repeated paragraphs
    (translation colophons, licence notes) are kept once so assembled articles do not share
    them by accident. ``min_chars`` defaults to 120 for English and 40 for Chinese.
    """
    out: list[str] = []
    seen: set[str] = set()
    for doc in docs:
        chinese = doc.doc_id.startswith("zh/") or (
            not doc.doc_id.startswith("en/") and is_chinese(doc.text)
        )
        limit = min_chars if min_chars is not None else (40 if chinese else 120)
        for block in doc.text.split("\n\n"):
            joined = " ".join(line.strip() for line in block.split("\n"))
            if chinese:
                joined = CJK_GAP.sub("", joined)
                keep = len(joined) >= limit and is_chinese(joined, threshold=0.5)
            else:
                keep = not HAN.search(joined) and _is_english_prose(joined, limit)
            if keep and joined not in seen:
                seen.add(joined)
                out.append(joined)
    return out


def assembled_articles(
    paragraphs: Sequence[str],
    n: int,
    seed: int,
    *,
    min_chars: int = 1500,
    max_chars: int = 6000,
) -> Iterator[str]:
    """Yield ``n`` distinct new articles, each a random run of real paragraphs.

    Scale sets need far more documents than exist, but synthetic word salad has no realistic
    token statistics; random real paragraphs keep the vocabulary and paragraph shape of real
    text. Each article's length is drawn uniformly from ``[min_chars, max_chars]`` and reached
    by whole paragraphs, drawn without replacement within an article; deterministic in
    ``seed``. Only paragraphs shorter than ``min_chars`` are used, so every article joins at
    least two, and articles of few paragraphs are checked against each other: a scale set must
    not contain exact duplicates that nobody planted.
    """
    if not paragraphs:
        raise ValueError("no paragraphs to assemble articles from")
    if n < 0:
        raise ValueError("n must be >= 0")
    eligible = eligible_paragraphs(paragraphs, min_chars)
    for chosen in article_paragraphs([len(p) for p in eligible], n, seed, min_chars=min_chars, max_chars=max_chars):
        yield "\n\n".join(eligible[i] for i in chosen)


def eligible_paragraphs(paragraphs: Sequence[str], min_chars: int) -> list[str]:
    """The paragraphs :func:`assembled_articles` draws from: those shorter than ``min_chars``
    (so every article joins at least two), or all of them when none is."""
    return [p for p in paragraphs if len(p) < min_chars] or list(paragraphs)


def article_paragraphs(lengths: Sequence[int], n: int, seed: int, *, min_chars: int, max_chars: int) -> Iterator[tuple[int, ...]]:
    """The paragraph numbers of the ``n`` articles :func:`assembled_articles` joins, from the
    ``lengths`` of its eligible paragraphs (:func:`eligible_paragraphs`): the one owner of the
    draws, so ``benchmarks.scale10m`` builds the very articles without joining their text."""
    pool = len(lengths)
    # Below ~1e30 possible orderings, repeats among millions of articles are plausible.
    risky_k = int(30 / math.log10(pool)) if pool > 1 else 1 << 30
    rng = random.Random(seed)
    seen: set[tuple[int, ...]] = set()
    produced = 0
    retries = 0
    while produced < n:
        target = rng.randint(min_chars, max_chars)
        chosen: list[int] = []
        used: set[int] = set()
        size = 0
        while size < target and len(used) < pool:
            i = rng.randrange(pool)
            if i in used:
                continue
            used.add(i)
            chosen.append(i)
            size += lengths[i] + 2
        key = tuple(chosen)
        if len(chosen) <= risky_k:
            if key in seen:
                retries += 1
                if retries > 1000 + n:
                    raise ValueError(f"too few paragraphs ({pool}) for {n} distinct articles")
                continue
            seen.add(key)
        produced += 1
        yield key


def family(doc_id: str) -> str:
    """Section plus name stem (``"en/man3/pthread"`` for ``en/man3/pthread_create.3``).

    Pages of one family share boilerplate and vocabulary, which makes them the hard negatives
    of a near-duplicate benchmark.
    """
    lang, section, name = doc_id.split("/", 2)
    stem = re.split(r"[_\-.:]", name, maxsplit=1)[0]
    return f"{lang}/{section}/{stem.lower()}"


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def _describe(lang: Lang, meta: dict[str, Any], docs: Sequence[Document]) -> str:
    lengths = sorted(len(d.text) for d in docs)
    if not lengths:
        return f"{lang}: no documents"
    q = statistics.quantiles(lengths, n=20)  # 5% steps
    over = {cap: sum(1 for x in lengths if x > cap) for cap in (20_000, 50_000, 100_000)}
    counts = meta.get("counts", {})
    return "\n".join(
        [
            f"[{lang}] {len(docs)} documents from {meta['sources']} distinct pages "
            f"(cache {int(meta['bytes']) / 1e6:.1f} MB, {sum(lengths) / 1e6:.1f} M chars, "
            f"built in {meta['build_seconds']} s)",
            f"  length chars: min {lengths[0]}, p5 {q[0]:.0f}, p25 {q[4]:.0f}, "
            f"median {statistics.median(lengths):.0f}, p75 {q[14]:.0f}, p95 {q[18]:.0f}, "
            f"max {lengths[-1]}",
            "  longer than 20k/50k/100k chars: " + "/".join(str(v) for v in over.values()),
            f"  filtered: {counts}",
            f"  source encodings: {meta.get('encodings')}",
            f"  natural duplicates dropped (kept first): {len(meta.get('dropped_duplicates', []))}",
            f"  prose paragraphs: {len(paragraphs(docs))}",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.corpus", description=__doc__)
    parser.add_argument("--rebuild", action="store_true", help="ignore an existing cache")
    parser.add_argument("--processes", type=int, default=None, help="render workers (default 2)")
    parser.add_argument(
        "--show-duplicates", action="store_true", help="list pages dropped as natural duplicates"
    )
    args = parser.parse_args(argv)
    try:
        for lang, load in (("en", english_documents), ("zh", chinese_documents)):
            t0 = time.perf_counter()
            meta = build_cache(lang, processes=args.processes, force=args.rebuild)  # type: ignore[arg-type]
            docs = load()
            print(_describe(lang, meta, docs))  # type: ignore[arg-type]
            print(f"  (this run: {time.perf_counter() - t0:.1f} s)")
            if args.show_duplicates:
                for dropped, kept, jac in meta.get("dropped_duplicates", []):
                    print(f"    {dropped}  ~  {kept}  J={jac}")
    except CorpusUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
