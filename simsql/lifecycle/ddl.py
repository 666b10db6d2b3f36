"""Describe the DDL that attaches simsql to a table, and removes it again, as text.

Nothing here touches a database: every function takes what the catalog said (a
:class:`~simsql.lifecycle.catalog.TableInfo`, or the same values given by hand for offline
SQL) and returns a :class:`Plan`, an ordered list of statements. :mod:`simsql.lifecycle.apply`
runs a plan on a connection; Alembic's offline mode can print one. The split is Alembic's own
(``ops`` describe, ``toimpl`` run), and it lets the DDL be tested as text.

Choices made for big, busy tables:

* columns are added nullable and without defaults, which PostgreSQL records in the catalog
  without rewriting the table (``GENERATED ... STORED`` would rewrite it under an exclusive
  lock, so in-place blocks are maintained by a trigger instead);
* indexes can be built ``CONCURRENTLY`` (outside a transaction block, one statement each);
* identifiers are quoted by PostgreSQL's own preparer, values are bound parameters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..dialects import block_expression_sql
from ..errors import SchemaError
from ..fingerprint import Fingerprinter
from ..schema import PROGRESS_TABLE, REGISTRY_TABLE, Names
from ..storage import quote, row_trigger_body, stale_trigger_body, trigger_sql

def qualified(schema: str, name: str) -> str:
    return f"{quote(schema)}.{quote(name)}"


@dataclass(frozen=True)
class Step:
    """One statement. ``concurrently`` ones must run outside a transaction block, alone."""

    sql: str
    what: str
    params: Mapping[str, Any] = field(default_factory=dict)
    concurrently: bool = False


@dataclass(frozen=True)
class Plan:
    """Statements in the order they must run; transactional ones form one transaction."""

    steps: tuple[Step, ...] = ()

    def __add__(self, other: Plan) -> Plan:
        return Plan(self.steps + other.steps)

    def __bool__(self) -> bool:
        return bool(self.steps)

    @property
    def sql(self) -> list[str]:
        return [step.sql for step in self.steps]


@dataclass(frozen=True)
class Target:
    """What DDL needs to know about the user's table (from the catalog or from arguments)."""

    schema: str
    table: str
    keys: tuple[str, ...]
    key_types: tuple[str, ...]
    source: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.table

    def __post_init__(self) -> None:
        if not self.keys:
            raise SchemaError(f"table {self.schema}.{self.table} has no primary key; simsql needs one to find rows again")
        if not self.source:
            raise SchemaError("name at least one text column to fingerprint")


def _trigger(target: Target, function: str, timing: str, body: str, what: str) -> list[Step]:
    create_function, create_trigger = trigger_sql(target.schema, function, timing, target.table, body)
    return [
        Step(create_function, f"create function {target.schema}.{function}"),
        Step(create_trigger, f"create trigger {function} ({what})"),
    ]


def add_columns(target: Target, names: Names) -> Plan:
    """Columns mode: fingerprint, digest and block columns on the user's table, and the row
    trigger that derives blocks and never keeps a fingerprint of text the row no longer holds."""
    base = qualified(target.schema, target.table)
    additions = [f"ADD COLUMN {quote(names.fingerprint)} bigint", f"ADD COLUMN {quote(names.digest)} uuid"]
    additions += [f"ADD COLUMN {quote(name)} integer" for name in names.blocks]
    body = row_trigger_body(names, target.source, derive_blocks=True)
    steps = [Step(f"ALTER TABLE {base} " + ", ".join(additions), f"add columns to {target.schema}.{target.table}")]
    steps += _trigger(target, names.row_function, "BEFORE INSERT OR UPDATE", body, "derives blocks, drops stale fingerprints")
    return Plan(tuple(steps))


def create_side_table(target: Target, names: Names) -> Plan:
    """Side-table mode: the user's table is not altered; a side table keyed like it, and a
    trigger on the user's table that deletes side rows whose text changed."""
    assert names.side is not None
    side = qualified(target.schema, names.side)
    base = qualified(target.schema, target.table)
    side_keys = names.side_keys(target.keys)
    keys = ", ".join(quote(k) for k in target.keys)
    own_keys = ", ".join(quote(k) for k in side_keys)
    key_columns = ", ".join(f"{quote(k)} {t} NOT NULL" for k, t in zip(side_keys, target.key_types))
    fingerprint = quote(names.fingerprint)
    blocks = ", ".join(
        f"{quote(name)} integer GENERATED ALWAYS AS ({block_expression_sql(fingerprint, i)}) STORED"
        for i, name in enumerate(names.blocks)
    )
    create = (
        f"CREATE TABLE {side} ({key_columns}, {fingerprint} bigint, {quote(names.digest)} uuid, {blocks}, "
        f"PRIMARY KEY ({own_keys}), FOREIGN KEY ({own_keys}) REFERENCES {base} ({keys}) ON DELETE CASCADE)"
    )
    body = stale_trigger_body(target.schema, names, target.keys, target.source)
    steps = [Step(create, f"create side table {target.schema}.{names.side}")]
    steps += _trigger(target, names.stale_function, "AFTER UPDATE", body, "drops stale side rows")
    return Plan(tuple(steps))


def record(target: Target, names: Names, fingerprinter: Fingerprinter) -> Plan:
    """The registry entry (simsql's revision must be applied)."""
    sql = (
        f"INSERT INTO {REGISTRY_TABLE} (table_schema, table_name, column_name, config_id, settings, source, mode, side_table) "
        "VALUES (:schema, :table, :prefix, :config_id, CAST(:settings AS jsonb), CAST(:source AS text[]), :mode, :side)"
    )
    params = {
        "schema": target.schema,
        "table": target.table,
        "prefix": names.prefix,
        "config_id": fingerprinter.config_id,
        "settings": json.dumps(fingerprinter.settings, sort_keys=True),
        "source": list(target.source),
        "mode": names.mode,
        "side": names.side,
    }
    return Plan((Step(sql, f"record {target.schema}.{target.table} in {REGISTRY_TABLE}", params),))


def attach(target: Target, names: Names, fingerprinter: Fingerprinter) -> Plan:
    """Everything but the indexes, in one transaction."""
    storage = create_side_table(target, names) if names.side else add_columns(target, names)
    return storage + record(target, names, fingerprinter)


def create_indexes(
    schema: str,
    names: Names,
    holder_keys: Sequence[str],
    *,
    concurrently: bool = False,
    invalid: Sequence[str] = (),
) -> Plan:
    """Covering btree indexes on the four blocks (``INCLUDE`` fingerprint and key), so that
    candidate lookups are index-only scans. ``invalid`` names indexes a failed concurrent build
    left behind (the catalog knows which): they are dropped and rebuilt."""
    keyword = "CONCURRENTLY " if concurrently else ""
    holder = qualified(schema, names.holder)
    include = ", ".join(quote(c) for c in (names.fingerprint, *holder_keys))
    steps = []
    for name, block in zip(names.indexes, names.blocks):
        if name in invalid:
            steps.append(
                Step(f"DROP INDEX {keyword}IF EXISTS {qualified(schema, name)}", f"drop invalid index {name}", concurrently=concurrently)
            )
        steps.append(
            Step(
                f"CREATE INDEX {keyword}IF NOT EXISTS {quote(name)} ON {holder} ({quote(block)}) INCLUDE ({include})",
                f"build index {name} on {schema}.{names.holder}",
                concurrently=concurrently,
            )
        )
    return Plan(tuple(steps))


def create_partitioned_indexes(
    schema: str, names: Names, holder_keys: Sequence[str], tree: Sequence[tuple[str, str | None, bool]]
) -> Plan:
    """Concurrent builds for a partitioned holder (``CREATE INDEX CONCURRENTLY`` cannot run on
    one): an index ``ON ONLY`` each partitioned table (catalog entries, no scan), one
    concurrent build per leaf partition, then each child index attached to its parent's.
    Once every partition's index is attached, the parent's becomes valid. ``tree``: (relation,
    parent, is_leaf) from ``pg_partition_tree``, parents first."""
    include = ", ".join(quote(c) for c in (names.fingerprint, *holder_keys))
    on_only, builds, attaches = [], [], []
    for relation, parent, is_leaf in tree:
        for block in names.blocks:
            index = names.index_on(relation, block)
            if is_leaf:
                sql = f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {quote(index)} ON {qualified(schema, relation)} ({quote(block)}) INCLUDE ({include})"
                builds.append(Step(sql, f"build index {index} on partition {schema}.{relation}", concurrently=True))
            else:
                sql = f"CREATE INDEX IF NOT EXISTS {quote(index)} ON ONLY {qualified(schema, relation)} ({quote(block)}) INCLUDE ({include})"
                on_only.append(Step(sql, f"declare index {index} on partitioned {schema}.{relation}"))
            if parent is not None:
                sql = f"ALTER INDEX {qualified(schema, names.index_on(parent, block))} ATTACH PARTITION {qualified(schema, index)}"
                attaches.append(Step(sql, f"attach index {index} to {names.index_on(parent, block)}", concurrently=True))
    return Plan(tuple(on_only + builds + list(reversed(attaches))))


def drop_indexes(schema: str, names: Names, *, concurrently: bool = False) -> Plan:
    keyword = "CONCURRENTLY " if concurrently else ""
    return Plan(
        tuple(
            Step(f"DROP INDEX {keyword}IF EXISTS {qualified(schema, name)}", f"drop index {name}", concurrently=concurrently)
            for name in names.indexes
        )
    )


def detach(schema: str, names: Names, *, triggers: Sequence[str] = (), columns: Sequence[str] | None = None) -> Plan:
    """Remove what :func:`attach` created (indexes go with their columns or side table).

    ``triggers`` and ``columns`` are what the catalog found on the user's table; only simsql's
    own are dropped (a table attached by an older simsql has no digest column).
    """
    base = qualified(schema, names.table)
    steps: list[Step] = []
    for function in names.functions:
        if function in triggers:
            steps.append(Step(f"DROP TRIGGER {quote(function)} ON {base}", f"drop trigger {function}"))
            steps.append(Step(f"DROP FUNCTION {qualified(schema, function)}()", f"drop function {function}"))
    if names.side:
        steps.append(Step(f"DROP TABLE {qualified(schema, names.side)}", f"drop side table {schema}.{names.side}"))
    else:
        present = [c for c in reversed(names.added_columns) if columns is None or c in columns]
        drops = ", ".join(f"DROP COLUMN {quote(c)}" for c in present)
        steps.append(Step(f"ALTER TABLE {base} {drops}", f"drop columns from {schema}.{names.table}"))
    return Plan(tuple(steps)) + forget(schema, names.table)


def forget(schema: str, table: str, *, progress: bool = True) -> Plan:
    """Delete the registry entry and the backfill cursor of a table."""
    params = {"schema": schema, "table": table}
    where = "WHERE table_schema = :schema AND table_name = :table"
    steps = [Step(f"DELETE FROM {REGISTRY_TABLE} {where}", f"remove {schema}.{table} from {REGISTRY_TABLE}", params)]
    if progress:
        steps.append(Step(f"DELETE FROM {PROGRESS_TABLE} {where}", f"remove backfill cursor of {schema}.{table}", params))
    return Plan(tuple(steps))
