"""Similarity queries: a Select in, a Select out, composable with the caller's own filters.

Candidates come from the 16-bit block indexes; the Hamming distance is computed only for them.
Every function is exact (it returns what a full scan ordered by distance would return) except
``most_similar(..., exact=False)``, which says what it gives up.

One module per reason to change, lowest first:

- :mod:`~simsql.queries.targets`: a target resolved to its fingerprint, excluded keys, and the
  checks on arguments every query shares;
- :mod:`~simsql.queries.plan_choice`: band or scan, decided for exact ``most_similar`` before its
  bands past the first run (the statistics of the target's buckets, a row within 3 bits);
- :mod:`~simsql.queries.approximate`: ``most_similar(..., exact=False)``'s budgeted candidates;
- :mod:`~simsql.queries.planner`: which rows a search reads (probes, bands, the budgeted scan,
  the statements built at compile time); how ``most_similar`` stays exact is told there;
- :mod:`~simsql.queries.nearest`: :func:`similar_to` and :func:`most_similar`;
- :mod:`~simsql.queries.originality`: :func:`find_original` and its index stage;
- :mod:`~simsql.queries.wide_duplicates`: the same job on tables with the wide signature, its
  candidates from block self-joins confirmed by text (:class:`ConfirmedPair`);
- :mod:`~simsql.queries.duplicates`: :func:`near_duplicates` and :func:`duplicate_groups`;
- :mod:`~simsql.queries.batch`: :func:`most_similar_many`;
- :mod:`~simsql.queries.vectors`: :func:`most_similar_vectors` (ranked by pgvector where simsql's
  HNSW index is, :mod:`~simsql.queries.pgvector`; else signature or list candidates re-ranked
  by exact cosine; ``exact=True`` a scan, :mod:`~simsql.queries.vectors_exact`) and
  :func:`near_copy_vectors` (the 256-bit probes);
- :mod:`~simsql.queries.related`: :func:`related_vectors`, the nearest stories with near copies
  collapsed into one entry.

Every name below is importable from ``simsql.queries`` as it was when this was one module.
"""

from __future__ import annotations

from .batch import most_similar_many
from .duplicates import DuplicatePair, duplicate_groups, near_duplicates, near_duplicates_query, pair_masks
from .nearest import Match, most_similar, similar_to
from .originality import (
    ORIGINALITY_CANDIDATES,
    ORIGINALITY_DISTANCE,
    ORIGINALITY_PROBE_RADIUS,
    bounded_probe_radius,
    find_original,
    originality_search,
)
from .pairs import ConfirmedPair
from .plan_choice import BAND_BUDGET, MIN_BAND_BUDGET
from .planner import DEFAULT_PROBE_RADIUS, MAX_PROBE_RADIUS
from .related import RelatedMatch, related_vectors
from .targets import MAX_EXACT_BLOCK_DISTANCE
from .vectors import VectorMatch, most_similar_vectors, near_copy_vectors

__all__ = [
    "ConfirmedPair",
    "DuplicatePair",
    "Match",
    "duplicate_groups",
    "find_original",
    "most_similar",
    "most_similar_many",
    "most_similar_vectors",
    "near_copy_vectors",
    "RelatedMatch",
    "related_vectors",
    "VectorMatch",
    "near_duplicates",
    "near_duplicates_query",
    "similar_to",
]
