"""Nearest rows for many targets in one round trip: the ingest pipeline's lookup, where a query
per document would cost a round trip each.

Exact up to :data:`~simsql.queries.targets.MAX_EXACT_BLOCK_DISTANCE` (3) bits: the candidates
are the rows sharing a whole block with a target, so the plan needs no bands and no scan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import BigInteger, Integer, Select, bindparam, cast, func, literal, literal_column, select, union, union_all
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from .. import dialects
from ..dialects import BLOCK_COUNT, hamming_expression
from ..store.awaiting import connection_of, off_loop
from ..store.storage import Binding, binding_for
from ..store.types import SimHash
from ..text.bits import blocks, to_signed
from ..text.fingerprint import Fingerprinter
from .targets import MAX_EXACT_BLOCK_DISTANCE, check_distance, check_limit, check_targets, key_value, resolve_target


def most_similar_many(
    session: Session,
    model: type,
    targets: Sequence[object],
    limit: int = 10,
    max_distance: int = 3,
) -> list[list[tuple[Any, int]]]:
    """Nearest rows for many targets in one round trip (arrays + LATERAL), for ingest pipelines.

    Returns, per target and in order, up to ``limit`` ``(primary key, distance)`` pairs within
    ``max_distance`` (<= 3, exact), nearest first. A text without features gets ``[]``.
    The configuration check, the targets' fingerprints (CPU work: off the event loop when
    awaited), one statement.
    """
    check_limit(limit)
    targets = check_targets(targets)
    check_distance(max_distance)
    if max_distance > MAX_EXACT_BLOCK_DISTANCE:
        raise ValueError(f"most_similar_many() supports max_distance <= 3, got {max_distance}")
    binding = binding_for(model)
    plan = _check_and_plan(binding, connection_of(session))
    fingerprints: list[int | None] = off_loop(lambda: _fingerprints(binding, targets))
    live = [(i, fp) for i, fp in enumerate(fingerprints) if fp is not None]
    results: list[list[tuple[Any, int]]] = [[] for _ in targets]
    if not live:
        return results
    # The plan for many targets is the server's choice (LATERAL over arrays on PostgreSQL, a
    # ranked UNION where there is no LATERAL); a variant such as Citus overrides it.
    if plan == "window":
        statement = _many_by_window(binding, live, limit, max_distance)
    else:
        statement = _many_by_lateral(binding, live, limit, max_distance)
    width = len(binding.table_keys)
    for row in session.execute(statement).all():
        results[row[0]].append((key_value(row[1 : 1 + width]), int(row[-1])))
    return results


def _check_and_plan(binding: Binding, connection: Connection) -> str:
    """The configuration check; the server's plan for many targets."""
    binding.check_config(connection)
    return dialects.backend(connection).many_targets_plan


def _fingerprints(binding: Binding, targets: Sequence[object]) -> list[int | None]:
    """Each target's fingerprint (None for a text without features), texts in one batch."""
    if not isinstance(binding.fingerprinter, Fingerprinter):  # vectors: one by one (no text batch)
        return [resolve_target(binding, t)[0] for t in targets]
    texts = [t for t in targets if isinstance(t, str)]
    text_fps = iter(binding.fingerprinter.fingerprint_many(texts, empty="none"))
    return [next(text_fps) if isinstance(t, str) else resolve_target(binding, t)[0] for t in targets]


def _many_by_lateral(binding: Binding, live: list[tuple[int, int]], limit: int, max_distance: int) -> Select[Any]:
    """PostgreSQL: the targets as arrays (one bind each), unnested, each probing the block
    indexes through a LATERAL subquery that keeps its nearest ``limit``."""
    columns = {
        "ord": [i for i, _ in live],
        "fp": [to_signed(fp) for _, fp in live],
        **{f"b{j}": [blocks(fp)[j] for _, fp in live] for j in range(BLOCK_COUNT)},
    }
    arrays = [
        bindparam(f"simsql_{name}", values, type_=postgresql.ARRAY(BigInteger if name in ("fp", "ord") else Integer))
        for name, values in columns.items()
    ]
    queries = func.unnest(*arrays).table_valued(*columns.keys()).render_derived().alias("q")
    distance = hamming_expression(binding.fingerprint, queries.c.fp).label("distance")
    per_block = [
        select(*binding.table_keys, distance)
        .where(column == queries.c[f"b{j}"], distance <= max_distance)
        .correlate(queries)
        for j, column in enumerate(binding.blocks)
    ]
    merged = union(*per_block).subquery().lateral("c")
    key_columns = [merged.c[k.name] for k in binding.table_keys]
    nearest = (
        select(*key_columns, merged.c.distance)
        .order_by(merged.c.distance, *key_columns)
        .limit(limit)
        .lateral("n")
    )
    return select(queries.c.ord, *(nearest.c[k.name] for k in binding.table_keys), nearest.c.distance).select_from(
        queries.join(nearest, literal_column("true"))
    )


def _many_by_window(binding: Binding, live: list[tuple[int, int]], limit: int, max_distance: int) -> Select[Any]:
    """MySQL/MariaDB (MariaDB has no LATERAL, neither has arrays): the targets as a derived
    table of rows, joined to each block index, merged with UNION, and cut to the nearest
    ``limit`` per target with ``ROW_NUMBER()``. Within 3 bits the candidates are few, so
    ranking all of them costs little more than finding them."""
    rows = [
        select(
            literal(i, Integer()).label("ord"),
            # CAST: MySQL types a UNION's column of 64-bit literals DECIMAL, and ``^`` clips a
            # DECIMAL above 2**63 to a signed BIGINT, so distances to such targets came out wrong
            cast(literal(fp, SimHash()), SimHash()).label("fp"),
            *(literal(value, Integer()).label(f"b{j}") for j, value in enumerate(blocks(fp))),
        )
        for i, fp in live
    ]
    queries = (union_all(*rows) if len(rows) > 1 else rows[0]).subquery("q")
    distance = hamming_expression(binding.fingerprint, queries.c.fp).label("distance")
    per_block = [
        select(queries.c.ord, *binding.table_keys, distance)
        .select_from(queries.join(binding.table, column == queries.c[f"b{j}"]))
        .where(distance <= max_distance)
        for j, column in enumerate(binding.blocks)
    ]
    found = union(*per_block).subquery("c")
    key_columns = [found.c[k.name] for k in binding.table_keys]
    rank = func.row_number().over(partition_by=found.c.ord, order_by=[found.c.distance, *key_columns])
    ranked = select(found.c.ord, *key_columns, found.c.distance, rank.label("rank")).subquery("r")
    return (
        select(ranked.c.ord, *(ranked.c[k.name] for k in binding.table_keys), ranked.c.distance)
        .where(ranked.c.rank <= limit)
        .order_by(ranked.c.ord, ranked.c.distance, *(ranked.c[k.name] for k in binding.table_keys))
    )
