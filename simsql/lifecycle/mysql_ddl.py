"""Describe the DDL that attaches simsql to a MySQL/MariaDB table, and removes it again.

The MySQL twin of :mod:`simsql.lifecycle.ddl`: same functions, same :class:`Plan` of text
statements, nothing run here (:mod:`simsql.lifecycle.apply` runs a plan, Alembic's offline
mode prints one). The objects are exactly those the ORM creates for a ``SimHashMixin`` table or
the side table of :func:`simsql.attach` (same column types, generated expressions, covering
indexes and triggers, from the same functions), so a table attached live and one declared in
Python are the same.

Choices made for big, busy tables, where MySQL DDL is neither transactional nor, by default,
online:

* every change names its algorithm: columns are added and dropped ``ALGORITHM=INSTANT``
  (a metadata change, no rows touched), falling back to ``ALGORITHM=INPLACE, LOCK=NONE`` (an
  online rebuild that lets writers in) where the server cannot do it instantly; indexes are
  built and dropped ``INPLACE, LOCK=NONE``. A change the server could only make by copying the
  table or locking out writers is refused (:class:`~simsql.errors.WouldLockTable`), never made;
* stored and generated columns are added by separate statements (MariaDB adds ``VIRTUAL``
  columns instantly, but not together with other changes);
* each statement carries its undo, so a plan that stops halfway (a lock timeout, a refused
  algorithm) is taken back statement by statement and leaves the table as it found it;
* the registry row is written first: should the undo itself be blocked, what stays behind is
  recorded as simsql's, so running attach again finishes it and detach removes it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from ..dialects import block_expression_sql
from ..dialects.mysql import quote
from ..fingerprint import Fingerprinter
from ..schema import REGISTRY_TABLE, Names
from ..storage import OrmTrigger
from .ddl import REGISTRY_INSERT, Plan, Step, Target, forget, registry_values

DIALECT = "mysql"
FINGERPRINT_TYPE = "BIGINT UNSIGNED"
""":class:`simsql.SimHash` on MySQL: the 64 bits as they are."""
DIGEST_TYPE = "CHAR(32)"
"""``simsql.types.TEXT_DIGEST`` on MySQL: ``MD5()``'s 32 hex digits."""
BLOCK_TYPE = "INT"
INSTANT = "ALGORITHM=INSTANT"
ONLINE = "ALGORITHM=INPLACE, LOCK=NONE"


def qualified(schema: str, name: str) -> str:
    return f"{quote(schema)}.{quote(name)}"


def _plan(steps: Sequence[Step]) -> Plan:
    return Plan(tuple(steps), DIALECT)


@dataclass(frozen=True)
class Present:
    """What of an attachment exists already: after a run that stopped halfway and could not
    be undone, attaching again (recorded, same settings) adds only the rest. Names compare
    case-insensitively, as MySQL compares column and index names."""

    columns: frozenset[str] = frozenset()
    triggers: frozenset[str] = frozenset()
    indexes: frozenset[str] = frozenset()
    side: bool = False
    recorded: bool = False

    @classmethod
    def of(
        cls, columns: Sequence[str] = (), triggers: Sequence[str] = (), indexes: Sequence[str] = (),
        side: bool = False, recorded: bool = False,
    ) -> Present:  # fmt: skip
        def fold(names: Sequence[str]) -> frozenset[str]:
            return frozenset(n.lower() for n in names)

        return cls(fold(columns), fold(triggers), fold(indexes), side, recorded)

    def has_column(self, name: str) -> bool:
        return name.lower() in self.columns

    def has_trigger(self, name: str) -> bool:
        return name.lower() in self.triggers

    def has_index(self, name: str) -> bool:
        return name.lower() in self.indexes


def _alter(schema: str, table: str, changes: Sequence[str], algorithm: str) -> str:
    return f"ALTER TABLE {qualified(schema, table)} {', '.join(changes)}, {algorithm}"


def _blocks(names: Names) -> list[tuple[str, str]]:
    """(block column, its definition): generated from the fingerprint, VIRTUAL as the ORM's."""
    fingerprint = quote(names.fingerprint)
    return [
        (name, f"{quote(name)} {BLOCK_TYPE} GENERATED ALWAYS AS ({block_expression_sql(fingerprint, i, DIALECT)}) VIRTUAL")
        for i, name in enumerate(names.blocks)
    ]


def _column_steps(schema: str, table: str, names: Names, present: Present, *, adding: bool) -> list[Step]:
    """Adding: stored columns, then the generated ones; dropping: the reverse. Each statement
    instant where the server can, else online; its undo is the opposite statement."""
    stored = [(names.fingerprint, f"{quote(names.fingerprint)} {FINGERPRINT_TYPE} NULL"),
              (names.digest, f"{quote(names.digest)} {DIGEST_TYPE} NULL")]  # fmt: skip
    groups = [("stored", stored), ("generated", _blocks(names))]
    steps = []
    for kind, columns in groups if adding else reversed(groups):
        wanted = [(n, d) for n, d in columns if present.has_column(n) != adding]
        if not wanted:
            continue
        add = [f"ADD COLUMN {definition}" for _, definition in wanted]
        drop = [f"DROP COLUMN {quote(name)}" for name, _ in reversed(wanted)]
        forward, backward = (add, drop) if adding else (drop, add)
        what = f"{'add' if adding else 'drop'} {kind} columns {', '.join(n for n, _ in wanted)} {'to' if adding else 'from'} {schema}.{table}"
        steps.append(Step(
            _alter(schema, table, forward, INSTANT), what,
            undo=_alter(schema, table, backward, INSTANT), fallback=_alter(schema, table, forward, ONLINE), online=True,
        ))  # fmt: skip
    return steps


def triggers(target: Target, names: Names) -> list[tuple[str, str]]:
    """(name, CREATE TRIGGER) of the attachment: the row rule before insert and before update
    (columns mode), or the stale-row rule after update (side-table mode). The ORM's own
    description (:class:`simsql.storage.OrmTrigger`), so both install the same triggers."""
    trigger = OrmTrigger(names, target.source, target.keys)
    return list(zip(trigger.mysql_names, trigger.create_mysql(target.schema)))


def _drop_trigger(schema: str, name: str) -> str:
    return f"DROP TRIGGER {qualified(schema, name)}"


def _create_triggers(target: Target, names: Names, present: Present) -> list[Step]:
    return [
        Step(sql, f"create trigger {name} on {target.schema}.{target.table}", undo=_drop_trigger(target.schema, name))
        for name, sql in triggers(target, names)
        if not present.has_trigger(name)
    ]


def side_table_sql(target: Target, names: Names) -> str:
    """The side table as the ORM declares it: the key (the base table's key columns and types),
    fingerprint, digest, generated blocks, deleted with its row."""
    assert names.side is not None
    side_keys = names.side_keys(target.keys)
    keys = ", ".join(f"{quote(k)} {t} NOT NULL" for k, t in zip(side_keys, target.key_types))
    own = ", ".join(quote(k) for k in side_keys)
    blocks = ", ".join(definition for _, definition in _blocks(names))
    return (
        f"CREATE TABLE {qualified(target.schema, names.side)} ({keys}, "
        f"{quote(names.fingerprint)} {FINGERPRINT_TYPE} NULL, {quote(names.digest)} {DIGEST_TYPE} NULL, {blocks}, "
        f"PRIMARY KEY ({own}), FOREIGN KEY ({own}) REFERENCES {qualified(target.schema, target.table)} "
        f"({', '.join(quote(k) for k in target.keys)}) ON DELETE CASCADE)"
    )


def record(target: Target, names: Names, fingerprinter: Fingerprinter) -> Plan:
    """The registry entry, written first (its undo deletes it)."""
    sql = REGISTRY_INSERT.format(settings=":settings", source=":source")
    params = registry_values(target, names, fingerprinter)
    params["source"] = json.dumps(params["source"])
    undo = f"DELETE FROM {REGISTRY_TABLE} WHERE table_schema = :table_schema AND table_name = :table_name"
    return _plan([Step(sql, f"record {target.schema}.{target.table} in {REGISTRY_TABLE}", params, undo=undo)])


def attach(target: Target, names: Names, fingerprinter: Fingerprinter, present: Present = Present()) -> Plan:
    """The registry entry, then the columns (or side table) and triggers; what ``present``
    holds already is skipped. Indexes are :func:`create_indexes`."""
    steps = [] if present.recorded else list(record(target, names, fingerprinter).steps)
    if names.side:
        if not present.side:
            drop = f"DROP TABLE {qualified(target.schema, names.side)}"
            steps.append(Step(side_table_sql(target, names), f"create side table {target.schema}.{names.side}", undo=drop))
    else:
        steps += _column_steps(target.schema, target.table, names, present, adding=True)
    steps += _create_triggers(target, names, present)
    return _plan(steps)


def _index_columns(names: Names, block: str) -> str:
    """The block, then the fingerprint: what ``dialects.mysql``'s CREATE INDEX gives the ORM's
    block indexes (InnoDB appends the primary key to every secondary index by itself)."""
    return f"{quote(block)}, {quote(names.fingerprint)}"


def create_indexes(schema: str, names: Names, holder_keys: Sequence[str] = (), present: Present = Present()) -> Plan:
    """One online build per missing block index (writers carry on; only the metadata lock at
    its start and end waits, bounded)."""
    holder = names.holder
    steps = []
    for index, block in zip(names.indexes, names.blocks):
        if present.has_index(index):
            continue
        add = f"ADD INDEX {quote(index)} ({_index_columns(names, block)})"
        steps.append(Step(
            _alter(schema, holder, [add], ONLINE), f"build index {index} on {schema}.{holder}",
            undo=_alter(schema, holder, [f"DROP INDEX {quote(index)}"], ONLINE), online=True,
        ))  # fmt: skip
    return _plan(steps)


def drop_indexes(schema: str, names: Names, present: Present | None = None) -> Plan:
    """The block indexes (those ``present``; all when unknown, offline), online, in one statement."""
    dropped = [(i, b) for i, b in zip(names.indexes, names.blocks) if present is None or present.has_index(i)]
    if not dropped:
        return _plan([])
    drops = [f"DROP INDEX {quote(index)}" for index, _ in dropped]
    adds = [f"ADD INDEX {quote(index)} ({_index_columns(names, block)})" for index, block in dropped]
    return _plan([Step(
        _alter(schema, names.holder, drops, ONLINE), f"drop block indexes of {schema}.{names.holder}",
        undo=_alter(schema, names.holder, adds, ONLINE), online=True,
    )])  # fmt: skip


def detach(target: Target, names: Names, present: Present) -> Plan:
    """Remove what :func:`attach` and :func:`create_indexes` created, of what is ``present``:
    triggers first (a trigger naming a dropped column would fail every write), then indexes,
    generated and stored columns (or the side table), then the registry entry and cursor.
    Each statement but the last ones can be undone, so a detach that stops halfway puts the
    attachment back (fingerprints of dropped stored columns are gone: backfill refills them)."""
    steps = [
        Step(_drop_trigger(target.schema, name), f"drop trigger {name}", undo=sql)
        for name, sql in triggers(target, names)
        if present.has_trigger(name)
    ]
    if names.side:
        if present.side:
            steps.append(Step(
                f"DROP TABLE {qualified(target.schema, names.side)}", f"drop side table {target.schema}.{names.side}",
                undo=side_table_sql(target, names),
            ))  # fmt: skip
    else:
        steps += drop_indexes(target.schema, names, present).steps
        steps += _column_steps(target.schema, target.table, names, present, adding=False)
    return _plan(steps) + forget(target.schema, target.table)
