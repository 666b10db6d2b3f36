"""Article-length English and Chinese prose from several documentation sources (issue 8).

Man pages alone (:mod:`benchmarks.corpus`) are too uniform, so the originality benchmarks draw
articles from six sources, downloaded with the ordinary clients into ``benchmarks/.cache``:

==================  ===========================================================  ========
source              where from                                                   language
==================  ===========================================================  ========
python-docs         Debian ``python3.11-doc`` (the Python 3.11 manual, HTML)      en
debian-reference    Debian ``debian-reference-en`` / ``-zh-cn``                   en, zh
gimp-help           Debian ``gimp-help-en`` / ``gimp-help-zh-cn`` (GIMP manual)   en, zh
debian-guides       Debian ``debian-faq``, ``maint-guide``, ``debian-edu-doc``    en, zh
                    (and their ``-zh-cn`` translations)
django-docs         PyPI sdist ``Django==4.2.16`` (``docs/**/*.txt``)             en
manpages            Debian ``manpages``/``manpages-zh`` via :mod:`benchmarks.corpus`  en, zh
debian-handbook     Debian ``debian-handbook`` (en-US, zh-CN): HELD OUT           en, zh
==================  ===========================================================  ========

Defaults are tuned on every source but ``debian-handbook``; figures reported for it were never
looked at while choosing. Real revisions come from two places: the Debian Edu manual for
bullseye and for bookworm (both shipped in ``debian-edu-doc-*``, en and zh) and the Django
documentation of 4.2.16 against 5.1.4 (en); a section counts when it exists in both releases,
is at least 80% unchanged and not identical.

Pages are cut into articles at headings: consecutive sections are merged until an article
reaches ``MIN_CHARS`` (1,500 en, 600 zh) and a section longer than ``MAX_CHARS`` is cut at a
paragraph. Code listings, navigation and tables are left out: a copier copies prose.

Fetch everything once with ``python -m benchmarks.sources --fetch``.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import re
import subprocess
import sys
import tarfile
from collections.abc import Iterator, Sequence
from html.parser import HTMLParser
from pathlib import Path

from benchmarks.corpus import CACHE_DIR, CorpusUnavailable, Document, chinese_documents, english_documents, is_chinese
from benchmarks.manpages import Lang

__all__ = ["HELD_OUT", "SOURCES", "articles", "fetch", "real_revisions"]

HELD_OUT = "debian-handbook"
SOURCES: dict[str, tuple[Lang, ...]] = {
    "python-docs": ("en",),
    "debian-reference": ("en", "zh"),
    "gimp-help": ("en", "zh"),
    "debian-guides": ("en", "zh"),
    "django-docs": ("en",),
    "manpages": ("en", "zh"),
    HELD_OUT: ("en", "zh"),
}
DEBS = (
    "python3.11-doc debian-reference-en debian-reference-zh-cn gimp-help-en gimp-help-zh-cn "
    "debian-faq debian-faq-zh-cn maint-guide maint-guide-zh-cn debian-edu-doc-en "
    "debian-edu-doc-zh-cn debian-handbook"
).split()
PYPI = ("django==4.2.16", "django==5.1.4")
MIN_CHARS: dict[Lang, int] = {"en": 1500, "zh": 600}
MAX_CHARS: dict[Lang, int] = {"en": 8000, "zh": 4000}
PIPELINE_VERSION = 3

_DEB_DIR = CACHE_DIR / "debs"
_X_DIR = CACHE_DIR / "x"
_PYPI_DIR = CACHE_DIR / "pypi"

# --------------------------------------------------------------------------------------------
# Fetching
# --------------------------------------------------------------------------------------------


def fetch() -> None:
    """Download and unpack every package (``apt-get download``, ``pip download``); idempotent."""
    _DEB_DIR.mkdir(parents=True, exist_ok=True)
    missing = [p for p in DEBS if not list(_DEB_DIR.glob(f"{p}_*.deb"))]
    if missing:
        subprocess.run(["apt-get", "download", *missing], cwd=_DEB_DIR, check=True)
    _X_DIR.mkdir(parents=True, exist_ok=True)  # dpkg-deb -x creates the target, not its parent
    for deb in sorted(_DEB_DIR.glob("*.deb")):
        target = _X_DIR / deb.name.split("_", 1)[0]
        if not target.exists():
            subprocess.run(["dpkg-deb", "-x", str(deb), str(target)], check=True)
    _PYPI_DIR.mkdir(parents=True, exist_ok=True)
    for spec in PYPI:
        name, version = spec.split("==")
        if not list(_PYPI_DIR.glob(f"{name.capitalize()}-{version}.tar.gz")) and not list(
            _PYPI_DIR.glob(f"{name}-{version}.tar.gz")
        ):
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                 "-d", str(_PYPI_DIR), spec],
                check=True,
            )  # fmt: skip


def _require(path: Path) -> Path:
    if not path.exists():
        raise CorpusUnavailable(f"{path} is missing; run: python -m benchmarks.sources --fetch")
    return path


# --------------------------------------------------------------------------------------------
# HTML to sections
# --------------------------------------------------------------------------------------------

_BLOCK = {"p", "li", "dd", "dt", "blockquote", "h1", "h2", "h3", "h4", "h5", "td"}
_HEADING = {"h1", "h2", "h3"}
_SKIP = {"pre", "script", "style", "table", "head", "title"}
_SKIP_CLASS = re.compile(r"nav|sidebar|footer|header|related|toc|breadcrumb|highlight|docutils literal", re.I)
_WS = re.compile(r"\s+")
_HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef"
_HAN_GAP = re.compile(rf"(?<=[{_HAN}]) (?=[{_HAN}])")


class _Sections(HTMLParser):
    """(heading, [paragraph, ...]) per h1-h3 section of a page, prose only."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[tuple[str, list[str]]] = [("", [])]
        self._stack: list[tuple[str, bool]] = []  # (tag, skipping)
        self._buf: list[str] = []
        self._in_block = 0

    def _skipping(self) -> bool:
        return bool(self._stack) and self._stack[-1][1]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("br", "img", "hr", "meta", "link", "input", "col", "area", "wbr"):
            return
        cls = " ".join(v or "" for k, v in attrs if k in ("class", "role", "id"))
        skip = self._skipping() or tag in _SKIP or bool(cls and _SKIP_CLASS.search(cls) and tag in ("div", "nav", "span", "table", "ul"))
        block = tag in _BLOCK or (tag == "div" and "para" in cls.split())  # Publican's <div class="para">
        if block and not skip:
            self._flush()
            self._in_block += 1
        self._stack.append((tag if not block else f"{tag}:block", skip))

    def handle_endtag(self, tag: str) -> None:
        if tag not in {t.split(":")[0] for t, _ in self._stack}:
            return
        while self._stack:
            open_tag, skip = self._stack.pop()
            name = open_tag.split(":")[0]
            if open_tag.endswith(":block") and not skip:
                self._in_block -= 1
                self._flush(heading=name in _HEADING)
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._in_block > 0 and not self._skipping():
            self._buf.append(data)

    def _flush(self, heading: bool = False) -> None:
        text = _HAN_GAP.sub("", _WS.sub(" ", "".join(self._buf)).strip())
        self._buf = []
        if not text:
            return
        if heading:
            self.sections.append((text, []))
        else:
            self.sections[-1][1].append(text)


def html_sections(raw: str) -> list[tuple[str, list[str]]]:
    parser = _Sections()
    parser.feed(raw)
    parser.close()
    return [(h, ps) for h, ps in parser.sections if ps]


# --------------------------------------------------------------------------------------------
# reStructuredText (Django docs) to sections
# --------------------------------------------------------------------------------------------

_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{3,}\s*$")
_RST_ROLE = re.compile(r":[a-z:]+:`([^`<]*?)(?:\s*<[^>]*>)?`")
_RST_MARKUP = re.compile(r"``|\*\*|`_|`__|(?<!\w)`|\|")


def rst_sections(raw: str) -> list[tuple[str, list[str]]]:
    lines = raw.splitlines()
    sections: list[tuple[str, list[str]]] = [("", [])]
    para: list[str] = []
    in_literal = False

    def flush() -> None:
        text = _WS.sub(" ", _RST_MARKUP.sub("", _RST_ROLE.sub(r"\1", " ".join(para)))).strip()
        para.clear()
        if len(text) > 40 and not text.startswith(("..", ":")):
            sections[-1][1].append(text)

    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if _RST_UNDERLINE.match(nxt) and line.strip() and not line.startswith(" "):
            flush()
            sections.append((line.strip(), []))
            continue
        if _RST_UNDERLINE.match(line):
            continue
        if in_literal:
            if line.strip() and not line.startswith((" ", "\t")):
                in_literal = False
            else:
                continue
        if not line.strip():
            flush()
            continue
        if line.startswith((" ", "\t")) and not para:
            continue  # directive bodies, quoted code
        if line.startswith(".."):
            flush()
            in_literal = True
            continue
        para.append(line.strip())
        if line.rstrip().endswith("::"):
            flush()
            in_literal = True
    flush()
    return [(h, ps) for h, ps in sections if ps]


# --------------------------------------------------------------------------------------------
# Sections to articles
# --------------------------------------------------------------------------------------------


def _prose(paragraph: str, lang: Lang) -> bool:
    if lang == "zh":
        return len(paragraph) >= 20 and is_chinese(paragraph, threshold=0.5)
    words = paragraph.split()
    return len(words) >= 8 and sum(w.strip(".,;:()'\"!?").isalpha() for w in words) / len(words) >= 0.6


def _articles_of(page_id: str, title: str, sections: list[tuple[str, list[str]]], lang: Lang) -> Iterator[Document]:
    buf: list[str] = []
    heading = title
    n = 0
    for head, paras in sections:
        keep = [p for p in paras if _prose(p, lang)]
        for p in keep:
            if sum(map(len, buf)) + len(p) > MAX_CHARS[lang] and sum(map(len, buf)) >= MIN_CHARS[lang]:
                yield Document(f"{page_id}#{n}", heading, "\n\n".join(buf))
                n, buf, heading = n + 1, [], head or title
            buf.append(p)
        if sum(map(len, buf)) >= MIN_CHARS[lang]:
            yield Document(f"{page_id}#{n}", heading, "\n\n".join(buf))
            n, buf, heading = n + 1, [], head or title
        elif not buf:
            heading = head or title
    # A short tail is dropped rather than glued to an unrelated page.


def _html_files(source: str, lang: Lang) -> list[tuple[str, Path]]:
    x = _X_DIR
    if source == "python-docs":
        root = _require(x / "python3.11-doc/usr/share/doc/python3.11/html")
        skip = ("genindex", "search", "py-modindex", "whatsnew/changelog", "bugs", "copyright", "license", "about")
        return [(str(p.relative_to(root)), p) for p in sorted(root.rglob("*.html")) if not str(p.relative_to(root)).startswith(skip)]
    if source == "debian-reference":
        root = _require(x / f"debian-reference-{'en' if lang == 'en' else 'zh-cn'}/usr/share/debian-reference")
        return [(p.name, p) for p in sorted(root.glob("*.html")) if p.name.split(".")[0] != "index"]
    if source == "gimp-help":
        root = _require(x / f"gimp-help-{'en' if lang == 'en' else 'zh-cn'}/usr/share/gimp/2.0/help/{'en' if lang == 'en' else 'zh_CN'}")
        return [(p.name, p) for p in sorted(root.glob("*.html"))]
    if source == "debian-guides":
        suffix = "" if lang == "en" else "-zh-cn"
        files = sorted((x / f"debian-faq{suffix}").rglob("*.html")) + sorted((x / f"maint-guide{suffix}").rglob("*.html"))
        files += sorted((x / f"debian-edu-doc-{'en' if lang == 'en' else 'zh-cn'}").rglob("*bookworm-manual.html"))
        if not files:
            _require(x / f"debian-faq{suffix}")
        return [(p.parent.name + "-" + p.name, p) for p in files if not p.name.startswith("index")]
    if source == HELD_OUT:
        root = _require(x / f"debian-handbook/usr/share/doc/debian-handbook/html/{'en-US' if lang == 'en' else 'zh-CN'}")
        return [(p.name, p) for p in sorted(root.glob("*.html")) if p.name not in ("index.html", "ix01.html")]
    raise ValueError(source)


def _django_docs(version: str) -> Iterator[tuple[str, list[tuple[str, list[str]]]]]:
    tarball = next(iter(sorted(_PYPI_DIR.glob(f"[Dd]jango-{version}.tar.gz"))), None)
    if tarball is None:
        raise CorpusUnavailable(f"Django {version} sdist missing; run: python -m benchmarks.sources --fetch")
    with tarfile.open(tarball) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            parts = member.name.split("/")
            if len(parts) > 2 and parts[1] == "docs" and member.name.endswith(".txt") and "releases" not in parts:
                data = tar.extractfile(member)
                if data is not None:
                    yield "/".join(parts[2:]), rst_sections(data.read().decode("utf-8", "replace"))


def _source_articles(source: str, lang: Lang) -> Iterator[Document]:
    prefix = f"{lang}/{source}"
    if source == "manpages":
        docs = english_documents() if lang == "en" else chinese_documents()
        for d in docs:
            yield Document(f"{prefix}/{d.doc_id.split('/', 1)[1].replace('/', ':')}", d.title, d.text)
        return
    if source == "django-docs":
        for page, sections in _django_docs("4.2.16"):
            yield from _articles_of(f"{prefix}/{page.replace('/', ':')}", page, sections, lang)
        return
    for page, path in _html_files(source, lang):
        raw = path.read_text("utf-8", errors="replace")
        yield from _articles_of(f"{prefix}/{page.replace('/', ':')}", page, html_sections(raw), lang)


def articles(source: str, lang: Lang) -> list[Document]:
    """Every article of ``source`` in ``lang``, sorted by id, cached as JSONL."""
    if lang not in SOURCES.get(source, ()):
        raise ValueError(f"source {source!r} has no {lang!r} text; sources: {SOURCES}")
    path = CACHE_DIR / f"articles-{source}-{lang}.v{PIPELINE_VERSION}.jsonl"
    if path.exists():
        with path.open(encoding="utf-8") as f:
            return [Document(**json.loads(line)) for line in f]
    seen: set[str] = set()
    docs: list[Document] = []
    for doc in _source_articles(source, lang):
        key = hashlib.sha1(doc.text.encode()).hexdigest()
        if key not in seen and (lang == "en" or is_chinese(doc.text)):
            seen.add(key)
            docs.append(doc)
    docs.sort(key=lambda d: d.doc_id)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({"doc_id": d.doc_id, "title": d.title, "text": d.text}, ensure_ascii=False) + "\n")
    tmp.replace(path)
    return docs


# --------------------------------------------------------------------------------------------
# Real revisions
# --------------------------------------------------------------------------------------------


def _unchanged(a: str, b: str) -> float:
    ta, tb = (list(a), list(b)) if is_chinese(a) else (a.split(), b.split())
    return difflib.SequenceMatcher(None, ta, tb, autojunk=False).ratio()


def _section_texts(pairs: Iterator[tuple[str, list[tuple[str, list[str]]]]], lang: Lang) -> dict[str, str]:
    out: dict[str, str] = {}
    for page, sections in pairs:
        for head, paras in sections:
            text = "\n\n".join(p for p in paras if _prose(p, lang))
            if len(text) >= MIN_CHARS[lang] // 2:
                out[f"{page}:{head}"] = text
    return out


def real_revisions(lang: Lang, min_unchanged: float = 0.8) -> list[tuple[str, str, str, float]]:
    """(section id, old text, new text, fraction unchanged) for sections revised between releases."""
    olds: list[dict[str, str]] = []
    news: list[dict[str, str]] = []
    root = _X_DIR / f"debian-edu-doc-{'en' if lang == 'en' else 'zh-cn'}"
    old_file = next(iter(root.rglob("*bullseye-manual.html")), None)
    new_file = next(iter(root.rglob("*bookworm-manual.html")), None)
    if old_file and new_file:
        olds.append(_section_texts(iter([("edu", html_sections(old_file.read_text("utf-8", "replace")))]), lang))
        news.append(_section_texts(iter([("edu", html_sections(new_file.read_text("utf-8", "replace")))]), lang))
    if lang == "en":
        olds.append(_section_texts(_django_docs("4.2.16"), lang))
        news.append(_section_texts(_django_docs("5.1.4"), lang))
    out: list[tuple[str, str, str, float]] = []
    for old, new in zip(olds, news):
        for key in sorted(old.keys() & new.keys()):
            a, b = old[key], new[key]
            if a == b:
                continue
            ratio = _unchanged(a, b)
            if ratio >= min_unchanged:
                out.append((key, a, b, ratio))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sources", description=__doc__)
    parser.add_argument("--fetch", action="store_true", help="download and unpack the packages first")
    args = parser.parse_args(argv)
    if args.fetch:
        fetch()
    for source, langs in SOURCES.items():
        for lang in langs:
            docs = articles(source, lang)
            chars = sum(len(d.text) for d in docs)
            print(f"{source:18} {lang}  {len(docs):6d} articles  {chars / 1e6:6.1f} M chars")
    for lang in ("en", "zh"):
        print(f"real revisions {lang}: {len(real_revisions(lang))}")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
