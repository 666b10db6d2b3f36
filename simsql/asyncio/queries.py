"""The query operations, awaited: the same steps as the sync API (:mod:`simsql.steps`).

``most_similar`` and ``similar_to`` need nothing here: they build statements, which an
``AsyncSession`` runs like any other (``await session.execute(simsql.most_similar(...))``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select

from ..containment import MIN_CONTAINMENT
from ..queries import DuplicatePair, Match
from ..queries.batch import most_similar_many_steps
from ..queries.duplicates import duplicate_groups_steps, near_duplicates_steps
from ..queries.vectors import (
    DEFAULT_CANDIDATES,
    NEAR_COPY_CANDIDATES,
    NEAR_COPY_COSINE,
    VectorMatch,
    most_similar_vectors_steps,
    near_copy_vectors_steps,
)
from ..queries.wide import WIDE_BUDGET
from ..queries.originality import (
    ORIGINALITY_CANDIDATES,
    ORIGINALITY_DISTANCE,
    ORIGINALITY_PROBE_RADIUS,
    find_original_steps,
)
from .runner import AsyncBind, run_async_steps, session_for


async def find_original(
    bind: AsyncBind,
    model: type,
    text: str,
    max_distance: int = ORIGINALITY_DISTANCE,
    *,
    probe_radius: int | None = ORIGINALITY_PROBE_RADIUS,
    min_containment: float | None = MIN_CONTAINMENT,
    candidates: int = ORIGINALITY_CANDIDATES,
) -> Match | None:
    """:func:`simsql.find_original`, awaited: the nearest existing row that ``text`` is a copy
    of, or None. The submission's fingerprint and the comparison of the candidates' texts run in
    a worker thread; the search is awaited."""
    steps = find_original_steps(
        model, text, max_distance, probe_radius=probe_radius, min_containment=min_containment, candidates=candidates
    )
    async with session_for(bind) as session:
        return await run_async_steps(session, steps)


async def near_duplicates(bind: AsyncBind, model: type, max_distance: int = 3) -> list[DuplicatePair]:
    """:func:`simsql.near_duplicates`, awaited: every pair of rows within ``max_distance`` bits."""
    async with session_for(bind) as session:
        return await run_async_steps(session, near_duplicates_steps(model, max_distance))


async def duplicate_groups(bind: AsyncBind, model: type, max_distance: int = 3) -> list[list[Any]]:
    """:func:`simsql.duplicate_groups`, awaited: connected clusters of near-duplicates."""
    async with session_for(bind) as session:
        return await run_async_steps(session, duplicate_groups_steps(model, max_distance))


async def most_similar_many(
    bind: AsyncBind, model: type, targets: Sequence[object], limit: int = 10, max_distance: int = 3
) -> list[list[tuple[Any, int]]]:
    """:func:`simsql.most_similar_many`, awaited: nearest rows for many targets in one round
    trip; the targets' fingerprints are computed in a worker thread."""
    async with session_for(bind) as session:
        return await run_async_steps(session, most_similar_many_steps(model, targets, limit, max_distance))


async def most_similar_vectors(
    bind: AsyncBind,
    stmt: Select[Any],
    target: object,
    limit: int = 10,
    candidates: int = DEFAULT_CANDIDATES,
    exclude: object = None,
    *,
    probe_radius: int = 0,
    exact: bool = True,
) -> list[VectorMatch]:
    """:func:`simsql.most_similar_vectors`, awaited: the top rows by exact cosine among the
    ``candidates`` nearest by signature. Both statements are awaited; the re-ranking (numpy)
    runs in a worker thread."""
    steps = most_similar_vectors_steps(stmt, target, limit, candidates, exclude, probe_radius=probe_radius, exact=exact)
    async with session_for(bind) as session:
        return await run_async_steps(session, steps)


async def near_copy_vectors(
    bind: AsyncBind,
    stmt: Select[Any],
    target: object,
    limit: int = 10,
    min_cosine: float = NEAR_COPY_COSINE,
    *,
    candidates: int = NEAR_COPY_CANDIDATES,
    budget: int = WIDE_BUDGET,
    max_distance: int | None = None,
) -> list[VectorMatch]:
    """:func:`simsql.near_copy_vectors`, awaited: near copies of a vector through the 256-bit
    probes, checked by exact cosine (in a worker thread)."""
    steps = near_copy_vectors_steps(
        stmt, target, limit, min_cosine, candidates=candidates, budget=budget, max_distance=max_distance
    )
    async with session_for(bind) as session:
        return await run_async_steps(session, steps)
