"""The confirmation's shingles are computed faster, never differently: :func:`shingled` (one
regex pass with line breaks, ASCII text as bytes, short lines' shingles in one numpy step per
length) against the implementation it replaced, kept here verbatim as the reference, on random
texts and on real man pages, English and Chinese."""

from __future__ import annotations

import re

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.corpus import CorpusUnavailable, chinese_documents, english_documents
from simsql.text.containment import _GRAM_BASE, SHINGLE_WORDS, Runs, Shingled, share_of_submission, shingled
from simsql.text.tokenize import normalize

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_TOKEN = re.compile(f"[{_HAN}]|[^\\W_{_HAN}]+")


def _reference_word_hashes(tokens: list[str]) -> np.ndarray:
    distinct: dict[str, int] = {}
    ids = np.fromiter((distinct.setdefault(t, len(distinct)) for t in tokens), dtype=np.intp, count=len(tokens))
    return np.fromiter(
        (xxhash.xxh3_64_intdigest(w.encode("utf-8", "surrogatepass")) for w in distinct), dtype=np.uint64, count=len(distinct)
    )[ids]


def _reference_grams(word_hashes: np.ndarray, span: int) -> np.ndarray:
    count = len(word_hashes) - span + 1
    grams = np.zeros(count, dtype=np.uint64)
    for offset in range(span):
        grams = grams * _GRAM_BASE + word_hashes[offset : offset + count]
    return grams


def _reference_shingled(text: str, size: int = SHINGLE_WORDS) -> tuple[int, tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """``shingled`` before the change: (words, plain (hashes, starts, ends), by line (same))."""
    lines = [_TOKEN.findall(line) for line in normalize(text).split("\n")]
    tokens = [token for line in lines for token in line]
    if not tokens:
        empty = (np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp))
        return 0, empty, empty
    word_hashes = _reference_word_hashes(tokens)
    span = min(size, len(tokens))
    plain = _reference_grams(word_hashes, span)
    starts = np.arange(len(plain))
    line_of = np.repeat(np.arange(len(lines)), [len(line) for line in lines])
    within = starts[line_of[: len(plain)] == line_of[span - 1 :]]
    short_hashes, short_starts, short_ends, start = [], [], [], 0
    for line in lines:
        if 0 < len(line) < span:
            short_hashes.append(_reference_grams(word_hashes[start : start + len(line)], len(line))[0])
            short_starts.append(start)
            short_ends.append(start + len(line))
        start += len(line)
    by_line = (
        np.concatenate([plain[within], np.asarray(short_hashes, dtype=np.uint64)]),
        np.concatenate([within, np.asarray(short_starts, dtype=np.intp)]),
        np.concatenate([within + span, np.asarray(short_ends, dtype=np.intp)]),
    )
    return len(tokens), (plain, starts, starts + span), by_line


def _assert_same(text: str, size: int = SHINGLE_WORDS) -> Shingled:
    result = shingled(text, size)
    words, plain, by_line = _reference_shingled(text, size)
    assert result.words == words
    for runs, expected in ((result.plain_runs, plain), (result.line_runs, by_line)):
        for got, want in zip((runs.hashes, runs.starts, runs.ends), expected):
            assert got.tolist() == want.tolist()
        assert runs.distinct == frozenset(expected[0].tolist())
    return result


PIECES = ["alpha", "Beta", "GAMMA", "delta_x", "x1", "的", "文", "字符", "ﬁle", "Straße", "é", "\ud800", "\U00020001",
          "\n", "\n\n", " ", "\t", ".", "\r\n", "\u2028", "—", "_"]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=80), st.integers(1, 7))
def test_shingled_equals_the_reference_on_random_texts(pieces: list[str], size: int) -> None:
    _assert_same(" ".join(pieces), size)
    _assert_same("".join(pieces), size)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_shingled_equals_the_reference_on_any_unicode(text: str) -> None:
    _assert_same(text)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=300))
def test_shingled_equals_the_reference_on_ascii(text: str) -> None:
    _assert_same(text)


def _reference(text: str) -> Shingled:
    words, plain, by_line = _reference_shingled(text)
    return Shingled(words, Runs(*plain), Runs(*by_line))


def test_shingled_and_shares_equal_the_reference_on_real_text() -> None:
    try:
        texts = [doc.text for doc in english_documents(limit=30)] + [doc.text for doc in chinese_documents(limit=10)]
    except CorpusUnavailable as exc:
        pytest.skip(f"benchmark corpus unavailable: {exc}")
    shuffled = ["\n".join(reversed(text.split("\n"))) for text in texts]  # by-line shingles matter here
    for submission, stored in [*zip(texts, shuffled), *zip(shuffled, texts[1:] + texts[:1])]:
        now = share_of_submission(_assert_same(submission), _assert_same(stored))
        assert now == share_of_submission(_reference(submission), _reference(stored))


def _reference_covered(runs: Runs, found: frozenset[int], words: int) -> int:
    """``Runs.covered`` before it looked shingles up in sorted arrays: a set lookup each."""
    if found.isdisjoint(runs.listed):
        return 0
    hit = np.fromiter(map(found.__contains__, runs.listed), dtype=bool, count=len(runs.hashes))
    depth = np.cumsum(np.bincount(runs.starts[hit], minlength=words + 1) - np.bincount(runs.ends[hit], minlength=words + 1))
    return int(np.count_nonzero(depth[:words]))


def _reference_share(submission: str, stored: str) -> float:
    s, t = shingled(submission), shingled(stored)
    if not s.words:
        return 0.0
    plain = _reference_covered(s.plain_runs, t.plain, s.words)
    by_line = _reference_covered(s.line_runs, t.by_line, s.words)
    return max(plain, by_line) / s.words


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=80), st.lists(st.sampled_from(PIECES), max_size=80), st.integers(0, 80))
def test_shares_equal_the_set_lookup_on_random_texts(first: list[str], second: list[str], cut: int) -> None:
    """Shares by sorted arrays equal shares by set lookups, word for word (overlapping texts too)."""
    a, b = " ".join(first), " ".join(first[:cut] + second)
    for submission, stored in ((a, b), (b, a), (a, a), (a, ""), ("", b)):
        assert share_of_submission(submission, stored) == _reference_share(submission, stored)


def test_shares_equal_the_set_lookup_on_real_text() -> None:
    try:
        texts = [doc.text for doc in english_documents(limit=20)] + [doc.text for doc in chinese_documents(limit=10)]
    except CorpusUnavailable as exc:
        pytest.skip(f"benchmark corpus unavailable: {exc}")
    edited = [" ".join(w if i % 17 else "x" for i, w in enumerate(text.split(" "))) for text in texts]
    shuffled = ["\n".join(reversed(text.split("\n"))) for text in texts]
    pairs = [*zip(texts, edited), *zip(shuffled, texts), *zip(texts, texts[1:]), (texts[0], texts[-1])]  # the last: en, zh
    shares = [share_of_submission(s, t) for s, t in pairs]
    assert shares == [_reference_share(s, t) for s, t in pairs]
    assert any(0 < share < 1 for share in shares) and any(share == 0 for share in shares)
