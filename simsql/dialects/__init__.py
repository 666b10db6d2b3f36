"""The one place where simsql differs between databases: the :class:`Backend` seam.

``backend(connection)`` (or an engine, or a dialect) returns the :class:`Backend` of the server
family behind it, :class:`PostgresBackend` (PostgreSQL >= 14) or :class:`MySQLBackend`
(MySQL >= 8.0, MariaDB >= 10.6); any other database is refused with
:class:`~simsql.errors.UnsupportedDatabase` naming what it found. Code outside this package asks
the backend and never branches on the server's name. Modules:

* :mod:`.base` the interface and its registry; :mod:`.plan` and :mod:`.batch` the vocabulary
  it shares with the lifecycle (DDL plans, catalog facts, backfill jobs);
* :mod:`.constructs` SQL constructs (Hamming distance, "equals any", block expressions, ...)
  built without a dialect and compiled per dialect;
* one module per family (:mod:`.postgresql`, :mod:`.mysql`), with its DDL describer
  (``*_ddl``), backfill statements (``*_backfill``) and, for MySQL, its catalog reads.

A new server family is a subclass of :class:`Backend` with ``__dialect__`` set, imported below;
a variant of a family (Citus) is a subclass of that family overriding :meth:`Backend.detect`.

The module-level functions after the imports (:func:`check_server`, :func:`current_schema`, ...) are
the seam as it was before the :class:`Backend` class; they ask the backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Connection, Dialect

from ..schema import BLOCK_COUNT
from .base import (
    BLOCK_BITS,
    BLOCK_MASK,
    Backend,
    Bind,
    ManyTargetsPlan,
    backend,
    describe_server,
    execute_sql,
    families,
    family_of,
    refuse,
    supported,
    timeout_kind,
    type_rules,
    variant_type,
)
from .constructs import (
    COVERING_INFO,
    BlockComputed,
    BlockExpression,
    EagerChoice,
    EagerGuard,
    EagerOrder,
    EqualsAny,
    HammingDistance,
    RowEstimate,
    RunTimeLimit,
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
    whole_quotient,
)
from .postgresql import MIN_POSTGRES, PostgresBackend, server_version_num  # registers first: refusals name it first
from .mysql import MIN_MARIADB, MIN_MYSQL, MySQLBackend
from .citus import CitusBackend  # a variant of PostgreSQL, chosen from the server (detect)
from .wide import WideBlockComputed, WideBlockExpression, wide_block_computed, wide_block_sql

MYSQL_NAMES = MySQLBackend.__dialect__
"""SQLAlchemy names the MariaDB dialect ``mariadb`` and reads a MariaDB server behind
``mysql+pymysql://`` as ``mysql``: :class:`MySQLBackend` serves both."""

SUPPORTED = supported()
"""``"PostgreSQL >= 14, MySQL >= 8.0 or MariaDB >= 10.6"``: what a refusal says simsql needs."""


def block_expression_sql(fingerprint_sql: str, index: int, dialect: str = "postgresql") -> str:
    """SQL deriving block ``index`` (0 = most significant) from a quoted 64-bit column, as the
    server behind the dialect named ``dialect`` spells it."""
    return type_rules(dialect).block_expression_sql(fingerprint_sql, index)


def server_version(connection: Connection) -> int:
    """``server_version_num`` of the connected PostgreSQL, after checking the backend."""
    if not isinstance(backend(connection), PostgresBackend):
        raise refuse(connection.dialect)
    return server_version_num(connection)


def check_server(connection: Connection) -> None:
    """Refuse servers simsql cannot run on, with the version that was found."""
    backend(connection).check_server(connection)


def current_schema(connection: Connection) -> str:
    """The schema (MySQL: database) unqualified names resolve to."""
    return backend(connection).current_schema(connection)


def relation_exists(connection: Connection, name: str) -> bool:
    """Whether ``name`` resolves to a table the way an unqualified statement would find it."""
    return backend(connection).relation_exists(connection, name)


def insert_new(connection: Connection, table: Any, values: dict[str, Any]) -> Any:
    """An INSERT of ``values`` that does nothing when the primary key is already there."""
    return backend(connection).insert_new(table, values)


def upsert(connection: Connection, table: Any, values: dict[str, Any], keys: Sequence[str], update: Sequence[str]) -> Any:
    """INSERT ``values``, or on a primary-key conflict set the ``update`` columns from them."""
    return backend(connection).upsert(table, values, keys, update)


def prepare_self_join(connection: Connection) -> None:
    """Session settings for the all-pairs self-joins of ``near_duplicates`` (transaction-local
    where the server allows it)."""
    backend(connection).prepare_self_join(connection)


def registry_probe_sql(dialect: Dialect) -> str:
    """See :attr:`Backend.registry_probe`."""
    return backend(dialect).registry_probe


def hash_joins_expressions(dialect: Dialect) -> bool:
    """Whether the server hash-joins on an expression such as ``a.fp & mask = b.fp & mask``:
    PostgreSQL and MySQL >= 8.0.18 do; MariaDB would nest loops over every pair."""
    return backend(dialect).hash_joins_expressions()


__all__ = [
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
    "HammingDistance",
    "MIN_MARIADB",
    "MIN_MYSQL",
    "MIN_POSTGRES",
    "MYSQL_NAMES",
    "ManyTargetsPlan",
    "MySQLBackend",
    "PostgresBackend",
    "RowEstimate",
    "RunTimeLimit",
    "SUPPORTED",
    "WholeQuotient",
    "backend",
    "block_computed",
    "block_expression_sql",
    "check_server",
    "current_schema",
    "describe_server",
    "execute_sql",
    "eager_choice",
    "eager_guard",
    "eager_order",
    "equals_any",
    "families",
    "family_of",
    "hamming_expression",
    "hash_joins_expressions",
    "insert_new",
    "prepare_self_join",
    "probe_parameter",
    "probe_values",
    "radius_for",
    "registry_probe_sql",
    "relation_exists",
    "ring_values",
    "row_estimate",
    "run_time_limit",
    "server_version",
    "timeout_kind",
    "type_rules",
    "upsert",
    "variant_type",
    "whole_quotient",
]
