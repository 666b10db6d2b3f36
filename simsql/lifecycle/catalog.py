"""Read what the DDL needs from PostgreSQL's catalog, and nothing else.

The catalog step is separate from describing DDL (:mod:`simsql.lifecycle.ddl`) so that an
offline mode can supply the same facts from arguments. Every query here names the table by a
bound value (``to_regclass`` / ``pg_class``), never by formatting it into SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import MetaData, Table, inspect, text
from sqlalchemy.engine import Connection
from sqlalchemy.orm import registry as orm_registry

from .. import registry
from ..dialects import check_lifecycle_server as check_server
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
    """``pg_class.relkind``: ``r`` table, ``p`` partitioned table, ``v`` view, ..."""
    columns: dict[str, Column]
    keys: tuple[str, ...]
    triggers: tuple[str, ...]
    """Names of the table's own (non-internal) triggers."""

    @property
    def key_types(self) -> tuple[str, ...]:
        return tuple(self.columns[k].type for k in self.keys)


def table_facts(connection: Connection, table: str, schema: str) -> TableFacts | None:
    """The catalog's description of ``schema.table``, or None when there is no such table."""
    row = connection.execute(
        text(
            "SELECT c.oid, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = :schema AND c.relname = :table"
        ),
        {"schema": schema, "table": table},
    ).first()
    if row is None or row.relkind not in ("r", "p"):
        return None
    columns = {
        r.attname: Column(r.attname, r.type, r.typcategory == "S")
        for r in connection.execute(
            text(
                "SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type, t.typcategory "
                "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
                "WHERE a.attrelid = :oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
            ),
            {"oid": row.oid},
        )
    }
    keys = tuple(
        connection.execute(
            text(
                "SELECT a.attname FROM pg_constraint k CROSS JOIN LATERAL unnest(k.conkey) WITH ORDINALITY AS u(attnum, n) "
                "JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.attnum "
                "WHERE k.conrelid = :oid AND k.contype = 'p' ORDER BY u.n"
            ),
            {"oid": row.oid},
        ).scalars()
    )
    triggers = tuple(
        connection.execute(
            text("SELECT tgname FROM pg_trigger WHERE tgrelid = :oid AND NOT tgisinternal ORDER BY tgname"),
            {"oid": row.oid},
        ).scalars()
    )
    return TableFacts(schema, table, row.relkind, columns, keys, triggers)


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
    invalid = tuple(
        connection.execute(
            text(
                "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = :schema AND c.relname = ANY(:names) AND NOT i.indisvalid"
            ),
            {"schema": schema, "names": list(names.indexes)},
        ).scalars()
    )
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
    rows = connection.execute(
        text(
            "SELECT DISTINCT pg_describe_object(d.classid, d.objid, d.objsubid) AS what, c.relname "
            "FROM pg_depend d LEFT JOIN pg_class c ON d.classid = CAST('pg_class' AS regclass) AND c.oid = d.objid "
            "WHERE d.refclassid = CAST('pg_class' AS regclass) AND d.refobjid = CAST(:rel AS regclass) "
            "AND d.deptype IN ('n', 'a') AND (cardinality(CAST(:columns AS text[])) = 0 OR d.refobjsubid IN "
            "(SELECT attnum FROM pg_attribute WHERE attrelid = CAST(:rel AS regclass) AND attname = ANY(CAST(:columns AS text[]))))"
        ),
        {"rel": qualified(schema, table), "columns": list(columns)},
    ).all()
    found = []
    for row in rows:
        if row.relname in own or row.what.startswith(("sequence ", "type ", "default value")):
            continue
        found.append(str(row.what))
    # Views reach a table through their rewrite rule; name the view, not the rule.
    return sorted(set(found))
