"""Attach simsql to an existing table and remove it again, on a live connection.

Each operation is three steps: read the catalog (:mod:`.catalog`), describe the DDL
(:mod:`.ddl`), run it bounded in time (:mod:`.apply`). The checks sit between the first two,
so a refusal leaves the database exactly as it was:

* simsql never adopts an object it did not create: a column, side table or trigger that
  already holds one of simsql's names is a conflict, named in the error (choose another
  ``prefix``);
* attaching again with the same settings changes nothing; with other settings it is refused
  (detach first), so no fingerprint of one configuration or text survives under another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import Connection

from .. import registry
from ..dialects import is_mysql, mysql
from ..errors import NotAttached, SchemaError
from ..fingerprint import DEFAULT, Fingerprinter
from ..schema import DEFAULT_PREFIX, PROGRESS_TABLE, Attachment, Names
from . import apply, catalog, ddl, mysql_ddl
from .ddl import Plan, Target


@dataclass(frozen=True)
class AttachPlan:
    """What attaching a table will do; ``plan`` is empty when it is attached already."""

    target: Target
    names: Names
    plan: Plan
    fingerprinter: Fingerprinter


def _conflicts(facts: catalog.TableFacts, names: Names, connection: Connection) -> list[str]:
    if is_mysql(connection.dialect):
        return _mysql_conflicts(facts, names, connection)
    found = []
    if names.side is None:
        found += [f"column {facts.name}.{c}" for c in names.added_columns if c in facts.columns]
    elif catalog.table_facts(connection, names.side, facts.schema) is not None:
        found.append(f"table {facts.schema}.{names.side}")
    found += [f"trigger {t} on {facts.name}" for t in names.functions if t in facts.triggers]
    return found


def _mysql_conflicts(facts: catalog.TableFacts, names: Names, connection: Connection) -> list[str]:
    """As on PostgreSQL, with MySQL's rules: column and index names compare case-insensitively,
    and a trigger name is taken in the whole schema, whichever table holds it."""
    found = []
    if names.side is None:
        columns = {c.lower() for c in facts.columns}
        found += [f"column {facts.name}.{c}" for c in names.added_columns if c.lower() in columns]
        indexes = {i.lower() for i in catalog.index_names(connection, facts.schema, facts.name)}
        found += [f"index {i} on {facts.name}" for i in names.indexes if i.lower() in indexes]
    elif catalog.table_facts(connection, names.side, facts.schema) is not None:
        found.append(f"table {facts.schema}.{names.side}")
    taken = {t.lower(): table for t, table in catalog.schema_triggers(connection, facts.schema).items()}
    found += [f"trigger {t} on {taken[t.lower()]}" for t in (*names.row_triggers, names.stale_function) if t.lower() in taken]
    return found


def _present(connection: Connection, target: Target, names: Names, *, recorded: bool) -> mysql_ddl.Present:
    """MySQL: what of ``names`` exists on ``target`` now (an attach that stopped halfway)."""
    holder = catalog.table_facts(connection, names.holder, target.schema)
    triggers = catalog.schema_triggers(connection, target.schema)
    return mysql_ddl.Present.of(
        columns=list(holder.columns) if holder is not None else (),
        triggers=[t for t, table in triggers.items() if table == target.table],
        indexes=catalog.index_names(connection, target.schema, names.holder) if holder is not None else (),
        side=names.side is not None and holder is not None,
        recorded=recorded,
    )


def _same_attachment(entry: Attachment, target: Target, names: Names, fingerprinter: Fingerprinter) -> bool:
    if entry.config_id != fingerprinter.config_id:
        raise registry.mismatch(target.schema, target.table, entry, fingerprinter.config_id)
    return entry.source == target.source and entry.mode == names.mode and entry.prefix == names.prefix


def plan_attach(
    connection: Connection,
    table: str,
    source: Sequence[str],
    *,
    schema: str | None = None,
    fingerprinter: Fingerprinter | None = None,
    side_table: bool = False,
    prefix: str = DEFAULT_PREFIX,
) -> AttachPlan:
    """Read the catalog, check, and describe the attach DDL without running it. Without a
    ``fingerprinter``, an attached table keeps its recorded one (attaching again after the
    default changed is not a change of configuration), a new attachment gets the default."""
    target = catalog.describe(connection, table, source, schema)
    if is_mysql(connection.dialect):
        mysql.check_digest(connection)  # every attach path (attach_table, op.add_simhash, the CLI) plans here
    names = Names.for_table(table, prefix, "side_table" if side_table else "columns")
    entry = registry.read(connection, table, target.schema)
    if fingerprinter is None:
        fingerprinter = DEFAULT if entry is None else registry.fingerprinter_from_settings(entry.settings)
    if entry is not None:
        if _same_attachment(entry, target, names, fingerprinter):
            if is_mysql(connection.dialect):  # finish what a run that stopped halfway left
                present = _present(connection, target, entry.names, recorded=True)
                return AttachPlan(target, entry.names, mysql_ddl.attach(target, entry.names, fingerprinter, present), fingerprinter)
            holder = catalog.table_facts(connection, entry.names.holder, target.schema)
            if holder is not None and entry.names.digest not in holder.columns:
                # attached by simsql 0.1: add the digest and today's trigger, keep the fingerprints
                return AttachPlan(target, entry.names, ddl.upgrade(target, entry.names), fingerprinter)
            return AttachPlan(target, entry.names, Plan(), fingerprinter)
        raise SchemaError(
            f"{target.schema}.{table} is already attached ({entry.mode}, text from {', '.join(entry.source)}, "
            f"prefix {entry.prefix!r}); its fingerprints describe that text. Run `simsql detach --table {table}` "
            "first, then attach it with the new settings"
        )
    facts = catalog.require_table(connection, table, target.schema)
    conflicts = _conflicts(facts, names, connection)
    if conflicts:
        raise SchemaError(
            f"{', '.join(conflicts)} already exist(s) and simsql did not create them; simsql never adopts "
            "or drops objects it did not create. Attach with another column prefix (--prefix / prefix=)"
        )
    if not registry.require_registry(connection):
        raise NotAttached("simsql's registry is not installed; run `simsql db upgrade` (or simsql.alembic.upgrade) first")
    describe = mysql_ddl.attach if is_mysql(connection.dialect) else ddl.attach
    return AttachPlan(target, names, describe(target, names, fingerprinter), fingerprinter)


def add_simhash(
    connection: Connection,
    table: str,
    source: Sequence[str],
    *,
    schema: str | None = None,
    fingerprinter: Fingerprinter | None = None,
    side_table: bool = False,
    prefix: str = DEFAULT_PREFIX,
    lock_timeout: str | None = "5s",
    statement_timeout: str | None = "10min",
) -> Target:
    """Attach simsql to ``table`` in the connection's transaction: fingerprint columns (or a
    side table), the trigger that derives blocks and drops stale fingerprints, and a registry
    entry. Indexes are separate (:func:`create_simhash_indexes`) so they can be built
    concurrently. Every statement, catalog reads included, is bounded by the timeouts."""
    timeouts = apply.Timeouts(lock_timeout, statement_timeout)
    with apply.bounded(connection, timeouts):
        planned = plan_attach(
            connection, table, source, schema=schema, fingerprinter=fingerprinter, side_table=side_table, prefix=prefix
        )
        apply.run(connection, planned.plan, timeouts)
    registry.forget(connection.engine)
    return planned.target


def attached_names(connection: Connection, table: str, schema: str | None) -> tuple[str, Attachment]:
    schema = schema or registry.current_schema(connection)
    entry = registry.read(connection, table, schema)
    if entry is None:
        raise NotAttached(f"{schema}.{table} is not attached to simsql; run `simsql attach --table {table}` first")
    return schema, entry


def plan_indexes(connection: Connection, table: str, *, schema: str | None = None, concurrently: bool = False) -> Plan:
    schema, entry = attached_names(connection, table, schema)
    if is_mysql(connection.dialect):  # always online there; an index that exists is kept
        present = mysql_ddl.Present.of(indexes=catalog.index_names(connection, schema, entry.names.holder))
        return mysql_ddl.create_indexes(schema, entry.names, present=present)
    state = catalog.index_state(connection, schema, entry.names)
    return ddl.create_indexes(schema, entry.names, state.holder_keys, concurrently=concurrently, invalid=state.invalid)


def create_simhash_indexes(
    connection: Connection, table: str, *, schema: str | None = None, concurrently: bool = False
) -> None:
    """Covering btree indexes on the four blocks. With ``concurrently=True`` the connection
    must be in autocommit mode; writes to the table continue while the indexes build. On
    MySQL/MariaDB every build is online (``INPLACE, LOCK=NONE``) and its metadata-lock waits
    are bounded like any DDL, since other queries queue behind a waiting ``ALTER``."""
    timeouts = apply.INDEX_BUILD if concurrently and not is_mysql(connection.dialect) else apply.DDL
    with apply.bounded(connection, apply.DDL):
        plan = plan_indexes(connection, table, schema=schema, concurrently=concurrently)
    apply.run(connection, plan, timeouts)


def drop_simhash_indexes(
    connection: Connection, table: str, *, schema: str | None = None, concurrently: bool = False
) -> None:
    with apply.bounded(connection, apply.DDL):
        schema, entry = attached_names(connection, table, schema)
        if is_mysql(connection.dialect):
            present = mysql_ddl.Present.of(indexes=catalog.index_names(connection, schema, entry.names.holder))
            plan = mysql_ddl.drop_indexes(schema, entry.names, present)
        else:
            plan = ddl.drop_indexes(schema, entry.names, concurrently=concurrently)
    apply.run(connection, plan)


def plan_detach(connection: Connection, table: str, *, schema: str | None = None) -> tuple[Attachment, Plan]:
    """Read the catalog and describe what detaching ``table`` drops; refuses (nothing changed)
    while another object depends on it: a view over the fingerprint column, a user's index on
    it, a foreign key to the side table."""
    schema, entry = attached_names(connection, table, schema)
    facts = catalog.require_table(connection, table, schema)
    harmed = dependents(connection, schema, entry.names, facts)
    if harmed:
        raise SchemaError(
            f"detaching {schema}.{table} would drop objects simsql did not create: {'; '.join(harmed)}. "
            "Drop or change them first, then run detach again"
        )
    if is_mysql(connection.dialect):
        # the triggers' undo needs their text: the recorded source, the table's key as it is now
        target = Target(schema, table, facts.keys, facts.key_types, tuple(entry.source))
        present = _present(connection, target, entry.names, recorded=True)
        return entry, mysql_ddl.detach(target, entry.names, present)
    plan = ddl.detach(schema, entry.names, triggers=facts.triggers, columns=list(facts.columns))
    cursor = entry.names.refingerprint_cursor
    if registry.progress_exists(connection) and connection.execute(
        text(f"SELECT 1 FROM {PROGRESS_TABLE} WHERE table_schema = :s AND table_name = :t"), {"s": schema, "t": cursor}
    ).first():
        # an unfinished refingerprint: its shadow set goes first
        plan = ddl.unstage(catalog.describe(connection, table, entry.source, schema), entry.names.shadow(), cursor) + plan
    return entry, plan


def dependents(connection: Connection, schema: str, names: Names, facts: catalog.TableFacts) -> list[str]:
    """Objects simsql did not create that depend on what detaching would drop."""
    if names.side is None:
        ours = [c for c in names.added_columns if c in facts.columns]
        return catalog.dependents(connection, schema, names.table, ours, own=names.indexes)
    if catalog.table_facts(connection, names.side, schema) is None:
        return []
    found = catalog.dependents(connection, schema, names.side, [], own=names.indexes)
    return [d for d in found if not (d.startswith("constraint ") and d.endswith(f" on table {names.side}"))]


def drop_simhash(
    connection: Connection,
    table: str,
    *,
    schema: str | None = None,
    lock_timeout: str | None = "5s",
    statement_timeout: str | None = "10min",
) -> Attachment:
    """Undo :func:`add_simhash` in the connection's transaction: triggers, functions, the
    columns or side table (their indexes with them) and the registry entry. Returns the removed
    entry (what a re-attach would need)."""
    timeouts = apply.Timeouts(lock_timeout, statement_timeout)
    with apply.bounded(connection, timeouts):
        entry, plan = plan_detach(connection, table, schema=schema)
        apply.run(connection, plan, timeouts)
    registry.forget(connection.engine)
    return entry


def check_fingerprinter(entry: Attachment, fingerprinter: Fingerprinter | None) -> Fingerprinter:
    """The Fingerprinter to use on an attached table: the given one if it matches, else the
    recorded one."""
    if fingerprinter is None:
        return registry.fingerprinter_from_settings(entry.settings)
    if fingerprinter.config_id != entry.config_id:
        raise registry.mismatch(entry.table_schema, entry.table_name, entry, fingerprinter.config_id)
    return fingerprinter


__all__ = [
    "AttachPlan",
    "add_simhash",
    "create_simhash_indexes",
    "drop_simhash",
    "drop_simhash_indexes",
    "plan_attach",
    "plan_detach",
    "plan_indexes",
]
