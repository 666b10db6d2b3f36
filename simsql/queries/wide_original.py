"""The originality check on tables with the wide signature, and the size bound of every check.

:func:`find_wide_original` is :func:`simsql.find_original` on a table declared with
``WideSimHashMixin`` or ``attach_model(..., wide=True)``: candidates from
:func:`simsql.queries.wide.wide_search` (margin-directed probes, the 256-bit distance filtered in
the database), nearest first, the cheapest probes in a first statement and the whole budget
only when none of its few nearest candidates is confirmed; each confirmed by the share of the
*submission's* words that lie in word 5-shingles of the candidate's text
(:func:`simsql.text.containment.share_of_submission`, the larger of plain shingles and shingles
within lines, so shuffled short lines still match).

:func:`check_text_size` bounds the memory of both paths: fingerprinting and shingling keep a
few dozen bytes per word of the text, so a text over the limit is refused before any of it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from ..dialects import backend
from ..store.awaiting import off_loop
from ..store.storage import Binding
from ..text.containment import MIN_CONTAINMENT, Shingled, share_of_submission, shingled
from ..text.errors import TextTooLarge
from ..text.fingerprint import Fingerprinter
from ..text.signature import WIDE_BITS
from .nearest import Match
from .targets import in_ranked_order, rows_of_keys
from .wide import (
    WIDE_CANDIDATES,
    WIDE_DISTANCE,
    WIDE_FIRST_CANDIDATES,
    WIDE_FIRST_STAGE,
    probe_groups,
    table_budget,
    wide_binding,
    wide_keys_statement,
    wide_parameters,
    wide_search,
    wide_statement,
    wide_text_statement,
)  # fmt: skip

MAX_TEXT_BYTES = 4 * 1024 * 1024
"""Default bound of :func:`simsql.find_original` on a submitted text (UTF-8 bytes): 4 MiB.
Larger texts are refused with :class:`~simsql.TextTooLarge` before any work (issue 21: a
100 MB text once took 2.6 GB). A text just under it must peak under 1 GB of RSS on both paths
(tests/test_wide_original.py); 10 MiB peaked at 1.2 GB, hence 4."""

def check_text_size(text: str, max_bytes: int | None) -> None:
    """Refuse ``text`` with :class:`TextTooLarge` when its UTF-8 form exceeds ``max_bytes``
    (None: no bound). Cheap: a text of at most ``max_bytes // 4`` characters fits without
    encoding, and one of more than ``max_bytes`` characters never does."""
    if max_bytes is None:
        return
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive int or None, got {max_bytes!r}")
    if len(text) <= max_bytes // 4:
        return
    size = len(text) if len(text) > max_bytes else len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise TextTooLarge(
            f"find_original() checks texts of at most {max_bytes:,} bytes (UTF-8), got "
            f"{'more than ' if len(text) > max_bytes else ''}{size:,}; pass max_bytes=... to allow more"
        )


def find_wide_original(
    session: Session,
    model: type,
    text: str,
    wide_distance: int = WIDE_DISTANCE,
    *,
    min_containment: float | None = MIN_CONTAINMENT,
    candidates: int = WIDE_CANDIDATES,
    budget: int | None = None,
    accept_distance: int | None = None,
) -> Match | None:
    """A row of ``model`` (wide) whose text most of ``text`` comes from, or None.

    Candidates lie within ``wide_distance`` of the 256 bits (:func:`simsql.find_original` scales
    its ``max_distance`` to it: the default 14 of 64 is 96 of 256), probed in two stages
    (:func:`stages`): the nearest few rows the first :data:`WIDE_FIRST_STAGE` probes reach,
    nearest first, then, if none is confirmed, the nearest ``candidates`` rows the whole
    ``budget`` reaches (rows already read are not read again; None: the submission's own
    :func:`~simsql.queries.wide.probe_budget`, more probes for a text of few features, twice as
    many on a table centred on a wide background, and twice again on wider blocks than 8 x 20). ``min_containment``: the share of the
    submission's words a candidate's text must hold
    (:func:`~simsql.text.containment.share_of_submission`; None: the nearest candidate of the whole
    budget is the answer, no text read). ``accept_distance``: a candidate within this many of the
    256 bits is the answer without its text being compared (None, the default: every candidate
    is read); see :func:`check_accept_distance`. The Match's ``similarity`` is
    ``1 - distance / 256``. Raises :class:`~simsql.EmptyDocument` for text without features.
    """
    check_accept_distance(accept_distance)
    binding = wide_binding(model)
    fingerprinter = binding.fingerprinter
    if not isinstance(fingerprinter, Fingerprinter):
        raise TypeError(f"find_original() checks text; {model.__name__} is fingerprinted from vectors")
    signature = off_loop(fingerprinter.signature, text)  # CPU: a worker thread when awaited
    budget = table_budget(binding, signature) if budget is None else budget
    layout = binding.names.layout
    if min_containment is None:  # the nearest candidate of the whole budget, in one statement
        rows = session.execute(wide_search(model, signature, wide_distance, budget=budget, limit=1)).all()
        return Match(rows[0][0], int(rows[0][1]), 1.0 - int(rows[0][1]) / WIDE_BITS) if rows else None
    submitted: Shingled | None = None  # shingled when the first candidate is compared
    read: set[tuple[Any, ...]] = set()
    by_key = backend(session.connection()).rows_by_key
    for start, stop, limit in stages(budget, candidates):
        parameters = wide_parameters(signature, wide_distance, probe_groups(signature, stop, start, layout), layout)
        for key, sources, distance, row in _nearest_texts(session, binding, limit, parameters, by_key):
            if key in read:
                continue
            read.add(key)
            if accept_distance is None or distance > accept_distance:
                stored = binding.text_of(row) if row is not None else binding.text_of_values(sources)
                if stored is None:
                    continue
                if submitted is None:
                    submitted = off_loop(shingled, text)
                if off_loop(_share, submitted, stored) < min_containment:
                    continue
            row = row if row is not None else session.get(model, key)
            if row is not None:  # None: deleted since it was read
                return Match(row, distance, 1.0 - distance / WIDE_BITS)
    return None


def _share(submitted: Shingled, stored: str) -> float:
    return share_of_submission(submitted, shingled(stored))


def _nearest_texts(
    session: Session, binding: Binding, limit: int, parameters: dict[str, Any], by_key: bool
) -> list[tuple[tuple[Any, ...], tuple[Any, ...], int, Any]]:
    """``(key, source values, distance, row)`` of the nearest ``limit`` candidates, nearest
    first, in one statement: for at most :data:`WIDE_FIRST_CANDIDATES` (the first stage), their
    rows whole (:func:`~simsql.queries.wide.wide_statement`; no source values, the row has
    them), so the one confirmed is the answer as read; for more, their keys, source columns and
    distances (:func:`~simsql.queries.wide.wide_text_statement`; ``row`` None, read by key once
    confirmed: an ORM instance per candidate took about half of the statement's client CPU for
    16 candidates almost all turned away, issue 43 measured the trade for the first stage's few).
    Or (``by_key``, :attr:`simsql.dialects.Backend.rows_by_key`) their keys and distances, then
    their rows by key (which Citus routes to the shards holding them)."""
    if by_key:
        ranked = session.execute(wide_keys_statement(binding.model, limit), parameters).all()
        if not ranked:
            return []
        found = session.execute(rows_of_keys(binding, [tuple(rank[: len(binding.keys)]) for rank in ranked])).all()
        return [(binding.key_of(row), (), distance, row) for row, distance in in_ranked_order(binding, ranked, found)]
    if limit <= WIDE_FIRST_CANDIDATES:
        rows = session.execute(wide_statement(binding.model, limit), parameters).all()
        return [(binding.key_of(row), (), int(distance), row) for row, distance in rows]
    width = len(binding.keys)
    return [
        (tuple(found[:width]), tuple(found[width:-1]), int(found[-1]), None)
        for found in session.execute(wide_text_statement(binding.model, limit), parameters).all()
    ]


def check_accept_distance(accept_distance: object) -> None:
    """Refuse an ``accept_distance`` that is not None or an int in 0..256.

    Why it is off by default, with no recommended value: a match then no longer proves that half
    of the submission's words are in the row's text; it rests on the signature alone, and how
    near unrelated texts come depends on the corpus. Measured (BENCHMARKS.md, "Accepting without
    the text"; ``python -m benchmarks.accept_distance`` measures a table of yours): on 1M English
    man-page articles, 20M random pairs of rows are 58 or more bits apart, a log-linear fit of
    their lower tail puts 1e-12 per pair at 41 bits (32: 8e-15), no candidate that was not a copy
    came nearer than 56 bits for 2,000 fresh articles, and 88-100% of light disguises lie within
    32 bits of their original. On Chinese articles built from a small paragraph pool, random
    pairs that share paragraphs reach 46 bits and the fit never reaches 1e-12 above 6 bits."""
    if accept_distance is None:
        return
    if isinstance(accept_distance, bool) or not isinstance(accept_distance, int) or not 0 <= accept_distance <= WIDE_BITS:
        raise ValueError(f"accept_distance must be None or an int in 0..{WIDE_BITS} (bits of the wide signature), got {accept_distance!r}")


def stages(budget: int, candidates: int) -> list[tuple[int, int, int]]:
    """``(start, stop, limit)`` of each stage: the nearest :data:`WIDE_FIRST_CANDIDATES` rows the
    first :data:`WIDE_FIRST_STAGE` probes reach, then the nearest ``candidates`` rows of the whole
    ``budget`` (the answer of a single statement; rows the first stage read are not read again)."""
    if budget <= WIDE_FIRST_STAGE:
        return [(0, budget, candidates)]
    return [(0, WIDE_FIRST_STAGE, min(WIDE_FIRST_CANDIDATES, candidates)), (0, budget, candidates)]
