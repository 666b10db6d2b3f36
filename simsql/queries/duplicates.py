"""Near-duplicate pairs and groups across a whole table: the crawler deduplication job, done by
the database with self-joins instead of one lookup per row.

Exact up to :data:`~simsql.queries.targets.MAX_EXACT_BLOCK_DISTANCE` (3) bits, where every pair
agrees on all bits of one of the :func:`pair_masks`; wider thresholds would need an all-pairs
scan and are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import and_, literal, select, tuple_, union
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from .. import dialects
from ..dialects import BLOCK_COUNT, hamming_expression
from ..store.awaiting import connection_of
from ..store.storage import Binding, binding_for
from ..store.types import SimHash
from .targets import MAX_EXACT_BLOCK_DISTANCE, check_distance, key_value


class DuplicatePair(NamedTuple):
    """Two rows whose fingerprints are within the threshold; keys are primary-key values
    (a tuple for composite keys), ``a < b``."""

    a: Any
    b: Any
    distance: int


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
        )
    return union(*parts)


def near_duplicates(session: Session, model: type, max_distance: int = 3) -> list[DuplicatePair]:
    """Every pair of rows within ``max_distance`` bits (<= 3), ordered by keys: the crawler
    deduplication job, done by the database with block self-joins."""
    binding = binding_for(model)
    width = len(binding.table_keys)
    dialect = _prepare(binding, connection_of(session))
    rows = session.execute(near_duplicates_query(model, max_distance, dialect)).all()
    pairs = [DuplicatePair(key_value(r[:width]), key_value(r[width : 2 * width]), int(r[-1])) for r in rows]
    pairs.sort(key=lambda p: (p.a, p.b))
    return pairs


def _prepare(binding: Binding, connection: Connection) -> Any:
    """The configuration check and the self-join settings; the connection's dialect."""
    binding.check_config(connection)
    dialects.backend(connection).prepare_self_join(connection)
    return connection.dialect


def duplicate_groups(session: Session, model: type, max_distance: int = 3) -> list[list[Any]]:
    """Connected clusters of near-duplicates (transitively linked), each sorted, largest first."""
    return groups_of(near_duplicates(session, model, max_distance))


def groups_of(pairs: Sequence[DuplicatePair]) -> list[list[Any]]:
    """The connected clusters of ``pairs`` (union-find), each sorted, largest first."""
    parent: dict[Any, Any] = {}

    def find(x: Any) -> Any:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for pair in pairs:
        ra, rb = find(pair.a), find(pair.b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[Any, list[Any]] = {}
    for key in parent:
        groups.setdefault(find(key), []).append(key)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: (-len(g), g[0]))
