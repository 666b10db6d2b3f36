"""Planted copies with a known answer: a few words changed, a "Recommended for you" box added,
paragraphs reordered. Pure Python on ``(title, body)`` pairs; no database.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .corpus import Article

__all__ = [
    "BOILERPLATE_SHARE", "EDITED_SHARE", "KINDS", "REORDERED_SHARE", "SEED", "PlantedCopy", "Row",
    "change_words", "disguised_copy", "plant_copies", "vocabulary",
]  # fmt: skip

EDITED_SHARE = 0.05
BOILERPLATE_SHARE = 0.01
REORDERED_SHARE = 0.01
SEED = 7
"""The planted copies' random seed; the originality check draws from ``SEED + 1``."""

KINDS = ("edited", "boilerplate", "reordered")
"""The kinds of copy, in the order the demo reports them."""

Row = tuple[str, str, str, int | None]
"""A row to insert: ``(title, body, kind, planted_from)``."""

_WORD = re.compile(r"[A-Za-z]{4,}")


@dataclass(frozen=True)
class PlantedCopy:
    """A copy planted in the corpus: its row id, the row it copies, and how it differs."""

    id: int
    source: int
    kind: str  # "edited", "boilerplate" or "reordered"
    change: str


def vocabulary(articles: Sequence[Article]) -> list[str]:
    """Every word of four letters or more in the bodies, sorted: replacements for edited copies."""
    return sorted({word for _, body in articles for word in _WORD.findall(body)})


def change_words(body: str, count: int, words: Sequence[str], rng: random.Random) -> str:
    """``body`` with ``count`` of its words replaced by different ones drawn from ``words``."""
    spans = [match.span() for match in _WORD.finditer(body)]
    for index in sorted(rng.sample(range(len(spans)), min(count, len(spans))), reverse=True):
        start, end = spans[index]
        original = body[start:end]
        replacement = original
        while replacement == original:
            replacement = rng.choice(words)
        body = body[:start] + replacement + body[end:]
    return body


def plant_copies(articles: Sequence[Article], rng: random.Random) -> tuple[list[Row], list[PlantedCopy]]:
    """All rows to insert as ``(title, body, kind, planted_from)`` (ids are 1-based positions:
    the originals first, then the copies), and the planted copies' ground truth.

    About 5% of the articles get a copy with 1-3 words changed, 1% a copy with a "Recommended
    for you" box appended, 1% a copy with its paragraphs in another order. No article is copied
    twice.
    """
    rows: list[Row] = [(title, body, "original", None) for title, body in articles]
    words = vocabulary(articles)
    n = len(articles)
    counts = {
        "edited": max(2, round(n * EDITED_SHARE)),
        "boilerplate": max(1, round(n * BOILERPLATE_SHARE)),
        "reordered": max(1, round(n * REORDERED_SHARE)),
    }
    multi_paragraph = [i for i, (_, body) in enumerate(articles) if body.count("\n\n") >= 2]
    reordered_sources = rng.sample(multi_paragraph, min(counts["reordered"], len(multi_paragraph)))
    taken = set(reordered_sources)
    others = [i for i in range(n) if i not in taken]
    rest = rng.sample(others, min(counts["edited"] + counts["boilerplate"], len(others)))
    plan = (
        [("edited", i) for i in rest[: counts["edited"]]]
        + [("boilerplate", i) for i in rest[counts["edited"] :]]
        + [("reordered", i) for i in reordered_sources]
    )
    planted: list[PlantedCopy] = []
    for kind, index in plan:
        copy, change = disguised_copy(kind, articles, index, words, rng)
        rows.append((articles[index][0], copy, kind, index + 1))
        planted.append(PlantedCopy(len(rows), index + 1, kind, change))
    return rows, planted


def disguised_copy(
    kind: str, articles: Sequence[Article], index: int, words: Sequence[str], rng: random.Random
) -> tuple[str, str]:
    """The body of one copy of ``articles[index]`` disguised as ``kind``, and how it differs."""
    body = articles[index][1]
    if kind == "edited":
        count = rng.randint(1, 3)
        return change_words(body, count, words, rng), f"{count} word{'s' if count > 1 else ''} changed"
    if kind == "boilerplate":
        related = "\n".join(f"  • {articles[i][0]}" for i in rng.sample(range(len(articles)), 3))
        copy = f"{body}\n\nRecommended for you\n{related}\n\nShare this article · Subscribe to our weekly newsletter"
        return copy, '"Recommended for you" box added'
    paragraphs = body.split("\n\n")
    shuffled = paragraphs[:]
    while shuffled == paragraphs:
        rng.shuffle(shuffled)
    return "\n\n".join(shuffled), f"{len(paragraphs)} paragraphs reordered"
