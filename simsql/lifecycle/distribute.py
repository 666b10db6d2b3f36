"""Citus: distributing a table simsql fingerprints, in one call (public home: :mod:`simsql.citus`).

simsql detects Citus by itself (:class:`simsql.dialects.citus.backend.CitusBackend`) and sets what its
own statements need. What happens in the user's own DDL is this module's: distributing a table
(or making it a reference table) that already carries simsql's trigger, with its side table
co-located. See docs/citus.md.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import inspect
from sqlalchemy.engine import Connection, Engine

from ..dialects import backend
from ..store import registry
from ..store.storage import binding_for


def distribute(bind: Engine | Connection, target: type | str, column: str | None, *, schema: str | None = None) -> None:
    """Distribute ``target`` (a mapped class, or a table's name) by ``column`` with
    ``create_distributed_table``, or make it a reference table (``column=None``); its simsql
    side table, if it has one, follows, co-located on the same column.

    Runs in one transaction (the connection's, when given one: it is not committed here) with
    ``citus.enable_unsafe_triggers`` set for it alone: simsql's row trigger touches only its own
    row (or the co-located side row), which is safe on shards. Raises
    :class:`~simsql.text.errors.UnsupportedDatabase` when the server is not Citus.
    """
    if isinstance(bind, Engine):
        with bind.begin() as connection:
            distribute(connection, target, column, schema=schema)
        return
    schema, table, side = _names(bind, target, schema)  # reads only: refused below before any write
    backend(bind).distribute(bind, schema, table, column, side)


def _names(connection: Connection, target: type | str, schema: str | None) -> tuple[str, str, str | None]:
    """(schema, table, side table or None) of a mapped class or of a table the registry knows
    (a table simsql does not know has no side table)."""
    if not isinstance(target, str):
        binding = binding_for(target)
        table: Any = inspect(binding.model).local_table
        found = schema or table.schema or backend(connection).current_schema(connection)
        return found, table.name, binding.table.name if binding.mode == "side_table" else None
    found = schema or backend(connection).current_schema(connection)
    entry = registry.read(connection, target, found) if registry.registry_exists(connection) else None
    return found, target, None if entry is None else entry.names.side


__all__ = ["distribute"]
