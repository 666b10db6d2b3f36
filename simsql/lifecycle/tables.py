"""The lifecycle of an attached table, on an engine: attach, detach, status.

These are what the command line runs (``simsql attach / detach / status``) and what a script
calls; each one reads the catalog, describes its DDL and runs it bounded in time, opening its
own transactions (``CREATE INDEX CONCURRENTLY`` needs autocommit). On MySQL/MariaDB the DDL is
online (:mod:`simsql.dialects.mysql_ddl`) and, not being transactional, undone statement by
statement when a run fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import Engine, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from ..dialects import backend
from ..dialects.ddl_plan import DDLPlan
from ..schema.names import DEFAULT_PREFIX, Attachment
from ..schema.urls import engine_for
from ..store import registry
from ..text.signature import BlockLayout
from ..text.vectors import AnyFingerprinter
from . import apply, catalog
from .attach import attached_names, describe_indexes, plan_attach, plan_detach
from .catalog import attachment_state
from .lists_status import ListsStatus, lists_status


def _engine(bind: Engine | str) -> Engine:
    return engine_for(bind) if isinstance(bind, str) else bind


def install_after_checking(engine: Engine, table: str, source: Sequence[str], schema: str | None) -> None:
    """simsql's own objects installed when missing (:func:`simsql.alembic.install`, as ``simsql
    attach`` does), once the table and its text columns are found: a typo installs nothing."""
    with engine.connect() as connection:  # their types are checked by the attach (text, or a vector)
        catalog.describe(connection, table, source, schema, vector=None)
    registry.install_when_needed(engine)


def attach_table(
    bind: Engine | str,
    table: str,
    source: Sequence[str],
    *,
    schema: str | None = None,
    fingerprinter: AnyFingerprinter | None = None,
    side_table: bool = False,
    prefix: str = DEFAULT_PREFIX,
    indexes: bool = True,
    concurrently: bool = True,
    lock_timeout: str | None = "5s",
    index_lock_timeout: str | None = "10min",
    wide: bool | None = None,
    wide_blocks: str | BlockLayout | None = None,
) -> Attachment:
    """Attach simsql to an existing table: columns (or a side table), trigger and registry
    entry in one transaction, then the block indexes (built concurrently by default; on a
    partitioned table, partition by partition). Run it again after a failure: finished steps
    are skipped, an index a failed concurrent build left invalid is rebuilt.

    ``wide=True`` (or a ``Fingerprinter(version=3)``: the signature is part of algorithm
    version 3, and ``wide=True`` alone means :data:`simsql.text.fingerprint.DEFAULT_WIDE`) adds the
    wide 256-bit originality signature (as ``WideSimHashMixin``): words
    1-3 beside the fingerprint and the blocks :func:`simsql.find_original` probes (``wide_blocks``:
    8 x 20 by default, ``"10x24"`` for millions of rows: docs/originality.md), kept current by the
    same triggers, recorded in the registry (``mode`` ``columns+wide``, ``columns+wide10x24``). On a
    table that has rows its block indexes are left to :func:`simsql.backfill`, which builds
    them once every row is filled: an index that exists while a backfill rewrites every row
    ends about twice the size of one built after it (BENCHMARKS.md). An empty table gets them
    at once.

    A :class:`~simsql.VectorFingerprinter` signs one vector column instead of text (an array,
    pgvector's ``vector``, JSON, or float32 bytes: docs/vectors.md); ``wide=True`` then adds the
    256-bit words of the vector's signature.

    Nothing changes when it refuses (an object simsql did not create holds one of its names,
    other settings than an existing attachment). DDL waits at most ``lock_timeout`` for its
    lock (others queue behind a waiting ``ALTER TABLE``); a concurrent index build waits at most
    ``index_lock_timeout`` for older transactions to end (it blocks nobody meanwhile).
    :class:`~simsql.text.errors.LockTimeout` names who held them.

    On MySQL/MariaDB: the registry entry, columns (``ALGORITHM=INSTANT``, else an online
    rebuild) or side table, triggers and indexes (``INPLACE, LOCK=NONE``) are separate
    statements, each committed at once; ``concurrently`` and ``index_lock_timeout`` do not
    apply (every wait for a metadata lock is bounded by ``lock_timeout``, since other queries
    queue behind it). If one fails, those before it are undone, so nothing changes; a table the
    server could only alter by copying it or locking out writers (a FULLTEXT index, say) is
    refused with :class:`~simsql.text.errors.WouldLockTable`. Should the undo itself be blocked,
    the error says what stayed, recorded as simsql's: run attach again to finish, or detach.
    simsql's own objects are installed first when missing, as ``simsql attach`` does."""
    engine = _engine(bind)
    install_after_checking(engine, table, source, schema)
    timeouts = apply.Timeouts(lock_timeout, "10min")
    spec = AttachSpec(schema, fingerprinter, side_table, prefix, wide, wide_blocks)
    with engine.connect() as connection:
        planned = describe_attach_table(connection, table, source, spec, timeouts, indexes=indexes, concurrently=concurrently)
    return run_attach_table(engine, planned, timeouts, index_lock_timeout)


@dataclass(frozen=True)
class AttachSpec:
    """How :func:`attach_table` attaches a table: where it is (``schema``; None: the
    connection's), which configuration (None: the recorded one, or the default), a side table
    or columns, the names' ``prefix``, whether with the wide signature (None: as the
    configuration says) and its block layout (``wide_blocks``; None: as recorded, or 8 x 20).
    What :func:`describe_attach_table` hands to :func:`simsql.lifecycle.attach.plan_attach`."""

    schema: str | None = None
    fingerprinter: AnyFingerprinter | None = None
    side_table: bool = False
    prefix: str = DEFAULT_PREFIX
    wide: bool | None = None
    wide_blocks: str | BlockLayout | None = None


class PlannedChange(NamedTuple):
    """An attach or detach described and not yet run: its plan, the ``schema.table`` it works
    on (named in lock-wait messages), and the table's schema and name."""

    plan: DDLPlan
    relation: str
    schema: str
    table: str


def describe_attach_table(
    connection: Connection,
    table: str,
    source: Sequence[str],
    spec: AttachSpec,
    timeouts: apply.Timeouts,
    *,
    indexes: bool = True,
    concurrently: bool = True,
) -> PlannedChange:
    """The first half of :func:`attach_table` (catalog reads, no change): what it will run.
    ``spec``: how (:class:`AttachSpec`). A
    wide attachment of a table with rows plans no index (:func:`simsql.backfill` builds them)."""
    with apply.bounded(connection, timeouts):
        server = backend(connection)
        server.check_server(connection)
        planned = plan_attach(
            connection, table, source, schema=spec.schema, fingerprinter=spec.fingerprinter,
            side_table=spec.side_table, prefix=spec.prefix, wide=spec.wide, wide_blocks=spec.wide_blocks,
        )  # fmt: skip
        names, target = planned.names, planned.target
        plan = planned.plan
        if indexes and not (names.wide and catalog.has_rows(connection, target.schema, target.table)):
            keys = names.side_keys(target.keys) if names.side else target.keys
            plan = plan + describe_indexes(connection, target.schema, names, keys, concurrently=concurrently)
        return PlannedChange(plan, server.qualified(target.schema, target.table), target.schema, table)


def run_attach_table(
    engine: Engine, planned: PlannedChange, timeouts: apply.Timeouts, index_lock_timeout: str | None
) -> Attachment:
    """The second half of :func:`attach_table`: run the plan (each step on connections of its
    own, concurrent index builds in autocommit) and read back the registry entry."""
    apply.run_on_engine(
        engine,
        planned.plan,
        timeouts,
        relations=[planned.relation],
        concurrent_timeouts=apply.Timeouts(index_lock_timeout, None),
    )
    registry.forget(engine)
    with engine.connect() as connection:
        entry = registry.read(connection, planned.table, planned.schema)
    assert entry is not None
    return entry


def detach_table(bind: Engine | str, table: str, *, schema: str | None = None, lock_timeout: str | None = "5s") -> Attachment:
    """Remove exactly what simsql created on ``table``: its trigger and function, the columns
    or side table with their indexes, the registry entry and backfill cursor. The table, its
    data, its own indexes and triggers are left as they were before attach.

    Refuses (:class:`~simsql.text.errors.SchemaError`, nothing changed) while another object depends
    on what would be dropped: a view over the fingerprint column, a user's index on it, a
    foreign key to the side table. Returns the removed registry entry.

    On MySQL/MariaDB the triggers go first, then the indexes (online), the generated and stored
    columns (instantly where the server can) or the side table; a statement that fails makes
    those before it be undone, so the attachment stays whole (its fingerprints kept unless the
    stored columns were already dropped)."""
    engine = _engine(bind)
    timeouts = apply.Timeouts(lock_timeout, "10min")
    with engine.connect() as connection:
        entry, planned = describe_detach_table(connection, table, schema, timeouts)
    run_detach_table(engine, planned, timeouts)
    return entry


def describe_detach_table(
    connection: Connection, table: str, schema: str | None, timeouts: apply.Timeouts
) -> tuple[Attachment, PlannedChange]:
    """The first half of :func:`detach_table` (catalog reads, no change): the entry it removes
    and what it will run."""
    with apply.bounded(connection, timeouts):
        server = backend(connection)
        server.check_server(connection)
        entry, plan = plan_detach(connection, table, schema=schema)
        return entry, PlannedChange(plan, server.qualified(entry.table_schema, table), entry.table_schema, table)


def run_detach_table(engine: Engine, planned: PlannedChange, timeouts: apply.Timeouts) -> None:
    """The second half of :func:`detach_table`: run its plan."""
    apply.run_on_engine(engine, planned.plan, timeouts, relations=[planned.relation])
    registry.forget(engine)


@dataclass(frozen=True)
class TableStatus:
    """One attached table: how, with which configuration, and how complete.

    ``rows_missing``: rows with text but no fingerprint (what a backfill would do).
    ``rows_stale``: fingerprints whose recorded text digest differs from the row's text now
    (writes that bypassed the triggers, e.g. ``session_replication_role = replica``), or that
    were stored without a digest. Both are 0 on a healthy, backfilled table.
    ``rows_no_text``: rows whose text has no words (empty, punctuation only), found so by a
    backfill: done, apart from ``rows_missing``.

    ``state``: ``"attached"``; ``"gone"`` when the table was dropped outside simsql,
    ``"replaced"`` when a table of that name exists without simsql's fingerprints (pandas'
    ``to_sql(if_exists="replace")``): counts are 0 then, and ``detach_table`` clears the entry;
    ``"unreadable"`` when counting failed (``problem`` says why). One such table never hides
    the others.
    """

    schema: str
    table: str
    mode: str
    prefix: str
    side_table: str | None
    source: tuple[str, ...]
    config_id: str
    settings: dict[str, Any]
    rows: int
    rows_fingerprinted: int
    rows_missing: int
    rows_stale: int
    state: str = "attached"
    problem: str | None = None
    rows_no_text: int = 0
    wide: bool = False
    """The table also stores the wide originality signature (``attach_table(..., wide=True)``)."""
    rows_missing_wide: int = 0
    """On a wide table: rows with text whose signature a backfill would still write (those of
    ``rows_missing``, and fingerprints stored without their words by a writer that knows only
    the 64 bits). 0 on a healthy, backfilled table, and on any other."""
    lists: ListsStatus | None = None
    """The table's partition lists (:mod:`simsql.lists`), or None without them."""


def _counts(connection: Connection, entry: Attachment) -> tuple[int, ...]:
    """rows, fingerprinted, missing, stale, unverified (a fingerprint without its text's digest),
    no text (text without words: no fingerprint, but the digest of the text a backfill found
    so, which the triggers clear when the text changes), and on a wide table the rows whose
    signature a backfill would write (missing, or a fingerprint without its words)."""
    names, server = entry.names, backend(connection)
    quote = server.quote
    base = server.qualified(entry.table_schema, entry.table_name)
    has_text = " OR ".join(f"b.{quote(c)} IS NOT NULL" for c in entry.source)
    if names.side is None:
        holder, source_from = "b", f"{base} AS b"
    else:
        facts = catalog.require_table(connection, entry.table_name, entry.table_schema)
        join = " AND ".join(f"h.{quote(s)} = b.{quote(k)}" for s, k in zip(names.side_keys(facts.keys), facts.keys))
        holder, source_from = "h", f"{base} AS b LEFT JOIN {server.qualified(entry.table_schema, names.side)} AS h ON {join}"
    fp, src = f"{holder}.{quote(names.fingerprint)}", f"{holder}.{quote(names.digest)}"
    changed = server.distinct_sql(src, server.digest_sql(entry.source, "b."))
    stale = f"{fp} IS NOT NULL AND {changed}"
    no_text = f"{fp} IS NULL AND ({has_text}) AND {src} IS NOT NULL AND NOT ({changed})"
    missing = f"{fp} IS NULL AND ({has_text}) AND ({src} IS NULL OR {changed})"
    counts = [missing, stale, f"{fp} IS NOT NULL AND {src} IS NULL", no_text]
    if names.wide:
        counts.append(f"({missing}) OR ({fp} IS NOT NULL AND {holder}.{quote(names.wide_words[0])} IS NULL)")
    row = connection.execute(
        text(f"SELECT count(*), count({fp}), {', '.join(server.count_where(c) for c in counts)} FROM {source_from}")
    ).one()
    return tuple(int(value) for value in row)


def status(bind: Engine | str, *, statement_timeout: str | None = "10min") -> list[TableStatus]:
    """Every attached table with its mode, configuration and row counts (one scan each)."""
    engine = _engine(bind)
    with engine.connect() as connection:
        return status_of(connection, statement_timeout)


def status_of(connection: Connection, statement_timeout: str | None = "10min") -> list[TableStatus]:
    """:func:`status` on an open connection (the async API's step)."""
    with apply.bounded(connection, apply.Timeouts("5s", statement_timeout)):
        server = backend(connection)
        server.check_server(connection)
        server.check_digest(connection)
        return [_table_status(connection, entry) for entry in registry.entries(connection)]


def _table_status(connection: Connection, entry: Attachment) -> TableStatus:
    """One table's status; a table dropped, replaced or unreadable reads as such (in a
    savepoint, so a failed count leaves the transaction usable for the next table)."""
    state, problem = attachment_state(connection, entry), None
    counts: tuple[int, ...] = (0,) * 7
    if state == "attached":
        try:
            with connection.begin_nested():
                counts = _counts(connection, entry)
        except DBAPIError as error:
            state, problem = "unreadable", str(error.orig if error.orig is not None else error).strip().splitlines()[0]
    rows, fingerprinted, missing, stale, _, no_text, *wide = counts
    lists = lists_status(connection, entry) if state == "attached" and problem is None else None
    return TableStatus(
        entry.table_schema, entry.table_name, entry.mode, entry.prefix, entry.side_table, entry.source,
        entry.config_id, entry.settings, rows, fingerprinted, missing, stale, state, problem, no_text,
        entry.wide, wide[0] if wide and entry.wide else 0, lists,
    )  # fmt: skip


def pending_rows(bind: Engine | Connection, table: str, schema: str | None = None) -> int:
    """Rows a backfill would fingerprint: text but no fingerprint yet, or a fingerprint stored
    without its text's digest (by simsql 0.1, or a raw loader), which backfill verifies."""
    if isinstance(bind, Connection):
        schema, entry = attached_names(bind, table, schema)
        counts = _counts(bind, entry)
        return counts[6] + counts[4] if entry.wide else counts[2] + counts[4]
    with bind.connect() as connection:
        return pending_rows(connection, table, schema)
