"""Attach simsql to an existing table and remove it again, on a live connection.

Each operation is three steps: read the catalog (:mod:`.catalog`), describe the DDL (the
backend's describer, :attr:`simsql.dialects.Backend.ddl`), run it bounded in time
(:mod:`.apply`). The checks sit between the first two, so a refusal leaves the database exactly
as it was:

* simsql never adopts an object it did not create: a column, side table or trigger that
  already holds one of simsql's names is a conflict, named in the error (choose another
  ``prefix``), unless the catalog proves simsql made it: the columns and trigger (body
  included) of a mixin model's ``create_all``, whose stored fingerprints are of the
  configuration attached (:func:`.catalog.made_by_a_mixin`); those are recorded as they are;
* attaching again with the same settings changes nothing; with other settings it is refused
  (detach first), so no fingerprint of one configuration or text survives under another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import Connection

from ..dialects import backend
from ..dialects.ddl_plan import DDLPlan, TableFacts, TableShape
from ..schema.names import (
    ALL_BLOCKS,
    DEFAULT_PREFIX,
    PROGRESS_TABLE,
    Attachment,
    Names,
    block_layout,
    attached_configuration,
    layout_text,
)
from ..store import registry
from ..text.errors import ConfigMismatch, NotAttached, SchemaError
from ..text.fingerprint import Fingerprinter
from ..text.signature import BlockLayout
from ..text.vectors import AnyFingerprinter, VectorFingerprinter
from . import apply, catalog
from .lists import plan_drop_lists
from .vector_index import plan_drop_vector_index


@dataclass(frozen=True)
class AttachPlan:
    """What attaching a table will do; ``plan`` is empty when it is attached already."""

    target: TableShape
    names: Names
    plan: DDLPlan
    fingerprinter: AnyFingerprinter


def _same_attachment(entry: Attachment, target: TableShape, names: Names, fingerprinter: AnyFingerprinter) -> bool:
    if entry.config_id != fingerprinter.config_id:
        raise registry.mismatch(target.schema, target.table, entry, fingerprinter.config_id, fingerprinter.settings)
    return entry.source == target.source and entry.mode == names.recorded_mode and entry.prefix == names.prefix


def _configuration(
    fingerprinter: AnyFingerprinter | None, wide: bool | None, entry: Attachment | None, target: TableShape
) -> tuple[AnyFingerprinter, bool]:
    """The configuration to attach with, and whether it stores the wide signature: without a
    ``fingerprinter``, an attached table's recorded one (a ``wide`` that contradicts it is
    refused); a vector configuration is wide when ``wide`` says so, a text one as
    :func:`~simsql.schema.names.configuration_for` rules."""
    if fingerprinter is None and entry is not None:
        fingerprinter = registry.fingerprinter_from_settings(entry.settings)
        if wide is not None and wide != entry.names.wide:
            have = "has" if entry.names.wide else "does not have"
            raise SchemaError(
                f"{target.schema}.{target.table} is already attached and {have} the wide signature ({entry.config_id}); "
                f"move it with `simsql refingerprint --table {target.table}` "
                "(simsql.lifecycle.refingerprinting.refingerprint) rather than attaching again"
            )
        wide = entry.names.wide
    return attached_configuration(fingerprinter, wide)


def chosen_layout(
    wide_blocks: str | BlockLayout | None, wide: bool, entry: Attachment | None, where: str
) -> BlockLayout:
    """The wide block layout to attach with: ``wide_blocks`` (:func:`~simsql.schema.names.block_layout`
    checks it), else an attached table's recorded one, else the default 8 x 20. Refused
    (:class:`SchemaError`) for a table without the wide signature, and when it differs from an
    attached table's (a layout is moved by a refingerprint, not by attaching again)."""
    if wide_blocks is None:
        return entry.names.layout if entry is not None and entry.wide else block_layout(None)
    layout = block_layout(wide_blocks)
    if not wide:
        raise SchemaError(f"wide_blocks={layout_text(layout)!r} cuts the wide signature into blocks: pass wide=True too")
    if entry is not None and entry.wide and entry.names.layout != layout:
        raise SchemaError(
            f"{where} is already attached with wide blocks {layout_text(entry.names.layout)}; move it to "
            f"{layout_text(layout)} with `simsql refingerprint --table {entry.table_name} --wide-blocks {layout_text(layout)}` "
            "rather than attaching again"
        )
    return layout


def plan_attach(
    connection: Connection,
    table: str,
    source: Sequence[str],
    *,
    schema: str | None = None,
    fingerprinter: AnyFingerprinter | None = None,
    side_table: bool = False,
    prefix: str = DEFAULT_PREFIX,
    wide: bool | None = None,
    wide_blocks: str | BlockLayout | None = None,
) -> AttachPlan:
    """Read the catalog, check, and describe the attach DDL without running it. Without a
    ``fingerprinter``, an attached table keeps its recorded one (attaching again after the
    default changed is not a change of configuration), a new attachment gets the default of its
    kind. ``wide``: the wide 256-bit originality signature too (words 1-3 and the wide blocks),
    part of algorithm version 3 (:func:`simsql.schema.names.configuration_for`); ``None``: as the
    configuration says, or True when ``wide_blocks`` is given. ``wide_blocks``: how the wide
    signature is cut into indexed blocks (``"10x24"`` or a :class:`~simsql.text.signature.BlockLayout`;
    None: as recorded, or 8 x 20), :func:`chosen_layout`."""
    target = catalog.describe(connection, table, source, schema, vector=None)
    server = backend(connection)
    server.check_digest(connection)  # every attach path (attach_table, op.add_simhash, the CLI) plans here
    entry = registry.read(connection, table, target.schema)
    if entry is not None and catalog.attachment_state(connection, entry) == catalog.REPLACED:
        raise SchemaError(catalog.replaced_message(entry))
    wide = True if wide is None and wide_blocks is not None and entry is None else wide  # blocks of the wide signature
    fingerprinter, wide = _configuration(fingerprinter, wide, entry, target)
    layout = chosen_layout(wide_blocks, wide, entry, f"{target.schema}.{table}")
    vector = isinstance(fingerprinter, VectorFingerprinter)
    target = catalog.describe(connection, table, source, target.schema, vector=vector)  # text, or one vector column
    names = Names.for_table(table, prefix, "side_table" if side_table else "columns", wide=wide, layout=layout)
    if entry is not None:
        if _same_attachment(entry, target, names, fingerprinter):
            # finish what an older simsql, or a run that stopped halfway, left
            present = catalog.present(connection, target.schema, table, entry.names, recorded=True)
            return AttachPlan(target, entry.names, server.ddl.resume_attach(target, entry.names, fingerprinter, present), fingerprinter)
        raise SchemaError(
            f"{target.schema}.{table} is already attached ({entry.mode}, text from {', '.join(entry.source)}, "
            f"prefix {entry.prefix!r}); its fingerprints describe that text. Run `simsql detach --table {table}` "
            "first, then attach it with the new settings"
        )
    facts = catalog.require_table(connection, table, target.schema)
    conflicts = server.attach_conflicts(connection, facts, names)
    adopted = bool(conflicts) and _adoptable(connection, facts, names, target, fingerprinter)
    if conflicts and not adopted:
        raise SchemaError(_conflict_message(connection, facts, names, target, conflicts))
    if not registry.require_registry(connection):
        raise NotAttached("simsql's registry is not installed; run `simsql db upgrade` (or simsql.alembic.upgrade) first")
    if adopted:  # made by create_all of a mixin model where simsql was not installed: record it, as it is
        return AttachPlan(target, names, server.ddl.record(target, names, fingerprinter), fingerprinter)
    return AttachPlan(target, names, server.ddl.attach(target, names, fingerprinter), fingerprinter)


def _adoptable(connection: Connection, facts: TableFacts, names: Names, target: TableShape, fingerprinter: AnyFingerprinter) -> bool:
    """Whether the objects holding simsql's names are a mixin model's, exactly as simsql makes
    them (:func:`catalog.made_by_a_mixin`); :class:`ConfigMismatch` when they are but their
    fingerprints are of another configuration than ``fingerprinter``."""
    if isinstance(fingerprinter, VectorFingerprinter) or not catalog.made_by_a_mixin(connection, facts, names, target.source):
        return False
    if not catalog.stored_fingerprints_agree(connection, facts, names, target.source, fingerprinter):
        raise ConfigMismatch(
            f"{target.schema}.{target.table} has the columns and trigger of a simsql mixin model, but its stored "
            f"fingerprints are not of configuration {fingerprinter.config_id}: attach it with the model's "
            "__simhash_fingerprinter__ (simsql.attach_table(..., fingerprinter=...)); nothing was changed"
        )
    return True


def _conflict_message(connection: Connection, facts: TableFacts, names: Names, target: TableShape, conflicts: list[str]) -> str:
    """Why attach refuses objects that hold simsql's names, and what to do: the other ``--wide``
    when they are a mixin model's of the other kind, else another prefix."""
    other = names.with_wide(not names.wide)
    if names.side is None and catalog.made_by_a_mixin(connection, facts, other, target.source):
        mixin, option = ("WideSimHashMixin", "--wide / wide=True") if other.wide else ("SimHashMixin", "--no-wide / wide=False")
        return (
            f"{', '.join(conflicts)} were made by a simsql.{mixin} model (create_all): attach with {option} to "
            "adopt them as they are"
        )
    return (
        f"{', '.join(conflicts)} already exist(s) and simsql did not create them; simsql never adopts "
        "or drops objects it did not create. Attach with another column prefix (--prefix / prefix=)"
    )


def add_simhash(
    connection: Connection,
    table: str,
    source: Sequence[str],
    *,
    schema: str | None = None,
    fingerprinter: AnyFingerprinter | None = None,
    side_table: bool = False,
    prefix: str = DEFAULT_PREFIX,
    lock_timeout: str | None = "5s",
    statement_timeout: str | None = "10min",
    wide: bool | None = None,
    wide_blocks: str | BlockLayout | None = None,
) -> TableShape:
    """Attach simsql to ``table`` in the connection's transaction: fingerprint columns (or a
    side table), the trigger that derives blocks and drops stale fingerprints, and a registry
    entry. Indexes are separate (:func:`create_simhash_indexes`) so they can be built
    concurrently. Every statement, catalog reads included, is bounded by the timeouts.
    ``wide_blocks``: the wide signature's block layout (:func:`plan_attach`)."""
    timeouts = apply.Timeouts(lock_timeout, statement_timeout)
    with apply.bounded(connection, timeouts):
        planned = plan_attach(
            connection, table, source, schema=schema, fingerprinter=fingerprinter, side_table=side_table, prefix=prefix,
            wide=wide, wide_blocks=wide_blocks,
        )
        apply.run(connection, planned.plan, timeouts)
    registry.forget(connection.engine)
    return planned.target


def attached_names(connection: Connection, table: str, schema: str | None) -> tuple[str, Attachment]:
    schema = schema or registry.current_schema(connection)
    entry = registry.read(connection, table, schema)
    if entry is None:
        raise catalog.not_attached(schema, table)
    return schema, entry


def describe_indexes(
    connection: Connection, schema: str, names: Names, keys: Sequence[str], *, concurrently: bool = False
) -> DDLPlan:
    """Read the catalog and describe the block indexes of ``names.holder`` (key columns
    ``keys``): the one place index builds are planned. The holder may not exist yet (an attach
    plans its indexes before it runs); what exists is kept, what a failed concurrent build left
    invalid is rebuilt, a partitioned holder built concurrently is built partition by partition,
    and a server that builds every index online does so whatever ``concurrently`` says."""
    present = catalog.present(connection, schema, names.table, names, partitions=concurrently)
    return backend(connection).ddl.create_indexes(schema, names, keys, concurrently=concurrently, present=present)


def plan_indexes(connection: Connection, table: str, *, schema: str | None = None, concurrently: bool = False) -> DDLPlan:
    """:func:`describe_indexes` for an attached table, from its registry entry."""
    schema, entry = attached_names(connection, table, schema)
    holder = catalog.table_facts(connection, entry.names.holder, schema)
    if holder is None:
        raise SchemaError(f"{schema}.{entry.names.holder} does not exist; attach simsql first")
    return describe_indexes(connection, schema, entry.names, holder.keys, concurrently=concurrently)


def create_simhash_indexes(
    connection: Connection, table: str, *, schema: str | None = None, concurrently: bool = False
) -> None:
    """Covering btree indexes on the four blocks. With ``concurrently=True`` the connection
    must be in autocommit mode; writes to the table continue while the indexes build. On
    MySQL/MariaDB every build is online (``INPLACE, LOCK=NONE``) and its metadata-lock waits
    are bounded like any DDL, since other queries queue behind a waiting ``ALTER``."""
    online_anyway = backend(connection).online_index_builds
    timeouts = apply.INDEX_BUILD if concurrently and not online_anyway else apply.DDL_TIMEOUTS
    with apply.bounded(connection, apply.DDL_TIMEOUTS):
        plan = plan_indexes(connection, table, schema=schema, concurrently=concurrently)
    apply.run(connection, plan, timeouts)


def drop_simhash_indexes(
    connection: Connection, table: str, *, schema: str | None = None, concurrently: bool = False
) -> None:
    with apply.bounded(connection, apply.DDL_TIMEOUTS):
        schema, entry = attached_names(connection, table, schema)
        present = catalog.present(connection, schema, table, entry.names)
        plan = backend(connection).ddl.drop_indexes(schema, entry.names, concurrently=concurrently, present=present)
    apply.run(connection, plan)


def plan_detach(connection: Connection, table: str, *, schema: str | None = None) -> tuple[Attachment, DDLPlan]:
    """Read the catalog and describe what detaching ``table`` drops; refuses (nothing changed)
    while another object depends on it: a view over the fingerprint column, a user's index on
    it, a foreign key to the side table."""
    schema, entry = attached_names(connection, table, schema)
    server = backend(connection)
    server.check_identifier(table, "table name")
    facts = catalog.table_facts(connection, table, schema)
    if facts is None:  # dropped outside simsql: what the drop left of simsql's, and its records
        return entry, dropped_leftovers(connection, schema, entry) + forget_entry(connection, schema, entry.names)
    cursor = entry.names.refingerprint_cursor
    moving = registry.progress_exists(connection) and connection.execute(
        text(f"SELECT 1 FROM {PROGRESS_TABLE} WHERE table_schema = :s AND table_name = :t"), {"s": schema, "t": cursor}
    ).first() is not None
    # an unfinished move to version 3 in place added the wide columns: simsql's own too
    harmed = dependents(connection, schema, entry.names.with_wide(True) if moving else entry.names, facts)
    if harmed:
        raise SchemaError(
            f"detaching {schema}.{table} would drop objects simsql did not create: {'; '.join(harmed)}. "
            "Drop or change them first, then run detach again"
        )
    present = catalog.present(connection, schema, table, entry.names, recorded=True)
    plan = plan_drop_lists(connection, schema, entry.names, present) + plan_drop_vector_index(connection, schema, entry.names, entry.source[0])
    plan = plan + server.ddl.detach(facts, entry.names, entry.source, present)
    if moving:  # an unfinished refingerprint: what it staged goes first
        plan = describe_abandon(connection, catalog.describe(connection, table, entry.source, schema), entry.names, cursor) + plan
    return entry, plan


def describe_abandon(connection: Connection, target: TableShape, names: Names, cursor: str) -> DDLPlan:
    """What removes an unfinished refingerprint of ``target`` (attached as ``names``): its
    shadow set where the backend stages one, else what a move to version 3 in place added
    (:mod:`simsql.lifecycle.widen`). The attachment is left as it was."""
    server = backend(connection)
    if server.refingerprints_online:
        return server.ddl.unstage(target, names.shadow(wide=True, layout=ALL_BLOCKS), cursor)  # whatever blocks it staged
    present = catalog.present(connection, target.schema, target.table, names.with_wide(True))
    marked = registry.progress_config(connection, target.schema, names.set_aside_marker) is not None
    return server.ddl.unwiden(target, names, cursor, present, set_aside=not server.alters_columns_beside_indexed_blocks, marked=marked)


def dropped_leftovers(connection: Connection, schema: str, entry: Attachment) -> DDLPlan:
    """What simsql created for a table dropped outside it that the drop left behind: its side
    table (and a refingerprint's shadow side table), PostgreSQL's trigger functions. Refuses
    (:class:`SchemaError`, nothing changed) while an object simsql did not create depends on a
    side table, as detaching a table still there does."""
    sides: list[str] = []
    harmed: list[str] = []
    for names in (entry.names, entry.names.shadow()):
        if names.side is None or catalog.table_facts(connection, names.side, schema) is None:
            continue
        sides.append(names.side)
        found = catalog.dependents(connection, schema, names.side, [], own=names.indexes)
        harmed += [d for d in found if not _side_constraint(d, schema, names.side)]
    if harmed:
        raise SchemaError(
            f"{schema}.{entry.table_name} was dropped outside simsql; detaching it drops its side table, on which "
            f"objects simsql did not create depend: {'; '.join(harmed)}. Drop or change them first, then run detach again"
        )
    return backend(connection).ddl.drop_leftovers(schema, sides, entry.names)


def forget_entry(connection: Connection, schema: str, names: Names) -> DDLPlan:
    """Clear what simsql recorded of a table dropped outside it: its registry entry, its
    backfill and refingerprint cursors."""
    ddl, progress = backend(connection).ddl, registry.progress_exists(connection)
    plan = ddl.forget(schema, names.table, progress=progress)
    if progress:
        plan = plan + DDLPlan(ddl.forget(schema, names.refingerprint_cursor).steps[1:])
    return plan


def dependents(connection: Connection, schema: str, names: Names, facts: TableFacts) -> list[str]:
    """Objects simsql did not create that depend on what detaching would drop."""
    if names.side is None:
        ours = [c for c in names.added_columns if c in facts.columns]
        if not ours:  # a table replaced outside simsql: nothing of simsql's is left on it
            return []
        return catalog.dependents(connection, schema, names.table, ours, own=(*names.indexes, names.part_index))
    if catalog.table_facts(connection, names.side, schema) is None:
        return []
    found = catalog.dependents(connection, schema, names.side, [], own=names.indexes)
    return [d for d in found if not _side_constraint(d, schema, names.side)]


def _side_constraint(found: str, schema: str, side: str) -> bool:
    """Whether a dependent is a constraint of the side table itself (dropped with it). The
    server names the table as ``search_path`` lets it: bare, or qualified (each part quoted
    only where it needs to be) when its schema is not on the path."""
    if not found.startswith("constraint ") or " on table " not in found:
        return False
    owner = found.rsplit(" on table ", 1)[1]
    spelled = [(part, '"' + part.replace('"', '""') + '"') for part in (schema, side)]
    return owner in {side, spelled[1][1]} | {f"{s}.{t}" for s in spelled[0] for t in spelled[1]}


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
        recorded = registry.fingerprinter_from_settings(entry.settings)
        if not isinstance(recorded, Fingerprinter):
            raise SchemaError(f"{entry.table_schema}.{entry.table_name} is signed from a vector column, not text")
        return recorded
    if fingerprinter.config_id != entry.config_id:
        raise registry.mismatch(entry.table_schema, entry.table_name, entry, fingerprinter.config_id, fingerprinter.settings)
    return fingerprinter


__all__ = [
    "AttachPlan",
    "add_simhash",
    "describe_abandon",
    "describe_indexes",
    "create_simhash_indexes",
    "drop_simhash",
    "drop_simhash_indexes",
    "plan_attach",
    "plan_detach",
    "plan_indexes",
]
