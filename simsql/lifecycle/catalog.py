"""Read what the DDL needs from the server's catalog, and nothing else.

The catalog step is separate from describing DDL (:mod:`simsql.lifecycle.ddl`) so that an
offline mode can supply the same facts from arguments. The queries themselves differ per server
(``pg_class`` / ``information_schema``) and live in :mod:`simsql.dialects`; every one names the
table by a bound value, never by formatting it into SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import MetaData, Table, inspect, text
from sqlalchemy.engine import Connection
from sqlalchemy.orm import registry as orm_registry

from .. import registry
from ..dialects import backend, check_server
from ..errors import NotAttached, SchemaError
from ..schema import Names, check_name
from ..storage import Binding, register
from .ddl import Target, qualified


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    is_text: bool


@dataclass(frozen=True)
class TableFacts:
    """One table as the catalog describes it right now."""

    schema: str
    name: str
    kind: str
    """``r`` table, ``p`` partitioned table (PostgreSQL's ``pg_class.relkind`` letters)."""
    columns: dict[str, Column]
    keys: tuple[str, ...]
    triggers: tuple[str, ...]
    """Names of the table's own (non-internal) triggers."""

    @property
    def key_types(self) -> tuple[str, ...]:
        return tuple(self.columns[k].type for k in self.keys)


def table_facts(connection: Connection, table: str, schema: str) -> TableFacts | None:
    """The catalog's description of ``schema.table``, or None when there is no such table."""
    found = backend(connection.dialect).table_facts(connection, schema, table)
    if found is None:
        return None
    kind, columns, keys, triggers = found
    return TableFacts(
        schema, table, kind, {name: Column(name, type_, is_text) for name, type_, is_text in columns}, keys, triggers
    )


def require_table(connection: Connection, table: str, schema: str | None) -> TableFacts:
    check_name(table, "table name")
    schema = schema or registry.current_schema(connection)
    facts = table_facts(connection, table, schema)
    if facts is None:
        raise SchemaError(f"table {schema}.{table} does not exist")
    return facts


def describe(connection: Connection, table: str, source: Sequence[str], schema: str | None = None) -> Target:
    """Read a table's key and check its source columns exist and hold text."""
    check_server(connection)
    if isinstance(source, str):
        source = [source]
    if not source:
        raise SchemaError("name at least one text column to fingerprint")
    facts = require_table(connection, table, schema)
    for name in source:
        column = facts.columns.get(name)
        if column is None:
            raise SchemaError(
                f"table {facts.schema}.{table} has no column {name!r} (columns: {', '.join(sorted(facts.columns))})"
            )
        if not column.is_text:
            raise SchemaError(f"column {facts.schema}.{table}.{name} is {column.type}, not text")
    if not facts.keys:
        raise SchemaError(f"table {facts.schema}.{table} has no primary key; simsql needs one to find rows again")
    return Target(facts.schema, table, facts.keys, facts.key_types, tuple(source))


@dataclass(frozen=True)
class IndexState:
    """What :func:`simsql.lifecycle.ddl.create_indexes` needs: the holder's key columns and
    the indexes a failed concurrent build left invalid."""

    holder_keys: tuple[str, ...]
    invalid: tuple[str, ...]


def index_state(connection: Connection, schema: str, names: Names) -> IndexState:
    holder = table_facts(connection, names.holder, schema)
    if holder is None:
        raise SchemaError(f"{schema}.{names.holder} does not exist; attach simsql first")
    invalid = backend(connection.dialect).invalid_indexes(connection, schema, names.indexes)
    return IndexState(holder.keys, invalid)


def attachment(connection: Connection, table: str, schema: str | None) -> tuple[str, Names]:
    """Schema and names of an attached table, from the registry."""
    schema = schema or registry.current_schema(connection)
    entry = registry.read(connection, table, schema)
    if entry is None:
        raise SchemaError(f"{schema}.{table} is not attached to simsql; run add_simhash first")
    return schema, entry.names


def reflect(connection: Connection, table: str, schema: str | None = None) -> type:
    """A mapped class for a table attached by a migration or the CLI, for tools without an ORM
    model of their own (the command line, scripts). Queries accept it like any model."""
    schema_name = schema or registry.current_schema(connection)
    entry = registry.read(connection, table, schema_name)
    if entry is None:
        raise NotAttached(f"{schema_name}.{table} is not attached to simsql; run `simsql attach --table {table}`")
    names = entry.names
    metadata = MetaData()
    base = Table(table, metadata, autoload_with=connection, schema=schema_name)
    holder = Table(names.side, metadata, autoload_with=connection, schema=schema_name) if names.side else base
    model = type(f"Reflected_{table}", (), {"__repr__": lambda self: f"<{table} {inspect(self).identity}>"})
    orm_registry(metadata=metadata).map_imperatively(model, base)
    keys: tuple[Any, ...] = tuple(inspect(model).primary_key)
    key_names = names.side_keys([k.name for k in keys]) if names.side else [k.name for k in keys]
    register(
        model,
        Binding(
            model=model,
            mode=names.mode,
            table=holder,
            fingerprint=holder.c[names.fingerprint],
            blocks=tuple(holder.c[name] for name in names.blocks),
            keys=keys,
            table_keys=tuple(holder.c[k] for k in key_names),
            source=tuple(entry.source),
            fingerprinter=registry.fingerprinter_from_settings(entry.settings),
            names=names,
        ),
    )
    return model


def partition_tree(connection: Connection, table: str, schema: str) -> list[tuple[str, str | None, bool]]:
    """(relation, parent, is_leaf) of a partitioned table, parents first; all in ``schema``
    (simsql names indexes in the holder's schema)."""
    rows = connection.execute(
        text(
            "SELECT c.relname, p.relname AS parent, t.isleaf, n.nspname FROM pg_partition_tree(CAST(:rel AS regclass)) t "
            "JOIN pg_class c ON c.oid = t.relid JOIN pg_namespace n ON n.oid = c.relnamespace "
            "LEFT JOIN pg_class p ON p.oid = t.parentrelid ORDER BY t.level, c.relname"
        ),
        {"rel": qualified(schema, table)},
    ).all()
    elsewhere = [f"{r.nspname}.{r.relname}" for r in rows if r.nspname != schema]
    if elsewhere:
        raise SchemaError(
            f"partitions of {schema}.{table} live in other schemas ({', '.join(elsewhere)}); simsql builds "
            "per-partition indexes only for partitions in the table's own schema"
        )
    return [(r.relname, r.parent, bool(r.isleaf)) for r in rows]


def dependents(connection: Connection, schema: str, table: str, columns: Sequence[str], own: Sequence[str]) -> list[str]:
    """Objects that depend on ``columns`` of ``schema.table`` (or on the whole table when
    ``columns`` is empty), other than simsql's ``own`` indexes: a view, a user's index, a
    foreign key. Dropping them would harm someone else's state."""
    return list(backend(connection.dialect).dependents(connection, schema, table, columns, own))
