"""DDL that attaches simsql to an existing table, and removes it again.

These functions take a live ``Connection`` and are shared by the Alembic operations
(:mod:`simsql.alembic`) and the command line. They are written for big, busy tables:

* columns are added as nullable without defaults, which PostgreSQL records in the catalog
  without rewriting the table (``ADD COLUMN ... GENERATED ... STORED`` would rewrite it under
  an exclusive lock, so in-place blocks are maintained by a trigger instead);
* every statement runs under a ``lock_timeout`` so a long transaction elsewhere makes the
  migration fail fast instead of queueing every other query behind it;
* indexes can be built ``CONCURRENTLY`` (outside a transaction block).

Identifiers are quoted by the dialect's preparer and never formatted in unquoted; a table or
column that does not exist raises :class:`~simsql.errors.SchemaError` before anything changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import xxhash
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection
from sqlalchemy.types import String, Text

from . import registry
from .dialects import BLOCK_COUNT, block_expression_sql, check_server
from .errors import SchemaError
from .fingerprint import DEFAULT, Fingerprinter
from .storage import BLOCK_COLUMNS, FINGERPRINT_COLUMN

_DOLLAR_TAG = "$simsql$"


@dataclass(frozen=True)
class TableInfo:
    """What simsql needs to know about a user table, read from the catalog."""

    schema: str
    name: str
    keys: tuple[str, ...]
    key_types: tuple[str, ...]
    source: tuple[str, ...]


def _q(connection: Connection, name: str) -> str:
    if _DOLLAR_TAG in name:
        raise SchemaError(f"identifier {name!r} contains {_DOLLAR_TAG!r}, which simsql cannot quote safely")
    return connection.dialect.identifier_preparer.quote_identifier(name)


def _qualified(connection: Connection, schema: str, name: str) -> str:
    return f"{_q(connection, schema)}.{_q(connection, name)}"


def _object_name(prefix: str, table: str, suffix: str = "") -> str:
    """A catalog name at most 63 bytes long, unique per table even when truncated."""
    name = f"{prefix}_{table}{suffix}"
    if len(name.encode()) <= 63:
        return name
    digest = xxhash.xxh32_hexdigest(table.encode("utf-8", "surrogatepass"))
    return f"{prefix}_{table[:30]}_{digest}{suffix}"


def describe(connection: Connection, table: str, source: Sequence[str], schema: str | None = None) -> TableInfo:
    """Read a table's key and check its source columns exist and hold text."""
    check_server(connection)
    if isinstance(source, str):
        source = [source]
    if not source:
        raise SchemaError("name at least one text column to fingerprint")
    schema = schema or registry.current_schema(connection)
    inspector = inspect(connection)
    if not inspector.has_table(table, schema=schema):
        raise SchemaError(f"table {schema}.{table} does not exist")
    columns = {c["name"]: c for c in inspector.get_columns(table, schema=schema)}
    for name in source:
        if name not in columns:
            raise SchemaError(
                f"table {schema}.{table} has no column {name!r} (columns: {', '.join(sorted(columns))})"
            )
        if not isinstance(columns[name]["type"], (String, Text)):
            raise SchemaError(f"column {schema}.{table}.{name} is {columns[name]['type']}, not text")
    keys = tuple(inspector.get_pk_constraint(table, schema=schema).get("constrained_columns") or ())
    if not keys:
        raise SchemaError(f"table {schema}.{table} has no primary key; simsql needs one to find rows again")
    key_types = tuple(columns[k]["type"].compile(dialect=connection.dialect) for k in keys)
    return TableInfo(schema=schema, name=table, keys=keys, key_types=key_types, source=tuple(source))


def _set_lock_timeout(connection: Connection, lock_timeout: str | None) -> None:
    if lock_timeout:
        connection.execute(text("SELECT set_config('lock_timeout', :value, true)"), {"value": lock_timeout})


def add_simhash(
    connection: Connection,
    table: str,
    source: Sequence[str],
    *,
    schema: str | None = None,
    fingerprinter: Fingerprinter | None = None,
    side_table: bool = False,
    lock_timeout: str | None = "5s",
) -> TableInfo:
    """Attach simsql to ``table``: fingerprint columns (or a side table), the trigger that
    derives blocks and invalidates stale fingerprints, and a registry entry. Indexes are
    separate (:func:`create_simhash_indexes`) so they can be built concurrently."""
    fingerprinter = fingerprinter or DEFAULT
    info = describe(connection, table, source, schema)
    _set_lock_timeout(connection, lock_timeout)
    if side_table:
        _create_side_table(connection, info)
    else:
        _add_columns(connection, info)
    registry.record(
        connection,
        info.name,
        info.schema,
        fingerprinter,
        info.source,
        mode="side_table" if side_table else "columns",
        side_table=side_table_name(info.name) if side_table else None,
    )
    return info


def side_table_name(table: str) -> str:
    return f"{table}_{FINGERPRINT_COLUMN}"


def _add_columns(connection: Connection, info: TableInfo) -> None:
    q = lambda name: _q(connection, name)  # noqa: E731
    target = _qualified(connection, info.schema, info.name)
    additions = [f"ADD COLUMN IF NOT EXISTS {q(FINGERPRINT_COLUMN)} bigint"]
    additions += [f"ADD COLUMN IF NOT EXISTS {q(name)} integer" for name in BLOCK_COLUMNS]
    connection.execute(text(f"ALTER TABLE {target} " + ", ".join(additions)))

    fingerprint = f"NEW.{q(FINGERPRINT_COLUMN)}"
    assignments = "\n".join(
        f"  NEW.{q(name)} := {block_expression_sql(fingerprint, i)};" for i, name in enumerate(BLOCK_COLUMNS)
    )
    changed = " OR ".join(f"NEW.{q(c)} IS DISTINCT FROM OLD.{q(c)}" for c in info.source)
    body = f"""
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.{q(FINGERPRINT_COLUMN)} IS NOT DISTINCT FROM OLD.{q(FINGERPRINT_COLUMN)}
     AND ({changed}) THEN
    -- the text changed but the writer did not refingerprint: never keep a stale fingerprint
    NEW.{q(FINGERPRINT_COLUMN)} := NULL;
  END IF;
{assignments}
  RETURN NEW;
END
"""
    _install_trigger(connection, info, "_blocks", "BEFORE INSERT OR UPDATE", target, body)


def _create_side_table(connection: Connection, info: TableInfo) -> None:
    q = lambda name: _q(connection, name)  # noqa: E731
    side = _qualified(connection, info.schema, side_table_name(info.name))
    base = _qualified(connection, info.schema, info.name)
    keys = ", ".join(q(k) for k in info.keys)
    key_columns = ", ".join(f"{q(k)} {t} NOT NULL" for k, t in zip(info.keys, info.key_types))
    blocks = ", ".join(
        f"{q(name)} integer GENERATED ALWAYS AS ({block_expression_sql(q(FINGERPRINT_COLUMN), i)}) STORED"
        for i, name in enumerate(BLOCK_COLUMNS)
    )
    connection.execute(
        text(
            f"CREATE TABLE IF NOT EXISTS {side} ({key_columns}, {q(FINGERPRINT_COLUMN)} bigint, {blocks}, "
            f"PRIMARY KEY ({keys}), FOREIGN KEY ({keys}) REFERENCES {base} ({keys}) ON DELETE CASCADE)"
        )
    )
    # A changed text invalidates its side row, so no stale fingerprint survives writers that
    # bypass simsql; backfill recreates missing rows.
    condition = " AND ".join(f"{q(k)} = OLD.{q(k)}" for k in info.keys)
    changed = " OR ".join(f"NEW.{q(c)} IS DISTINCT FROM OLD.{q(c)}" for c in info.source)
    body = f"""
BEGIN
  IF {changed} THEN
    DELETE FROM {side} WHERE {condition};
  END IF;
  RETURN NEW;
END
"""
    _install_trigger(connection, info, "_stale", "AFTER UPDATE", base, body)


def _install_trigger(connection: Connection, info: TableInfo, suffix: str, timing: str, target: str, body: str) -> None:
    """(Re)create the plpgsql function ``simsql_<table><suffix>`` and its row trigger on ``target``."""
    name = _object_name("simsql", info.name, suffix)
    function = _qualified(connection, info.schema, name)
    connection.execute(
        text(f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS {_DOLLAR_TAG}{body}{_DOLLAR_TAG}")
    )
    trigger = _q(connection, name)
    connection.execute(text(f"DROP TRIGGER IF EXISTS {trigger} ON {target}"))
    connection.execute(text(f"CREATE TRIGGER {trigger} {timing} ON {target} FOR EACH ROW EXECUTE FUNCTION {function}()"))


def _index_target(connection: Connection, table: str, schema: str | None) -> tuple[str, str, tuple[str, ...]]:
    schema = schema or registry.current_schema(connection)
    entry = registry.read(connection, table, schema)
    if entry is None:
        raise SchemaError(f"{schema}.{table} is not attached to simsql; run add_simhash first")
    holder = entry.side_table or table
    inspector = inspect(connection)
    keys = tuple(inspector.get_pk_constraint(holder, schema=schema).get("constrained_columns") or ())
    return schema, holder, keys


def index_names(holder: str) -> list[str]:
    return [_object_name("ix", holder, f"_{name}") for name in BLOCK_COLUMNS]


def create_simhash_indexes(
    connection: Connection, table: str, *, schema: str | None = None, concurrently: bool = False
) -> None:
    """Covering btree indexes on the four blocks (``INCLUDE`` fingerprint and key), so that
    candidate lookups are index-only scans. With ``concurrently=True`` the connection must be
    in autocommit mode; writes to the table continue while the indexes build."""
    schema, holder, keys = _index_target(connection, table, schema)
    q = lambda name: _q(connection, name)  # noqa: E731
    target = _qualified(connection, schema, holder)
    include = ", ".join(q(c) for c in (FINGERPRINT_COLUMN, *keys))
    keyword = "CONCURRENTLY " if concurrently else ""
    for name, column in zip(index_names(holder), BLOCK_COLUMNS):
        if concurrently:
            # A failed concurrent build leaves an INVALID index behind; rebuild it.
            valid = connection.execute(
                text(
                    "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = :name AND n.nspname = :schema"
                ),
                {"name": name, "schema": schema},
            ).scalar()
            if valid is False:
                connection.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {_qualified(connection, schema, name)}"))
        connection.execute(
            text(f"CREATE INDEX {keyword}IF NOT EXISTS {q(name)} ON {target} ({q(column)}) INCLUDE ({include})")
        )


def drop_simhash_indexes(
    connection: Connection, table: str, *, schema: str | None = None, concurrently: bool = False
) -> None:
    schema, holder, _ = _index_target(connection, table, schema)
    keyword = "CONCURRENTLY " if concurrently else ""
    for name in index_names(holder):
        connection.execute(text(f"DROP INDEX {keyword}IF EXISTS {_qualified(connection, schema, name)}"))


def drop_simhash(
    connection: Connection, table: str, *, schema: str | None = None, lock_timeout: str | None = "5s"
) -> registry.Entry | None:
    """Undo :func:`add_simhash`: drop the columns or side table, triggers, functions and the
    registry entry. Returns the removed entry (what a re-attach would need)."""
    check_server(connection)
    schema = schema or registry.current_schema(connection)
    entry = registry.read(connection, table, schema)
    _set_lock_timeout(connection, lock_timeout)
    q = lambda name: _q(connection, name)  # noqa: E731
    target = _qualified(connection, schema, table)
    if not inspect(connection).has_table(table, schema=schema):
        raise SchemaError(f"table {schema}.{table} does not exist")
    for suffix in ("_blocks", "_stale"):
        name = _object_name("simsql", table, suffix)
        connection.execute(text(f"DROP TRIGGER IF EXISTS {q(name)} ON {target}"))
        connection.execute(text(f"DROP FUNCTION IF EXISTS {_qualified(connection, schema, name)}()"))
    if entry is not None and entry.side_table:
        connection.execute(text(f"DROP TABLE IF EXISTS {_qualified(connection, schema, entry.side_table)}"))
    else:
        drops = ", ".join(f"DROP COLUMN IF EXISTS {q(c)}" for c in (*BLOCK_COLUMNS, FINGERPRINT_COLUMN))
        connection.execute(text(f"ALTER TABLE {target} {drops}"))
    registry.remove(connection, table, schema)
    return entry


__all__ = [
    "TableInfo",
    "add_simhash",
    "create_simhash_indexes",
    "describe",
    "drop_simhash",
    "drop_simhash_indexes",
    "side_table_name",
]

assert BLOCK_COUNT == len(BLOCK_COLUMNS)
