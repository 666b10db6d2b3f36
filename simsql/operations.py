"""DDL that attaches simsql to an existing table, and removes it again, on a live connection.

The functions the Alembic operations (:mod:`simsql.alembic`), scripts and benchmarks call.
They live in :mod:`simsql.lifecycle` (catalog read, DDL description and execution are
separate steps there); this module keeps the names they have always had.
"""

from __future__ import annotations

from .lifecycle.attach import (
    add_simhash,
    create_simhash_indexes,
    drop_simhash,
    drop_simhash_indexes,
)
from .lifecycle.catalog import describe
from .dialects.plan import Target
from .schema import DEFAULT_PREFIX, Names, default_side_table

TableInfo = Target
"""Former name of :class:`simsql.dialects.plan.Target`."""


def side_table_name(table: str, prefix: str = DEFAULT_PREFIX) -> str:
    return default_side_table(table, prefix)


def index_names(holder: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Block index names on ``holder`` (the table holding the blocks)."""
    return list(Names(holder, prefix).indexes)


__all__ = [
    "TableInfo",
    "add_simhash",
    "create_simhash_indexes",
    "describe",
    "drop_simhash",
    "drop_simhash_indexes",
    "index_names",
    "side_table_name",
]
