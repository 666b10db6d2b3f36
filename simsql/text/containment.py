"""The second stage of the originality check: how much of one text another one contains.

A fingerprint within a few bits says "probably the same text"; at the distances a disguised
copy reaches (a header and footer, a few swapped words), unrelated articles of a large table
also turn up now and then (BENCHMARKS.md, "Originality check", gives the measured rates).
Reading those candidates' text and counting shared word 5-shingles tells a copy (most shingles
shared) from a coincidence (almost none), so the fingerprint threshold can be wide without
false alarms.

Shingles are word 5-grams after the same normalisation as fingerprints (NFKC, case folding);
Han characters count as one word each, so Chinese needs no segmenter here. Each distinct word is
hashed once (xxh3 of its UTF-8 bytes) and a 5-gram's hash is a polynomial of its five word
hashes, computed for the whole text at once: the check shingles every candidate it confirms, so
this is its cost per candidate (measured in BENCHMARKS.md). Deterministic across processes,
unlike ``hash()``; nothing stores these hashes.

:func:`share_of_submission` answers the platform's question, "does most of the submission come
from one stored text?"; :func:`containment` (the share of the smaller text) is the earlier,
symmetric measure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from itertools import chain

import numpy as np
import xxhash

from .tokenize import normalize

SHINGLE_WORDS = 5
MIN_CONTAINMENT = 0.5
"""Share of the smaller text's shingles found in the larger from which two texts are the same
text in fact: copies with light edits keep most of them, unrelated pairs close in bits almost
none (BENCHMARKS.md, "Defaults, and why: the measurements"; ``python -m research.originality``)."""

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_TOKEN = re.compile(f"[{_HAN}]|[^\\W_{_HAN}]+")
_ASCII_SEPARATORS = bytes(byte if chr(byte).isalnum() or byte == 0x0A else 0x20 for byte in range(128)) + b" " * 128
"""For ASCII text: every byte that is not a letter, a digit or a line break becomes a space, so
``split()`` finds exactly :data:`_TOKEN`'s words (``[^\\W_]`` is ``[a-zA-Z0-9]`` on ASCII) as the
UTF-8 bytes the hash reads, several times faster than the regex."""


def _check(text: object, size: object) -> None:
    if not isinstance(text, str):
        raise TypeError(f"shingles() needs str, got {type(text).__name__}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive int, got {size!r}")


def _line_tokens(text: str) -> list[list[bytes]]:
    """The UTF-8 bytes of each word (Han: character) of each line of ``text``, normalised
    (:func:`~simsql.text.tokenize.normalize`): :data:`_TOKEN`'s words, found by the byte table on
    ASCII lines."""
    normalized = normalize(text)
    if normalized.isascii():
        return [line.split() for line in normalized.encode("ascii").translate(_ASCII_SEPARATORS).split(b"\n")]
    return [
        line.encode("ascii").translate(_ASCII_SEPARATORS).split() if line.isascii() else _encoded(_TOKEN.findall(line))
        for line in normalized.split("\n")
    ]  # fmt: skip


def _encoded(words: list[str]) -> list[bytes]:
    """The UTF-8 bytes of each of ``words``, encoded at once: no word holds NUL (it is no word
    character), and no UTF-8 sequence holds a zero byte, so splitting the encoded join at NUL
    gives each word's own bytes (what encoding them one by one gave, in a tenth of the time)."""
    return "\0".join(words).encode("utf-8", "surrogatepass").split(b"\0") if words else []


def _word_hashes(lines: list[list[bytes]]) -> np.ndarray:
    """xxh3 of every word of ``lines``, in order (one C-level ``map``: hashing a short word
    costs less than looking it up in a per-text vocabulary would)."""
    count = sum(map(len, lines))
    return np.fromiter(map(xxhash.xxh3_64_intdigest, chain.from_iterable(lines)), dtype=np.uint64, count=count)


def _grams(word_hashes: np.ndarray, span: int) -> np.ndarray:
    """Hash of every run of ``span`` consecutive words: sum of w_i * B^(span-1-i), mod 2**64."""
    count = len(word_hashes) - span + 1
    grams = np.zeros(count, dtype=np.uint64)
    for offset in range(span):  # wraps modulo 2**64, as a polynomial hash should
        grams = grams * _GRAM_BASE + word_hashes[offset : offset + count]
    return grams


def shingles(text: str, size: int = SHINGLE_WORDS) -> frozenset[int]:
    """Hashes of the word (Han: character) ``size``-grams of ``text``; a text shorter than
    ``size`` words is one shingle of all its words, so short texts still compare."""
    _check(text, size)
    word_hashes = _word_hashes(_line_tokens(text))
    if not len(word_hashes):
        return frozenset()
    return frozenset(_grams(word_hashes, min(size, len(word_hashes))).tolist())


@dataclass(frozen=True, eq=False)
class Runs:
    """Shingles where they lie: the hash of each and the word positions ``[start, end)`` it
    spans. Another text's shingles are looked up in :attr:`ordered` (built on first use, since a
    submission's own hashes are never looked up)."""

    hashes: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    @cached_property
    def listed(self) -> list[int]:
        """The hashes as Python ints."""
        return self.hashes.tolist()  # type: ignore[no-any-return]

    @cached_property
    def distinct(self) -> frozenset[int]:
        return frozenset(self.listed)

    @cached_property
    def ordered(self) -> _Ordered:
        """The hashes sorted, with the positions each spans in the same order: one sort per text,
        after which another text's shingles are looked up by binary search in numpy, in sorted
        order, instead of one set lookup each in Python (BENCHMARKS.md, issue 42, "Where the
        time went")."""
        order = np.argsort(self.hashes, kind="stable")
        return _Ordered(self.hashes[order], self.starts[order], self.ends[order])

    def covered(self, found: Runs, words: int) -> int:
        """How many of ``words`` word positions lie in a shingle of these runs whose hash is one
        of ``found``'s."""
        mine, theirs = self.ordered, found.ordered.hashes
        if not len(mine.hashes) or not len(theirs):
            return 0
        at = np.searchsorted(theirs, mine.hashes)  # sorted keys: numpy narrows each search
        np.minimum(at, len(theirs) - 1, out=at)
        hit = theirs[at] == mine.hashes
        if not hit.any():  # most candidates of a new text: no shingle in common
            return 0
        depth = np.cumsum(np.bincount(mine.starts[hit], minlength=words + 1) - np.bincount(mine.ends[hit], minlength=words + 1))
        return int(np.count_nonzero(depth[:words]))


@dataclass(frozen=True, eq=False)
class _Ordered:
    """:class:`Runs` sorted by hash (:attr:`Runs.ordered`)."""

    hashes: np.ndarray
    starts: np.ndarray
    ends: np.ndarray


_NO_RUNS = Runs(np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp))


@dataclass(frozen=True, eq=False)
class Shingled:
    """A text's shingles two ways, with the word positions each covers: ``plain_runs`` (every
    ``size`` consecutive words) and ``line_runs`` (only runs that never cross a line break; a
    line shorter than ``size`` words is one shingle of all its words). Reordered short lines keep
    their by-line shingles, while most plain ones cross a line break and change."""

    words: int
    plain_runs: Runs
    line_runs: Runs

    @property
    def plain(self) -> frozenset[int]:
        return self.plain_runs.distinct

    @property
    def by_line(self) -> frozenset[int]:
        return self.line_runs.distinct


def shingled(text: str, size: int = SHINGLE_WORDS) -> Shingled:
    """:class:`Shingled` of ``text``, from one tokenisation and one pass of word hashes."""
    _check(text, size)
    lines = _line_tokens(text)
    word_hashes = _word_hashes(lines)
    if not len(word_hashes):
        return Shingled(0, _NO_RUNS, _NO_RUNS)
    span = min(size, len(word_hashes))
    plain = _grams(word_hashes, span)
    starts = np.arange(len(plain))
    lengths = np.fromiter(map(len, lines), dtype=np.intp, count=len(lines))
    line_of = np.repeat(np.arange(len(lines)), lengths)
    within = starts[line_of[: len(plain)] == line_of[span - 1 :]]
    # lines shorter than ``span``: one shingle each, of all their words (in line order)
    first = np.cumsum(lengths) - lengths
    short = np.flatnonzero((lengths > 0) & (lengths < span))
    short_starts, short_lengths = first[short], lengths[short]
    short_hashes = np.zeros(len(short), dtype=np.uint64)
    for length in np.unique(short_lengths).tolist():
        chosen = short_lengths == length
        short_hashes[chosen] = _grams(word_hashes, length)[short_starts[chosen]]
    by_line = Runs(
        np.concatenate([plain[within], short_hashes]),
        np.concatenate([within, short_starts]).astype(np.intp, copy=False),
        np.concatenate([within + span, short_starts + short_lengths]).astype(np.intp, copy=False),
    )
    return Shingled(len(word_hashes), Runs(plain, starts, starts + span), by_line)


def share_of_submission(submission: str | Shingled, stored: str | Shingled) -> float:
    """How much of ``submission`` comes from ``stored``: the share of the submission's words
    that lie in a shingle ``stored`` also has, the larger of plain shingles and shingles within
    lines (0.0 when the submission has no words).

    The originality question is "does most of the submission come from one stored text?":
    dividing by the submission's own words means a long new article that quotes one sentence
    of a short stored one scores low, while a padded copy or an excerpt of a stored text scores
    high; the by-line measure keeps a copy whose short lines were shuffled high. Both measures
    count the same words, so neither is favoured by the shingles it leaves out (by shingles,
    the by-line share of a text of one-line paragraphs dropped the shingles crossing each break
    from its denominator and scored a paragraph holding 49% of the words at 0.52)."""
    s = submission if isinstance(submission, Shingled) else shingled(submission)
    t = stored if isinstance(stored, Shingled) else shingled(stored)
    if not s.words:
        return 0.0
    plain = s.plain_runs.covered(t.plain_runs, s.words)
    by_line = s.line_runs.covered(t.line_runs, s.words)
    return max(plain, by_line) / s.words


_GRAM_BASE = np.uint64(0x9E3779B97F4A7C15)
"""An odd 64-bit multiplier (the golden-ratio constant): 5-gram hash = sum of w_i * B^(4-i)."""


def containment(a: str | frozenset[int], b: str | frozenset[int]) -> float:
    """``|A ∩ B| / min(|A|, |B|)`` over shingle sets (0.0 when either text has no words).

    The smaller set is the denominator, so a copy padded with a header and footer, or cut
    to an excerpt, still scores as contained."""
    sa = a if isinstance(a, frozenset) else shingles(a)
    sb = b if isinstance(b, frozenset) else shingles(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / min(len(sa), len(sb))
