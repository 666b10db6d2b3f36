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
import gzip
import hashlib
import json
import math
import multiprocessing
import os
import random
import re
import statistics
import subprocess
import sys
import time
import unicodedata
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

__all__ = [
    "APT_INSTALL",
    "CACHE_DIR",
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

Lang = Literal["en", "zh"]

#: The one command that installs everything this module reads (run as root).
APT_INSTALL = "apt-get install -y manpages manpages-dev manpages-zh groff-base"

CACHE_DIR = Path(__file__).resolve().parent / ".cache"

MAN_ROOT = Path("/usr/share/man")
ZH_ROOT = MAN_ROOT / "zh_CN"

#: Bump whenever rendering or cleaning changes, so stale caches are rebuilt, not trusted.
PIPELINE_VERSION = 6

MIN_CHARS: dict[Lang, int] = {"en": 1500, "zh": 500}

#: The Google Cloud SDK ships ~16,600 generated pages (``gcloud_*``: GA, alpha and beta copies
#: of one CLI reference). They would be 94% of the English corpus, are near-duplicates of each
#: other by construction (which would poison "unrelated" negatives) and exist only on machines
#: that happen to have ``google-cloud-cli``, so they are left out.
EXCLUDED_NAME_PREFIXES: tuple[str, ...] = ("gcloud",)

#: Two pages whose word 5-shingle Jaccard reaches this are the same text under two names (e.g. a
#: tool and its renamed fork); only the first in sorted order is kept so the corpus holds no
#: unplanted near-duplicates.
NATURAL_DUPLICATE_JACCARD = 0.5

_GROFF_TIMEOUT_S = 60
_WIDE = "5000n"  # so groff never wraps: each output line is one logical line (a paragraph)


class CorpusUnavailable(RuntimeError):
    """The Debian man pages (or groff) the corpus is rendered from are not installed."""


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
# Source discovery
# --------------------------------------------------------------------------------------------


def _page_name(path: Path) -> str:
    name = path.name
    if name.endswith(".gz"):
        name = name[:-3]
    return name


def _sources(lang: Lang) -> list[tuple[str, str]]:
    """(doc_id, real path) for every distinct page, sorted by doc_id.

    Symlinked aliases (``[.1`` -> ``test.1``, versioned ``llvm-*-14`` names, alternatives) are
    collapsed onto one page, preferring the name the file really has, so the same text is
    never rendered twice under two ids.
    """
    root = MAN_ROOT if lang == "en" else ZH_ROOT
    if not root.is_dir():
        return []
    by_real: dict[str, list[tuple[str, Path]]] = {}
    for section in sorted(root.glob("man[1-9]")):
        if not section.is_dir():
            continue
        for path in section.iterdir():
            name = _page_name(path)
            if name.startswith(EXCLUDED_NAME_PREFIXES):
                continue
            try:
                real = path.resolve(strict=True)
            except (OSError, RuntimeError):
                continue  # dangling alternatives symlink
            if not real.is_file():
                continue
            doc_id = f"{lang}/{section.name}/{name}"
            by_real.setdefault(str(real), []).append((doc_id, path))
    chosen: list[tuple[str, str]] = []
    for real_path, names in by_real.items():
        own = [doc_id for doc_id, path in names if not path.is_symlink()]
        chosen.append((min(own) if own else min(d for d, _ in names), real_path))
    chosen.sort()
    return chosen


def _source_fingerprint(sources: Sequence[tuple[str, str]]) -> str:
    h = hashlib.sha256(f"v{PIPELINE_VERSION}".encode())
    for doc_id, real in sources:
        st = os.stat(real)
        h.update(f"{doc_id}\0{real}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _require_groff() -> None:
    import shutil

    if shutil.which("groff") is None:
        raise CorpusUnavailable(f"groff is not installed; run as root: {APT_INSTALL}")


def _require_pages(lang: Lang, sources: Sequence[tuple[str, str]]) -> None:
    # The sentinel pages belong to the packages this corpus is defined by; without them the
    # corpus would silently be a different (much smaller) one.
    sentinel = (
        MAN_ROOT / "man3" / "pthread_create.3.gz" if lang == "en" else ZH_ROOT / "man1" / "ls.1.gz"
    )
    if not sources or not sentinel.exists():
        package = "manpages-dev" if lang == "en" else "manpages-zh"
        raise CorpusUnavailable(
            f"Debian package {package} is not installed ({sentinel} is missing); "
            f"run as root: {APT_INSTALL}"
        )


# --------------------------------------------------------------------------------------------
# Rendering and cleaning (runs in worker processes)
# --------------------------------------------------------------------------------------------

_SO_ONLY = re.compile(r"^\s*\.so\s+\S+\s*$")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_BOX = re.compile(r"[\u2500-\u257f]+")  # tbl rules: pure layout
# .BS/.BE boxes and \l rules are drawn across the (huge) line length: layout, not text.
_RULE = re.compile(r"_{20,}|-{40,}|={40,}")
_SPACES = re.compile(r"[ \t\u00a0]+")
_CJK = r"\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
# groff joins source lines with a space; between two CJK characters that space is an artefact.
_CJK_GAP = re.compile(rf"(?<=[{_CJK}]) (?=[{_CJK}])")
_HAN_CLASS = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN = re.compile(rf"[{_HAN_CLASS}]")
_LATIN = re.compile(r"[A-Za-z]")
_TRANSLATE = str.maketrans(
    {
        "\u2010": "-",  # hyphen
        "\u2011": "-",  # non-breaking hyphen
        "\u2212": "-",  # minus (groff's \-)
        "\u00ad": None,  # soft hyphen
        "\u200b": None,  # zero-width space
        "\ufeff": None,
    }
)
# Translators spell the NAME heading many ways: "名称", "NAME(名称)", "名字 NAME", "命令名"...
_NAME_HEADING = re.compile(r"^(?=.)(NAME)?(名称|名字|命令名)?(NAME)?$")
_NAME_LINE = re.compile(r"\S \\?[-—] \S")  # "ls - list directory contents"


def _decode(raw: bytes) -> tuple[str, str]:
    """Decode page source; manpages-zh used to ship GB2312, so try that before Latin-1."""
    for encoding in ("utf-8", "gb18030"):
        try:
            return raw.decode(encoding), encoding
        except UnicodeDecodeError:
            continue
    return raw.decode("latin-1"), "latin-1"


def _preprocessor_flags(source: str) -> list[str]:
    # Honour the '\" <letters> hint man(1) reads, so tables and equations are laid out rather
    # than leaking their markup into the text; tbl also runs for any page with a table (hints
    # are often missing). Each preprocessor is a process, so only the needed ones run.
    flags = ["-t"] if ".TS" in source else []
    first = source.split("\n", 1)[0]
    if first.startswith("'\\\""):
        letters = first[3:].split()[0] if first[3:].split() else ""
        flags += [
            {"t": "-t", "e": "-e", "p": "-p", "r": "-R", "g": "-g"}[c]
            for c in letters
            if c in "teprg" and not (c == "t" and flags[:1] == ["-t"])
        ]
    if not source.isascii():
        flags += ["-k", "-K", "utf-8"]  # preconv; ASCII pages do not need it
    return flags


def _clean(rendered: str, lang: Lang) -> tuple[str, str]:
    """Rendered page -> (title, text).

    The text keeps one block per groff paragraph, separated by blank lines, with the running
    header and footer, tbl rules and justification spaces removed.
    """
    text = _ANSI.sub("", rendered)
    text = _CONTROL.sub("", text.translate(_TRANSLATE))
    text = unicodedata.normalize("NFC", text)
    lines = [line.rstrip() for line in text.split("\n")]
    nonblank = [i for i, line in enumerate(lines) if line.strip()]
    if len(nonblank) >= 2:  # running header and footer: page name, section, date, version
        lines = lines[nonblank[0] + 1 : nonblank[-1]]
    blocks: list[list[str]] = []
    current: list[str] = []
    title = ""
    want_title = False
    for raw in lines:
        line = _SPACES.sub(" ", _RULE.sub(" ", _BOX.sub(" ", raw))).strip()
        if lang == "zh":
            line = _CJK_GAP.sub("", _CJK_GAP.sub("", line))
        if not line:
            if current:
                blocks.append(current)
                current = []
            continue
        is_heading = not raw[:1].isspace()
        if is_heading:
            if current:
                blocks.append(current)
                current = []
            blocks.append([line])
            want_title = not title and bool(_NAME_HEADING.match(re.sub(r"\W", "", line.upper())))
            continue
        if want_title:
            title, want_title = line, False
        current.append(line)
    if current:
        blocks.append(current)
    if not title:  # no NAME heading: take a "name - summary" line near the top
        title = next((b[0] for b in blocks[:4] if _NAME_LINE.search(b[0])), "")
    body = "\n\n".join("\n".join(block) for block in blocks)
    return title, body


def _render_one(job: tuple[str, str, Lang]) -> dict[str, Any] | None:
    doc_id, real, lang = job
    raw = Path(real).read_bytes()
    if real.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError):
            return None
    source, encoding = _decode(raw)
    meaningful = [
        line
        for line in source.splitlines()
        if line.strip() and not line.startswith(('.\\"', "'\\\""))
    ]
    if len(meaningful) <= 1 and (not meaningful or _SO_ONLY.match(meaningful[0])):
        return {"doc_id": doc_id, "skip": "alias"}  # ".so other/page": rendered under its own name
    cmd = [
        "groff", "-mandoc", "-Tutf8", "-P-c", "-P-b", "-P-u",
        f"-rLL={_WIDE}", f"-rLT={_WIDE}", "-rHY=0", *_preprocessor_flags(source),
    ]  # fmt: skip
    try:
        proc = subprocess.run(
            cmd,
            input=source.encode("utf-8"),
            capture_output=True,
            timeout=_GROFF_TIMEOUT_S,
            cwd=str(MAN_ROOT if lang == "en" else ZH_ROOT),
            env={**os.environ, "GROFF_SGR": "", "LC_ALL": "C.UTF-8"},
        )
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0 or not proc.stdout:
        return None
    title, text = _clean(proc.stdout.decode("utf-8", errors="replace"), lang)
    if not title:
        title = doc_id.rsplit("/", 1)[-1]
    record: dict[str, Any] = {"doc_id": doc_id, "title": title, "text": text, "encoding": encoding}
    if _eligible(text, lang):
        # Shingling is the costly half of duplicate filtering: do it here, in parallel.
        record["shingles"] = _shingles(text)
        record["signature"] = _minhash(record["shingles"])
    return record


def _eligible(text: str, lang: Lang) -> bool:
    return len(text) >= MIN_CHARS[lang] and (lang != "zh" or is_chinese(text))


# --------------------------------------------------------------------------------------------
# Filtering: language, length, natural duplicates
# --------------------------------------------------------------------------------------------


def is_chinese(text: str, threshold: float = 0.3) -> bool:
    """True when Han characters make up at least ``threshold`` of the letters.

    A ratio rather than "any Han character" because zh_CN holds a few untranslated English
    pages and the translated ones are full of English option names and code.
    """
    han = len(_HAN.findall(text))
    latin_words = len(re.findall(r"[A-Za-z]+", text))
    # A Latin word is counted as ~1 letter-equivalent of a Han character (one token each).
    return han > 0 and han / (han + latin_words) >= threshold


_TOKEN = re.compile(rf"[{_HAN_CLASS}]|[^\W_{_HAN_CLASS}]+")
# 42 bands of 3 rows: a pair at Jaccard 0.5 becomes a candidate with probability 0.996 (0.4:
# 0.94) while pairs at 0.1 rarely do, so the exact check below sees few pairs yet misses
# almost no duplicate.
_NUM_PERM = 126
_BANDS = 42
_rng_perm = np.random.default_rng(20240601)
_PERM_A = _rng_perm.integers(1, 2**63 - 1, size=_NUM_PERM, dtype=np.uint64) | np.uint64(1)
_PERM_B = _rng_perm.integers(0, 2**63 - 1, size=_NUM_PERM, dtype=np.uint64)


def _shingles(text: str, k: int = 5) -> np.ndarray:
    """Hashes of word (Han: character) k-grams; deterministic across processes and runs."""
    tokens = _TOKEN.findall(text.lower())
    if len(tokens) < k:
        tokens = tokens + [""] * (k - len(tokens))
    ids = np.fromiter((zlib.crc32(t.encode()) for t in tokens), dtype=np.uint64, count=len(tokens))
    mult = np.uint64(0x9E3779B97F4A7C15)
    h = np.zeros(len(tokens) - k + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(k):
            h = h * mult + ids[i : len(ids) - k + 1 + i]
    return np.unique(h)


def _minhash(shingles: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (shingles[None, :] * _PERM_A[:, None] + _PERM_B[:, None]).min(axis=1)


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    inter = np.intersect1d(a, b, assume_unique=True).size
    return inter / (a.size + b.size - inter) if inter else 0.0


class _NaturalDuplicateFilter:
    """Greedy keep-first filter over documents in sorted order.

    Whether a document is dropped depends only on the documents before it, so a limited,
    uncached build returns exactly the prefix of the full corpus.
    """

    def __init__(self) -> None:
        self._buckets: dict[tuple[int, bytes], list[int]] = {}
        self._shingles: list[np.ndarray] = []
        self._sigs: list[np.ndarray] = []
        self.dropped: list[tuple[str, str, float]] = []
        self._ids: list[str] = []

    def admit(
        self,
        doc_id: str,
        text: str,
        shingles: np.ndarray | None = None,
        signature: np.ndarray | None = None,
    ) -> bool:
        sh = _shingles(text) if shingles is None else shingles
        sig = _minhash(sh) if signature is None else signature
        rows = _NUM_PERM // _BANDS
        keys = [(b, sig[b * rows : (b + 1) * rows].tobytes()) for b in range(_BANDS)]
        seen: set[int] = set()
        for key in keys:
            for j in self._buckets.get(key, ()):
                if j in seen:
                    continue
                seen.add(j)
                if np.count_nonzero(sig == self._sigs[j]) < 0.3 * _NUM_PERM:
                    continue  # estimate far below the threshold: skip the exact check
                jac = _jaccard(sh, self._shingles[j])
                if jac >= NATURAL_DUPLICATE_JACCARD:
                    self.dropped.append((doc_id, self._ids[j], round(jac, 3)))
                    return False
        index = len(self._shingles)
        self._shingles.append(sh)
        self._sigs.append(sig)
        self._ids.append(doc_id)
        for key in keys:
            self._buckets.setdefault(key, []).append(index)
        return True


# --------------------------------------------------------------------------------------------
# Building and reading the cache
# --------------------------------------------------------------------------------------------


def _cache_paths(lang: Lang, cache_dir: Path) -> tuple[Path, Path]:
    return cache_dir / f"manpages-{lang}.jsonl", cache_dir / f"manpages-{lang}.meta.json"


def _render_stream(
    lang: Lang, sources: Sequence[tuple[str, str]], processes: int
) -> Iterator[dict[str, Any] | None]:
    jobs = [(doc_id, real, lang) for doc_id, real in sources]
    if processes <= 1 or len(jobs) < 8:
        yield from map(_render_one, jobs)
        return
    ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    with ctx.Pool(processes) as pool:
        # imap keeps sorted order, which the keep-first duplicate filter depends on.
        yield from pool.imap(_render_one, jobs, chunksize=8)


def _filtered(
    lang: Lang, rendered: Iterable[dict[str, Any] | None], stats: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    dup_filter = _NaturalDuplicateFilter()
    counts = dict.fromkeys(
        ("rendered", "alias", "failed", "too_short", "not_chinese", "duplicate"), 0
    )
    encodings: dict[str, int] = {}
    stats["counts"] = counts
    stats["encodings"] = encodings
    stats["dropped_duplicates"] = dup_filter.dropped
    for record in rendered:
        if record is None:
            counts["failed"] += 1
            continue
        if "skip" in record:
            counts["alias"] += 1
            continue
        counts["rendered"] += 1
        encodings[record["encoding"]] = encodings.get(record["encoding"], 0) + 1
        text = record["text"]
        if len(text) < MIN_CHARS[lang]:
            counts["too_short"] += 1
            continue
        if lang == "zh" and not is_chinese(text):
            counts["not_chinese"] += 1
            continue
        if not dup_filter.admit(
            record["doc_id"], text, record.get("shingles"), record.get("signature")
        ):
            counts["duplicate"] += 1
            continue
        yield record


def build_cache(
    lang: Lang, *, cache_dir: Path = CACHE_DIR, processes: int | None = None, force: bool = False
) -> dict[str, Any]:
    """Render every page of ``lang`` into the JSONL cache unless a current cache exists.

    Returns the cache's metadata. The cache is keyed by the list of source files with their
    sizes and mtimes, so installing or upgrading man pages triggers a rebuild instead of
    silently serving a corpus that no longer matches the machine.
    """
    sources = _sources(lang)
    _require_pages(lang, sources)
    fingerprint = _source_fingerprint(sources)
    data_path, meta_path = _cache_paths(lang, cache_dir)
    current = _current_cache(meta_path, data_path, fingerprint, force)
    if current is not None:
        return current
    _require_groff()
    cache_dir.mkdir(parents=True, exist_ok=True)
    with _build_lock(cache_dir / f".build-{lang}.lock"):
        # another process (CI runs two test runs side by side) may have built it meanwhile
        current = _current_cache(meta_path, data_path, fingerprint, force)
        if current is not None:
            return current
        return _render_cache(lang, sources, fingerprint, data_path, meta_path, processes)


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
    lang: Lang, sources: Sequence[tuple[str, str]], fingerprint: str, data_path: Path, meta_path: Path, processes: int | None
) -> dict[str, Any]:
    start = time.perf_counter()
    stats: dict[str, Any] = {}
    tmp = data_path.with_suffix(f".tmp{os.getpid()}")
    lengths: list[int] = []
    with tmp.open("w", encoding="utf-8") as out:
        stream = _render_stream(lang, sources, processes or min(2, os.cpu_count() or 1))
        for record in _filtered(lang, stream, stats):
            lengths.append(len(record["text"]))
            doc = {k: record[k] for k in ("doc_id", "title", "text")}
            out.write(json.dumps(doc, ensure_ascii=False) + "\n")
    os.replace(tmp, data_path)
    meta = {
        "lang": lang,
        "fingerprint": fingerprint,
        "pipeline_version": PIPELINE_VERSION,
        "sources": len(sources),
        "documents": len(lengths),
        "bytes": data_path.stat().st_size,
        "chars": sum(lengths),
        "build_seconds": round(time.perf_counter() - start, 1),
        **stats,
    }
    meta_path.write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n")
    return meta


def _documents(lang: Lang, limit: int | None, cache_dir: Path) -> list[Document]:
    if limit is not None and limit < 0:
        raise ValueError("limit must be >= 0 or None")
    sources = _sources(lang)
    _require_pages(lang, sources)
    data_path, meta_path = _cache_paths(lang, cache_dir)
    current = False
    if data_path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        current = meta.get("fingerprint") == _source_fingerprint(sources)
    if not current:
        _require_groff()
    if not current and limit is not None:
        # A small, uncached request (tests, CI) renders only as many pages as it needs; the
        # keep-first filters make that exactly the prefix of the full corpus.
        docs: list[Document] = []
        if limit == 0:
            return docs
        stream = _render_stream(lang, sources, processes=1)
        for record in _filtered(lang, stream, {}):
            docs.append(Document(record["doc_id"], record["title"], record["text"]))
            if len(docs) >= limit:
                break
        return docs
    if not current:
        build_cache(lang, cache_dir=cache_dir)
    docs = []
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
                joined = _CJK_GAP.sub("", joined)
                keep = len(joined) >= limit and is_chinese(joined, threshold=0.5)
            else:
                keep = not _HAN.search(joined) and _is_english_prose(joined, limit)
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
    eligible = [p for p in paragraphs if len(p) < min_chars] or list(paragraphs)
    pool = len(eligible)
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
            size += len(eligible[i]) + 2
        if len(chosen) <= risky_k:
            key = tuple(chosen)
            if key in seen:
                retries += 1
                if retries > 1000 + n:
                    raise ValueError(f"too few paragraphs ({pool}) for {n} distinct articles")
                continue
            seen.add(key)
        produced += 1
        yield "\n\n".join(eligible[i] for i in chosen)


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
