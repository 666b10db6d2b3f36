"""The one place where simsql differs between databases: the :class:`Backend` seam.

``backend(connection)`` (or an engine, or a dialect) returns the :class:`Backend` of the server
family behind it, :class:`PostgresBackend` (PostgreSQL >= 14) or :class:`MySQLBackend`
(MySQL >= 8.0, MariaDB >= 10.6); any other database is refused with
:class:`~simsql.text.errors.UnsupportedDatabase` naming what it found. Code outside this package asks
the backend and never branches on the server's name. Modules:

* :mod:`.base` the interface and its registry; :mod:`.plan` and :mod:`.batch` the vocabulary
  it shares with the lifecycle (DDL plans, catalog facts, backfill jobs);
* :mod:`.constructs` SQL constructs (Hamming distance, "equals any", block expressions, ...)
  built without a dialect and compiled per dialect;
* one package per family (:mod:`.postgresql`, :mod:`.mysql`; :mod:`.citus` a variant of
  PostgreSQL), each with its backend, DDL describer (``ddl``), backfill statements
  (``backfill``) and, where they differ, its catalog reads, session settings and compile rules.

A new server family is a package with a subclass of :class:`Backend` with ``__dialect__`` set,
imported below;
a variant of a family (Citus) is a subclass of that family overriding :meth:`Backend.detect`.
"""

from __future__ import annotations

from ..schema.names import BLOCK_COUNT

# The families register themselves by subclassing Backend; PostgreSQL first, so refusals name it
# first; Citus, a variant of PostgreSQL, is chosen from the server (detect). Nothing outside this
# package imports a family module (tests/test_architecture.py): ask ``backend(bind)``.
from . import citus, mysql, postgresql  # noqa: F401 - registered on import
from .base import (
    BLOCK_BITS,
    BLOCK_MASK,
    Backend,
    Bind,
    ManyTargetsPlan,
    backend,
    describe_server,
    families,
    family_of,
    timeout_kind,
    type_rules,
    variant_type,
)
from .constructs import (
    COVERING_INFO,
    BlockComputed,
    BlockExpression,
    CurrentSchema,
    EagerChoice,
    EagerGuard,
    EagerOrder,
    EqualsAny,
    HammingDistance,
    HashJoinHint,
    InSelected,
    RowEstimate,
    RunTimeLimit,
    SortBound,
    WholeQuotient,
    block_computed,
    eager_choice,
    eager_guard,
    eager_order,
    equals_any,
    hamming_expression,
    probe_parameter,
    probe_values,
    radius_for,
    ring_values,
    row_estimate,
    run_time_limit,
    sort_bound,
    whole_quotient,
    fenced_cte,
    hash_join_hint,
)
from .sqltext import execute_sql
from .wide import WideBlockComputed, WideBlockExpression, wide_block_computed, wide_block_sql

__all__ = [
    "fenced_cte",
    "hash_join_hint",
    "WideBlockComputed",
    "WideBlockExpression",
    "wide_block_computed",
    "wide_block_sql",
    "BLOCK_BITS",
    "BLOCK_COUNT",
    "BLOCK_MASK",
    "Backend",
    "Bind",
    "BlockComputed",
    "BlockExpression",
    "COVERING_INFO",
    "EagerChoice",
    "EagerGuard",
    "EagerOrder",
    "EqualsAny",
    "CurrentSchema",
    "HammingDistance",
    "InSelected",
    "HashJoinHint",
    "ManyTargetsPlan",
    "RowEstimate",
    "RunTimeLimit",
    "SortBound",
    "WholeQuotient",
    "backend",
    "block_computed",
    "describe_server",
    "execute_sql",
    "eager_choice",
    "eager_guard",
    "eager_order",
    "equals_any",
    "families",
    "family_of",
    "hamming_expression",
    "probe_parameter",
    "probe_values",
    "radius_for",
    "ring_values",
    "row_estimate",
    "run_time_limit",
    "sort_bound",
    "timeout_kind",
    "type_rules",
    "variant_type",
    "whole_quotient",
]
