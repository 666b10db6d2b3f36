"""Whole-table deduplication on tables with the wide signature, confirmed by text as the
originality check confirms a copy.

Two stages, as :func:`simsql.find_original` runs them for one text, here for every row at once:

1. **Candidates, in the database.** For each of the wide signature's 8 block columns
   (:data:`simsql.schema.names.WIDE_LAYOUT`, 20 bits each) one self-join pairs the rows whose
   block values differ in at most ``probe_radius`` bits (the block of one row equal to the
   other's with each flip of :func:`flip_masks` applied: one hash join, or one index lookup
   per row and flip; radius 2 as one bit flipped on each side where the server hash-joins on
   expressions, :func:`side_radii`), keeps the pairs whose 256-bit distance is within
   ``wide_distance``, and sends only those keys back. A pair within ``8 * (probe_radius + 1) - 1`` bits of each other
   among the 160 bits the blocks cover has one block within ``probe_radius`` bits
   (pigeonhole), so it is a candidate (:func:`guaranteed_distance`).
2. **Confirmation, by text.** The candidates' texts are read by key in batches and each pair is
   kept when the larger of its two :func:`~simsql.text.containment.share_of_submission` (the
   share of one text's words lying in word 5-shingles of the other, what ``find_original``
   computes with one of them submitted) reaches ``min_containment``.

Exact for that rule: the answer is every pair that is a candidate and is confirmed, whatever the
order of rows or batches (tests/test_dedupe_wide.py checks it against brute force).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from itertools import combinations
from typing import Any

from sqlalchemy import Integer, Select, and_, bindparam, func, literal, or_, select, true, tuple_, union_all
from sqlalchemy.orm import Session

from .. import dialects
from ..dialects import hamming_expression
from ..schema.names import WIDE_LAYOUT
from ..store.awaiting import connection_of, off_loop
from ..store.progress import Progress
from ..store.storage import Binding
from ..text.containment import MIN_CONTAINMENT, Shingled, share_of_submission, shingled
from ..text.fingerprint import Fingerprinter
from ..text.signature import WIDE_BITS
from .pairs import ConfirmedPair
from .targets import key_value
from .wide import wide_binding

WIDE_RADIUS_ROWS = 200_000
"""``probe_radius=None`` (the default) joins within 2 bits on a table of at most this many rows
with a signature, within 1 bit on a larger one. Measured (BENCHMARKS.md, "Whole-table
deduplication on wide tables"; ``python -m benchmarks.dedupe``): Chinese copies with 5% of
their characters replaced share a block value within 2 bits with their original in 97% of
cases, within 1 bit in 72-76%, an equal one in 24%; English ones 99-100% within 1 bit. Radius 2
compares about eight times the pairs of radius 1 (211 values per block and row against 21):
200,000 rows of real text took 290 s against 38 s on PostgreSQL, a million 210 s at radius 1
(radius 2 measured one-sided; split over both sides, :func:`side_radii`, it took a third of
that time on 50,000 rows)."""

DEDUPE_DISTANCE = 64
"""Default ``wide_distance``: candidates within 64 of the 256 bits (a quarter). Copies of
Chinese man pages with 5% of their characters replaced lie within 63 bits of their original (38
at the median), English ones with 5% of their words replaced within 23. Rows that share a
paragraph or two without being copies crowd the 64-96 bits: on a million articles assembled from
shared man-page paragraphs, one block self-join finds 700 pairs within 64 bits and 1.1 million
within 96, each a pair of texts to read (BENCHMARKS.md, "Whole-table deduplication on wide
tables"). The originality check's 96 (``WIDE_DISTANCE``) also reaches excerpts and padded
copies, one submission at a time; pass ``wide_distance=96`` for that reach on a small table."""

MAX_DEDUPE_PROBE_RADIUS = 2
"""The widest ``probe_radius``: 211 values per block and row (or 21 on each side, :func:`side_radii`)."""

TEXT_BATCH = 500
"""Candidate pairs confirmed per batch: their texts are read in one statement by key."""


def flip_masks(radius: int) -> list[int]:
    """Every mask of at most ``radius`` bits of a wide block (0 first): the values a block is
    compared with are its own value XOR each of them."""
    width = WIDE_LAYOUT.width
    return [sum(1 << bit for bit in bits) for r in range(radius + 1) for bits in combinations(range(width), r)]


def guaranteed_distance(probe_radius: int) -> int:
    """The distance (of the 160 bits the blocks cover) within which every pair is a candidate."""
    return WIDE_LAYOUT.count * (probe_radius + 1) - 1


def check_dedupe_arguments(min_containment: object, wide_distance: object, probe_radius: object, batch_size: object) -> None:
    """Refuse, before any statement, arguments of the text mode outside their ranges."""
    if isinstance(min_containment, bool) or not isinstance(min_containment, (int, float)) or not 0.0 < min_containment <= 1.0:
        raise ValueError(f"min_containment must be a number in (0, 1], got {min_containment!r}")
    if isinstance(wide_distance, bool) or not isinstance(wide_distance, int) or not 0 <= wide_distance <= WIDE_BITS:
        raise ValueError(f"wide_distance must be an int in 0..{WIDE_BITS} (bits of the wide signature), got {wide_distance!r}")
    if isinstance(probe_radius, bool) or not isinstance(probe_radius, int) or not 0 <= probe_radius <= MAX_DEDUPE_PROBE_RADIUS:
        raise ValueError(f"probe_radius must be an int in 0..{MAX_DEDUPE_PROBE_RADIUS} (bits of a 20-bit block), got {probe_radius!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")


def wide_pairs_statement(model: type, block: int, probe_radius: int, *, materialize: bool = False, split: bool = False) -> Select[Any]:
    """``(a key..., b key..., distance)`` of every pair of rows (``a < b``) whose block ``block``
    values differ in at most ``probe_radius`` bits and whose 256-bit distance is at most the
    parameter ``simsql_bound``. ``materialize``: self-join the keys and words read once (a
    ``MATERIALIZED`` CTE; :meth:`simsql.dialects.Backend.materialize_self_join`). ``split``
    (where the server hash-joins on expressions): radius 2 as one bit flipped on each side
    (:func:`side_radii`), 21 variants a row on each side instead of 211 on one."""
    return _pairs_statement(wide_binding(model), block, probe_radius, materialize, split)


def side_radii(probe_radius: int, split: bool) -> tuple[int, int]:
    """Bits flipped on the ``a`` and on the ``b`` side of the block join, together ``probe_radius``.

    ``(0, r)``: ``b``'s block with each of :func:`flip_masks` ``(r)`` applied equals ``a``'s, one
    probe of ``a``'s block (a hash, or its index) per variant of ``b``. With ``split``, radius 2
    is ``(1, 1)``: ``a ^ ma == b ^ mb`` with ``ma``, ``mb`` of at most one bit each, so
    ``a ^ b == ma ^ mb`` has at most two bits; each pair within two bits matches exactly one
    ``(ma, mb)`` with ``ma < mb`` or ``ma == mb == 0`` (two bits i < j: only ``(e_i, e_j)``;
    one bit: only ``(0, e_i)``; none: only ``(0, 0)``), so the rule and the pairs are the same.
    42 rows a row to hash and probe instead of 211 (BENCHMARKS.md, issue 42)."""
    return (1, 1) if split and probe_radius == 2 else (0, probe_radius)


def xor_expression(value: Any, mask: Any) -> Any:
    """``value XOR mask``, written so every server reads it."""
    return value + mask - 2 * value.op("&")(mask)


def flips_subquery(radius: int, name: str) -> Any:
    """One row ``m`` per mask of :func:`flip_masks` ``(radius)``."""
    return union_all(*(select(literal(mask, Integer()).label("m")) for mask in flip_masks(radius))).subquery(name)


@lru_cache(maxsize=256)
def _pairs_statement(binding: Binding, block: int, probe_radius: int, materialize: bool, split: bool) -> Select[Any]:
    source: Any = binding.table
    column = binding.wide_blocks[block].name
    if materialize:
        wanted = [*binding.table_keys, *binding.words, binding.wide_blocks[block]]
        source = select(*wanted).where(binding.words[0].is_not(None)).cte(f"simsql_words_{block}").prefix_with("MATERIALIZED")
    a, b = source.alias("a"), source.alias("b")
    a_keys = [a.c[key.name] for key in binding.table_keys]
    b_keys = [b.c[key.name] for key in binding.table_keys]
    distance: Any = sum(
        (hamming_expression(a.c[word.name], b.c[word.name]) for word in binding.words[1:]),
        hamming_expression(a.c[binding.words[0].name], b.c[binding.words[0].name]),
    )
    before = a_keys[0] < b_keys[0] if len(a_keys) == 1 else tuple_(*a_keys) < tuple_(*b_keys)
    columns = (
        *(k.label(f"a_{i}") for i, k in enumerate(a_keys)),
        *(k.label(f"b_{i}") for i, k in enumerate(b_keys)),
        distance.label("distance"),
    )
    bound = bindparam("simsql_bound", type_=Integer())
    mine, theirs = side_radii(probe_radius, split)
    if theirs == 0:
        condition = a.c[column] == b.c[column]
        return select(*columns).select_from(a.join(b, and_(condition, before))).where(distance <= bound)
    b_flips = flips_subquery(theirs, "flips")
    if mine == 0:
        flipped = xor_expression(b.c[column], b_flips.c.m)
        joined = b.join(b_flips, true()).join(a, and_(a.c[column] == flipped, before))
        return select(*columns).select_from(joined).where(distance <= bound)
    a_flips = flips_subquery(mine, "a_flips")
    once = or_(a_flips.c.m < b_flips.c.m, and_(a_flips.c.m == 0, b_flips.c.m == 0))  # see side_radii
    matched = and_(xor_expression(a.c[column], a_flips.c.m) == xor_expression(b.c[column], b_flips.c.m), once, before)
    joined = a.join(a_flips, true()).join(b.join(b_flips, true()), matched)
    return select(*columns).select_from(joined).where(distance <= bound)


def default_radius(session: Session, binding: Binding) -> int:
    """The radius ``probe_radius=None`` stands for: 2 up to :data:`WIDE_RADIUS_ROWS` rows with
    a signature (counted, not estimated, so the choice is reproducible), else 1."""
    rows = session.scalar(select(func.count()).select_from(binding.table).where(binding.words[0].is_not(None)))
    return 2 if (rows or 0) <= WIDE_RADIUS_ROWS else 1


def candidate_pairs(
    session: Session, model: type, wide_distance: int, probe_radius: int, progress: Progress | None
) -> dict[tuple[Any, Any], int]:
    """``{(a, b): distance}`` of the candidates: one self-join per block column, each pair once."""
    binding = wide_binding(model)
    connection = connection_of(session)
    binding.check_config(connection)
    backend = dialects.backend(connection)
    backend.prepare_self_join(connection)
    materialize = backend.materialize_self_join()
    split = backend.hash_joins_expressions()
    width = len(binding.table_keys)
    found: dict[tuple[Any, Any], int] = {}
    for block in range(WIDE_LAYOUT.count):
        statement = wide_pairs_statement(model, block, probe_radius, materialize=materialize, split=split)
        for row in session.execute(statement, {"simsql_bound": wide_distance}):
            found[(key_value(row[:width]), key_value(row[width : 2 * width]))] = int(row[-1])
        if progress is not None:
            progress("candidates", block + 1, WIDE_LAYOUT.count)
    return found


def texts_statement(binding: Binding, keys: Sequence[Any]) -> Select[Any]:
    """``(key..., source...)`` of the rows whose keys (as :func:`key_value` gives them) are ``keys``."""
    sources = [getattr(binding.model, name) for name in binding.source]
    if len(binding.keys) == 1:
        return select(*binding.keys, *sources).where(binding.keys[0].in_(list(keys)))
    return select(*binding.keys, *sources).where(tuple_(*binding.keys).in_([tuple(key) for key in keys]))


def read_texts(session: Session, binding: Binding, keys: Sequence[Any]) -> dict[Any, str | None]:
    """The text of each of ``keys`` (None: no text, or no row any more)."""
    width = len(binding.keys)
    found: dict[Any, str | None] = dict.fromkeys(keys)
    for row in session.execute(texts_statement(binding, keys)):
        found[key_value(row[:width])] = binding.text_of_values(tuple(row[width:]))
    return found


def pair_containment(first: Shingled, second: Shingled) -> float:
    """The larger share of one text's words lying in word 5-shingles of the other."""
    return max(share_of_submission(first, second), share_of_submission(second, first))


def confirmed_batch(
    pairs: Sequence[tuple[tuple[Any, Any], int]], texts: dict[Any, str | None], min_containment: float
) -> list[ConfirmedPair]:
    """The pairs of one batch whose texts contain each other at least ``min_containment`` (CPU
    only: each text shingled once)."""
    shingles = {key: shingled(text) for key, text in texts.items() if text is not None}
    kept = []
    for (a, b), distance in pairs:
        if a in shingles and b in shingles:
            share = pair_containment(shingles[a], shingles[b])
            if share >= min_containment:
                kept.append(ConfirmedPair(a, b, distance, share))
    return kept


def batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def wide_near_duplicates(
    session: Session, model: type, *, min_containment: float = MIN_CONTAINMENT, wide_distance: int = DEDUPE_DISTANCE,
    probe_radius: int | None = None, progress: Progress | None = None, batch_size: int = TEXT_BATCH,
) -> list[ConfirmedPair]:  # fmt: skip
    """Every pair of rows of ``model`` (wide, fingerprinted from text) that is a candidate of
    the block self-joins (see the module) and whose texts contain each other at least
    ``min_containment``, ordered by keys. Texts are read ``batch_size`` pairs at a time."""
    check_dedupe_arguments(min_containment, wide_distance, 0 if probe_radius is None else probe_radius, batch_size)
    binding = wide_binding(model)
    if not isinstance(binding.fingerprinter, Fingerprinter):
        raise TypeError(f"{model.__name__} is fingerprinted from vectors: near_duplicates(..., by_text=True) compares texts")
    if probe_radius is None:
        probe_radius = default_radius(session, binding)
    candidates = sorted(candidate_pairs(session, model, wide_distance, probe_radius, progress).items())
    kept: list[ConfirmedPair] = []
    done = 0
    for batch in batches(candidates, batch_size):
        keys = sorted({key for (a, b), _ in batch for key in (a, b)})
        texts = read_texts(session, binding, keys)
        kept.extend(off_loop(confirmed_batch, batch, texts, min_containment))
        done += len(batch)
        if progress is not None:
            progress("texts", done, len(candidates))
    return kept
