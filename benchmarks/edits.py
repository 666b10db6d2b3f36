"""Planted near-duplicates with known ground truth, for measuring recall and precision.

Every function takes an explicit ``random.Random`` so a benchmark is reproducible from one seed
and the pairs do not depend on global random state. Edit rates count *units*: whitespace
separated words for English, jieba words for Chinese (or characters with ``unit="char"``), so
"5%" means the same kind of change in both languages.
"""

from __future__ import annotations

import logging
import random
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .corpus import Document, family
from .neardup import is_chinese, jaccard, shingles

__all__ = [
    "EDIT_KINDS",
    "NEGATIVE_KINDS",
    "POSITIVE_KINDS",
    "RATES",
    "Pair",
    "Unit",
    "add_boilerplate",
    "delete_words",
    "edit_words",
    "insert_words",
    "planted_pairs",
    "reorder_sentences",
    "substitute_words",
    "units",
]

#: Edit rates the benchmarks sweep.
RATES: tuple[float, ...] = (0.01, 0.02, 0.05, 0.10, 0.20)
#: Word-level edit kinds; each is planted once per rate.
EDIT_KINDS: tuple[str, ...] = ("insert", "delete", "substitute", "edit")
#: All positive kinds: the edit kinds plus the structural ones (which have no rate).
POSITIVE_KINDS: tuple[str, ...] = (*EDIT_KINDS, "reorder", "boilerplate")
#: ``unrelated``: two random documents of one language; ``hard_negative``: two documents of one
#: man-page family (``pthread_*``, ``git-*``, ``EVP_*``...), which share boilerplate.
NEGATIVE_KINDS: tuple[str, ...] = ("unrelated", "hard_negative")

#: Above this word 5-shingle Jaccard two "different" documents are not a trustworthy negative.
MAX_NEGATIVE_JACCARD = 0.5

Unit = Literal["auto", "word", "jieba", "char"]

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORDCHAR = re.compile(r"\w")
_SPACE = re.compile(r"(\s+)")
_CORE = re.compile(r"^(\W*)(.*?)(\W*)$", re.DOTALL)


@dataclass(frozen=True)
class Pair:
    """Two texts and whether they are a planted near-duplicate.

    ``rate`` is the edit rate for word-level kinds and ``None`` otherwise. ``a_id``/``b_id``
    name the source documents so failures can be traced back to a man page.
    """

    kind: str
    rate: float | None
    a: str
    b: str
    is_duplicate: bool
    lang: str
    a_id: str = ""
    b_id: str = ""


# --------------------------------------------------------------------------------------------
# Units
# --------------------------------------------------------------------------------------------


def _jieba_cut(text: str) -> list[str]:
    import jieba

    # jieba announces building its prefix dictionary on the root logger's stderr handler on
    # first use; that is noise in benchmark output.
    jieba.setLogLevel(logging.WARNING)
    return jieba.lcut(text)


def _resolve(text: str, unit: Unit) -> Literal["word", "jieba", "char"]:
    if unit != "auto":
        return unit
    return "jieba" if is_chinese(text) else "word"


def _pieces(text: str, unit: Literal["word", "jieba", "char"]) -> tuple[list[str], list[int]]:
    """Pieces whose concatenation is exactly ``text``, and the indices of the editable ones.

    Whitespace and pure punctuation are never editable, so layout survives and "rate" counts
    only real words (or characters).
    """
    if unit == "word":
        pieces = [p for p in _SPACE.split(text) if p]
        editable = [i for i, p in enumerate(pieces) if not p.isspace() and _WORDCHAR.search(p)]
    elif unit == "jieba":
        pieces = _jieba_cut(text)
        editable = [i for i, p in enumerate(pieces) if not p.isspace() and _WORDCHAR.search(p)]
    else:
        pieces = list(text)
        editable = [i for i, p in enumerate(pieces) if p.isalnum()]
    return pieces, editable


def units(text: str, unit: Unit = "auto") -> list[str]:
    """The editable units of ``text`` (what a rate is a fraction of); for measuring edits."""
    pieces, editable = _pieces(text, _resolve(text, unit))
    return [pieces[i] for i in editable]


def _vocabulary(pieces: Sequence[str], editable: Sequence[int], chinese: bool) -> list[str]:
    # The document's own word types, sorted for determinism and counted once each so rare
    # words are drawn as often as "the": new words look like the document, not like noise.
    cores = {_CORE.match(pieces[i]).group(2) for i in editable}  # type: ignore[union-attr]
    if chinese:
        han = {c for c in cores if _HAN.search(c)}
        cores = han or cores
    return sorted(c for c in cores if c)


def _count(n_units: int, rate: float) -> int:
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must be in [0, 1], got {rate}")
    if rate == 0.0 or n_units == 0:
        return 0
    return min(n_units, max(1, round(rate * n_units)))


_Op = Literal["insert", "delete", "substitute"]


def _apply(
    text: str,
    rate: float,
    rng: random.Random,
    choose_op: Callable[[random.Random], _Op],
    vocab: Sequence[str] | None,
    unit: Unit,
) -> str:
    mode = _resolve(text, unit)
    pieces, editable = _pieces(text, mode)
    n = _count(len(editable), rate)
    if n == 0:
        return text
    words = list(vocab) if vocab is not None else _vocabulary(pieces, editable, mode != "word")
    if not words:
        raise ValueError("no vocabulary to draw inserted or substituted words from")
    sep = " " if mode == "word" else ""
    out = list(pieces)
    for i in sorted(rng.sample(editable, n)):
        op = choose_op(rng)
        if op == "substitute":
            lead, core, trail = _CORE.match(pieces[i]).groups()  # type: ignore[union-attr]
            new = rng.choice(words)
            for _ in range(8):  # a "substitution" by the same word would not be an edit
                if new != core:
                    break
                new = rng.choice(words)
            if new == core:
                new = core + core[-1:]
            out[i] = lead + new + trail
        elif op == "insert":
            out[i] = rng.choice(words) + sep + out[i]
        else:
            out[i] = ""
            if mode == "word":
                _drop_adjacent_space(out, i)
    return "".join(out)


def _drop_adjacent_space(out: list[str], i: int) -> None:
    # Remove one separator with the deleted word; prefer a plain space so paragraph breaks stay.
    after = i + 1 if i + 1 < len(out) and out[i + 1].isspace() else None
    before = i - 1 if i > 0 and out[i - 1].isspace() else None
    if after is not None and ("\n" not in out[after] or before is None or "\n" in out[before]):
        out[after] = ""
    elif before is not None:
        out[before] = ""


def insert_words(
    text: str,
    rate: float,
    rng: random.Random,
    *,
    vocab: Sequence[str] | None = None,
    unit: Unit = "auto",
) -> str:
    """Insert ``round(rate * units)`` words (at least one when ``rate > 0``) at distinct spots.

    Inserted words come from ``vocab`` or, by default, from the text's own vocabulary.
    """
    return _apply(text, rate, rng, lambda r: "insert", vocab, unit)


def delete_words(text: str, rate: float, rng: random.Random, *, unit: Unit = "auto") -> str:
    """Delete ``round(rate * units)`` distinct words (with their attached punctuation)."""
    return _apply(text, rate, rng, lambda r: "delete", [""], unit)


def substitute_words(
    text: str,
    rate: float,
    rng: random.Random,
    *,
    vocab: Sequence[str] | None = None,
    unit: Unit = "auto",
) -> str:
    """Replace ``round(rate * units)`` distinct words by different words, keeping punctuation."""
    return _apply(text, rate, rng, lambda r: "substitute", vocab, unit)


def edit_words(
    text: str,
    rate: float,
    rng: random.Random,
    *,
    vocab: Sequence[str] | None = None,
    unit: Unit = "auto",
) -> str:
    """Mixed edits: each of ``round(rate * units)`` distinct positions gets a random operation.

    Closest to how people revise text; the pure kinds isolate which operation hurts a
    fingerprint most.
    """
    ops: tuple[_Op, ...] = ("insert", "delete", "substitute")
    return _apply(text, rate, rng, lambda r: r.choice(ops), vocab, unit)


# --------------------------------------------------------------------------------------------
# Structural edits
# --------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")


def reorder_sentences(
    text: str,
    rng: random.Random,
    *,
    swaps: int = 2,
    level: Literal["auto", "paragraph", "sentence"] = "auto",
) -> str:
    """Swap ``swaps`` random pairs of paragraphs (or of sentences, for short texts).

    Reordering keeps every word, so it separates fingerprints that look at word order
    (shingles) from those that do not.
    """
    paras = text.split("\n\n")
    if level == "paragraph" or (level == "auto" and len(paras) >= 4):
        return "\n\n".join(_swap(paras, rng, swaps))
    sentences = [s for s in _SENTENCE_END.split(text) if s]
    sep = "" if is_chinese(text) else " "
    return sep.join(_swap(sentences, rng, swaps))


def _swap(items: list[str], rng: random.Random, swaps: int) -> list[str]:
    out = list(items)
    if len(set(out)) < 2:
        return out  # nothing can move
    done = 0
    while done < swaps or out == items:  # a later swap may undo an earlier one
        i, j = rng.sample(range(len(out)), 2)
        if out[i] != out[j]:  # swapping two identical items changes nothing
            out[i], out[j] = out[j], out[i]
            done += 1
    return out


_EN_SITES = ("The Systems Journal", "DevNotes", "Open Source Weekly", "LinuxHub", "CodeLibrary")
_EN_SECTIONS = ("Docs", "Guides", "Reference", "Tutorials", "Knowledge Base")
_EN_TITLES = (
    "Ten shell tricks every administrator should know",
    "Understanding file permissions on Linux",
    "A gentle introduction to POSIX threads",
    "How to read a core dump",
    "Why your cron job did not run",
    "Choosing between select, poll and epoll",
    "Debugging network latency with standard tools",
    "What happens when you type a command",
)
_ZH_SITES = ("技术文档中心", "开源周刊", "Linux 中文网", "程序员之家", "运维知识库")
_ZH_SECTIONS = ("文档", "教程", "参考手册", "知识库", "技术专栏")
_ZH_TITLES = (
    "十个每位管理员都应掌握的 shell 技巧",
    "深入理解 Linux 文件权限",
    "POSIX 线程入门指南",
    "如何分析程序崩溃的核心转储",
    "定时任务为什么没有执行",
    "select、poll 与 epoll 的区别",
    "用标准工具排查网络延迟",
    "从输入命令到程序运行发生了什么",
)


def add_boilerplate(
    text: str, rng: random.Random, *, titles: Sequence[str] | None = None, recommended: bool = True
) -> str:
    """Wrap ``text`` in site chrome: a header, a "Recommended for you" block and a footer.

    This is the near-duplicate that web pages produce most: the same article syndicated under
    different templates. Chinese text gets Chinese chrome (推荐阅读, 版权声明). ``titles``
    (e.g. titles of other corpus documents) fill the recommendation block; by default a fixed
    list of plausible article titles is used. ``recommended=False`` adds only the header and the
    footer (about 30 English words, 90 Chinese characters), what a copier adds to a copy.
    """
    chinese = is_chinese(text)
    site = rng.choice(_ZH_SITES if chinese else _EN_SITES)
    section = rng.choice(_ZH_SECTIONS if chinese else _EN_SECTIONS)
    pool = list(titles) if titles else list(_ZH_TITLES if chinese else _EN_TITLES)
    picked = rng.sample(pool, min(len(pool), rng.randint(3, 5)))
    year = rng.randint(2015, 2024)
    month, day = rng.randint(1, 12), rng.randint(1, 28)
    views = rng.randint(120, 98_000)
    if chinese:
        header = (
            f"{site} > {section} > 正文\n"
            f"发布时间：{year}年{month}月{day}日 阅读 {views} 次 分享到：微信 微博 QQ空间"
        )
        block = "推荐阅读\n\n" + "\n".join(f"· {t}" for t in picked)
        footer = (
            f"版权声明：本文为{site}原创文章，转载请注明出处。\n"
            f"© {year} {site} 保留所有权利。 关于我们 | 联系我们 | 隐私政策 | 网站地图"
        )
    else:
        header = (
            f"{site} > {section} > Article\n"
            f"Published {year}-{month:02d}-{day:02d} · {views:,} views · Share: Twitter Facebook"
            " LinkedIn Email"
        )
        block = "Recommended for you\n\n" + "\n".join(f"• {t}" for t in picked)
        footer = (
            f"© {year} {site}. All rights reserved. About · Contact · Privacy Policy · Terms of"
            " Use · Sitemap\nSubscribe to our newsletter to get the latest articles in your inbox."
        )
    if not recommended:
        return f"{header}\n\n{text}\n\n{footer}"
    return f"{header}\n\n{text}\n\n{block}\n\n{footer}"


# --------------------------------------------------------------------------------------------
# Planted pairs
# --------------------------------------------------------------------------------------------


def _lang(doc: Document) -> str:
    prefix = doc.doc_id.split("/", 1)[0]
    if prefix in ("en", "zh"):
        return prefix
    return "zh" if is_chinese(doc.text) else "en"


def _pair_rng(seed: int, *parts: object) -> random.Random:
    # One generator per pair, keyed by what the pair is: adding a kind or changing per_kind
    # does not reshuffle every other pair.
    return random.Random(":".join(str(p) for p in (seed, *parts)))


_EDIT_FUNCTIONS: dict[str, Callable[..., str]] = {
    "insert": insert_words,
    "delete": delete_words,
    "substitute": substitute_words,
    "edit": edit_words,
}


def _edited(doc: Document, kind: str, rate: float | None, rng: random.Random, boiler_titles: dict[str, list[str] | None]) -> str:
    """``doc``'s text after one planted change of ``kind`` (at ``rate`` for word edits)."""
    if kind in _EDIT_FUNCTIONS:
        assert rate is not None
        return _EDIT_FUNCTIONS[kind](doc.text, rate, rng)
    if kind == "reorder":
        return reorder_sentences(doc.text, rng)
    titles = [t for t in boiler_titles[_lang(doc)] or () if t != doc.title] or None
    return add_boilerplate(doc.text, rng, titles=titles)


def planted_pairs(
    docs: Sequence[Document],
    rng_seed: int,
    per_kind: int = 20,
    *,
    rates: Sequence[float] = RATES,
    negatives: int | None = None,
    hard_fraction: float = 0.5,
) -> list[Pair]:
    """Positives (document, edited copy) for every kind and rate, plus unrelated negatives.

    ``per_kind`` positives are planted for each (edit kind, rate) and for ``reorder`` and
    ``boilerplate``, from documents drawn across all of ``docs`` (so languages appear in
    proportion; call once per language for per-language results). ``negatives`` (default: as
    many as positives, so precision is measured on balanced data) are split into
    ``hard_fraction`` same-family pairs (fewer if the documents hold fewer distinct ones;
    random pairs make up the rest) and random pairs of one language. No pair appears twice,
    and a negative whose word 5-shingle Jaccard reaches ``MAX_NEGATIVE_JACCARD`` is redrawn,
    because such a pair is a near-duplicate in fact whatever its label says.
    """
    if not docs:
        raise ValueError("planted_pairs needs at least one document")
    by_lang: dict[str, list[Document]] = defaultdict(list)
    for doc in docs:
        by_lang[_lang(doc)].append(doc)
    ordered = list(docs)
    boiler_titles = {
        lang: [d.title for d in group if d.title][:200] or None for lang, group in by_lang.items()
    }

    pairs: list[Pair] = []
    jobs: list[tuple[str, float | None]] = [(k, r) for k in EDIT_KINDS for r in rates]
    jobs += [("reorder", None), ("boilerplate", None)]
    for kind, rate in jobs:
        picker = _pair_rng(rng_seed, "docs", kind, rate)
        chosen = (
            picker.sample(ordered, per_kind)
            if per_kind <= len(ordered)
            else [picker.choice(ordered) for _ in range(per_kind)]
        )
        for i, doc in enumerate(chosen):
            b = _edited(doc, kind, rate, _pair_rng(rng_seed, kind, rate, i), boiler_titles)
            pairs.append(Pair(kind, rate, doc.text, b, True, _lang(doc), doc.doc_id, doc.doc_id))

    n_neg = len(pairs) if negatives is None else negatives
    seen: set[tuple[str, str]] = set()
    hard = _negatives(by_lang, rng_seed, round(n_neg * hard_fraction), seen, hard=True)
    # A small sample has few same-family pairs; the shortfall is made up with unrelated ones.
    return pairs + hard + _negatives(by_lang, rng_seed, n_neg - len(hard), seen, hard=False)


def _negatives(
    by_lang: dict[str, list[Document]],
    seed: int,
    n: int,
    seen: set[tuple[str, str]],
    *,
    hard: bool,
) -> list[Pair]:
    kind = "hard_negative" if hard else "unrelated"
    rng = _pair_rng(seed, kind)
    langs = sorted(lang for lang, group in by_lang.items() if len(group) >= 2)
    if not langs or n <= 0:
        return []
    weights = [len(by_lang[lang]) for lang in langs]
    families: dict[str, list[list[Document]]] = {}
    for lang in langs:
        groups: dict[str, list[Document]] = defaultdict(list)
        for doc in by_lang[lang]:
            groups[family(doc.doc_id) if "/" in doc.doc_id else doc.doc_id].append(doc)
        families[lang] = [g for _, g in sorted(groups.items()) if len(g) >= 2]
    if hard and not any(families.values()):
        return []
    out: list[Pair] = []
    shingle_cache: dict[str, np.ndarray] = {}
    attempts = 0
    while len(out) < n and attempts < 50 * n:
        attempts += 1
        lang = rng.choices(langs, weights)[0]
        if hard:
            if not families[lang]:
                continue
            # Weight families by size so pairs are spread like the corpus, not like its tail.
            candidates = families[lang]
            group = rng.choices(candidates, [len(g) for g in candidates])[0]
            a, b = rng.sample(group, 2)
        else:
            a, b = rng.sample(by_lang[lang], 2)
        key = (min(a.doc_id, b.doc_id), max(a.doc_id, b.doc_id))
        if a.doc_id == b.doc_id or a.text == b.text or key in seen:
            continue
        for doc in (a, b):
            if doc.doc_id not in shingle_cache:
                shingle_cache[doc.doc_id] = shingles(doc.text)
        if jaccard(shingle_cache[a.doc_id], shingle_cache[b.doc_id]) >= MAX_NEGATIVE_JACCARD:
            continue
        seen.add(key)
        out.append(Pair(kind, None, a.text, b.text, False, lang, a.doc_id, b.doc_id))
    return out


# --------------------------------------------------------------------------------------------
# Evasions: what a copier does to slip a copy past an originality check (issue 8)
# --------------------------------------------------------------------------------------------

#: The evasion kinds of the originality benchmark, lightest first; "mix" is 1% substitution,
#: shuffled paragraphs and site chrome at once.
EVASIONS: tuple[str, ...] = (
    "header_footer", "sub_1", "sub_2", "sub_5", "sentence_in", "sentence_out", "shuffle", "mix",
)  # fmt: skip
_SENTENCES = re.compile(r"[^.!?。！？]+[.!?。！？]+[\"'”’)]*\s*")


def sentences(text: str) -> list[str]:
    """Sentences of ``text`` (pieces ending in . ! ? or their full-width forms), with spacing."""
    return _SENTENCES.findall(text)


def insert_sentence(text: str, rng: random.Random, donors: Sequence[str]) -> str:
    """Insert one sentence drawn from ``donors`` (other articles) after a random sentence end."""
    spots = [m.end() for m in _SENTENCES.finditer(text)] or [len(text)]
    where = rng.choice(spots)
    new = rng.choice(donors).strip()
    sep = "" if is_chinese(text) else " "
    return text[:where].rstrip(" ") + sep + new + (sep if where < len(text) and not text[where].isspace() else "") + text[where:]


def delete_sentence(text: str, rng: random.Random) -> str:
    """Delete one random sentence (the text is returned unchanged if it has fewer than two)."""
    spans = [m.span() for m in _SENTENCES.finditer(text)]
    if len(spans) < 2:
        return text
    start, end = rng.choice(spans)
    return text[:start] + text[end:]


def shuffle_paragraphs(text: str, rng: random.Random) -> str:
    """All paragraphs in a new random order (a different one whenever two differ)."""
    paras = text.split("\n\n")
    if len(set(paras)) < 2:
        return text
    out = list(paras)
    while out == paras:
        rng.shuffle(out)
    return "\n\n".join(out)


def evade(kind: str, text: str, rng: random.Random, donors: Sequence[str]) -> str:
    """The copy a copier would submit for ``kind`` (one of :data:`EVASIONS`).

    Substitution counts words in English and characters in Chinese (where a changed
    character is the natural unit of a disguise); donors supply inserted sentences.
    """
    unit: Unit = "char" if is_chinese(text) else "word"
    if kind == "header_footer":
        return add_boilerplate(text, rng, recommended=False)
    if kind.startswith("sub_"):
        return substitute_words(text, int(kind[4:]) / 100, rng, unit=unit)
    if kind == "sentence_in":
        return insert_sentence(text, rng, donors)
    if kind == "sentence_out":
        return delete_sentence(text, rng)
    if kind == "shuffle":
        return shuffle_paragraphs(text, rng)
    if kind == "mix":
        mixed = shuffle_paragraphs(substitute_words(text, 0.01, rng, unit=unit), rng)
        return add_boilerplate(mixed, rng, recommended=False)
    raise ValueError(f"unknown evasion {kind!r}; expected one of {EVASIONS}")
