"""Partition lists in an application's migrations: the list column and its covering index added
and dropped inside the migration's transaction (``op.add_simhash_lists``), fitted later."""

from __future__ import annotations

from sqlalchemy import delete
from sqlalchemy.engine import Connection

from ..dialects import backend
from ..schema.names import centres_table, partitions_table
from ..store.lists import forget_cached, tables_exist
from . import apply, catalog
from .lists import attached_target


def add_list_column(connection: Connection, table_name: str, *, schema: str | None = None, concurrently: bool = False) -> None:
    """The list column and its covering index on an attached table, in the connection's
    transaction (``op.add_simhash_lists``; ``concurrently=True``: the connection in autocommit
    mode). Made by the migration, they are the migration's: a detach leaves them, its downgrade
    (``op.drop_simhash_lists``) drops them. ``fit_lists`` then fits the lists."""
    target = attached_target(connection, table_name, schema)
    present = catalog.present(connection, target.schema, table_name, target.names)
    empty = not catalog.has_rows(connection, target.schema, table_name)
    plan = backend(connection).lists_ddl.add(
        target.schema, target.names, target.keys, present, concurrently=concurrently, empty=empty
    )
    apply.run(connection, plan)


def drop_list_column(connection: Connection, table_name: str, *, schema: str | None = None, concurrently: bool = False) -> None:
    """Undo :func:`add_list_column`, and forget the table's lists."""
    target = attached_target(connection, table_name, schema)
    present = catalog.present(connection, target.schema, table_name, target.names)
    plan = backend(connection).lists_ddl.drop(target.schema, target.names, present, concurrently=concurrently)
    apply.run(connection, plan)
    p, c = partitions_table.c, centres_table.c
    if tables_exist(connection):
        connection.execute(delete(centres_table).where(c.table_schema == target.schema, c.table_name == table_name))
        connection.execute(delete(partitions_table).where(p.table_schema == target.schema, p.table_name == table_name))
    forget_cached(target.schema, table_name)


__all__ = ["add_list_column", "drop_list_column"]
