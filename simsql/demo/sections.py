"""What the demo shows, one section per public query: most similar articles, duplicate groups
(with recall against the planted copies), and the originality check.

Every query goes through simsql's public API (``simsql.most_similar``, ``duplicate_groups``,
``find_original``, ``hamming``); the sections time them and write what they found through
``say``.
"""

from __future__ import annotations

import inspect
import random
import statistics
import time
from collections.abc import Callable, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

import simsql

from ..bits import hamming
from .corpus import Article
from .database import DemoArticle
from .planting import KINDS, SEED, PlantedCopy, change_words, disguised_copy, vocabulary
from .report import Say, Timings, kind_label, ms, shorten

__all__ = ["FRESH_COPIES", "MAX_DISTANCE", "NEW_TEXT", "duplicates_section", "most_similar_section", "originality_section"]

MAX_DISTANCE = 3
"""The duplicate groups' ``max_distance``."""

FRESH_COPIES = 20
"""Disguised copies per kind submitted to the originality check (never stored)."""

NEW_TEXT = (
    "The city council will vote on Thursday on a plan to close the riverside road to cars on "
    "weekends. Shop owners along the embankment fear losing customers who arrive by car, while "
    "residents' associations collected four thousand signatures in favour of the closure. A trial "
    "last summer brought more cyclists and families to the river, the council's report says, but "
    "also longer queues at the two bridges. The mayor has promised extra buses on Saturdays if the "
    "plan passes, and a second review after six months."
)
"""The originality check's genuinely new text: news prose, nothing like programming docs."""

Distance = Callable[[int, int], int]


def most_similar_section(
    session: Session, say: Say, articles: Sequence[Article], planted: Sequence[PlantedCopy], timings: Timings
) -> None:
    """The five nearest articles of one planted copy's original per kind, and of one article
    nobody copied."""
    say("")
    say("2. Most similar articles: most_similar(select(DemoArticle), article, limit=5)")
    by_id = {p.id: p for p in planted}
    for article_id in _chosen_articles(articles, planted):
        article = session.get(DemoArticle, article_id)
        assert article is not None
        t0 = time.perf_counter()
        similar = session.execute(simsql.most_similar(select(DemoArticle), article, limit=5)).all()
        elapsed = time.perf_counter() - t0
        timings.append((f"most_similar #{article_id}", elapsed))
        say("")
        say(f"   #{article.id} {shorten(article.title, 60)}   ({ms(elapsed)})")
        say(f"     {'bits':>4}  {'similar':>7}  {'id':>6}  {'title':<40}  note")
        for row, distance, similarity in similar:
            say(f"     {distance:>4}  {similarity:>7.1%}  {'#' + str(row.id):>6}  {shorten(row.title, 40):<40}  "
                f"{kind_label(row, by_id)}")


def _chosen_articles(articles: Sequence[Article], planted: Sequence[PlantedCopy]) -> list[int]:
    """The originals of one copy of each kind, and one article nobody copied."""
    sources = {kind: [p.source for p in planted if p.kind == kind] for kind in KINDS}
    chosen = [min(sources[kind]) for kind in KINDS if sources[kind]]
    planted_sources = {p.source for p in planted}
    titles = {title: i + 1 for i, (title, _) in enumerate(articles)}
    preferred = ["json", "json (1)", "sqlite3 (1)", "language reference: for", "sqlalchemy.orm.session (1)"]
    unplanted = [titles[t] for t in preferred if t in titles and titles[t] not in planted_sources]
    fallback = [i for i in range(len(articles) // 2, len(articles) + 1) if i not in planted_sources]
    chosen.extend((unplanted or fallback)[:1])
    return chosen


def duplicates_section(session: Session, say: Say, planted: Sequence[PlantedCopy], timings: Timings) -> None:
    """The whole table's duplicate groups, how many planted copies they hold, the same copies
    by nearest neighbour, and the groups nobody planted."""
    say("")
    say(f"3. Duplicate groups: duplicate_groups(session, DemoArticle, max_distance={MAX_DISTANCE})")
    t0 = time.perf_counter()
    groups = simsql.duplicate_groups(session, DemoArticle, max_distance=MAX_DISTANCE)
    elapsed = time.perf_counter() - t0
    timings.append(("duplicate_groups", elapsed))
    say(f"   {len(groups)} groups, {sum(len(g) for g in groups)} rows, found in {ms(elapsed)} "
        "(whole table, block self-joins)")
    fingerprints: dict[int, int] = {
        row.id: row.simhash for row in session.execute(select(DemoArticle.id, DemoArticle.simhash)) if row.simhash is not None
    }

    def distance(a: int, b: int) -> int:
        return hamming(fingerprints[a], fingerprints[b])

    _recall_table(say, groups, planted, distance)
    _nearest_neighbours(session, say, planted, fingerprints, timings)
    _unplanted_groups(session, say, groups, planted, distance)


def _recall_table(say: Say, groups: Sequence[Sequence[int]], planted: Sequence[PlantedCopy], distance: Distance) -> None:
    """Per kind of copy: how many copies share a group with their original."""
    group_of = {key: index for index, group in enumerate(groups) for key in group}
    say("")
    say("   planted copies found (copy and original in one group)")
    say(f"     {'kind':<12} {'found':>9}  {'recall':>6}   missed (bits between copy and original)")
    for kind in (*KINDS, "all"):
        copies = [p for p in planted if kind in ("all", p.kind)]
        if not copies:
            continue
        found = [p for p in copies if p.id in group_of and group_of[p.id] == group_of.get(p.source)]
        missed = sorted(distance(p.id, p.source) for p in copies if p not in found)
        shown = ", ".join(str(d) for d in missed[:12]) + (", …" if len(missed) > 12 else "")
        say(f"     {kind:<12} {len(found):>4}/{len(copies):<4}  {len(found) / len(copies):>6.0%}   "
            f"{shown if kind != 'all' else ''}")


def _nearest_neighbours(
    session: Session, say: Say, planted: Sequence[PlantedCopy], fingerprints: dict[int, int], timings: Timings
) -> None:
    """The same copies searched the way "more like this" would: nearest neighbour, any distance."""
    t0 = time.perf_counter()
    latencies: list[float] = []
    nearest_is_source = 0
    for copy in planted:
        q0 = time.perf_counter()
        top = session.execute(
            simsql.most_similar(select(DemoArticle), fingerprints[copy.id], limit=1, exclude=copy.id)
        ).first()
        latencies.append(time.perf_counter() - q0)
        if top is not None and top[0].id == copy.source:
            nearest_is_source += 1
    timings.append((f"most_similar x{len(planted)}", time.perf_counter() - t0))
    say(f"   copies farther than {MAX_DISTANCE} bits are in no group; the same copies by nearest neighbour:")
    say(f"   nearest neighbour of the copy is its original: {nearest_is_source}/{len(planted)} "
        f"(most_similar(..., limit=1) per copy, median {ms(statistics.median(latencies))})")


def _unplanted_groups(
    session: Session, say: Say, groups: Sequence[Sequence[int]], planted: Sequence[PlantedCopy], distance: Distance
) -> None:
    """Groups simsql found that nobody planted: the corpus's own near-duplicates."""
    by_id = {p.id: p for p in planted}
    planted_pairs = {frozenset((p.id, p.source)) for p in planted}
    unplanted = [g for g in groups if not (len(g) == 2 and frozenset(g) in planted_pairs)]
    say("")
    say(f"   groups that are not a planted pair: {len(unplanted)}")
    for group in unplanted[:5]:
        members = session.scalars(select(DemoArticle).where(DemoArticle.id.in_(group)).order_by(DemoArticle.id)).all()
        say(f"     group of {len(members)}:")
        for row in members[:6]:
            bits, closest = min((distance(row.id, other.id), other.id) for other in members if other is not row)
            say(f"       {'#' + str(row.id):>6}  {shorten(row.title, 44):<44}  {bits:>2} {'bit ' if bits == 1 else 'bits'} from #{closest:<6}  "
                f"{kind_label(row, by_id)}")
        if len(members) > 6:
            say(f"       … {len(members) - 6} more")


def _originality_distance() -> int:
    """find_original's default ``max_distance``, read from its public signature, so the report
    states the default the check actually used."""
    return int(inspect.signature(simsql.find_original).parameters["max_distance"].default)


def originality_section(
    session: Session, say: Say, articles: Sequence[Article], planted: Sequence[PlantedCopy], timings: Timings
) -> None:
    """Submit an edited copy of a stored article and a genuinely new text, then fresh disguised
    copies of every kind, to the originality check."""
    say("")
    say(
        "4. Originality check before publishing: find_original(session, DemoArticle, text)  "
        f"(up to {_originality_distance()} bits, then the candidates' text is compared)"
    )
    rng = random.Random(SEED + 1)
    copied = {p.source for p in planted}
    target = rng.choice([i + 1 for i in range(len(articles)) if i + 1 not in copied])
    title, body = articles[target - 1]
    edited = f"{title}\n{change_words(body, 2, vocabulary(articles), rng)}"
    submissions = [
        ("edited copy", f"#{target} with 2 words changed", edited),
        ("new text", "a new text (local news)", NEW_TEXT),
    ]
    for step, label, submission in submissions:
        t0 = time.perf_counter()
        match = simsql.find_original(session, DemoArticle, submission)
        elapsed = time.perf_counter() - t0
        timings.append((f"find_original ({step})", elapsed))
        if match is None:
            verdict = "original"
        else:
            verdict = f"not original: matches #{match.row.id} at {match.distance} bits ({shorten(match.row.title, 40)})"
        say(f"   {label:<28} {verdict}   ({ms(elapsed)})")
    _fresh_copies(session, say, articles, copied, rng, timings)


def _fresh_copies(
    session: Session, say: Say, articles: Sequence[Article], copied: set[int], rng: random.Random, timings: Timings
) -> None:
    """Submit new disguised copies of stored articles, as a copier would, and count how many
    the defaults catch beside the 3-bit fingerprint-only check."""
    words = vocabulary(articles)
    candidates = [i for i in range(len(articles)) if i + 1 not in copied]
    say("")
    say("   fresh disguised copies submitted (not stored), caught as copies of their original")
    say(f"     {'kind':<20} {'defaults':>8}  {'':>6}  fingerprints only, 3 bits")
    totals = [0, 0, 0]
    t0 = time.perf_counter()
    for kind in KINDS:
        chosen = rng.sample(candidates, min(FRESH_COPIES, len(candidates)))
        caught = strict = 0
        for index in chosen:
            title, _ = articles[index]
            body, _ = disguised_copy(kind, articles, index, words, rng)
            submission = f"{title}\n{body}"
            match = simsql.find_original(session, DemoArticle, submission)
            caught += match is not None and match.row.id == index + 1
            near = simsql.find_original(session, DemoArticle, submission, max_distance=3, min_containment=None)
            strict += near is not None and near.row.id == index + 1
        totals = [totals[0] + caught, totals[1] + strict, totals[2] + len(chosen)]
        say(f"     {'copy: ' + kind:<20} {caught:>5}/{len(chosen):<3} {caught / len(chosen):>5.0%}  {strict}/{len(chosen)}")
    timings.append((f"find_original x{2 * totals[2]}", time.perf_counter() - t0))
    say(
        f"   fresh copies caught: {totals[0]}/{totals[2]} at the defaults, "
        f"{totals[1]}/{totals[2]} fingerprints only within 3 bits"
    )
