"""Rendering Debian's manual pages into plain text: the raw material of :mod:`benchmarks.corpus`.

Pages are found under ``/usr/share/man`` (English) and ``/usr/share/man/zh_CN`` (Chinese),
symlinked aliases collapsed, rendered by groff on a line too wide to wrap (one output line per
paragraph), then cleaned of running headers, table rules and justification spaces. Rendering
runs in worker processes; :func:`filtered` keeps pages long enough, in the right language, and
not natural duplicates of an earlier page, in sorted order (so a limited run is a prefix).
"""

from __future__ import annotations

import gzip
import hashlib
import multiprocessing
import os
import re
import subprocess
import sys
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from .neardup import CJK_GAP, NaturalDuplicateFilter, is_chinese, minhash, shingles

Lang = Literal["en", "zh"]

#: The one command that installs everything this module reads (run as root).
APT_INSTALL = "apt-get install -y manpages manpages-dev manpages-zh groff-base"

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

_GROFF_TIMEOUT_S = 60
_WIDE = "5000n"  # so groff never wraps: each output line is one logical line (a paragraph)


class CorpusUnavailable(RuntimeError):
    """The Debian man pages (or groff) the corpus is rendered from are not installed."""


# --------------------------------------------------------------------------------------------
# Source discovery
# --------------------------------------------------------------------------------------------


def _page_name(path: Path) -> str:
    name = path.name
    if name.endswith(".gz"):
        name = name[:-3]
    return name


def sources(lang: Lang) -> list[tuple[str, str]]:
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


def source_fingerprint(sources: Sequence[tuple[str, str]]) -> str:
    h = hashlib.sha256(f"v{PIPELINE_VERSION}".encode())
    for doc_id, real in sources:
        st = os.stat(real)
        h.update(f"{doc_id}\0{real}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def require_groff() -> None:
    import shutil

    if shutil.which("groff") is None:
        raise CorpusUnavailable(f"groff is not installed; run as root: {APT_INSTALL}")


def require_pages(lang: Lang, sources: Sequence[tuple[str, str]]) -> None:
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
            line = CJK_GAP.sub("", CJK_GAP.sub("", line))
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
        record["shingles"] = shingles(text)
        record["signature"] = minhash(record["shingles"])
    return record


def _eligible(text: str, lang: Lang) -> bool:
    return len(text) >= MIN_CHARS[lang] and (lang != "zh" or is_chinese(text))

def render_stream(
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


def filtered(
    lang: Lang, rendered: Iterable[dict[str, Any] | None], stats: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    dup_filter = NaturalDuplicateFilter()
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

