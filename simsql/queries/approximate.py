"""``most_similar(..., exact=False)``'s candidates: a bounded share of the block indexes, nearest
rings first, ranked; what it gives up is said by :func:`simsql.queries.most_similar`. Apart from
:mod:`simsql.queries.planner` (the exact plans) because it changes for other reasons: a budget,
not a guarantee."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Select, cast, literal, select, union, union_all

from .. import dialects
from ..dialects import BLOCK_COUNT, equals_any, hamming_expression, ring_values
from ..store.storage import Binding
from ..text.bits import blocks
from .plan_choice import band_budget
from .targets import fingerprint_literal, keys_equal


def approximate_branch(binding: Binding, base: Select[Any], fingerprint: int, radius: int, max_distance: int | None, limit: int) -> Select[Any]:
    """The nearest of a bounded set of candidates: every row sharing a block with the target,
    then, per block, rows whose block is 1, 2, ... ``radius`` bits from the target's, nearest
    rings first, until that block's share of the budget (:func:`~simsql.queries.plan_choice.band_budget`) is spent."""
    distance = hamming_expression(binding.fingerprint, fingerprint_literal(fingerprint)).label("distance")
    share = cast(band_budget(binding) / literal(BLOCK_COUNT), BigInteger)

    def ring(column: Any, value: int, r: int) -> Select[Any]:
        part = select(*binding.table_keys, distance).where(equals_any(column, ring_values(value, r)))
        return part.where(distance <= max_distance) if max_distance is not None else part

    parts: list[Any] = []
    for column, value in zip(binding.blocks, blocks(fingerprint)):
        parts.append(ring(column, value, 0))
        if radius > 0:
            # Each block gets an equal share, so one crowded bucket of skewed fingerprints
            # cannot starve the other blocks; within a block the nearer rings come first.
            farther = union_all(*(ring(column, value, r) for r in range(1, radius + 1))).limit(dialects.run_time_limit(share)).subquery()
            parts.append(select(farther))
    merged = union(*parts).subquery()
    merged_keys = [merged.c[k.name] for k in binding.table_keys]
    # Rank keys and distances first: only the top rows are joined back to the caller's select.
    nearest = select(merged).order_by(merged.c.distance, *merged_keys).limit(limit).subquery()
    return (
        base.join(nearest, keys_equal(binding.keys, [nearest.c[k.name] for k in binding.table_keys]))
        .add_columns(nearest.c.distance)
        .order_by(nearest.c.distance, *binding.keys)
    )
