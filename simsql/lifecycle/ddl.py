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

from .. import registry
from ..dialects import block_expression_sql
from ..errors import SchemaError
from ..fingerprint import Fingerprinter
from ..schema import PROGRESS_TABLE, REGISTRY_TABLE, Names
from ..storage import quote, row_trigger_body, stale_trigger_body, trigger_sql


def _pg(steps: tuple[Step, ...]) -> Plan:
    return Plan(steps, "postgresql")


def qualified(schema: str, name: str) -> str:
    return f"{quote(schema)}.{quote(name)}"


@dataclass(frozen=True)
class Step:
    """One statement. ``concurrently`` ones must run outside a transaction block, alone.

    Where DDL is not transactional (MySQL/MariaDB) a step also says how to take it back
    (``undo``, run with the same ``params``) so a plan that stops halfway can leave the table
    as it found it; ``fallback`` is the same change by a slower online algorithm, tried when
    the server refuses ``sql``'s; an ``online`` step may run long without blocking writers
    (an index build, an online rebuild), so only its lock waits are bounded.
    """

    sql: str
    what: str
    params: Mapping[str, Any] = field(default_factory=dict)
    concurrently: bool = False
    undo: str = ""
    fallback: str = ""
    online: bool = False


@dataclass(frozen=True)
class Plan:
    """Statements in the order they must run; transactional ones form one transaction.
    ``dialect``: the server the statements are written for (None: any)."""

    steps: tuple[Step, ...] = ()
    dialect: str | None = None

    def __add__(self, other: Plan) -> Plan:
        if self.dialect and other.dialect and self.dialect != other.dialect:
            raise ValueError(f"cannot join a {self.dialect} plan and a {other.dialect} plan")
        return Plan(self.steps + other.steps, self.dialect or other.dialect)

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
    return _pg(tuple(steps))


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
    return _pg(tuple(steps))


REGISTRY_INSERT = (
    f"INSERT INTO {REGISTRY_TABLE} (table_schema, table_name, column_name, config_id, settings, source, mode, side_table) "
    "VALUES (:table_schema, :table_name, :column_name, :config_id, {settings}, {source}, :mode, :side_table)"
)
"""The registry entry's statement; each server fills in how it reads JSON settings and the
list of source columns."""


def registry_values(target: Target, names: Names, fingerprinter: Fingerprinter) -> dict[str, Any]:
    """:func:`simsql.registry.record_values` as bound values of a text statement (settings
    as JSON text; ``source`` stays a list, PostgreSQL's ``text[]``)."""
    values = registry.record_values(
        target.schema, target.table, fingerprinter, target.source, names.mode, names.side, names.prefix
    )
    values["settings"] = json.dumps(values["settings"], sort_keys=True)
    return values


def record(target: Target, names: Names, fingerprinter: Fingerprinter) -> Plan:
    """The registry entry (simsql's revision must be applied)."""
    sql = REGISTRY_INSERT.format(settings="CAST(:settings AS jsonb)", source="CAST(:source AS text[])")
    params = registry_values(target, names, fingerprinter)
    return _pg((Step(sql, f"record {target.schema}.{target.table} in {REGISTRY_TABLE}", params),))


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
    return _pg(tuple(steps))


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
    return _pg(tuple(on_only + builds + list(reversed(attaches))))


def drop_indexes(schema: str, names: Names, *, concurrently: bool = False) -> Plan:
    keyword = "CONCURRENTLY " if concurrently else ""
    return _pg(
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
    return _pg(tuple(steps)) + forget(schema, names.table)


def forget(schema: str, table: str, *, progress: bool = True) -> Plan:
    """Delete the registry entry and the backfill cursor of a table."""
    params = {"schema": schema, "table": table}
    where = "WHERE table_schema = :schema AND table_name = :table"
    steps = [Step(f"DELETE FROM {REGISTRY_TABLE} {where}", f"remove {schema}.{table} from {REGISTRY_TABLE}", params)]
    if progress:
        steps.append(Step(f"DELETE FROM {PROGRESS_TABLE} {where}", f"remove backfill cursor of {schema}.{table}", params))
    return Plan(tuple(steps))  # portable SQL: MySQL's detach uses it too


# -- a way forward: upgrade a 0.1 attachment, refingerprint to another configuration ----------


def _replace_trigger(target: Target, function: str, timing: str, body: str, what: str) -> list[Step]:
    base = qualified(target.schema, target.table)
    return [
        Step(f"DROP TRIGGER IF EXISTS {quote(function)} ON {base}", f"drop trigger {function}"),
        Step(f"DROP FUNCTION IF EXISTS {qualified(target.schema, function)}()", f"drop function {function}"),
        *_trigger(target, function, timing, body, what),
    ]


def upgrade(target: Target, names: Names) -> Plan:
    """An attachment made by simsql 0.1 (no digest column, a trigger that kept fingerprints a
    writer recomputed from stale text) gets the digest column and today's trigger. Its
    fingerprints are kept with an unknown (NULL) digest, which marks them for verification:
    backfill fingerprints them again and stores the digest."""
    holder = qualified(target.schema, names.holder)
    steps = [Step(f"ALTER TABLE {holder} ADD COLUMN {quote(names.digest)} uuid", f"add column {names.digest}")]
    if names.side:
        body = stale_trigger_body(target.schema, names, target.keys, target.source)
        steps += _replace_trigger(target, names.stale_function, "AFTER UPDATE", body, "drops stale side rows")
    else:
        body = row_trigger_body(names, target.source, derive_blocks=True)
        steps += _replace_trigger(target, names.row_function, "BEFORE INSERT OR UPDATE", body, "derives blocks, drops stale fingerprints")
    return _pg(tuple(steps))


def stage(target: Target, shadow: Names, fingerprinter: Fingerprinter, cursor: str) -> Plan:
    """The shadow fingerprint set of a refingerprint (columns or side table, with the trigger
    that keeps its digest invariant) and its resume cursor, in one transaction: the cursor's
    row proves the shadow objects are simsql's own."""
    storage = create_side_table(target, shadow) if shadow.side else add_columns(target, shadow)
    sql = (
        f"INSERT INTO {PROGRESS_TABLE} (table_schema, table_name, config_id, phase) "
        "VALUES (:schema, :cursor, :config_id, 'scan')"
    )
    params = {"schema": target.schema, "cursor": cursor, "config_id": fingerprinter.config_id}
    return storage + _pg((Step(sql, f"record refingerprint of {target.schema}.{target.table}", params),))


def unstage(target: Target, shadow: Names, cursor: str) -> Plan:
    """Remove a shadow set (an abandoned refingerprint); the attachment is untouched."""
    base = qualified(target.schema, target.table)
    function = shadow.stale_function if shadow.side else shadow.row_function
    steps = [
        Step(f"DROP TRIGGER IF EXISTS {quote(function)} ON {base}", f"drop trigger {function}"),
        Step(f"DROP FUNCTION IF EXISTS {qualified(target.schema, function)}()", f"drop function {function}"),
    ]
    if shadow.side:
        steps.append(Step(f"DROP TABLE IF EXISTS {qualified(target.schema, shadow.side)}", f"drop {shadow.side}"))
    else:
        drops = ", ".join(f"DROP COLUMN IF EXISTS {quote(c)}" for c in shadow.added_columns)
        steps.append(Step(f"ALTER TABLE {base} {drops}", f"drop shadow columns of {target.table}"))
    params = {"schema": target.schema, "cursor": cursor}
    where = "WHERE table_schema = :schema AND table_name = :cursor"
    steps.append(Step(f"DELETE FROM {PROGRESS_TABLE} {where}", "forget the refingerprint cursor", params))
    return _pg(tuple(steps))


def switch(
    target: Target,
    names: Names,
    shadow: Names,
    fingerprinter: Fingerprinter,
    cursor: str,
    side_keys: tuple[str, str] | None = None,
    partitions: Sequence[str] = (),
) -> Plan:
    """Replace the attachment's fingerprints by the shadow set, in one transaction: old
    trigger and fingerprints dropped, shadow columns (or side table) and indexes renamed to
    the attachment's own names, today's trigger under its usual name, the registry entry
    moved to the new configuration, cursors forgotten. ``side_keys``: (shadow side table's
    primary key constraint, the old one's name) and ``partitions`` (of a partitioned table: their
    block indexes are renamed too) so the names stay free for the next run."""
    base = qualified(target.schema, target.table)
    steps: list[Step] = []
    for function in ((names.stale_function, shadow.stale_function) if names.side else (names.row_function, shadow.row_function)):
        steps.append(Step(f"DROP TRIGGER IF EXISTS {quote(function)} ON {base}", f"drop trigger {function}"))
        steps.append(Step(f"DROP FUNCTION IF EXISTS {qualified(target.schema, function)}()", f"drop function {function}"))
    if names.side and shadow.side:
        steps.append(Step(f"DROP TABLE {qualified(target.schema, names.side)}", f"drop old side table {names.side}"))
        steps.append(Step(f"ALTER TABLE {qualified(target.schema, shadow.side)} RENAME TO {quote(names.side)}", f"rename {shadow.side}"))
        holder = qualified(target.schema, names.side)
        if side_keys is not None and side_keys[0] != side_keys[1]:
            steps.append(Step(f"ALTER TABLE {holder} RENAME CONSTRAINT {quote(side_keys[0])} TO {quote(side_keys[1])}", "rename primary key"))
    else:
        # blocks first: on a mixin's table they are generated from the fingerprint column
        drops = ", ".join(f"DROP COLUMN {quote(c)}" for c in reversed(names.added_columns))
        steps.append(Step(f"ALTER TABLE {base} {drops}", f"drop old fingerprints of {target.table}"))
        holder = base
    for new, old in zip(shadow.added_columns, names.added_columns):
        steps.append(Step(f"ALTER TABLE {holder} RENAME COLUMN {quote(new)} TO {quote(old)}", f"rename column {new}"))
    renames = list(zip(shadow.indexes, names.indexes))  # on the shadow side table, or the table itself
    for relation in partitions:
        renames += [(names.index_on(relation, new), names.index_on(relation, old)) for new, old in zip(shadow.blocks, names.blocks)]
    for new, old in renames:
        steps.append(Step(f"ALTER INDEX IF EXISTS {qualified(target.schema, new)} RENAME TO {quote(old)}", f"rename index {new}"))
    if names.side:
        body = stale_trigger_body(target.schema, names, target.keys, target.source)
        steps += _trigger(target, names.stale_function, "AFTER UPDATE", body, "drops stale side rows")
    else:
        body = row_trigger_body(names, target.source, derive_blocks=True)  # shadow blocks are plain columns
        steps += _trigger(target, names.row_function, "BEFORE INSERT OR UPDATE", body, "derives blocks, drops stale fingerprints")
    where = "WHERE table_schema = :schema AND table_name = :table"
    params = {"schema": target.schema, "table": target.table, "config_id": fingerprinter.config_id,
              "settings": json.dumps(fingerprinter.settings, sort_keys=True), "cursor": cursor}
    steps.append(Step(f"UPDATE {REGISTRY_TABLE} SET config_id = :config_id, settings = CAST(:settings AS jsonb), "
                      f"updated_at = now() {where}", f"record {fingerprinter.config_id} for {target.table}", params))
    steps.append(Step(f"DELETE FROM {PROGRESS_TABLE} WHERE table_schema = :schema AND table_name IN (:table, :cursor)",
                      "forget backfill cursors", params))
    return _pg(tuple(steps))
