"""Near-duplicate pairs and groups across a whole table: the crawler deduplication job, done by
the database with self-joins instead of one lookup per row.

On a table with the wide signature fingerprinted from text, pairs are found through its blocks
and confirmed by text (:mod:`simsql.queries.wide_duplicates`). Elsewhere, the 64-bit rule:
exact up to :data:`~simsql.queries.targets.MAX_EXACT_BLOCK_DISTANCE` (3) bits, where every pair
agrees on all bits of one of the :func:`pair_masks`; wider thresholds would need an all-pairs
scan and are refused.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, literal, select, tuple_, union
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from .. import dialects
from ..dialects import BLOCK_COUNT, hamming_expression
from ..store.awaiting import connection_of
from ..store.progress import Progress
from ..store.storage import Binding, binding_for
from ..store.types import SimHash
from ..text.containment import MIN_CONTAINMENT
from ..text.fingerprint import Fingerprinter
from .pairs import DuplicatePair, groups_of
from .targets import MAX_EXACT_BLOCK_DISTANCE, check_distance, key_value
from .wide import wide_binding
from .wide_duplicates import wide_near_duplicates


def pair_masks() -> list[int]:
    """16 masks of 28 bits: one 16-bit block plus one 12-bit quarter of the other 48 bits.

    Two fingerprints within 3 bits agree on at least one of the four blocks (pigeonhole), and
    within the remaining 48 bits, where they differ in at most 3 bits, on at least one of four
    12-bit quarters; so they agree on all bits of at least one mask (Manku et al., 2007). Joining
    on 28 bits instead of 16 keeps the candidate pairs few even when real text skews the bits
    and crowds some 16-bit buckets with thousands of rows.
    """
    masks = []
    for block in range(BLOCK_COUNT):
        high = 16 * (BLOCK_COUNT - 1 - block)
        block_mask = 0xFFFF << high
        rest = [bit for bit in range(64) if not (block_mask >> bit) & 1]
        for quarter in range(4):
            bits = rest[12 * quarter : 12 * quarter + 12]
            masks.append(block_mask | sum(1 << bit for bit in bits))
    return masks


def near_duplicates_query(model: type, max_distance: int = 3, dialect: Any = None) -> Any:
    """The statement behind :func:`near_duplicates`: 16 hash self-joins on 28-bit masks, merged.

    Exact for ``max_distance <= 3`` (see :func:`pair_masks`); larger thresholds would need an
    all-pairs scan and are refused. On a server that cannot hash-join on an expression
    (MariaDB, see :meth:`simsql.dialects.Backend.hash_joins_expressions`) a masked join would compare
    every pair, so there the four self-joins go through the block indexes instead.
    """
    check_distance(max_distance)
    if max_distance > MAX_EXACT_BLOCK_DISTANCE:
        raise ValueError(
            f"near_duplicates() is exact up to max_distance={MAX_EXACT_BLOCK_DISTANCE}; "
            f"got {max_distance}. Use most_similar() per row for wider searches."
        )
    binding = binding_for(model)
    source: Any = binding.table
    if dialect is not None and dialects.backend(dialect).materialize_self_join():
        # read once into the coordinator, joined there (see Backend.materialize_self_join)
        fp = binding.table.c[binding.fingerprint.name]
        wanted = [*binding.table_keys, fp, *(binding.table.c[column.name] for column in binding.blocks)]
        source = select(*wanted).where(fp.is_not(None)).cte("simsql_fingerprints").prefix_with("MATERIALIZED")
    a = source.alias("a")
    b = source.alias("b")
    a_keys = [a.c[k.name] for k in binding.table_keys]
    b_keys = [b.c[k.name] for k in binding.table_keys]
    a_fp = a.c[binding.fingerprint.name]
    b_fp = b.c[binding.fingerprint.name]
    distance = hamming_expression(a_fp, b_fp)
    before = a_keys[0] < b_keys[0] if len(a_keys) == 1 else tuple_(*a_keys) < tuple_(*b_keys)
    columns = (
        *(k.label(f"a_{i}") for i, k in enumerate(a_keys)),
        *(k.label(f"b_{i}") for i, k in enumerate(b_keys)),
        distance.label("distance"),
    )
    if source is binding.table and dialect is not None and not dialects.backend(dialect).hash_joins_expressions():
        a_blocks = [a.c[column.name] for column in binding.blocks]
        b_blocks = [b.c[column.name] for column in binding.blocks]
        return union(
            *(
                select(*columns).select_from(a.join(b, and_(ab == bb, before))).where(distance <= max_distance)
                for ab, bb in zip(a_blocks, b_blocks)
            )
        )
    parts = []
    for mask in pair_masks():
        signed = literal(mask, SimHash())
        parts.append(
            select(*columns)
            .select_from(a.join(b, and_(a_fp.op("&")(signed) == b_fp.op("&")(signed), before)))
            .where(distance <= max_distance)
            .prefix_with(dialects.hash_join_hint(b.name))
        )
    return union(*parts)



def near_duplicates(
    session: Session, model: type, max_distance: int = 3, *, by_text: bool | None = None,
    min_containment: float = MIN_CONTAINMENT, wide_distance: int | None = None,
    probe_radius: int | None = None, progress: Progress | None = None,
) -> list[DuplicatePair]:  # fmt: skip
    """Every pair of near-duplicate rows, ordered by keys: the crawler deduplication job, done
    by the database with block self-joins.

    On a table without the wide signature (and with ``by_text=False`` on one with it): every
    pair within ``max_distance`` bits (<= 3) of the 64-bit fingerprint, as
    :class:`DuplicatePair`. What 3 bits catch is measured in docs/dedupe.md: most light edits
    of English, a minority of edited Chinese texts.

    On a table with the wide signature fingerprinted from text (``WideSimHashMixin``,
    ``attach_model(..., wide=True)``; ``by_text=None`` chooses it there, ``True`` insists):
    what :func:`simsql.find_original` finds, as :class:`ConfirmedPair` (a ``DuplicatePair`` of the
    256-bit distance, with its ``containment``). Candidates are the pairs whose wide block values differ in at most
    ``probe_radius`` bits in one of the 8 blocks (every pair within ``8 * (probe_radius + 1) - 1``
    of the 160 bits they cover is one) and lie within ``wide_distance`` of the 256 bits; None
    takes each from the table's size (:data:`~simsql.queries.wide_duplicates.DEDUPE_REACH`: radius
    3 and 96 bits up to 20,000 rows, radius 2 and 64 bits up to 200,000, radius 1 and 64 bits
    above). Each candidate is kept when at least ``min_containment`` of one
    text's words lie in word 5-shingles of the other
    (:mod:`simsql.queries.wide_duplicates`). ``max_distance`` counts 64-bit fingerprint bits
    and is refused there unless left at 3. ``progress(phase, done, total)`` is called after each
    block self-join (``"candidates"``) and each batch of texts (``"texts"``).
    """
    if _by_text(model, by_text):
        if max_distance != 3:
            raise ValueError(
                f"max_distance counts bits of the 64-bit fingerprint; {model.__name__} is deduplicated by its "
                f"wide signature and text: bound it with wide_distance= and min_containment=, or pass "
                f"by_text=False for the 64-bit rule"
            )
        return [*wide_near_duplicates(
            session, model, min_containment=min_containment, wide_distance=wide_distance,
            probe_radius=probe_radius, progress=progress,
        )]  # fmt: skip
    _check_fingerprint_mode(min_containment, wide_distance, probe_radius)
    binding = binding_for(model)
    width = len(binding.table_keys)
    dialect = _prepare(binding, connection_of(session))
    rows = session.execute(near_duplicates_query(model, max_distance, dialect)).all()
    pairs = [DuplicatePair(key_value(r[:width]), key_value(r[width : 2 * width]), int(r[-1])) for r in rows]
    pairs.sort(key=lambda p: (p.a, p.b))
    if progress is not None:
        progress("candidates", 1, 1)
    return pairs


def _by_text(model: type, by_text: bool | None) -> bool:
    """Whether ``model`` is deduplicated by its wide signature and text."""
    if by_text is not None and not isinstance(by_text, bool):
        raise TypeError(f"by_text must be True, False or None, got {type(by_text).__name__}")
    binding = binding_for(model)
    wide_text = bool(binding.words) and isinstance(binding.fingerprinter, Fingerprinter)
    if by_text and not wide_text:
        wide_binding(model)  # NotAttached, naming how to declare the wide signature
        raise TypeError(f"{model.__name__} is fingerprinted from vectors: by_text=True compares texts")
    return wide_text if by_text is None else by_text


def _check_fingerprint_mode(min_containment: float, wide_distance: int | None, probe_radius: int | None) -> None:
    """Refuse the text mode's settings where the 64-bit rule answers (they would be ignored)."""
    given = [
        name for name, value, default in (
            ("min_containment", min_containment, MIN_CONTAINMENT), ("wide_distance", wide_distance, None),
            ("probe_radius", probe_radius, None),
        ) if value != default
    ]  # fmt: skip
    if given:
        raise ValueError(
            f"{', '.join(given)} applies to deduplication by text on a table with the wide signature; "
            f"this call uses the 64-bit fingerprint (declare the table with simsql.WideSimHashMixin or "
            f"attach_model(..., wide=True))"
        )


def _prepare(binding: Binding, connection: Connection) -> Any:
    """The configuration check and the self-join settings; the connection's dialect."""
    binding.check_config(connection)
    dialects.backend(connection).prepare_self_join(connection)
    return connection.dialect


def duplicate_groups(
    session: Session, model: type, max_distance: int = 3, *, by_text: bool | None = None,
    min_containment: float = MIN_CONTAINMENT, wide_distance: int | None = None,
    probe_radius: int | None = None, progress: Progress | None = None,
) -> list[list[Any]]:  # fmt: skip
    """Connected clusters of near-duplicates (transitively linked) of :func:`near_duplicates`
    (the same arguments), each sorted, largest first."""
    return groups_of(
        near_duplicates(
            session, model, max_distance, by_text=by_text, min_containment=min_containment,
            wide_distance=wide_distance, probe_radius=probe_radius, progress=progress,
        )
    )  # fmt: skip
