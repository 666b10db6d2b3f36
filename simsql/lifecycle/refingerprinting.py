"""Move an attached table's fingerprints to another configuration, online and resumably.

Fingerprints of two configurations are never comparable, so a table must not be queried as
if it held one while it holds a mix. The move keeps the attachment as it is until the very
end:

1. **stage** (one short transaction): a second, *shadow* fingerprint set beside the current
   one (:meth:`simsql.schema.names.Names.shadow`: columns ``<prefix>_next*`` or a side table
   ``<side>_next``) with its own trigger, which keeps the digest invariant for it exactly as
   for the attachment: a writer that changes a row's text drops its shadow fingerprint too.
   Its resume cursor is recorded in the same transaction.
2. **fill**: the ordinary keyset backfill, run on the shadow set with the new configuration
   (resumable after any kill: each batch commits its fingerprints with its cursor). Queries
   meanwhile use the current set and configuration, complete and untouched.
3. **index**: the shadow's block indexes, built concurrently.
4. **switch** (one transaction, bounded by ``lock_timeout``): the table (and its side tables)
   locked exclusively, the rows written since the fill are fingerprinted under the lock (so
   the new set is complete), the old trigger and fingerprints are dropped, the shadow set
   takes the attachment's names, and the registry entry moves to the new configuration.
   Readers see the old table or the new one, never a mix; a query with the old
   configuration is refused from then on.

Writers during the switch. The switch takes the one lock it needs (``ACCESS EXCLUSIVE``)
before anything else, while it holds nothing a writer could wait for: so it waits for open
writers and readers to finish (at most ``lock_timeout``), and they wait for it, but no cycle
can form and nobody gets a deadlock error. (It used to take ``SHARE ROW EXCLUSIVE`` and then
need ``ACCESS EXCLUSIVE`` for its DDL: a writer that had read the table and then waited to
write closed a cycle.) The lock is held for the catch-up of the last rows and the DDL, a
fraction of a second on a table whose writers the fill kept up with. A writer configured with
the old Fingerprinter whose write lands after the switch is refused by the confirmation every
ORM write makes in its own transaction (:func:`simsql.store.registry.confirm`), so no fingerprint
of the old configuration enters the moved table through simsql.

Killed anywhere, a rerun continues: before the switch it finds its cursor and goes on; the
switch is atomic. Simpler ways were rejected: updating fingerprints in place mixes the two
configurations for the whole run; copying into a new table needs every writer redirected.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Engine, column, select, table
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from ..dialects import Backend, backend
from ..dialects.batch import Job
from ..dialects.ddl_plan import TableShape
from ..schema.layout import MAX_BLOCK_WIDTH, MIN_BLOCK_WIDTH
from ..schema.names import WIDE_LAYOUT, Attachment, Names, block_layout, layout_text
from ..schema.urls import engine_for
from ..store import registry
from ..text.errors import LockTimeout, SchemaError, UnsupportedDatabase
from ..text.fingerprint import ALGORITHM_VERSION, Fingerprinter
from ..text.signature import BlockLayout
from . import apply, backfill, catalog, widen
from .attach import dependents, describe_abandon, describe_indexes


@dataclass(frozen=True)
class RefingerprintResult:
    """What a refingerprint run did. ``switched``: the table now holds ``to_config`` only."""

    schema: str
    table: str
    from_config: str
    to_config: str
    rows_fingerprinted: int
    rows_at_switch: int
    resumed: bool
    switched: bool
    seconds: float
    switch_seconds: float = 0.0
    """How long the switch held the table's lock (writers waited that long at most)."""


def cursor_key(table: str) -> str:
    """Key of a refingerprint's cursor in ``simsql_backfill`` (beside the table's own)."""
    return Names(table).refingerprint_cursor


@dataclass(frozen=True)
class _Move:
    engine: Engine
    entry: Attachment
    target: TableShape
    to: Fingerprinter
    layout: BlockLayout = WIDE_LAYOUT
    """The wide block layout of the new set (the attachment's own unless ``wide_blocks`` moves it)."""

    @property
    def names(self) -> Names:
        return self.entry.names

    @property
    def shadow(self) -> Names:
        """The new set: with the wide signature when ``to`` has it (algorithm version 3), cut
        into the blocks of :attr:`layout`."""
        return self.entry.names.shadow(wide=self.to.wide, layout=self.layout)

    @property
    def moves_layout(self) -> bool:
        """A wide table whose wide blocks move to another layout."""
        return self.to.wide and self.entry.wide and self.entry.names.layout != self.layout

    @property
    def in_place(self) -> bool:
        """A move from version 2 to version 3 of the same settings: the fingerprints stay, the
        wide signature is added (:mod:`simsql.lifecycle.widen`); or the rest of one whose
        switch was recorded already. Not a move of a wide table's blocks to another layout."""
        if not self.to.wide or self.moves_layout:
            return False
        return self.entry.config_id in (replace(self.to, version=ALGORITHM_VERSION).config_id, self.to.config_id)

    @property
    def nothing_to_do(self) -> bool:
        return self.entry.config_id == self.to.config_id and not self.moves_layout

    @property
    def cursor(self) -> str:
        return cursor_key(self.target.table)

    @property
    def label(self) -> str:
        return f"{self.target.schema}.{self.target.table}"

    def job(self) -> Job:
        return Job(
            self.target.schema, self.target.table, self.target.keys, self.target.key_types, self.target.source,
            self.shadow, self.to, cursor=self.cursor,
        )


def _table_of(connection: Connection, target: type | str, schema: str | None) -> tuple[str, str]:
    if isinstance(target, str):
        return target, schema or registry.current_schema(connection)
    table: Any = getattr(target, "__table__", None)
    if table is None:
        raise TypeError(f"expected a table name or a mapped class, got {target!r}")
    return table.name, table.schema or schema or registry.current_schema(connection)


def _prepare(
    engine: Engine, target: type | str, schema: str | None, to: Fingerprinter, timeouts: apply.Timeouts, abandon: bool,
    wide_blocks: str | BlockLayout | None = None,
) -> tuple[_Move, str | None]:  # fmt: skip
    """Read the registry and catalog, refuse what cannot be moved (nothing changed then)."""
    with engine.connect() as connection, apply.bounded(connection, timeouts):
        backend(connection).check_server(connection)
        table, schema = _table_of(connection, target, schema)
        entry = registry.read(connection, table, schema)
        if entry is None:
            raise catalog.not_attached(schema, table)
        staged = registry.progress_config(connection, schema, cursor_key(table))
        if staged is not None and staged != to.config_id and not abandon:
            raise SchemaError(
                f"a refingerprint of {schema}.{table} to {staged} is in progress; run it again with that "
                f"configuration to finish it, or abandon it with refingerprint(..., abandon=True) "
                f"(`simsql refingerprint --abandon`)"
            )
        holder = catalog.table_facts(connection, entry.names.holder, schema)
        if holder is None or entry.names.digest not in holder.columns:
            raise SchemaError(
                f"{schema}.{table} was attached by simsql 0.1 (no {entry.names.digest} column); upgrade it first "
                f"with `simsql attach --table {table}` and the same settings (fingerprints are kept)"
            )
        if wide_blocks is not None and not to.wide:
            raise SchemaError(f"wide_blocks={layout_text(block_layout(wide_blocks))!r} cuts the wide signature: move to a version 3 configuration")
        layout = entry.names.layout if wide_blocks is None else block_layout(wide_blocks)
        move = _Move(engine, entry, catalog.describe(connection, table, entry.source, schema), to, layout)
        if staged is None and not move.nothing_to_do:
            _refuse_conflicts(connection, move)
        if staged is not None and not abandon:
            _refuse_other_blocks(connection, move)
    return move, staged


def _refuse_other_blocks(connection: Connection, move: _Move) -> None:
    """A staged run resumed with another layout than it staged is refused: another block count
    (its shadow columns are of that count), or another width (read off the rows it filled:
    :func:`_staged_width`), which would leave the registry recording a width its blocks were
    not cut with."""
    shadow, schema = move.shadow, move.target.schema
    if not shadow.wide or not backend(connection).refingerprints_online:
        return
    holder = catalog.table_facts(connection, shadow.holder, schema)
    if holder is None:
        return
    staged = sum(1 for i in range(64) if f"{shadow.prefix}_v{i}" in holder.columns)
    if staged and staged != move.layout.count:
        raise SchemaError(
            f"a refingerprint of {move.label} with {staged} wide blocks is in progress; run it again with the "
            f"wide_blocks it started with (--wide-blocks), or abandon it (`simsql refingerprint --abandon`)"
        )
    width = _staged_width(connection, schema, shadow) if staged else None
    if width is not None and width != move.layout.width:
        raise SchemaError(
            f"a refingerprint of {move.label} to wide blocks {staged}x{width} is in progress; run it again with the "
            f"wide_blocks it started with (--wide-blocks {staged}x{width}), or abandon it (`simsql refingerprint --abandon`)"
        )


def _staged_width(connection: Connection, schema: str, shadow: Names) -> int | None:
    """The width of the blocks a staged move cut, read off rows it already filled: block 0 is
    bits ``0..width-1`` of word 0, so each filled row's ``v0`` equals ``word0 & (2**width - 1)``
    for the width it was cut with. None when no filled row tells (none filled yet, or every row
    fits several widths, its high bits 0)."""
    holder = table(shadow.holder, column(shadow.fingerprint), column(f"{shadow.prefix}_v0"), schema=schema)
    word, block = holder.c[shadow.fingerprint], holder.c[f"{shadow.prefix}_v0"]
    rows = connection.execute(select(word, block).where(word.is_not(None), block.is_not(None)).limit(16)).all()
    widths = [
        w for w in range(MIN_BLOCK_WIDTH, MAX_BLOCK_WIDTH + 1)
        if rows and all(int(b) == int(f) & ((1 << w) - 1) for f, b in rows)
    ]  # fmt: skip
    return widths[0] if len(widths) == 1 else None


def _refuse_conflicts(connection: Connection, move: _Move) -> None:
    shadow, schema = move.shadow, move.target.schema
    facts = catalog.require_table(connection, move.target.table, schema)
    found = [f"column {c}" for c in shadow.added_columns if shadow.side is None and c in facts.columns]
    found += [f"trigger {t}" for t in shadow.functions if t in facts.triggers]
    if shadow.side and catalog.table_facts(connection, shadow.side, schema) is not None:
        found.append(f"table {shadow.side}")
    if move.to.wide and not move.names.wide:  # the names the wide signature will have
        wide = move.names.with_wide(True, move.layout)
        holder = catalog.table_facts(connection, wide.holder, schema)
        found += [f"column {c}" for c in (*wide.wide_words, *wide.wide_blocks) if holder and c in holder.columns]
        found += [f"trigger {t}" for t in (*wide.words_triggers, wide.widen_trigger) if t in facts.triggers]
    if found:
        raise SchemaError(
            f"{', '.join(found)} already exist(s) on {schema}.{move.target.table} and simsql did not create them "
            "(no refingerprint is recorded); rename them, then run again"
        )


def _side_keys(connection: Connection, move: _Move) -> tuple[str, str] | None:
    if not move.names.side or not move.shadow.side:
        return None
    server = backend(connection)
    new = server.primary_key_name(connection, move.target.schema, move.shadow.side)
    old = server.primary_key_name(connection, move.target.schema, move.names.side)
    return new, old


def _switch(move: _Move, timeouts: apply.Timeouts) -> tuple[int, float]:
    """Lock the table, fingerprint what writers wrote since the fill, swap, record: one
    transaction. The exclusive lock comes first, before the transaction holds anything (see
    the module's notes on writers during the switch)."""
    with move.engine.connect() as connection:
        server = backend(connection)
        base = server.qualified(move.target.schema, move.target.table)
        apply.set_timeouts(connection, timeouts)
        # Base table first, as ORM writers take it before its side table: the same order.
        tables = [move.target.table, *(side for side in (move.names.side, move.shadow.side) if side)]
        try:
            server.lock_exclusively(connection, move.target.schema, tables)
        except DBAPIError as error:
            if apply.timeout_kind(error) is None:
                raise
            connection.rollback()
            raise LockTimeout(
                f"the switch of {base} to {move.to.config_id} gave up after waiting {timeouts.lock} for its lock "
                f"(held by: {apply.blockers(connection, [base])}). The filled shadow fingerprints are kept: "
                "run the same refingerprint again"
            ) from error
        locked = time.perf_counter()
        facts = catalog.require_table(connection, move.target.table, move.target.schema)
        harmed = dependents(connection, move.target.schema, move.names, facts)
        if harmed:
            raise SchemaError(
                f"the switch of {base} would drop objects simsql did not create: {'; '.join(harmed)}. "
                "Drop or change them, then run again (the filled shadow fingerprints are kept)"
            )
        stored = backfill.fill_locked(connection, move.job())
        holder = move.names.holder
        partitions = [relation for relation, _, _ in catalog.partition_tree(connection, holder, move.target.schema)
                      if relation != holder] if catalog.require_table(connection, holder, move.target.schema).kind == "p" else []
        plan = server.ddl.switch(move.target, move.names, move.shadow, move.to, move.cursor, _side_keys(connection, move), partitions)
        apply.run(connection, plan, timeouts)
        connection.commit()
        held = time.perf_counter() - locked
    registry.forget(move.engine)
    return stored, held


def refingerprint(
    bind: Engine | str,
    target: type | str,
    *,
    to: Fingerprinter,
    schema: str | None = None,
    batch_size: int = 2000,
    max_batch_bytes: int = backfill.DEFAULT_MAX_BATCH_BYTES,
    workers: int | None = None,
    progress: backfill.ProgressCallback | None = None,
    lock_timeout: str | None = "5s",
    statement_timeout: str | None = "5min",
    index_lock_timeout: str | None = "10min",
    abandon: bool = False,
    wide_blocks: str | BlockLayout | None = None,
) -> RefingerprintResult:
    """Fingerprint every row of an attached table (its name, or a mapped class) again with
    ``to``, without downtime, then switch the table to ``to`` in one short transaction.

    Until the switch, the table keeps its configuration: queries and writers with it work as
    before, and the registry refuses ``to``. After it, only ``to`` is accepted (deploy it with
    the switch): an ORM write with the old configuration is refused from the switch's commit
    on, whatever it checked before; a query that checked the registry before trusts that
    check for at most ``registry.CHECK_TTL`` seconds, then is refused. Writers and readers
    wait for the switch's lock (never a deadlock), held for the last rows and the DDL.
    Interrupt it anywhere, even with SIGKILL:
    the same call resumes. ``abandon`` removes an unfinished run instead (the attachment is
    untouched). Timeouts as
    :func:`~simsql.backfill`; :class:`~simsql.text.errors.LockTimeout` if the switch cannot get
    its lock within ``lock_timeout`` (run again). ``wide_blocks``: the wide signature's block
    layout after the move (``"10x24"``; None: the table's own): a wide table of the same
    configuration moves its blocks alone, the same way (PostgreSQL; MySQL/MariaDB add the wide
    signature in place with the table's layout and move no layout)."""
    _check_arguments(to, batch_size, max_batch_bytes)
    started = time.perf_counter()
    timeouts = apply.Timeouts(lock_timeout, statement_timeout)
    engine = engine_for(bind) if isinstance(bind, str) else bind
    try:
        move, staged = _prepare(engine, target, schema, to, timeouts, abandon, wide_blocks)
        result: dict[str, Any] = dict(schema=move.target.schema, table=move.target.table, from_config=move.entry.config_id, to_config=to.config_id)
        if abandon and staged is not None:
            with engine.connect() as connection, apply.bounded(connection, apply.DDL_TIMEOUTS):
                plan = describe_abandon(connection, move.target, move.names, move.cursor)
            apply.run_on_engine(engine, plan, timeouts, relations=[move.label])
        if abandon or (staged is None and move.nothing_to_do):
            return RefingerprintResult(**result, rows_fingerprinted=0, rows_at_switch=0, resumed=False, switched=False,
                                       seconds=time.perf_counter() - started)
        options = backfill.FillOptions(timeouts, batch_size, max_batch_bytes, progress)
        filled, at_switch, held = _move(move, staged is None, options, workers, apply.Timeouts(index_lock_timeout, None))
    finally:
        if isinstance(bind, str):
            engine.dispose()
    return RefingerprintResult(**result, rows_fingerprinted=filled + at_switch, rows_at_switch=at_switch,
                               resumed=staged is not None, switched=True, seconds=time.perf_counter() - started,
                               switch_seconds=held)


def _check_arguments(to: Fingerprinter, batch_size: int, max_batch_bytes: int) -> None:
    if not isinstance(to, Fingerprinter):
        raise TypeError(f"to= must be a simsql.Fingerprinter, got {type(to).__name__}")
    for name, value in (("batch_size", batch_size), ("max_batch_bytes", max_batch_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")


def _refuse_offline_server(server: Backend, move: _Move) -> None:
    """A server whose backend cannot stage a second fingerprint set is refused before any DDL,
    unless the move adds the wide signature in place (version 2 to 3, the same settings)."""
    if not server.refingerprints_online and move.layout != move.names.layout:
        raise UnsupportedDatabase(
            f"refingerprint of {move.label} to wide blocks {layout_text(move.layout)}: on {server.describe_server()} simsql "
            "moves no block layout (it adds the wide signature in place with the table's own); detach the table, attach it "
            "with wide_blocks (--wide-blocks) and backfill"
        )
    if not server.refingerprints_online and not move.in_place:
        raise UnsupportedDatabase(
            f"refingerprint of {move.label} to {move.to.config_id}: on {server.describe_server()} simsql moves a table "
            f"only from algorithm version 2 to version 3 of the same settings (it adds the wide signature in place; this "
            f"table is {move.entry.config_id}); it does not run other moves there yet: detach the table, attach it with "
            "the new configuration and backfill"
        )


def _move(
    move: _Move, stage: bool, options: backfill.FillOptions, workers: int | None, index_timeouts: apply.Timeouts
) -> tuple[int, int, float]:
    """Stage (unless a run staged already), fill, index and switch: rows fingerprinted before
    the switch, rows fingerprinted under its lock, seconds the lock was held."""
    engine, timeouts, label = move.engine, options.timeouts, move.label
    server = backend(engine)
    _refuse_offline_server(server, move)
    if not server.refingerprints_online:
        return widen.move_in_place(engine, move.target, move.names, move.to, move.cursor, stage, options, workers, index_timeouts)
    if stage:
        apply.run_on_engine(engine, server.ddl.stage(move.target, move.shadow, move.to, move.cursor), timeouts, relations=[label])
    filled = backfill.fill(engine, move.job(), label, options, workers)
    keys = move.shadow.side_keys(move.target.keys) if move.shadow.side else move.target.keys
    with engine.connect() as connection, apply.bounded(connection, apply.DDL_TIMEOUTS):
        indexes = describe_indexes(connection, move.target.schema, move.shadow, keys, concurrently=True)
    apply.run_on_engine(engine, indexes, timeouts, relations=[label], concurrent_timeouts=index_timeouts)
    # Rows written while the indexes were built: here, not under the switch's lock.
    caught_up = backfill.fill(engine, move.job(), label, dataclasses.replace(options, progress=None), 0)
    at_switch, held = _switch(move, timeouts)
    return filled.rows_fingerprinted + caught_up.rows_fingerprinted, at_switch, held


__all__ = ["RefingerprintResult", "cursor_key", "refingerprint"]
