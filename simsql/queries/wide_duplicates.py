"""Whole-table deduplication on tables with the wide signature, confirmed by text as the
originality check confirms a copy.

Two stages, as :func:`simsql.find_original` runs them for one text, here for every row at once:

1. **Candidates, in the database.** For each of the wide signature's block columns (the
   attachment's layout, by default :data:`simsql.schema.names.WIDE_LAYOUT`: 8 of 20 bits) one self-join pairs the rows whose
   block values differ in at most ``probe_radius`` bits (the block of one row equal to the
   other's with each flip of :func:`flip_masks` applied; radius 1 as one hash join, or one index
   lookup per row and flip; radius 2 and 3 as one bit flipped on ``a``'s side and the rest on
   ``b``'s, each side's variants computed once and joined on their values, :func:`side_radii`),
   keeps the pairs whose 256-bit distance is within
   ``wide_distance``, and sends only those keys back. A pair within ``count * (probe_radius + 1) - 1`` bits of each other
   among the bits the blocks cover (160 for 8 x 20) has one block within ``probe_radius`` bits
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
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from typing import Any

from sqlalchemy import Integer, Select, and_, bindparam, func, literal, literal_column, or_, select, true, tuple_, union_all
from sqlalchemy.orm import Session

from .. import dialects
from ..dialects import fenced_cte, hamming_expression
from ..schema.names import WIDE_LAYOUT
from ..store.awaiting import connection_of, off_loop
from ..store.progress import Progress
from ..store.storage import Binding
from ..text.containment import MIN_CONTAINMENT, Shingled, share_of_submission, shingled
from ..text.fingerprint import Fingerprinter
from ..text.signature import WIDE_BITS, BlockLayout
from .pairs import ConfirmedPair
from .targets import key_value
from .wide import wide_binding


@dataclass(frozen=True)
class DedupeReach:
    """How far whole-table deduplication looks on a table of at most ``max_rows`` rows with a
    signature (None: any size): candidates within ``probe_radius`` bits in one block, and within
    ``wide_distance`` of the 256 bits.

    Why tiers: a wider radius reaches copies with more of their text replaced, and costs more
    colliding pairs per block (radius 3: 1,351 values per block and row on one side, or 21 on
    one side and 211 on the other, :func:`side_radii`; radius 2: 211, or 21 and 21; radius 1:
    21), a cost that grows with the square of the table's rows; and a wider bound sends more
    pairs to be confirmed by text."""

    max_rows: int | None
    probe_radius: int
    wide_distance: int


DEDUPE_REACH: tuple[DedupeReach, ...] = (
    DedupeReach(5_000, 3, 80),
    DedupeReach(200_000, 2, 64),
    DedupeReach(None, 1, 64),
)
"""What ``probe_radius=None`` and ``wide_distance=None`` stand for, by the table's size (the first
tier whose ``max_rows`` holds it). Measured (BENCHMARKS.md, "Whole-table deduplication on wide
tables" and "Radius 3 on small tables"; ``python -m benchmarks.dedupe quality`` and ``scale``):

* up to 5,000 rows radius 3 within 80 bits. Chinese copies with 5% of their characters replaced
  lie up to 70 bits from their original and a few keep no block within 2 bits; radius 3 and 80
  bits find them all on both the tuning and the held-out sets. Radius 3's joins took 4-7 times
  radius 2's at 20,000 rows, and 96 bits would confirm millions of rows sharing a paragraph or
  two (on 20,000 articles assembled from shared man-page paragraphs: 35 candidate
  pairs within 64 bits, 818 within 72, 30,845 within 80, 2.8 million within 96);
* up to 200,000 rows radius 2 within 64 bits: Chinese copies at 5% share a block value within 2
  bits with their original in 96-97% of cases;
* above, radius 1 within 64 bits: 72-76% of those, English 99-100%. Pass ``probe_radius=2`` (or
  3) for more reach at the larger cost."""


def reach_for(rows: int) -> DedupeReach:
    """The tier of :data:`DEDUPE_REACH` for a table of ``rows`` rows with a signature."""
    return next(tier for tier in DEDUPE_REACH if tier.max_rows is None or rows <= tier.max_rows)


MAX_DEDUPE_PROBE_RADIUS = 3
"""The widest ``probe_radius``: 1,351 values per block and row (or 21 on one side and 211 on the
other, :func:`side_radii`)."""

TEXT_BATCH = 500
"""Candidate pairs confirmed per batch: their texts are read in one statement by key."""


def flip_masks(radius: int, width: int = WIDE_LAYOUT.width) -> list[int]:
    """Every mask of at most ``radius`` bits of a wide block (0 first; ``width``: of a part of
    one): the values a block is compared with are its own value XOR each of them."""
    return [sum(1 << bit for bit in bits) for r in range(radius + 1) for bits in combinations(range(width), r)]


def guaranteed_distance(probe_radius: int, layout: BlockLayout = WIDE_LAYOUT) -> int:
    """The distance (of the bits the blocks of ``layout`` cover) within which every pair is a candidate."""
    return layout.count * (probe_radius + 1) - 1


def check_dedupe_arguments(min_containment: object, wide_distance: object, probe_radius: object, batch_size: object) -> None:
    """Refuse, before any statement, arguments of the text mode outside their ranges."""
    if isinstance(min_containment, bool) or not isinstance(min_containment, (int, float)) or not 0.0 < min_containment <= 1.0:
        raise ValueError(f"min_containment must be a number in (0, 1], got {min_containment!r}")
    if isinstance(wide_distance, bool) or not isinstance(wide_distance, int) or not 0 <= wide_distance <= WIDE_BITS:
        raise ValueError(f"wide_distance must be an int in 0..{WIDE_BITS} (bits of the wide signature), got {wide_distance!r}")
    if isinstance(probe_radius, bool) or not isinstance(probe_radius, int) or not 0 <= probe_radius <= MAX_DEDUPE_PROBE_RADIUS:
        raise ValueError(f"probe_radius must be an int in 0..{MAX_DEDUPE_PROBE_RADIUS} (bits of a wide block), got {probe_radius!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")


def wide_pairs_statement(
    model: type, block: int, probe_radius: int, *, materialize: bool = False, split: bool = False, half: int | None = None
) -> Select[Any]:
    """``(a key..., b key..., distance)`` of every pair of rows (``a < b``) whose block ``block``
    values differ in at most ``probe_radius`` bits and whose 256-bit distance is at most the
    parameter ``simsql_bound``. ``materialize``: self-join the keys and words read once (a
    ``MATERIALIZED`` CTE; :meth:`simsql.dialects.Backend.materialize_self_join`). ``split``:
    radius 2 and 3 as one bit flipped on ``a``'s side and the rest on ``b``'s (:func:`side_radii`),
    each side's variants fenced and joined on their values (``near_duplicates`` always splits;
    ``False`` is the one-sided form, kept for ``benchmarks.dedupe joins``). ``half`` (0 or 1, at
    radius 2 or 3): the pairs of the same rule whose block half ``half`` (:data:`HALF_BITS` bits)
    is within one bit (:func:`half_radius`); the two halves' statements together give the
    block's pairs, with far fewer variants a row than the split (a smaller table's form)."""
    if half is not None:
        return _half_statement(wide_binding(model), block, probe_radius, materialize, half)
    return _pairs_statement(wide_binding(model), block, probe_radius, materialize, split)


HALF_BITS = WIDE_LAYOUT.width // 2
"""Bits of each half of a block of :data:`WIDE_LAYOUT` in the halves form of radius 2 and 3
(:func:`half_radius`); another layout's halves are :func:`half_widths`."""


def half_widths(width: int) -> tuple[int, int]:
    """Bits of the low and the high half of a ``width``-bit block (the high one takes an odd
    width's last bit, so the halves cover the whole block and the pigeonhole holds)."""
    return width // 2, width - width // 2


def half_radius(probe_radius: int) -> int:
    """The radius each half of a block is joined within so that every pair of blocks within
    ``probe_radius`` bits (2 or 3) is met in one half: the halves' differences add up to at most
    ``probe_radius``, so one of them is at most ``probe_radius // 2`` = 1 (pigeonhole). The join
    then keeps the pairs whose whole block is within ``probe_radius``: the same pairs as the
    split, from 1 + 11 rows a row and half instead of 21 + 211 (radius 3)."""
    if probe_radius not in (2, 3):
        raise ValueError(f"the halves form joins radius 2 or 3, not {probe_radius}")
    return probe_radius // 2


def side_radii(probe_radius: int, split: bool) -> tuple[int, int]:
    """Bits flipped on the ``a`` and on the ``b`` side of the block join, together ``probe_radius``.

    ``(0, r)``: ``b``'s block with each of :func:`flip_masks` ``(r)`` applied equals ``a``'s, one
    probe of ``a``'s block (a hash, or its index) per variant of ``b``. With ``split``, radius 2
    is ``(1, 1)`` and radius 3 ``(1, 2)``: ``a ^ ma == b ^ mb`` with ``ma`` of at most one bit and
    ``mb`` of at most ``r - 1``, so ``a ^ b == ma ^ mb`` has at most ``r`` bits; the join keeps
    one ``(ma, mb)`` for each difference (:func:`split_flips`), so the rule and the pairs are the
    same. Radius 2: 42 rows a row to hash and probe instead of 211; radius 3: 232 instead of 1,351."""
    return (1, probe_radius - 1) if split and probe_radius >= 2 else (0, probe_radius)


def xor_expression(value: Any, mask: Any) -> Any:
    """``value XOR mask``, written so every server reads it."""
    return value + mask - 2 * value.op("&")(mask)


def flip_columns(mask: int) -> dict[str, int]:
    """One row of a flips subquery: the mask ``m``, its bit count ``w`` and its lowest bit
    ``low`` (0 for the empty mask)."""
    return {"m": mask, "w": mask.bit_count(), "low": mask & -mask}


def flips_subquery(radius: int, name: str, width: int = WIDE_LAYOUT.width) -> Any:
    """One row per mask of :func:`flip_masks` ``(radius, width)``, with its :func:`flip_columns`."""
    rows = [flip_columns(mask) for mask in flip_masks(radius, width)]
    return union_all(*(select(*(literal(v, Integer()).label(k) for k, v in row.items())) for row in rows)).subquery(name)


def once_condition(theirs: int, a_mask: Any, b_mask: Any, b_weight: Any, b_lowest: Any) -> Any:
    """The condition keeping one ``(ma, mb)`` per block difference ``d = ma ^ mb`` of a split
    join (``ma`` of at most one bit, ``mb`` of at most ``theirs`` bits; ``b_weight`` and
    ``b_lowest`` are ``mb``'s bit count and lowest bit, :func:`flip_columns`):

    * ``theirs`` 1: ``ma < mb``, or both empty. ``d`` of 0 bits: only ``(0, 0)``; one bit ``e``:
      only ``(0, e)``; two bits ``i < j``: only ``(e_i, e_j)``.
    * ``theirs`` 2: ``ma`` empty, or ``mb`` of two bits all above ``ma``. ``d`` of at most two
      bits: only ``(0, d)`` (a one-bit ``ma`` would leave ``d`` an odd count away from ``mb``'s
      two bits, or inside them); three bits: only ``(lowest, the other two)``.

    tests/test_dedupe_wide.py runs both on the server against every difference of a block."""
    if theirs == 1:
        return or_(a_mask < b_mask, and_(a_mask == 0, b_mask == 0))
    if theirs == 2:
        return or_(a_mask == 0, and_(b_weight == 2, a_mask < b_lowest))
    raise ValueError(f"a split join flips 1 or 2 bits on b's side, not {theirs}")


def split_flips(mine: int, theirs: int, width: int = WIDE_LAYOUT.width) -> tuple[Any, Any, Any]:
    """The flips of the ``a`` side (``mine`` = 1 bit) and of the ``b`` side (``theirs`` = 1 or 2
    bits) of a ``width``-bit block, and :func:`once_condition` on their columns."""
    if mine != 1:
        raise ValueError(f"a split join flips 1 bit on a's side, not {mine}")
    a_flips, b_flips = flips_subquery(mine, "a_flips", width), flips_subquery(theirs, "flips", width)
    return a_flips, b_flips, once_condition(theirs, a_flips.c.m, b_flips.c.m, b_flips.c.w, b_flips.c.low)


def _source(binding: Binding, block: int, materialize: bool) -> Any:
    """What the block's self-join reads: the table, or its keys, words and block read once (a
    ``MATERIALIZED`` CTE, :meth:`simsql.dialects.Backend.materialize_self_join`)."""
    if not materialize:
        return binding.table
    wanted = [*binding.table_keys, *binding.words, binding.wide_blocks[block]]
    return select(*wanted).where(binding.words[0].is_not(None)).cte(f"simsql_words_{block}").prefix_with("MATERIALIZED")


def _pair_select(binding: Binding, a: Any, b: Any, joined_on: Any, near: Any = None, b_from: Any = None) -> Select[Any]:
    """``(a key..., b key..., distance)`` of the rows of ``a`` and ``b`` (aliases or sides with
    the table's key and word columns) joined on ``joined_on``, each pair once (``a`` before
    ``b``), within the bound ``simsql_bound`` (and ``near``, when given). ``b_from``: what ``b``
    is read through (``b`` joined to its flips), joined to ``a`` in that order."""
    a_keys = [a.c[key.name] for key in binding.table_keys]
    b_keys = [b.c[key.name] for key in binding.table_keys]
    words = [word.name for word in binding.words]
    distance: Any = sum(
        (hamming_expression(a.c[name], b.c[name]) for name in words[1:]), hamming_expression(a.c[words[0]], b.c[words[0]])
    )
    before = a_keys[0] < b_keys[0] if len(a_keys) == 1 else tuple_(*a_keys) < tuple_(*b_keys)
    columns = (
        *(k.label(f"a_{i}") for i, k in enumerate(a_keys)),
        *(k.label(f"b_{i}") for i, k in enumerate(b_keys)),
        distance.label("distance"),
    )
    within = distance <= bindparam("simsql_bound", type_=Integer())
    joined = a.join(b, and_(joined_on, before)) if b_from is None else b_from.join(a, and_(joined_on, before))
    return select(*columns).select_from(joined).where(within if near is None else and_(near, within))


def _side(binding: Binding, rows: Any, value: Any, flips: Any, name: str, *extra: Any) -> Any:
    """One side of a fenced join: the rows' keys and words (and ``extra`` columns) with their
    variant ``value`` as ``simsql_v``, for every flip of ``flips`` (None: the value alone),
    computed once (:func:`simsql.dialects.fenced_cte`)."""
    columns = [rows.c[c.name] for c in (*binding.table_keys, *binding.words)]
    statement = select(*columns, *extra, value.label("simsql_v")).where(rows.c[binding.words[0].name].is_not(None))
    return fenced_cte(statement if flips is None else statement.select_from(rows.join(flips, true())), name)


@lru_cache(maxsize=256)
def _pairs_statement(binding: Binding, block: int, probe_radius: int, materialize: bool, split: bool) -> Select[Any]:
    source = _source(binding, block, materialize)
    column, width = binding.wide_blocks[block].name, binding.names.layout.width
    a, b = source.alias("a"), source.alias("b")
    mine, theirs = side_radii(probe_radius, split)
    if theirs == 0:
        return _pair_select(binding, a, b, a.c[column] == b.c[column])
    if mine == 0:
        b_flips = flips_subquery(theirs, "flips", width)
        flipped = a.c[column] == xor_expression(b.c[column], b_flips.c.m)
        return _pair_select(binding, a, b, flipped, b_from=b.join(b_flips, true()))
    # Each side's variants are computed once and fenced, so the join can only be one on the
    # variant values: a hash or merge join on PostgreSQL, an index lookup in the other side's
    # materialized rows on MySQL and MariaDB. Left to itself PostgreSQL's planner nested-loops
    # the rows by key under the distance filter at radius 3, and MariaDB merges the sides and
    # nests loops over every pair (BENCHMARKS.md, "Radius 3 on small tables").
    a_flips, b_flips, _ = split_flips(mine, theirs, width)
    a_side = _side(binding, a, xor_expression(a.c[column], a_flips.c.m), a_flips, f"simsql_a_{block}", a_flips.c.m)
    b_side = _side(
        binding, b, xor_expression(b.c[column], b_flips.c.m), b_flips, f"simsql_b_{block}", b_flips.c.m, b_flips.c.w, b_flips.c.low
    )
    once = once_condition(theirs, a_side.c.m, b_side.c.m, b_side.c.w, b_side.c.low)
    return _pair_select(binding, a_side, b_side, and_(a_side.c.simsql_v == b_side.c.simsql_v, once))


@lru_cache(maxsize=256)
def _half_statement(binding: Binding, block: int, probe_radius: int, materialize: bool, half: int) -> Select[Any]:
    """The halves form (:func:`half_radius`), fenced as the split is: half ``half`` of the
    block equal on one side to a variant within one bit on the other, the whole block within
    ``probe_radius``."""
    source = _source(binding, block, materialize)
    column = binding.wide_blocks[block].name
    a, b = source.alias("a"), source.alias("b")
    low, high = half_widths(binding.names.layout.width)
    bits = (low, high)[half]
    mask: Any = literal_column(str((1 << bits) - 1))
    shift: Any = literal_column(str(low * half))
    flips = flips_subquery(half_radius(probe_radius), "flips", bits)
    a_side = _side(binding, a, a.c[column].op(">>")(shift).op("&")(mask), None, f"simsql_a_{block}_{half}", a.c[column])
    b_value = xor_expression(b.c[column].op(">>")(shift).op("&")(mask), flips.c.m)
    b_side = _side(binding, b, b_value, flips, f"simsql_b_{block}_{half}", b.c[column])
    near = hamming_expression(a_side.c[column], b_side.c[column]) <= probe_radius
    return _pair_select(binding, a_side, b_side, a_side.c.simsql_v == b_side.c.simsql_v, near)


def signed_rows(session: Session, binding: Binding) -> int:
    """The rows with a signature (counted, not estimated, so every choice made from it is
    reproducible)."""
    return session.scalar(select(func.count()).select_from(binding.table).where(binding.words[0].is_not(None))) or 0


def default_reach(session: Session, binding: Binding) -> DedupeReach:
    """The tier of :data:`DEDUPE_REACH` for the rows with a signature (:func:`signed_rows`)."""
    return reach_for(signed_rows(session, binding))


HALVES_MAX_ROWS = 20_000
"""Radius 3 joins block halves (:func:`half_radius`) on a table of at most this many rows with a
signature, the split above (its 10-bit halves collide more often as the table grows, the split's
20-bit blocks less). Measured (BENCHMARKS.md, "Radius 3 on small tables"): the halves took a
quarter to a sixth of the split's time on 600 and 5,000 rows, and 0.65x or 1.13x on 20,000 rows
of articles sharing man-page paragraphs in two runs. Radius 2 always splits: 21 variants a side,
and a third of the halves' time at 20,000 rows."""


def candidate_pairs(
    session: Session, model: type, wide_distance: int, probe_radius: int, progress: Progress | None, halves: bool = False
) -> dict[tuple[Any, Any], int]:
    """``{(a, b): distance}`` of the candidates: one self-join per block column (``halves``, at
    radius 2 or 3: one per block half, :func:`half_radius`), each pair once."""
    binding = wide_binding(model)
    connection = connection_of(session)
    binding.check_config(connection)
    backend = dialects.backend(connection)
    backend.prepare_self_join(connection)
    materialize = backend.materialize_self_join()
    split = True  # every server joins the fenced sides on a plain column (see _pairs_statement)
    width = len(binding.table_keys)
    found: dict[tuple[Any, Any], int] = {}
    count = binding.names.layout.count
    for block in range(count):
        for half in (0, 1) if halves else (None,):
            statement = wide_pairs_statement(model, block, probe_radius, materialize=materialize, split=split, half=half)
            for row in session.execute(statement, {"simsql_bound": wide_distance}):
                found[(key_value(row[:width]), key_value(row[width : 2 * width]))] = int(row[-1])
        if progress is not None:
            progress("candidates", block + 1, count)
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
    session: Session, model: type, *, min_containment: float = MIN_CONTAINMENT, wide_distance: int | None = None,
    probe_radius: int | None = None, progress: Progress | None = None, batch_size: int = TEXT_BATCH,
) -> list[ConfirmedPair]:  # fmt: skip
    """Every pair of rows of ``model`` (wide, fingerprinted from text) that is a candidate of
    the block self-joins (see the module) and whose texts contain each other at least
    ``min_containment``, ordered by keys. ``probe_radius`` and ``wide_distance`` left None come
    from the table's tier of :data:`DEDUPE_REACH`, each apart. Texts are read ``batch_size``
    pairs at a time."""
    check_dedupe_arguments(
        min_containment, 0 if wide_distance is None else wide_distance, 0 if probe_radius is None else probe_radius, batch_size
    )
    binding = wide_binding(model)
    if not isinstance(binding.fingerprinter, Fingerprinter):
        raise TypeError(f"{model.__name__} is fingerprinted from vectors: near_duplicates(..., by_text=True) compares texts")
    rows = signed_rows(session, binding)
    reach = reach_for(rows)
    probe_radius = reach.probe_radius if probe_radius is None else probe_radius
    wide_distance = reach.wide_distance if wide_distance is None else wide_distance
    halves = probe_radius == 3 and rows <= HALVES_MAX_ROWS
    candidates = sorted(candidate_pairs(session, model, wide_distance, probe_radius, progress, halves).items())
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
