"""Where fingerprints live: columns on the model's own table, or a side table.

Both modes describe themselves with a :class:`Binding`, and every query in
:mod:`simsql.queries` is written against a Binding only, so both modes answer identically.

The 16-bit block columns are always derived by the database from the fingerprint (generated
columns here, a trigger for tables altered in place by migrations): Python never writes a
block, so blocks cannot disagree with their fingerprint whatever path a row was written by.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from sqlalchemy import (
    Column,
    ForeignKeyConstraint,
    Index,
    Integer,
    Table,
    event,
    inspect,
    text,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Mapped, Mapper, declared_attr, mapped_column
from sqlalchemy.orm.attributes import get_history

from . import dialects, registry
from .dialects import BLOCK_COUNT, block_computed, block_expression_sql
from .errors import NotAttached, SchemaError
from .fingerprint import DEFAULT, Fingerprinter
from .schema import DEFAULT_PREFIX, Names, default_side_table
from .types import TEXT_DIGEST, SimHash

_MIXIN_NAMES = Names("mixin", DEFAULT_PREFIX)
FINGERPRINT_COLUMN = _MIXIN_NAMES.fingerprint
"""The mixin's fingerprint column (a table attached with another prefix names its own)."""
DIGEST_COLUMN = _MIXIN_NAMES.digest
BLOCK_COLUMNS = _MIXIN_NAMES.blocks
assert BLOCK_COUNT == len(BLOCK_COLUMNS)
_PREPARER = postgresql.dialect().identifier_preparer


# -- the invariant, kept by the database ------------------------------------------------------
#
# A fingerprint is stored with the md5 of the text it was computed from (``<prefix>_src``).
# Triggers compare it with the row's text on every write, whoever the writer (ORM, Core, raw
# SQL, COPY): a fingerprint whose text is gone is dropped, so no stored fingerprint ever
# describes text the row no longer holds, in either storage mode.


def join_text(parts: Sequence[str | None]) -> str | None:
    """The text of a row: its non-NULL source values, one per line (None if all are NULL).
    :func:`digest_sql` is the same rule in SQL."""
    present = [p for p in parts if p is not None]
    return "\n".join(present) if present else None


def text_digest(text_value: str) -> uuid.UUID:
    """md5 of a row's text, as PostgreSQL's ``CAST(md5(...) AS uuid)`` computes it."""
    return uuid.UUID(hashlib.md5(text_value.encode("utf-8", "surrogatepass")).hexdigest())


def quote(name: str) -> str:
    return str(_PREPARER.quote_identifier(name))


def digest_sql(columns: Sequence[str], row: str = "") -> str:
    """SQL for the digest of a row's text; ``row`` qualifies the columns (``NEW.``, ``b.``).
    md5 of the text's UTF-8 bytes, as :func:`text_digest` computes it, whatever the database's
    encoding (``md5(text)`` would hash a LATIN1 database's own bytes)."""
    return f"CAST(md5(convert_to(concat_ws(chr(10), {', '.join(row + quote(c) for c in columns)}), 'UTF8')) AS uuid)"


def row_trigger_body(names: Names, source: Sequence[str], *, derive_blocks: bool) -> str:
    """Columns mode: BEFORE INSERT OR UPDATE on the user's table.

    A fingerprint is kept only if it comes with the digest of the row's current text. One
    written without a digest (a raw loader) is kept until the text changes. ``derive_blocks``:
    blocks are plain columns (tables altered in place) rather than generated ones.
    """
    fp, src = f"NEW.{quote(names.fingerprint)}", f"NEW.{quote(names.digest)}"
    old_fp, old_src = f"OLD.{quote(names.fingerprint)}", f"OLD.{quote(names.digest)}"
    changed = " OR ".join(f"NEW.{quote(c)} IS DISTINCT FROM OLD.{quote(c)}" for c in source)
    blocks = "".join(
        f"\n  NEW.{quote(name)} := {block_expression_sql(fp, i)};" for i, name in enumerate(names.blocks)
    ) if derive_blocks else ""
    return f"""
BEGIN
  IF {fp} IS NOT NULL THEN
    IF TG_OP = 'UPDATE' AND {fp} IS DISTINCT FROM {old_fp} AND {src} IS NOT DISTINCT FROM {old_src} THEN
      {src} := NULL;  -- a new fingerprint written without the digest of its text
    END IF;
    IF {src} IS NOT NULL THEN
      IF {src} <> {digest_sql(source, "NEW.")} THEN
        {fp} := NULL;  -- computed from text this row no longer holds
      END IF;
    ELSIF TG_OP = 'UPDATE' AND ({changed}) THEN
      {fp} := NULL;
    END IF;
  END IF;
  IF {fp} IS NULL THEN
    {src} := NULL;
  END IF;{blocks}
  RETURN NEW;
END
"""


def stale_trigger_body(schema: str, names: Names, keys: Sequence[str], source: Sequence[str]) -> str:
    """Side-table mode: AFTER UPDATE on the user's table; deletes the side row of a row whose
    text changed, unless it already holds the new text's fingerprint."""
    assert names.side is not None
    side = f"{quote(schema)}.{quote(names.side)}"
    condition = " AND ".join(f"{quote(s)} = OLD.{quote(k)}" for s, k in zip(names.side_keys(keys), keys))
    changed = " OR ".join(f"NEW.{quote(c)} IS DISTINCT FROM OLD.{quote(c)}" for c in source)
    return f"""
BEGIN
  IF {changed} THEN
    DELETE FROM {side} WHERE {condition}
      AND {quote(names.digest)} IS DISTINCT FROM {digest_sql(source, "NEW.")};
  END IF;
  RETURN NULL;
END
"""


def dollar_quote(body: str) -> str:
    """Dollar-quote a function body with a tag that cannot occur in it."""
    tag, n = "$simsql$", 0
    while tag in body:
        n += 1
        tag = f"$simsql{n}$"
    return f"{tag}{body}{tag}"


FUNCTION_MARK = "-- written by simsql"
"""First line of every trigger function simsql writes: how simsql recognises its own function
once the table it served is gone (``DROP TABLE`` takes the trigger, not the function)."""


def trigger_sql(schema: str, function: str, timing: str, table: str, body: str) -> tuple[str, str]:
    """CREATE FUNCTION and CREATE TRIGGER (named like the function) for one row trigger."""
    qualified_function = f"{quote(schema)}.{quote(function)}"
    marked = f"\n{FUNCTION_MARK}{body}"  # no names in the comment: a newline in one would end it
    return (
        f"CREATE FUNCTION {qualified_function}() RETURNS trigger LANGUAGE plpgsql AS {dollar_quote(marked)}",
        f"CREATE TRIGGER {quote(function)} {timing} ON {quote(schema)}.{quote(table)} "
        f"FOR EACH ROW EXECUTE FUNCTION {qualified_function}()",
    )


@dataclass(frozen=True, eq=False)
class Binding:
    """How simsql is attached to one mapped class.

    ``table`` holds the fingerprint and blocks: the model's own table (``mode="columns"``) or a
    side table (``mode="side_table"``) whose ``table_keys`` reference the model's ``keys``.
    """

    model: type
    mode: Literal["columns", "side_table"]
    table: Table
    fingerprint: Column[Any]
    blocks: tuple[Column[Any], ...]
    keys: tuple[Any, ...]
    table_keys: tuple[Column[Any], ...]
    source: tuple[str, ...]
    fingerprinter: Fingerprinter
    names: Names

    def text_of(self, instance: object) -> str | None:
        """The text a row is fingerprinted from: its non-NULL source columns, one per line."""
        parts = []
        for name in self.source:
            value = getattr(instance, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(
                    f"{type(instance).__name__}.{name} must hold str to be fingerprinted, "
                    f"got {type(value).__name__}"
                )
            parts.append(value)
        return join_text(parts)

    def fingerprint_of(self, instance: object) -> int | None:
        """Fingerprint of a row, or None (stored as NULL) when its text has no features."""
        return self.stored_values(instance)[0]

    def stored_values(self, instance: object) -> tuple[int | None, uuid.UUID | None]:
        """(fingerprint, digest of its text) to store for a row; (None, None) without features."""
        text_value = self.text_of(instance)
        if text_value is None:
            return None, None
        fingerprint = self.fingerprinter.fingerprint_many([text_value], empty="none")[0]
        return fingerprint, None if fingerprint is None else text_digest(text_value)

    def key_of(self, instance: object) -> tuple[Any, ...]:
        return tuple(getattr(instance, column.key) for column in self.keys)

    @property
    def registry_key(self) -> tuple[str | None, str]:
        """(schema, table) under which the registry records this model's configuration."""
        table: Any = inspect(self.model).local_table
        return table.schema, table.name

    def check_config(self, connection: Any, *, claim: bool = False) -> None:
        """Refuse to read or write fingerprints of another configuration (cached per engine).

        ``claim`` (writes): a table simsql's registry does not know yet (a mixin or ORM side
        table made by ``create_all``) is recorded with this configuration, so that a later
        writer or reader with another one is refused."""
        schema, name = self.registry_key
        if claim:
            registry.claim(connection, name, schema, self.fingerprinter, self.source_columns, self.names)
        registry.check(connection, name, schema, self.fingerprinter.config_id)

    def guard(self, expression: Any) -> Any:
        """``expression`` unchanged in SQL, but the statement it ends up in checks this
        binding's configuration against the registry when it runs (whatever executes it)."""
        schema, name = self.registry_key
        return registry.checked(expression, schema, name, self.fingerprinter.config_id)

    @property
    def source_columns(self) -> tuple[str, ...]:
        """Database column names of the source attributes."""
        mapper: Any = inspect(self.model)
        return tuple(mapper.attrs[name].columns[0].name for name in self.source)

    def source_changed(self, instance: object) -> bool:
        return any(get_history(instance, name).has_changes() for name in self.source)


_SIDE_BINDINGS: dict[type, Binding] = {}


def _block_columns(names: Names) -> list[Column[Any]]:
    return [
        Column(name, Integer, block_computed(names.fingerprint, i), nullable=True)
        for i, name in enumerate(names.blocks)
    ]


def _block_indexes(table: Table, names: Names, key_names: Sequence[str]) -> list[Index]:
    """One btree per block, covering the fingerprint and the key, so candidate lookups are
    index-only scans and touch the heap only for the final rows. (MySQL has no INCLUDE: there
    the fingerprint is a second key column and InnoDB adds the primary key by itself, see
    :mod:`simsql.dialects.mysql`.)"""
    return [
        Index(
            names.index(block),
            table.c[block],
            postgresql_include=[names.fingerprint, *key_names],
            info={dialects.COVERING_INFO: (names.fingerprint,)},
        )
        for block in names.blocks
    ]


class SimHashMixin:
    """Declarative mixin: a ``simhash`` column, four derived block columns and their indexes.

    Declare where the text comes from, and optionally the configuration::

        class Article(SimHashMixin, Base):
            __tablename__ = "articles"
            __simhash_source__ = ("title", "body")
            __simhash_fingerprinter__ = Fingerprinter(shingle_size=2)   # optional

    The fingerprint is computed when a row is inserted through the ORM and whenever a source
    attribute changes; it is NULL when the text has no features (NULL never matches). Writes
    that bypass the ORM (raw SQL, ``COPY``) need :func:`simsql.backfill` afterwards.
    """

    __simhash_source__: ClassVar[Sequence[str]] = ()
    __simhash_fingerprinter__: ClassVar[Fingerprinter] = DEFAULT

    @declared_attr
    def simhash(cls) -> Mapped[int | None]:
        return mapped_column(SimHash(), nullable=True)

    @declared_attr
    def simhash_src(cls) -> Mapped[uuid.UUID | None]:
        """md5 of the text ``simhash`` was computed from; the table's trigger compares it."""
        return mapped_column(TEXT_DIGEST, nullable=True)


def _block_attr(index: int) -> declared_attr[int | None]:
    def column(cls: type) -> Mapped[int | None]:
        return mapped_column(Integer, block_computed(FINGERPRINT_COLUMN, index))

    return declared_attr(column)


# simhash_b0 .. simhash_b3: generated by the database from the fingerprint, never written by Python.
for _index, _name in enumerate(BLOCK_COLUMNS):
    setattr(SimHashMixin, _name, _block_attr(_index))


def _mixin_binding(model: type) -> Binding:
    mapper: Any = inspect(model)
    source = tuple(getattr(model, "__simhash_source__", ()) or ())
    if not source:
        raise NotAttached(f"{model.__name__} uses SimHashMixin but declares no __simhash_source__")
    for name in source:
        if name not in mapper.attrs:
            raise SchemaError(f"{model.__name__}.__simhash_source__ names {name!r}, which is not a mapped attribute")
    fingerprinter = getattr(model, "__simhash_fingerprinter__", DEFAULT)
    if not isinstance(fingerprinter, Fingerprinter):
        raise TypeError(f"{model.__name__}.__simhash_fingerprinter__ must be a simsql.Fingerprinter")
    table = mapper.local_table
    assert isinstance(table, Table)
    keys = tuple(mapper.primary_key)
    return Binding(
        model=model,
        mode="columns",
        table=table,
        fingerprint=table.c[FINGERPRINT_COLUMN],
        blocks=tuple(table.c[name] for name in BLOCK_COLUMNS),
        keys=keys,
        table_keys=keys,
        source=source,
        fingerprinter=fingerprinter,
        names=Names(table.name),
    )


def binding_for(model: type) -> Binding:
    """The :class:`Binding` of a mapped class (mixin or :func:`attach`), or :class:`NotAttached`."""
    if not isinstance(model, type):
        raise TypeError(f"expected a mapped class, got {type(model).__name__}")
    binding = _SIDE_BINDINGS.get(model)
    if binding is not None:
        return binding
    if issubclass(model, SimHashMixin):
        cached = model.__dict__.get("__simsql_binding__")
        if cached is None:
            cached = _mixin_binding(model)
            model.__simsql_binding__ = cached  # type: ignore[attr-defined]
        return cached
    table = getattr(getattr(model, "__table__", None), "name", model.__name__)
    raise NotAttached(
        f"{model.__name__} has no fingerprints. If a migration or `simsql attach` added them to "
        f"{table}, inherit simsql.SimHashMixin (its columns are the ones they add) or query "
        f"simsql.reflect(connection, {table!r}); to keep them in a side table instead, call "
        f"simsql.attach({model.__name__}, source=[...]) before creating the tables"
    )


@event.listens_for(SimHashMixin, "instrument_class", propagate=True)
def _add_block_indexes(mapper: Mapper[Any], cls: type) -> None:
    """Indexes are added when the class is mapped, so they exist before any ``create_all``
    or autogenerate run, whatever order the application imports things in."""
    table = mapper.local_table
    if not isinstance(table, Table) or FINGERPRINT_COLUMN not in table.c:
        return
    names = Names(table.name)
    if any(index.name == names.indexes[0] for index in table.indexes):
        return
    _block_indexes(table, names, [column.name for column in table.primary_key.columns])
    _install_trigger_on_create(table, lambda: binding_for(cls))


@event.listens_for(SimHashMixin, "before_insert", propagate=True)
def _fingerprint_on_insert(mapper: Mapper[Any], connection: Any, target: Any) -> None:
    binding = binding_for(type(target))
    binding.check_config(connection, claim=True)
    target.simhash, target.simhash_src = binding.stored_values(target)


@event.listens_for(SimHashMixin, "before_update", propagate=True)
def _fingerprint_on_update(mapper: Mapper[Any], connection: Any, target: Any) -> None:
    binding = binding_for(type(target))
    if binding.source_changed(target):
        binding.check_config(connection, claim=True)
        target.simhash, target.simhash_src = binding.stored_values(target)


def attach(
    model: type,
    source: Sequence[str],
    *,
    fingerprinter: Fingerprinter | None = None,
    table_name: str | None = None,
    prefix: str = DEFAULT_PREFIX,
) -> Binding:
    """Fingerprint ``model`` without altering its table: a side table keyed by its primary key.

    The side table (``<table>_simhash`` unless ``table_name`` is given) is added to the model's
    ``MetaData``, so ``metadata.create_all()`` or a migration creates it. Rows are deleted with
    their model row (``ON DELETE CASCADE``). Fingerprints follow ORM inserts and source changes;
    calling ``attach`` twice with the same settings returns the same binding.
    """
    mapper: Any = inspect(model, raiseerr=False)
    if mapper is None or not isinstance(mapper, Mapper):
        raise TypeError(f"attach() needs a mapped class, got {model!r}")
    source = _check_source(model, mapper, source)
    fingerprinter = fingerprinter or DEFAULT
    existing = _SIDE_BINDINGS.get(model)
    if existing is not None:
        if existing.source == source and existing.fingerprinter == fingerprinter:
            return existing
        raise ValueError(f"{model.__name__} is already attached with different settings")
    base = mapper.local_table
    assert isinstance(base, Table)
    names = Names(base.name, prefix, table_name or default_side_table(base.name, prefix))
    keys = tuple(mapper.primary_key)
    side = _side_table(base, names, keys)
    binding = Binding(
        model=model,
        mode="side_table",
        table=side,
        fingerprint=side.c[names.fingerprint],
        blocks=tuple(side.c[b] for b in names.blocks),
        keys=keys,
        table_keys=tuple(side.c[k] for k in names.side_keys([k.name for k in keys])),
        source=source,
        fingerprinter=fingerprinter,
        names=names,
    )
    register(model, binding)
    _follow_orm_writes(model, binding)
    return binding


def _check_source(model: type, mapper: Any, source: Sequence[str]) -> tuple[str, ...]:
    if isinstance(source, str):
        source = (source,)
    source = tuple(source)
    if not source:
        raise ValueError("attach() needs at least one source column")
    for name in source:
        if name not in mapper.attrs:
            raise SchemaError(f"{model.__name__} has no mapped attribute {name!r}")
    return source


def _side_table(base: Table, names: Names, keys: Sequence[Any]) -> Table:
    assert names.side is not None
    key_names = names.side_keys([k.name for k in keys])
    key_columns = [Column(name, k.type, primary_key=True) for name, k in zip(key_names, keys)]
    side = Table(
        names.side,
        base.metadata,
        *key_columns,
        Column(names.fingerprint, SimHash(), nullable=True),
        Column(names.digest, TEXT_DIGEST, nullable=True),
        *_block_columns(names),
        ForeignKeyConstraint(list(key_names), list(keys), ondelete="CASCADE"),
        schema=base.schema,
    )
    _block_indexes(side, names, key_names)
    return side


def _follow_orm_writes(model: type, binding: Binding) -> None:
    """Side rows follow ORM inserts and source changes, in the writer's own transaction."""
    side = binding.table
    fingerprint, digest = binding.names.fingerprint, binding.names.digest

    def upsert(connection: Any, target: Any) -> None:
        binding.check_config(connection, claim=True)
        values = {c.name: v for c, v in zip(binding.table_keys, binding.key_of(target))}
        values[fingerprint], values[digest] = binding.stored_values(target)
        keys = [c.name for c in binding.table_keys]
        connection.execute(dialects.upsert(connection, side, values, keys, [fingerprint, digest]))

    @event.listens_for(model, "after_insert", propagate=True)
    def _side_insert(mapper: Mapper[Any], connection: Any, target: Any) -> None:
        upsert(connection, target)

    @event.listens_for(model, "after_update", propagate=True)
    def _side_update(mapper: Mapper[Any], connection: Any, target: Any) -> None:
        if binding.source_changed(target):
            upsert(connection, target)

    _install_trigger_on_create(side, lambda: binding)


@dataclass(frozen=True)
class OrmTrigger:
    """The trigger an ORM-declared holder table (mixin table, side table of :func:`attach`)
    needs on the user's table. One description, used by ``create_all`` (the Table's DDL events)
    and by Alembic autogenerate (``op.create_simhash_trigger``), so both install the same."""

    names: Names
    source: tuple[str, ...]
    keys: tuple[str, ...]

    @property
    def function(self) -> str:
        return self.names.row_function if self.names.side is None else self.names.stale_function

    def create_sql(self, schema: str) -> tuple[str, str]:
        """CREATE FUNCTION and CREATE TRIGGER; blocks are generated columns in both modes."""
        if self.names.side is None:
            body = row_trigger_body(self.names, self.source, derive_blocks=False)
            return trigger_sql(schema, self.function, "BEFORE INSERT OR UPDATE", self.names.table, body)
        body = stale_trigger_body(schema, self.names, self.keys, self.source)
        return trigger_sql(schema, self.function, "AFTER UPDATE", self.names.table, body)

    @property
    def mysql_names(self) -> tuple[str, ...]:
        """MySQL/MariaDB: the row rule is two triggers (before insert, before update; no trigger
        there fires on both, and triggers need no function); the stale-row rule is one."""
        return self.names.row_triggers if self.names.side is None else (self.names.stale_function,)

    def create_mysql(self, schema: str | None = None) -> tuple[str, ...]:
        """CREATE TRIGGER statements of the same rules on MySQL/MariaDB (in ``schema``, else
        the current database)."""
        names = self.names
        if names.side is None:
            insert, update = names.row_triggers
            args = (names.table, names.fingerprint, names.digest, self.source)
            return (
                dialects.mysql.row_trigger_sql(*args, False, insert, schema),
                dialects.mysql.row_trigger_sql(*args, True, update, schema),
            )
        stale = dialects.mysql.stale_trigger_sql(
            names.table, names.side, names.digest, self.keys, names.side_keys(self.keys), self.source,
            names.stale_function, schema,
        )  # fmt: skip
        return (stale,)

    def drop_mysql(self, schema: str | None = None) -> tuple[str, ...]:
        where = "" if schema is None else f"{dialects.mysql.quote(schema)}."
        return tuple(f"DROP TRIGGER IF EXISTS {where}{dialects.mysql.quote(name)}" for name in self.mysql_names)

    def drop_sql(self, schema: str, *, table_dropped: bool = False) -> tuple[str, ...]:
        """The trigger (unless its table is gone already) and its function."""
        drop_function = f"DROP FUNCTION IF EXISTS {quote(schema)}.{quote(self.function)}()"
        if table_dropped:
            return (drop_function,)
        drop_trigger = f"DROP TRIGGER IF EXISTS {quote(self.function)} ON {quote(schema)}.{quote(self.names.table)}"
        return drop_trigger, drop_function


_ORM_TRIGGERS: dict[Table, Any] = {}


def orm_trigger(table: Table) -> OrmTrigger | None:
    """The trigger ``create_all`` installs with ``table``, if any (every mapper configured)."""
    binding = _ORM_TRIGGERS.get(table)
    if binding is None:
        return None
    bound: Binding = binding()
    base: Any = inspect(bound.model).local_table
    names = Names(base.name, bound.names.prefix, bound.names.side)
    return OrmTrigger(names, bound.source_columns, tuple(k.name for k in bound.keys))


def _drop_orphaned_function(connection: Any, schema: str, function: str) -> None:
    """A trigger function simsql wrote (marked) that no trigger uses any more: its table was
    dropped by raw SQL or ``op.drop_table``. Recreating the table must not fail on it. A
    function of that name that simsql did not write is left alone, and CREATE then fails."""
    orphan = connection.execute(
        text(
            "SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = :schema AND p.proname = :name AND p.pronargs = 0 "
            "AND position(:mark in p.prosrc) > 0 "
            "AND NOT EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgfoid = p.oid)"
        ),
        {"schema": schema, "name": function, "mark": FUNCTION_MARK},
    ).first()
    if orphan is not None:
        connection.exec_driver_sql(f"DROP FUNCTION {quote(schema)}.{quote(function)}()")


def _install_trigger_on_create(table: Table, binding: Any) -> None:
    """``create_all`` also creates the trigger that keeps fingerprints honest (and
    ``drop_all`` its function): raw SQL and COPY writers are covered from the first row.
    ``binding`` is called at create time, when every mapper is configured. Autogenerate finds
    the same trigger through :func:`orm_trigger` (simsql.alembic's comparator)."""
    _ORM_TRIGGERS[table] = binding

    def schema_of(target: Table, connection: Any) -> str:
        return target.schema or str(connection.execute(text("SELECT current_schema()")).scalar_one())

    def create(target: Table, connection: Any, **kw: Any) -> None:
        if dialects.is_mysql(connection.dialect):
            for statement in _mysql_triggers(target):
                connection.exec_driver_sql(statement)
            return
        trigger = orm_trigger(target)
        assert trigger is not None
        schema = schema_of(target, connection)
        _drop_orphaned_function(connection, schema, trigger.function)
        for statement in trigger.create_sql(schema):
            connection.exec_driver_sql(statement)

    def drop(target: Table, connection: Any, **kw: Any) -> None:
        if dialects.is_mysql(connection.dialect):
            trigger = orm_trigger(target)
            assert trigger is not None
            for statement in trigger.drop_mysql(target.schema):
                connection.exec_driver_sql(statement)
            return
        trigger = orm_trigger(target)
        assert trigger is not None
        for statement in trigger.drop_sql(schema_of(target, connection), table_dropped=trigger.names.side is None):
            connection.exec_driver_sql(statement)

    def check(target: Table, connection: Any, **kw: Any) -> None:
        # before the table exists: its trigger could not work on a MySQL without MD5()
        if dialects.is_mysql(connection.dialect):
            dialects.mysql.check_digest(connection)

    event.listen(table, "before_create", check)
    event.listen(table, "after_create", create)
    event.listen(table, "after_drop", drop)
    if "alembic" in sys.modules:
        # Inside an Alembic run (env.py imports the models after Alembic): its autogenerate
        # comparator must see this trigger even if env.py never imports simsql.alembic.
        importlib.import_module("simsql.alembic")


def _mysql_triggers(table: Table) -> tuple[str, ...]:
    """The same invariant as the PostgreSQL triggers, in MySQL's trigger dialect."""
    trigger = orm_trigger(table)
    assert trigger is not None
    return trigger.create_mysql(table.schema)


def register(model: type, binding: Binding) -> None:
    """Make ``binding_for(model)`` return ``binding`` (used by :func:`attach` and reflection)."""
    _SIDE_BINDINGS[model] = binding
