"""A held-out corpus, never tuned on: Debian's own manuals, in English and Chinese.

The originality benchmark's defaults were chosen on man pages (:mod:`benchmarks.corpus`); this
source is kept apart to check them on text they never saw. It reads the HTML manuals Debian ships
in both languages (install as root)::

    apt-get install -y debian-reference-en debian-reference-zh-cn debian-faq debian-faq-zh-cn \\
        maint-guide maint-guide-zh-cn debian-handbook debian-edu-doc-en debian-edu-doc-zh-cn

Each manual is cut into its sections (every ``h2``/``h3`` starts one), and each section is one
document, as a user would submit it in plain text: a paragraph per block, **wrapped to short
lines** (72 columns of English words, 32 Chinese characters), the way the packages' own ``.txt``
renderings are (``debian-faq.zh-cn.txt.gz``); preformatted blocks keep their lines. Short lines
are the hard case for reordering: shuffling them cuts every shingle that crosses a line. Sections
shorter than :data:`benchmarks.corpus.MIN_CHARS`, not in the language, or natural duplicates of
an earlier one (the same filter as the man pages) are left out.

    python -m benchmarks.heldout      # statistics of both languages
"""

from __future__ import annotations

import glob
import gzip
import re
import sys
import textwrap
from collections.abc import Iterator, Sequence
from html.parser import HTMLParser
from pathlib import Path

from .corpus import Document, paragraphs
from .manpages import MIN_CHARS, CorpusUnavailable, Lang
from .neardup import CJK_GAP, NaturalDuplicateFilter, is_chinese

APT_INSTALL = (
    "apt-get install -y debian-reference-en debian-reference-zh-cn debian-faq debian-faq-zh-cn "
    "maint-guide maint-guide-zh-cn debian-handbook debian-edu-doc-en debian-edu-doc-zh-cn"
)

#: The HTML files of each language, by glob, in a fixed order (a manual at a time).
SOURCES: dict[Lang, tuple[str, ...]] = {
    "en": (
        "/usr/share/debian-reference/*.en.html",
        "/usr/share/doc/debian/FAQ/*.en.html",
        "/usr/share/doc/maint-guide/html/*.en.html",
        "/usr/share/doc/debian-handbook/html/en-US/*.html",
        "/usr/share/doc/debian-edu-doc-en/debian-edu-bookworm-manual.html",
    ),
    "zh": (
        "/usr/share/debian-reference/*.zh-cn.html",
        "/usr/share/doc/debian/FAQ/zh-cn/*.zh-cn.html",
        "/usr/share/doc/maint-guide-zh-cn/html/*.zh-cn.html",
        "/usr/share/doc/debian-handbook/html/zh-CN/*.html",
        "/usr/share/doc/debian-edu-doc-zh-cn/debian-edu-bookworm-manual.html",
    ),
}

#: Wrapping width: English in columns (words kept whole), Chinese in characters (two columns each).
WIDTH: dict[Lang, int] = {"en": 72, "zh": 32}

_BLOCKS = {"p", "li", "dt", "dd", "td", "th", "pre", "title", "h1", "h2", "h3", "h4", "h5", "h6", "div", "tr", "blockquote"}
_SKIP = {"script", "style", "head"}
_SPACES = re.compile(r"\s+")


class _Blocks(HTMLParser):
    """HTML -> a list of ``(kind, text)`` blocks: ``"section"`` marks an h2/h3, ``"pre"`` keeps
    its lines, everything else is a paragraph of joined text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[str, str]] = []
        self._text: list[str] = []
        self._pre = 0
        self._skip = 0

    def _flush(self, kind: str = "p") -> None:
        raw = "".join(self._text)
        self._text = []
        if kind == "pre":
            lines = [line.rstrip() for line in raw.strip("\n").split("\n")]
            if any(lines):
                self.blocks.append(("pre", "\n".join(lines)))
            return
        joined = _SPACES.sub(" ", raw).strip()
        if joined:
            self.blocks.append((kind, joined))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._skip += 1
        elif tag == "pre":
            self._flush()
            self._pre += 1
        elif tag in _BLOCKS and not self._pre:
            self._flush()
            if tag in ("h2", "h3"):
                self.blocks.append(("section", ""))
        elif tag == "br":
            self._text.append("\n" if self._pre else " ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag == "pre" and self._pre:
            self._pre -= 1
            if not self._pre:
                self._flush("pre")
        elif tag in _BLOCKS and not self._pre:
            self._flush()

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self._text.append(data)


def _wrap(paragraph: str, lang: Lang) -> str:
    if lang == "en":
        return textwrap.fill(paragraph, WIDTH["en"], break_long_words=False, break_on_hyphens=False)
    joined = CJK_GAP.sub("", paragraph)
    width = WIDTH["zh"]
    return "\n".join(joined[start : start + width] for start in range(0, len(joined), width))


def sections(path: str, lang: Lang) -> Iterator[str]:
    """The plain-text sections of one HTML file (paragraphs wrapped, blocks blank-line separated)."""
    raw = Path(path).read_bytes()
    if path.endswith(".gz"):
        raw = gzip.decompress(raw)
    parser = _Blocks()
    parser.feed(raw.decode("utf-8", errors="replace"))
    parser.close()
    current: list[str] = []
    for kind, block in parser.blocks:
        if kind == "section":
            if current:
                yield "\n\n".join(current)
            current = []
        elif kind == "pre":
            current.append(block)
        else:
            current.append(_wrap(block, lang))
    if current:
        yield "\n\n".join(current)


def files(lang: Lang) -> list[str]:
    """Every source file of ``lang``, in :data:`SOURCES` order, or :class:`CorpusUnavailable`."""
    found = [path for pattern in SOURCES[lang] for path in sorted(glob.glob(pattern))]
    if not found:
        raise CorpusUnavailable(f"the Debian manuals of the held-out corpus ({lang}) are not installed; run as root: {APT_INSTALL}")
    return found


def missing(lang: Lang) -> list[str]:
    """The :data:`SOURCES` patterns of ``lang`` that match no file: the manuals not installed
    (empty when the corpus is complete)."""
    return [pattern for pattern in SOURCES[lang] if not glob.glob(pattern)]


def heldout_documents(lang: Lang) -> list[Document]:
    """The held-out documents of ``lang`` as :class:`~benchmarks.corpus.Document` (``doc_id``
    ``"heldout-<lang>/<file>#<section>"``), in source order, natural duplicates dropped."""
    docs: list[Document] = []
    duplicates = NaturalDuplicateFilter()
    for path in files(lang):
        for number, text in enumerate(sections(path, lang)):
            if len(text) < MIN_CHARS[lang] or (lang == "zh" and not is_chinese(text)):
                continue
            doc_id = f"heldout-{lang}/{Path(path).name}#{number}"
            if duplicates.admit(doc_id, text):
                docs.append(Document(doc_id, text.split("\n", 1)[0][:80], text))
    return docs


def main(argv: Sequence[str] | None = None) -> int:
    for lang in ("en", "zh"):
        try:
            docs = heldout_documents(lang)
        except CorpusUnavailable as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        lengths = sorted(len(doc.text) for doc in docs)
        lines = [len(line) for doc in docs for line in doc.text.split("\n") if line.strip()]
        print(f"[{lang}] {len(docs)} sections from {len(files(lang))} files, {sum(lengths) / 1e6:.1f} M chars, "
              f"median {lengths[len(lengths) // 2]} chars, <= 30,000 chars: {sum(n <= 30_000 for n in lengths)}, "
              f"median line {sorted(lines)[len(lines) // 2]} chars, prose paragraphs {len(paragraphs(docs))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
