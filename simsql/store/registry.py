"""The registry: which fingerprint configuration filled which table, read and written.

Fingerprints of two configurations are not comparable, and nothing in a ``bigint`` says which
configuration produced it. The registry (created by simsql's own migration, its tables are
declared in :mod:`simsql.schema.names`) records it per table, so writes and queries with another
configuration are refused with :class:`~simsql.text.errors.ConfigMismatch` instead of returning
quietly wrong neighbours.

Checks are cached per engine object (weakly, never by its address) and table: after the
first statement they cost a dict lookup. Writes are also confirmed once per transaction,
after their first statement on the table (:func:`confirm`): a cached check cannot see a
table move to another configuration, and a stored fingerprint cannot say which one made it.
A database where simsql's revision was never applied is not checked (``create_all`` only
applications); a registry dropped by hand while its revision is recorded is an error, never a
silent loss of the checks.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, select, text
from sqlalchemy.engine import Connection

from ..dialects import backend
from ..dialects.sqltext import is_autocommit
from ..schema.names import (
    DEFAULT_PREFIX,
    PARTITIONS_TABLE,
    PROGRESS_TABLE,
    REGISTRY_TABLE,
    Attachment,
    centres_table,
    partitions_table,
    layout_text,
    parse_mode,
    progress_table,
    record_values,
    registry_table,
)
from ..text.background import Background
from ..text.errors import ConfigMismatch, SchemaError
from ..text.fingerprint import Fingerprinter
from ..text.vectors import AnyFingerprinter, VectorFingerprinter

VERSION_TABLE = "simsql_alembic_version"


Installer = Callable[[Any], bool]
_INSTALLER: list[Installer] = []


def install_with(installer: Installer) -> None:
    """Declare the function that installs simsql's own objects when they are missing
    (``installer(bind)``, an engine or a connection, returning whether it had to).

    The seam by which this layer reaches simsql's Alembic revisions, a front end above it: the
    package's top level declares :func:`simsql.alembic.install`, so whichever module a caller
    imports, ``attach_table`` and ``create_all`` of a mixin model install them exactly as
    ``simsql attach`` does."""
    _INSTALLER[:] = [installer]


def install_when_needed(bind: Engine | Connection) -> bool:
    """simsql's own objects installed on ``bind``'s database if missing (given a connection, in
    its transaction); whether it had to. With no installer declared nothing is installed."""
    return _INSTALLER[0](bind) if _INSTALLER else False


def current_schema(connection: Connection) -> str:
    return backend(connection).current_schema(connection)


def _relation_exists(connection: Connection, name: str) -> bool:
    """Resolved as every unqualified simsql statement is (PostgreSQL: ``search_path``)."""
    return backend(connection).relation_exists(connection, name)


def version_table_exists(connection: Connection) -> bool:
    return _relation_exists(connection, VERSION_TABLE)


def registry_exists(connection: Connection, schema: str | None = None) -> bool:
    return _relation_exists(connection, REGISTRY_TABLE)


def installed(connection: Connection) -> bool:
    """Whether every table of simsql's newest revision is there: the registry, and the
    partition lists' tables (``simsql_0002``), which a database installed by simsql 0.3 lacks
    until its next install."""
    return registry_exists(connection) and _relation_exists(connection, PARTITIONS_TABLE)


def progress_exists(connection: Connection) -> bool:
    return _relation_exists(connection, PROGRESS_TABLE)


def progress_config(connection: Connection, schema: str, key: str) -> str | None:
    """The configuration recorded by the row ``key`` of ``schema`` in ``simsql_backfill`` (a
    backfill's or refingerprint's cursor, a move's marker), or None when there is no such row."""
    if not progress_exists(connection):
        return None
    sql = text(f"SELECT config_id FROM {PROGRESS_TABLE} WHERE table_schema = :s AND table_name = :t")
    return connection.execute(sql, {"s": schema, "t": key}).scalar()


def require_registry(connection: Connection) -> bool:
    """Whether the registry can be used; :class:`SchemaError` when it was dropped by hand.

    A missing registry with simsql's revision still recorded means every configuration check
    would silently stop: say so, and how to repair it (``simsql db upgrade`` recreates it).
    """
    if registry_exists(connection):
        return True
    if version_table_exists(connection):
        applied = connection.execute(text(f"SELECT count(*) FROM {VERSION_TABLE}")).scalar_one()
        if applied:
            raise SchemaError(
                f"{REGISTRY_TABLE} is missing although simsql's revision is applied (dropped by hand?); "
                "configuration checks cannot run. Run `simsql db upgrade` to recreate it, then re-attach "
                "tables with `simsql attach`"
            )
    return False


def read(connection: Connection, table_name: str, schema: str | None = None) -> Attachment | None:
    """The registry entry of a table, or None (no entry, or simsql never installed)."""
    if not require_registry(connection):
        return None
    schema = schema or current_schema(connection)
    row = connection.execute(
        select(registry_table).where(
            registry_table.c.table_schema == schema, registry_table.c.table_name == table_name
        )
    ).first()
    return None if row is None else _entry(row)


def _entry(row: Any) -> Attachment:
    return Attachment(
        table_schema=row.table_schema,
        table_name=row.table_name,
        column_name=row.column_name,
        config_id=row.config_id,
        settings=dict(row.settings),
        source=tuple(row.source),
        mode=row.mode,
        side_table=row.side_table,
    )


def entries(connection: Connection) -> list[Attachment]:
    if not require_registry(connection):
        return []
    return [_entry(row) for row in connection.execute(select(registry_table).order_by(*registry_table.primary_key))]


def _setting_text(name: str, value: Any) -> str:
    """One recorded setting as a person reads it: a background (128 centres) by what it was
    fitted for and its digest, not its numbers."""
    if value is None:
        return "none"
    if name == "background" and isinstance(value, dict):
        try:
            digest = Background.from_settings(value).digest[:8]
        except (TypeError, ValueError, KeyError):
            digest = "?"
        return f"fitted for {value.get('fitted_for')}, centres {digest}"
    return str(value)


def settings_difference(recorded: dict[str, Any], wanted: dict[str, Any] | None) -> str:
    """The settings two configurations differ in (``seed: 0 -> 7``), or the recorded ones in
    short when the other is unknown; never a background's 128 centres."""
    if wanted is None:
        return ", ".join(f"{k}: {_setting_text(k, v)}" for k, v in sorted(recorded.items()) if v is not None)
    differ = sorted(k for k in recorded.keys() | wanted.keys() if recorded.get(k) != wanted.get(k))
    return "; ".join(f"{k}: {_setting_text(k, recorded.get(k))} -> {_setting_text(k, wanted.get(k))}" for k in differ)


Advice = Callable[[Attachment], "str | None"]
"""What a caller that knows more (a mixin model, an ORM side table) tells the user to change when
a table holds another configuration: given the table's entry, one sentence, or None."""

WIDE_SETTINGS = frozenset({"algorithm", "signature_bits"})
"""The settings in which versions 2 and 3 of one configuration differ: the wide signature."""


def only_wide_differs(recorded: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Whether two configurations are the same but for the wide signature (version 2 and 3)."""
    differ = {k for k in recorded.keys() | wanted.keys() if recorded.get(k) != wanted.get(k)}
    return bool(differ) and differ <= WIDE_SETTINGS and {recorded.get("algorithm"), wanted.get("algorithm")} <= {2, 3}


def wide_advice(found: Attachment) -> str:
    """The change that fits a caller to a table of the same configuration but for the wide signature."""
    if found.settings.get("algorithm") == 3:
        return ("the table stores the wide signature (algorithm version 3): use simsql.WideSimHashMixin, "
                "`simsql attach --wide` or wide=True")  # fmt: skip
    return ("the table has no wide signature (algorithm version 2): use simsql.SimHashMixin, "
            "`simsql attach --no-wide` or wide=False, or move the table to version 3 with `simsql refingerprint`")  # fmt: skip


def mismatch(
    schema: str,
    table_name: str,
    found: Attachment,
    config_id: str,
    wanted: dict[str, Any] | None = None,
    advice: Advice | None = None,
) -> ConfigMismatch:
    """The refusal of ``config_id`` on a table recorded with another configuration; given the
    ``wanted`` settings, it names the settings that differ (recorded -> wanted). The remedy is
    ``advice``'s when it has one, else the wide signature's when only that differs, else the
    general one (the data's settings, or a refingerprint)."""
    what = "differs in" if wanted is not None else "recorded as"
    remedy = advice(found) if advice is not None else None
    if remedy is None and wanted is not None and only_wide_differs(found.settings, wanted):
        remedy = wide_advice(found)
    return ConfigMismatch(
        f"{schema}.{table_name} holds fingerprints of config {found.config_id}, but this uses {config_id} "
        f"({what} {settings_difference(found.settings, wanted)}); "
        + (remedy or "use the same Fingerprinter settings as the data (Fingerprinter.from_settings rebuilds them), "
           "or move the table to the new configuration with `simsql refingerprint` "
           "(simsql.lifecycle.refingerprinting.refingerprint)")
    )


def record(
    connection: Connection,
    table_name: str,
    schema: str | None,
    fingerprinter: AnyFingerprinter,
    source: tuple[str, ...],
    mode: str,
    side_table: str | None = None,
    column_name: str = DEFAULT_PREFIX,
) -> None:
    """Record (or confirm) the configuration of a table; refuse a different one."""
    schema = schema or current_schema(connection)
    existing = read(connection, table_name, schema)
    if existing is not None and existing.config_id != fingerprinter.config_id:
        raise mismatch(schema, table_name, existing, fingerprinter.config_id, fingerprinter.settings)
    if existing is None:
        values = record_values(schema, table_name, fingerprinter, source, mode, side_table, column_name)
        connection.execute(backend(connection).insert_new(registry_table, values))
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
    if progress_exists(connection):
        connection.execute(
            progress_table.delete().where(
                progress_table.c.table_schema == schema, progress_table.c.table_name == table_name
            )
        )
    if _relation_exists(connection, PARTITIONS_TABLE):  # the lists of a table of that name
        for lists in (centres_table, partitions_table):
            connection.execute(lists.delete().where(lists.c.table_schema == schema, lists.c.table_name == table_name))
    forget(connection.engine)


def fingerprinter_from_settings(settings: dict[str, Any]) -> AnyFingerprinter:
    """Rebuild the :class:`Fingerprinter` recorded in the registry (any algorithm version), or
    the :class:`~simsql.VectorFingerprinter` (settings of ``kind`` ``vector``).

    One rule, owned by :meth:`Fingerprinter.from_settings`; IDF tables are recorded by digest
    only, so a table fingerprinted with one needs its Fingerprinter passed explicitly.
    """
    if settings.get("kind") == "vector":
        return VectorFingerprinter.from_settings(settings)
    return Fingerprinter.from_settings(settings)


CheckedTable = tuple[str | None, str, str]
"""(schema as the caller named it, table, config_id): what one passed check vouches for."""

_checked: weakref.WeakKeyDictionary[Engine, dict[CheckedTable, float]] = weakref.WeakKeyDictionary()
"""Passed checks per engine object. Keyed by the engine itself, weakly, never by ``id()``: an
address is reused once an engine is collected, and a new engine there (perhaps on another
database, or after the registry changed) would inherit checks it never ran. An engine's
entries go with it."""
_lock = threading.Lock()

CHECK_TTL = 10.0
"""Seconds a passed check is trusted. A table can move to another configuration while a
process runs (``simsql refingerprint`` elsewhere): after this long, that process reads the
registry again and is refused, instead of writing or querying with the old one until it
restarts. One indexed registry read per table and engine every 10 s."""


def fresh(engine: Engine, target: CheckedTable) -> bool:
    with _lock:
        checked_at = _checked.get(engine, {}).get(target)
    return checked_at is not None and time.monotonic() - checked_at < CHECK_TTL


_recorded: weakref.WeakKeyDictionary[Engine, dict[CheckedTable, str]] = weakref.WeakKeyDictionary()
"""Where the registry recorded each checked target (its schema), as of its last check:
what :func:`confirm` reads again without resolving the schema."""


def passed(engine: Engine, target: CheckedTable, recorded_in: str | None = None) -> None:
    with _lock:
        _checked.setdefault(engine, {})[target] = time.monotonic()
        recorded = _recorded.setdefault(engine, {})
        if recorded_in is None:
            recorded.pop(target, None)
        else:
            recorded[target] = recorded_in


def forget(engine: Engine) -> None:
    """Drop cached checks for ``engine`` (after the registry changed)."""
    with _lock:
        _checked.pop(engine, None)
        _recorded.pop(engine, None)


def check(
    connection: Connection, table_name: str, schema: str | None, config_id: str, advice: Advice | None = None
) -> None:
    """Raise :class:`ConfigMismatch` if ``table_name`` was filled with another configuration
    (``advice``: what the caller would tell the user to change, see :func:`mismatch`)."""
    if fresh(connection.engine, (schema, table_name, config_id)):
        return
    entry = read(connection, table_name, schema)
    if entry is not None and entry.config_id != config_id:
        raise mismatch(entry.table_schema, table_name, entry, config_id, advice=advice)
    passed(connection.engine, (schema, table_name, config_id), _confirm_in(connection, entry, schema))


def check_layout(connection: Connection, table_name: str, schema: str | None, layout: str | None, owner: str) -> None:
    """Refuse (:class:`SchemaError`) a caller whose wide blocks (``layout``, as text: ``"10x24"``;
    None for a caller without wide blocks, never refused) are not those the registry records for
    ``table_name``: its queries would probe values of one width in columns of another (an 8 x 20
    model on a 10 x 24 table reads the same eight column names and finds nothing, silently).
    Checked once per ``CHECK_TTL``, as :func:`check`."""
    if layout is None:
        return
    target = layout_target(schema, table_name, layout)
    if fresh(connection.engine, target):
        return
    entry = read(connection, table_name, schema)
    if entry is not None:
        refuse_layout(entry.table_schema, table_name, entry.mode, layout, owner)
    passed(connection.engine, target)


def layout_target(schema: str | None, table_name: str, layout: str) -> CheckedTable:
    """The cache key of a passed layout check (beside the configuration checks' own)."""
    return schema, table_name, f"#layout {layout}"


def refuse_layout(where: str, table_name: str, recorded_mode: str, layout: str, owner: str) -> None:
    """Raise :class:`SchemaError` when the registry's ``recorded_mode`` cuts the wide signature
    into other blocks than ``layout`` (``owner``: who declares it, for the message). The one rule
    :func:`check_layout` and the statements' own checks (:mod:`.statement_checks`) follow."""
    recorded = parse_mode(recorded_mode)[1]
    if recorded is not None and layout_text(recorded) != layout:
        raise SchemaError(
            f"{where}.{table_name} is recorded with wide blocks {layout_text(recorded)}, but {owner} declares "
            f"{layout}: declare the table's (wide_blocks / __simhash_wide_blocks__), or move the table with "
            f"`simsql refingerprint --table {table_name} --wide-blocks {layout}`"
        )


def _confirm_in(connection: Connection, entry: Attachment | None, schema: str | None) -> str | None:
    """Where :func:`confirm` reads the table's entry again: where it is recorded, or, when the
    registry exists but records nothing for it, where it would be. A table with no entry *as
    this read saw it* (an older snapshot, a move by detach and attach in progress) may have one
    by the time of the write, and a pass without a place to look would wave the write through
    unconfirmed for ``CHECK_TTL``. None only where simsql's registry is not installed."""
    if entry is not None:
        return entry.table_schema
    return (schema or current_schema(connection)) if registry_exists(connection) else None


_confirmed: weakref.WeakKeyDictionary[Any, set[CheckedTable]] = weakref.WeakKeyDictionary()
"""Writes confirmed per open transaction, weakly: SQLAlchemy's innermost transaction object
(a savepoint's, if one is open). A savepoint rolled back releases the locks taken in it
(PostgreSQL), so what was confirmed there is confirmed again in the next one or in its parent."""


def confirm(
    connection: Connection, table_name: str, schema: str | None, config_id: str, advice: Advice | None = None
) -> None:
    """After a write to ``table_name`` in the connection's transaction: raise
    :class:`ConfigMismatch` (the caller's transaction must then roll back) if the table has
    moved to another configuration since this process last checked.

    Why after the write, and why it is enough once per transaction: a configuration changes
    only while its changer holds the table exclusively (``simsql refingerprint``'s switch takes
    ``ACCESS EXCLUSIVE`` before it touches the registry; detach and attach alter the table).
    The write took a lock on the table that the changer waits for until this transaction
    ends; so the configuration read now, as last committed (a locking read: PostgreSQL's
    ``REPEATABLE READ`` refuses it with a serialization failure rather than read an older
    row, and InnoDB reads the newest), holds for every later write of this transaction. The
    check before the write (:func:`check`) is cached for ``CHECK_TTL`` seconds and a write can
    wait for the switch after it: neither could stop old fingerprints from landing in a
    table that has moved on, where nothing marks them as of the other configuration (a
    fingerprint stores no configuration, and its digest still matches the text), so status
    and backfill could never find them again. Refused instead, none is ever stored.

    The read takes a shared lock on the registry row until the transaction ends; it never
    waits for a changer (which updates that row only once it holds the table), so it adds
    no lock cycle. Costs one indexed read per writing transaction and table. A connection
    in autocommit mode (each statement its own transaction) is confirmed after every write:
    the write is already committed then, so its caller must undo it on a refusal. Tables
    the registry does not record (simsql's revision not applied) are not confirmed."""
    engine, target = connection.engine, (schema, table_name, config_id)
    transaction = None if is_autocommit(connection) else connection.get_nested_transaction() or connection.get_transaction()
    with _lock:
        if transaction is not None and target in _confirmed.get(transaction, ()):
            return
        where = _recorded.get(engine, {}).get(target)
    if where is None:
        check(connection, table_name, schema, config_id, advice)
        with _lock:
            where = _recorded.get(engine, {}).get(target)
        if where is None:
            return
    statement = select(registry_table).where(registry_table.c.table_schema == where, registry_table.c.table_name == table_name)
    row = connection.execute(statement.with_for_update(read=True)).first()
    if row is not None and row.config_id != config_id:
        forget(engine)
        raise mismatch(where, table_name, _entry(row), config_id, advice=advice)
    if transaction is not None:
        with _lock:
            _confirmed.setdefault(transaction, set()).add(target)


def claim(
    connection: Connection,
    table_name: str,
    schema: str | None,
    fingerprinter: AnyFingerprinter,
    source: tuple[str, ...],
    names: Any,
) -> None:
    """Record a table the registry does not know yet (a mixin or ORM side table made by
    ``create_all``) with the configuration of its first writer; no-op when simsql's revision
    was never applied, or once checked on this engine."""
    if fresh(connection.engine, (schema, table_name, fingerprinter.config_id)):
        return
    if not require_registry(connection):
        return
    schema_name = schema or current_schema(connection)
    if read(connection, table_name, schema_name) is None:
        values = record_values(schema_name, table_name, fingerprinter, source, names.recorded_mode, names.side, names.prefix)
        connection.execute(backend(connection).insert_new(registry_table, values))


__all__ = [
    "PROGRESS_TABLE",
    "REGISTRY_TABLE",
    "check",
    "confirm",
    "current_schema",
    "entries",
    "fingerprinter_from_settings",
    "forget",
    "install_when_needed",
    "install_with",
    "progress_table",
    "read",
    "record",
    "installed",
    "registry_exists",
    "registry_table",
    "remove",
    "require_registry",
]
