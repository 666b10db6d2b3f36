"""The originality check: is a submitted text a copy of a row already stored?

Two stages, each with its own reason to change: the index stage (:func:`originality_search`,
the nearest candidates from the block probes, never a scan) and the text stage
(:func:`find_original`, word-shingle containment of each candidate's own text). The defaults
below were tuned on documentation prose; BENCHMARKS.md ("Originality check") holds the measurements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from ..dialects import backend, radius_for
from ..store.awaiting import connection_of, off_loop
from ..store.storage import binding_for
from ..text.containment import MIN_CONTAINMENT, containment, shingles
from ..text.signature import WIDE_BITS
from .nearest import Match, most_similar, most_similar_keys
from .planner import DEFAULT_PROBE_RADIUS, MAX_PROBE_RADIUS
from .targets import check_distance, in_ranked_order, rows_of_keys
from .wide import WIDE_DISTANCE
from .wide_original import MAX_TEXT_BYTES, check_text_size, find_wide_original

ORIGINALITY_DISTANCE = 14
"""Default threshold of :func:`find_original`. Its probes (:data:`ORIGINALITY_PROBE_RADIUS`)
find every row within 11 bits, and a row 12-14 bits away when one of its four blocks is within 2
bits of the submission's: 12, 13 or 14 changed bits placed at random over four blocks leave one
block with 2 or fewer in 97%, 90% and 81% of cases. Measured on documentation prose,
this catches nearly as many light evasions as probing every row within 14 bits (radius 3), at
the index cost of an 11-bit search, and clearly more than 11 bits alone (BENCHMARKS.md,
"Defaults, and why: the measurements" and "Originality check")."""

ORIGINALITY_PROBE_RADIUS = 2
"""Default probe radius of :func:`find_original`: each block is probed within 2 bits (137 values
per block, every row within ``4 * 2 + 3 = 11`` bits). Radius 3 (697 values per block) would
make the 14-bit bound exact at several times the index work (the values probed per block
are the cost: 697 against 137)."""

ORIGINALITY_CANDIDATES = 16
"""How many of the nearest rows :func:`find_original` verifies by text before answering None."""


def bounded_probe_radius(max_distance: int | None) -> int:
    """The probe radius for a search bounded by ``max_distance``: one that reaches the bound, so
    the block indexes answer alone (radius-2 bands would leave the rest to a scan of the table,
    which every search with nothing within reach runs), and never less than the default."""
    if max_distance is None:
        return DEFAULT_PROBE_RADIUS
    return min(max(DEFAULT_PROBE_RADIUS, radius_for(max_distance)), MAX_PROBE_RADIUS)


def originality_search(
    model: type, target: object, max_distance: int = ORIGINALITY_DISTANCE, *,
    probe_radius: int | None = ORIGINALITY_PROBE_RADIUS, limit: int = ORIGINALITY_CANDIDATES,
) -> Select[Any]:  # fmt: skip
    """The index stage of :func:`find_original`: ``(Model, distance, similarity)`` of the nearest
    ``limit`` candidates for a text or fingerprint, from the block probes alone (never a scan of
    the table). One statement for the check and for the benchmark that times it."""
    if probe_radius is None:
        probe_radius = bounded_probe_radius(max_distance)
    return most_similar(select(model), target, limit=limit, max_distance=max_distance, probe_radius=probe_radius, scan=False)


def find_original(
    session: Session,
    model: type,
    text: str,
    max_distance: int = ORIGINALITY_DISTANCE,
    *,
    probe_radius: int | None = ORIGINALITY_PROBE_RADIUS,
    min_containment: float | None = MIN_CONTAINMENT,
    candidates: int = ORIGINALITY_CANDIDATES,
    max_bytes: int | None = MAX_TEXT_BYTES,
    accept_distance: int | None = None,
) -> Match | None:
    """The originality check: the nearest existing row that ``text`` is a copy of, or None.

    Two stages. The block index finds candidate rows, nearest first: every row within
    ``4 * probe_radius + 3`` bits (11 by default), and rows farther out, up to ``max_distance``
    (14), where one of their 16-bit blocks is within ``probe_radius`` bits of the submission's
    (``most_similar(..., scan=False)``; ``probe_radius=None`` probes far enough for every row
    within ``max_distance``, at several times the index work). Then each candidate's own text is
    compared with ``text`` and accepted when at least
    ``min_containment`` of the smaller one's word 5-shingles are in the other
    (:mod:`simsql.text.containment`). At 14 bits a large table holds some unrelated rows by chance
    (BENCHMARKS.md, "False matches at 14 bits"); the second stage turns them away, so the
    threshold can be wide enough to catch disguised copies. ``min_containment=None`` skips it (fingerprints only:
    the nearest row within ``max_distance`` is the answer). At most ``candidates`` rows are
    read. Raises :class:`EmptyDocument` for text without words, and :class:`TextTooLarge`, before
    any work, for a text over ``max_bytes`` of UTF-8 (4 MiB by default; None: no bound).

    On a table with the wide signature (``WideSimHashMixin``, ``attach_model(..., wide=True)``)
    the check is :func:`simsql.queries.wide_original.find_wide_original` instead: probes of the
    256-bit signature's blocks, candidates within the same share of its 256 bits as
    ``max_distance`` is of 64, scaled so the default 14 is 96 (``WIDE_DISTANCE``), the cheapest
    64 probes first, each candidate confirmed by the share of the *submission's* words that lie
    in shingles of its text (``probe_radius`` does not apply there; see docs/originality.md).
    There only, ``accept_distance`` (bits of 256; None, the default, reads every candidate)
    accepts a candidate that near without comparing its text (how near is safe depends on the
    corpus: BENCHMARKS.md, "Accepting without the text"); refused on other tables.
    """
    if binding_for(model).words:  # the wide signature: its own index stage and confirmation
        check_arguments(text, min_containment, candidates, max_bytes)
        check_distance(max_distance)
        bound = min(WIDE_BITS, round(max_distance * WIDE_DISTANCE / ORIGINALITY_DISTANCE))  # the default: 96 of 256
        return find_wide_original(
            session, model, text, bound, min_containment=min_containment, candidates=candidates, accept_distance=accept_distance
        )
    if accept_distance is not None:
        raise ValueError(
            f"accept_distance counts bits of the wide signature; {model.__name__} has no wide signature "
            f"(declare it with simsql.WideSimHashMixin, or move the table: simsql refingerprint)"
        )
    return find_fingerprint_original(
        session, model, text, max_distance, probe_radius=probe_radius, min_containment=min_containment, candidates=candidates,
        max_bytes=max_bytes,
    )


def check_arguments(text: object, min_containment: float | None, candidates: int, max_bytes: int | None) -> None:
    """find_original's refusals, before any work: a text that is not a str or is over
    ``max_bytes``, a ``min_containment`` outside (0, 1], a ``candidates`` that is not a positive int."""
    if not isinstance(text, str):
        raise TypeError(f"find_original() checks a text (str), got {type(text).__name__}")
    if min_containment is not None and not 0.0 < min_containment <= 1.0:
        raise ValueError(f"min_containment must be in (0, 1] or None, got {min_containment!r}")
    if isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1:
        raise ValueError(f"candidates must be a positive int, got {candidates!r}")
    check_text_size(text, max_bytes)


def find_fingerprint_original(
    session: Session,
    model: type,
    text: str,
    max_distance: int = ORIGINALITY_DISTANCE,
    *,
    probe_radius: int | None = ORIGINALITY_PROBE_RADIUS,
    min_containment: float | None = MIN_CONTAINMENT,
    candidates: int = ORIGINALITY_CANDIDATES,
    max_bytes: int | None = MAX_TEXT_BYTES,
) -> Match | None:
    """:func:`find_original` on a table without the wide signature. The submission's fingerprint
    and the candidates' text comparison are CPU work (:func:`~simsql.store.awaiting.off_loop`:
    off the event loop when :mod:`simsql.asyncio` runs it); one search statement, or two where the
    backend reads rows by key."""
    check_arguments(text, min_containment, candidates, max_bytes)
    if binding_for(model).words:
        raise ValueError(f"{model.__name__} has the wide signature: find_original checks it with find_wide_original")
    limit = 1 if min_containment is None else candidates
    by_key = backend(connection_of(session)).rows_by_key
    if by_key:
        rows = ranked_rows_by_key(session, model, text, max_distance, probe_radius, limit)
    else:
        statement = off_loop(
            lambda: originality_search(model, text, max_distance, probe_radius=probe_radius, limit=limit)
        )
        rows = list(session.execute(statement).all())
    if min_containment is None:
        return Match(rows[0][0], int(rows[0][1]), float(rows[0][2])) if rows else None
    threshold = min_containment
    found: Match | None = off_loop(lambda: first_contained(model, text, rows, threshold))
    return found


def ranked_rows_by_key(
    session: Session, model: type, text: str, max_distance: int, probe_radius: int | None, limit: int
) -> list[tuple[Any, int, float]]:
    """:func:`originality_search`'s rows in two statements, for a backend whose
    :attr:`~simsql.dialects.Backend.rows_by_key` says so (Citus): the candidates' keys and
    distances from the fingerprint table (its block indexes), then their rows by key
    (``key IN (...)``, which Citus routes to the shards holding those keys rather than joining
    the table on every shard). The same rows in the same order: ``(row, distance, similarity)``,
    nearest first, ties by key; a row deleted between the two is left out, as the join would."""
    radius = bounded_probe_radius(max_distance) if probe_radius is None else probe_radius
    binding = binding_for(model)
    statement = off_loop(
        lambda: most_similar_keys(model, text, limit, max_distance, probe_radius=radius, scan=False)
    )
    ranked = session.execute(statement).all()
    if not ranked:
        return []
    found = session.execute(rows_of_keys(binding, [tuple(rank[: len(binding.keys)]) for rank in ranked])).all()
    return [(row, distance, 1.0 - distance / 64.0) for row, distance in in_ranked_order(binding, ranked, found)]


def first_contained(model: type, text: str, rows: Sequence[Any], min_containment: float) -> Match | None:
    """The text stage: the first of ``rows`` (``(row, distance, similarity)``, nearest first)
    whose own text shares at least ``min_containment`` of the smaller one's word 5-shingles
    with ``text``."""
    binding = binding_for(model)
    submitted = shingles(text)
    for row, distance, similarity in rows:
        stored = binding.text_of(row)
        if stored is not None and containment(submitted, shingles(stored)) >= min_containment:
            return Match(row, int(distance), float(similarity))
    return None
