"""The registry: which fingerprint configuration filled which table and column.

Fingerprints of two configurations are not comparable, and nothing in a ``bigint`` says which
configuration produced it. The registry (created by simsql's own migration) records it per
table, so writes and queries with another configuration are refused with
:class:`~simsql.errors.ConfigMismatch` instead of returning quietly wrong neighbours.

Checks are cached per engine and table: after the first statement they cost a dict lookup.
A database without the registry (an application that only used ``create_all``) is not
checked; run ``simsql db upgrade`` to get the protection.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from sqlalchemy import event
from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Engine,
    MetaData,
    Table,
    Text,
    func,
    inspect,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, insert
from sqlalchemy.engine import Connection

from .errors import ConfigMismatch
from .fingerprint import Fingerprinter

REGISTRY_TABLE = "simsql_registry"
PROGRESS_TABLE = "simsql_backfill"

metadata = MetaData()

registry_table = Table(
    REGISTRY_TABLE,
    metadata,
    Column("table_schema", Text, primary_key=True),
    Column("table_name", Text, primary_key=True),
    Column("column_name", Text, primary_key=True),
    Column("config_id", Text, nullable=False),
    Column("settings", JSONB, nullable=False),
    Column("source", ARRAY(Text), nullable=False),
    Column("mode", Text, nullable=False),
    Column("side_table", Text, nullable=True),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

progress_table = Table(
    PROGRESS_TABLE,
    metadata,
    Column("table_schema", Text, primary_key=True),
    Column("table_name", Text, primary_key=True),
    Column("config_id", Text, nullable=False),
    Column("phase", Text, nullable=False),
    Column("last_key", JSONB, nullable=True),
    Column("rows_done", BigInteger, nullable=False, server_default="0"),
    Column("started_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)


@dataclass(frozen=True)
class Entry:
    """One registry row: a fingerprinted table and how it was attached."""

    table_schema: str
    table_name: str
    column_name: str
    config_id: str
    settings: dict[str, Any]
    source: tuple[str, ...]
    mode: str
    side_table: str | None


def current_schema(connection: Connection) -> str:
    return str(connection.execute(text("SELECT current_schema()")).scalar_one())


def registry_exists(connection: Connection, schema: str | None = None) -> bool:
    return inspect(connection).has_table(REGISTRY_TABLE, schema=schema)


def read(connection: Connection, table_name: str, schema: str | None = None) -> Entry | None:
    """The registry entry of a table, or None (no entry, or no registry at all)."""
    if not registry_exists(connection):
        return None
    schema = schema or current_schema(connection)
    row = connection.execute(
        select(registry_table).where(
            registry_table.c.table_schema == schema, registry_table.c.table_name == table_name
        )
    ).first()
    return None if row is None else _entry(row)


def _entry(row: Any) -> Entry:
    return Entry(
        table_schema=row.table_schema,
        table_name=row.table_name,
        column_name=row.column_name,
        config_id=row.config_id,
        settings=dict(row.settings),
        source=tuple(row.source),
        mode=row.mode,
        side_table=row.side_table,
    )


def entries(connection: Connection) -> list[Entry]:
    if not registry_exists(connection):
        return []
    return [_entry(row) for row in connection.execute(select(registry_table))]


def record(
    connection: Connection,
    table_name: str,
    schema: str | None,
    fingerprinter: Fingerprinter,
    source: tuple[str, ...],
    mode: str,
    side_table: str | None = None,
    column_name: str = "simhash",
) -> None:
    """Record (or confirm) the configuration of a table; refuse a different one."""
    schema = schema or current_schema(connection)
    existing = read(connection, table_name, schema)
    if existing is not None and existing.config_id != fingerprinter.config_id:
        raise ConfigMismatch(
            f"{schema}.{table_name} holds fingerprints of config {existing.config_id}, "
            f"not {fingerprinter.config_id}; drop and re-attach it to change configuration"
        )
    statement = insert(registry_table).values(
        table_schema=schema,
        table_name=table_name,
        column_name=column_name,
        config_id=fingerprinter.config_id,
        settings=fingerprinter.settings,
        source=list(source),
        mode=mode,
        side_table=side_table,
    )
    connection.execute(
        statement.on_conflict_do_update(
            index_elements=["table_schema", "table_name", "column_name"],
            set_={"source": statement.excluded.source, "mode": statement.excluded.mode,
                  "side_table": statement.excluded.side_table, "updated_at": func.now()},
        )
    )
    forget(connection.engine)


def remove(connection: Connection, table_name: str, schema: str | None = None) -> None:
    if not registry_exists(connection):
        return
    schema = schema or current_schema(connection)
    connection.execute(
        registry_table.delete().where(
            registry_table.c.table_schema == schema, registry_table.c.table_name == table_name
        )
    )
    if inspect(connection).has_table(PROGRESS_TABLE):
        connection.execute(
            progress_table.delete().where(
                progress_table.c.table_schema == schema, progress_table.c.table_name == table_name
            )
        )
    forget(connection.engine)


_checked: dict[tuple[int, str | None, str, str], bool] = {}
_lock = threading.Lock()


def forget(engine: Engine) -> None:
    """Drop cached checks for ``engine`` (after the registry changed)."""
    with _lock:
        for key in [k for k in _checked if k[0] == id(engine)]:
            del _checked[key]


def check(connection: Connection, table_name: str, schema: str | None, config_id: str) -> None:
    """Raise :class:`ConfigMismatch` if ``table_name`` was filled with another configuration."""
    key = (id(connection.engine), schema, table_name, config_id)
    if key in _checked:
        return
    entry = read(connection, table_name, schema)
    if entry is not None and entry.config_id != config_id:
        raise ConfigMismatch(
            f"{entry.table_schema}.{table_name} holds fingerprints of config {entry.config_id} "
            f"({entry.settings}), but this query uses {config_id}; use the same Fingerprinter "
            "settings as the data, or re-fingerprint the table"
        )
    with _lock:
        _checked[key] = True


CHECK_OPTION = "simsql_config_check"
"""Execution option carrying ``(schema, table, config_id)`` on statements simsql builds."""


@event.listens_for(Engine, "before_execute")
def _check_before_execute(
    connection: Connection, statement: Any, multiparams: Any, params: Any, execution_options: Any
) -> None:
    options = getattr(statement, "_execution_options", None) or {}
    target = options.get(CHECK_OPTION) or (execution_options or {}).get(CHECK_OPTION)
    if target is not None:
        schema, table_name, config_id = target
        check(connection, table_name, schema, config_id)
