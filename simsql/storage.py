"""Where fingerprints live: columns on the model's own table, or a side table.

Both modes describe themselves with a :class:`Binding`, and every query in
:mod:`simsql.queries` is written against a Binding only, so both modes answer identically.

The 16-bit block columns are always derived by the database from the fingerprint (generated
columns here, a trigger for tables altered in place by migrations): Python never writes a
block, so blocks cannot disagree with their fingerprint whatever path a row was written by.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Sequence
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
    update,
)
from sqlalchemy.orm import Mapped, Mapper, declared_attr, mapped_column
from sqlalchemy.orm.attributes import get_history, set_attribute

from . import registry
from .dialects import COVERING_INFO, Backend, backend, block_computed, execute_sql
from .dialects.base import is_autocommit
from .errors import ConfigMismatch, NotAttached, SchemaError
from .fingerprint import DEFAULT, Fingerprinter
from .schema import BLOCK_COUNT, DEFAULT_PREFIX, Names, default_side_table
from .types import TEXT_DIGEST, SimHash
from .vectors import AnyFingerprinter, VectorFingerprinter, vector_of

_MIXIN_NAMES = Names("mixin", DEFAULT_PREFIX)
FINGERPRINT_COLUMN = _MIXIN_NAMES.fingerprint
"""The mixin's fingerprint column (a table attached with another prefix names its own)."""
DIGEST_COLUMN = _MIXIN_NAMES.digest
BLOCK_COLUMNS = _MIXIN_NAMES.blocks
assert BLOCK_COUNT == len(BLOCK_COLUMNS)


# -- the invariant, kept by the database ------------------------------------------------------
#
# A fingerprint is stored with the md5 of the text it was computed from (``<prefix>_src``).
# Triggers compare it with the row's text on every write, whoever the writer (ORM, Core, raw
# SQL, COPY): a fingerprint whose text is gone is dropped, so no stored fingerprint ever
# describes text the row no longer holds, in either storage mode. Each backend writes the
# trigger in its own SQL (:meth:`simsql.dialects.Backend.create_trigger_sql`).


def join_text(parts: Sequence[str | None]) -> str | None:
    """The text of a row: its non-NULL source values, one per line (None if all are NULL).
    :meth:`simsql.dialects.Backend.digest_sql` is the same rule in SQL."""
    present = [p for p in parts if p is not None]
    return "\n".join(present) if present else None


def text_digest(text_value: str) -> uuid.UUID:
    """md5 of a row's text, as PostgreSQL's ``CAST(md5(...) AS uuid)`` computes it."""
    return uuid.UUID(hashlib.md5(text_value.encode("utf-8", "surrogatepass")).hexdigest())


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
    fingerprinter: AnyFingerprinter
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
        """(fingerprint, digest of its text) to store for a row; (None, None) without features.
        A vector source stores no digest (see :meth:`vector_values`)."""
        if isinstance(self.fingerprinter, VectorFingerprinter):
            return self.vector_values(instance, self.fingerprinter)
        text_value = self.text_of(instance)
        if text_value is None:
            return None, None
        fingerprint = self.fingerprinter.fingerprint_many([text_value], empty="none")[0]
        return fingerprint, None if fingerprint is None else text_digest(text_value)

    def vector_values(self, instance: object, fingerprinter: VectorFingerprinter) -> tuple[int | None, None]:
        """(signature, None) of a row whose source is one vector column; ``ValueError``/``TypeError``
        for a bad vector. No digest (the triggers' is of text): see :func:`_rewrite_vector_signature`."""
        value = getattr(instance, self.source[0])
        if value is None:
            return None, None
        return fingerprinter.fingerprint(vector_of(value, f"{type(instance).__name__}.{self.source[0]}")), None

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

    def confirm_config(self, connection: Any, instance: object) -> None:
        """After ``instance``'s fingerprint was written in ``connection``'s transaction: refuse
        it (:func:`simsql.registry.confirm`, :class:`~simsql.errors.ConfigMismatch`, nothing
        of the transaction kept) if the table moved to another configuration since the check
        before the write. In autocommit mode the write is already committed: its fingerprint
        is cleared first, so the row reads as missing and a backfill fingerprints it with the
        table's configuration."""
        schema, name = self.registry_key
        try:
            registry.confirm(connection, name, schema, self.fingerprinter.config_id)
        except ConfigMismatch:
            if is_autocommit(connection):
                where = [column == value for column, value in zip(self.table_keys, self.key_of(instance))]
                values = {self.names.fingerprint: None, self.names.digest: None}
                connection.execute(update(self.table).where(*where).values(values))
            raise

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
            info={COVERING_INFO: (names.fingerprint,)},
        )
        for block in names.blocks
    ]


def source_names(source: object, owner: str) -> tuple[str, ...]:
    """The source column names ``owner`` declares, in the order their text is joined.

    One name may be given as a plain string (``"body"``), never read as its characters. Any
    other value must be a list or tuple of names: a set has no order (its iteration order
    changes between processes, and with it every fingerprint), and anything else is a
    mistake. :class:`TypeError` names ``owner`` and what it was given; empty gives ``()``.
    """
    if isinstance(source, str):
        return (source,)
    if source is None:
        return ()
    if isinstance(source, (list, tuple)):
        wrong = [name for name in source if not isinstance(name, str)]
        if not wrong:
            return tuple(source)
        given = f"a {type(source).__name__} holding {type(wrong[0]).__name__} {wrong[0]!r}"
    else:
        given = f"{type(source).__name__} {source!r}"
    raise TypeError(
        f"{owner} must be a column name or a list or tuple of column names (their text is joined "
        f"in that order), got {given}"
    )


class SimHashMixin:
    """Declarative mixin: a ``simhash`` column, four derived block columns and their indexes.

    Declare where the text comes from, and optionally the configuration::

        class Article(SimHashMixin, Base):
            __tablename__ = "articles"
            __simhash_source__ = ("title", "body")
            __simhash_fingerprinter__ = Fingerprinter(shingle_size=2)   # optional

    The fingerprint is computed when a row is inserted through the ORM and whenever a source
    attribute changes; it is NULL when the text has no features (NULL never matches). Writes
    that bypass the ORM (raw SQL, ``COPY``) need :func:`simsql.backfill` afterwards. With a
    ``VectorFingerprinter`` the source is one vector column instead (docs/vectors.md).
    """

    __simhash_source__: ClassVar[Sequence[str]] = ()
    __simhash_fingerprinter__: ClassVar[AnyFingerprinter] = DEFAULT

    def __init_subclass__(cls, **kw: Any) -> None:
        """Checks (and makes a tuple of) ``__simhash_source__`` as the class is created, before
        SQLAlchemy maps it: a wrong type fails at its declaration, not at the first write."""
        if "__simhash_source__" in cls.__dict__:
            cls.__simhash_source__ = source_names(cls.__dict__["__simhash_source__"], f"{cls.__name__}.__simhash_source__")
        super().__init_subclass__(**kw)

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
    source = source_names(getattr(model, "__simhash_source__", ()), f"{model.__name__}.__simhash_source__")
    if not source:
        raise NotAttached(f"{model.__name__} uses SimHashMixin but declares no __simhash_source__")
    for name in source:
        if name not in mapper.attrs:
            raise SchemaError(f"{model.__name__}.__simhash_source__ names {name!r}, which is not a mapped attribute")
    fingerprinter = getattr(model, "__simhash_fingerprinter__", DEFAULT)
    if not isinstance(fingerprinter, (Fingerprinter, VectorFingerprinter)):
        raise TypeError(
            f"{model.__name__}.__simhash_fingerprinter__ must be a simsql.Fingerprinter or simsql.VectorFingerprinter"
        )
    if isinstance(fingerprinter, VectorFingerprinter) and len(source) != 1:
        raise TypeError(f"{model.__name__}: a VectorFingerprinter reads one vector column, __simhash_source__ names {source!r}")
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
    """The :class:`Binding` of a mapped class (mixin or :func:`attach_model`), or :class:`NotAttached`."""
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
        f"simsql.attach_model({model.__name__}, source=[...]) before creating the tables"
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


def _store_fingerprint(binding: Binding, target: Any) -> None:
    """Set the row's fingerprint and digest through SQLAlchemy's instrumentation, not the
    class's ``__setattr__``: a SQLModel (pydantic) model refuses attributes that are not
    pydantic fields, and the mixin's columns are SQLAlchemy's only. Same effect otherwise."""
    fingerprint, digest = binding.stored_values(target)
    set_attribute(target, FINGERPRINT_COLUMN, fingerprint)
    set_attribute(target, DIGEST_COLUMN, digest)


@event.listens_for(SimHashMixin, "before_insert", propagate=True)
def _fingerprint_on_insert(mapper: Mapper[Any], connection: Any, target: Any) -> None:
    binding = binding_for(type(target))
    binding.check_config(connection, claim=True)
    _store_fingerprint(binding, target)


@event.listens_for(SimHashMixin, "before_update", propagate=True)
def _fingerprint_on_update(mapper: Mapper[Any], connection: Any, target: Any) -> None:
    binding = binding_for(type(target))
    if binding.source_changed(target):
        binding.check_config(connection, claim=True)
        _store_fingerprint(binding, target)


@event.listens_for(SimHashMixin, "after_insert", propagate=True)
def _confirm_insert(mapper: Mapper[Any], connection: Any, target: Any) -> None:
    binding_for(type(target)).confirm_config(connection, target)


@event.listens_for(SimHashMixin, "after_update", propagate=True)
def _confirm_update(mapper: Mapper[Any], connection: Any, target: Any) -> None:
    binding = binding_for(type(target))
    if binding.source_changed(target):
        if isinstance(binding.fingerprinter, VectorFingerprinter):
            _rewrite_vector_signature(binding, connection, target)
        binding.confirm_config(connection, target)


def _rewrite_vector_signature(binding: Binding, connection: Any, target: Any) -> None:
    """The new signature of a changed vector, written by a second UPDATE that leaves the vector
    alone: the table's trigger drops a fingerprint written without a digest in the same UPDATE as
    its source (it cannot tell an ORM write from a raw one), and a vector has no text digest."""
    where = [column == value for column, value in zip(binding.table_keys, binding.key_of(target))]
    signature = getattr(target, binding.names.fingerprint)
    connection.execute(update(binding.table).where(*where).values({binding.names.fingerprint: signature}))


def attach_model(
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
        raise TypeError(f"attach_model() needs a mapped class, got {model!r}")
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
    source = source_names(source, "attach_model()'s source")
    if not source:
        raise ValueError("attach_model() needs at least one source column")
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
        connection.execute(backend(connection).upsert(side, values, keys, [fingerprint, digest]))
        binding.confirm_config(connection, target)

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
    """The trigger an ORM-declared holder table (mixin table, side table of :func:`attach_model`)
    needs on the user's table. One description, used by ``create_all`` (the Table's DDL events)
    and by Alembic autogenerate (``op.create_simhash_trigger``), so both install the same: the
    backend writes it (:meth:`create_statements`)."""

    names: Names
    source: tuple[str, ...]
    keys: tuple[str, ...]

    def create_statements(self, server: Backend, schema: str | None) -> tuple[str, ...]:
        """The statements creating the trigger on ``server`` (blocks are generated columns in
        both modes, so the trigger does not derive them)."""
        return server.create_trigger_sql(schema, self.names, self.source, self.keys)

    def drop_statements(self, server: Backend, schema: str | None, *, table_dropped: bool = False) -> tuple[str, ...]:
        """The statements dropping it (``table_dropped``: what the table's DROP left)."""
        return server.drop_trigger_sql(schema, self.names, table_dropped=table_dropped)

    def installed_name(self, server: Backend) -> str:
        """The name the catalog lists the trigger under (the first, where it is several)."""
        return server.trigger_names(self.names)[0]


_ORM_TRIGGERS: dict[Table, Callable[[], Binding]] = {}
"""Every ORM-declared table whose ``create_all`` installs a trigger, and how to get its binding
(called once every mapper is configured). Read by :func:`orm_trigger`, which is how Alembic's
autogenerate comparator (``simsql.alembic``) finds the same triggers: a front end reads this
registry, storage never reaches up to the front end."""


_TRIGGER_TABLE_LISTENERS: list[Callable[[Table], None]] = []


def on_trigger_table(listener: Callable[[Table], None]) -> None:
    """Call ``listener(table)`` whenever a table whose ``create_all`` installs a trigger is
    declared (a ``SimHashMixin`` model, the side table of :func:`attach_model`).

    The hook by which a layer above learns of them without storage importing it: the package's
    top level uses it to load simsql's Alembic integration when the model is declared inside an
    Alembic run (an application's ``env.py``), so autogenerate sees the trigger."""
    _TRIGGER_TABLE_LISTENERS.append(listener)


def orm_trigger(table: Table) -> OrmTrigger | None:
    """The trigger ``create_all`` installs with ``table``, if any (every mapper configured)."""
    binding = _ORM_TRIGGERS.get(table)
    if binding is None:
        return None
    bound = binding()
    base: Any = inspect(bound.model).local_table
    names = Names(base.name, bound.names.prefix, bound.names.side)
    return OrmTrigger(names, bound.source_columns, tuple(k.name for k in bound.keys))


def orm_trigger_tables() -> tuple[Table, ...]:
    """The tables :func:`orm_trigger` knows, in the order they were declared."""
    return tuple(_ORM_TRIGGERS)


def _install_trigger_on_create(table: Table, binding: Callable[[], Binding]) -> None:
    """``create_all`` also creates the trigger that keeps fingerprints honest (and
    ``drop_all`` its function): raw SQL and COPY writers are covered from the first row.
    ``binding`` is called at create time, when every mapper is configured. Autogenerate finds
    the same trigger through :func:`orm_trigger` (simsql.alembic's comparator)."""
    _ORM_TRIGGERS[table] = binding
    for listener in _TRIGGER_TABLE_LISTENERS:
        listener(table)

    def trigger_of(target: Table) -> OrmTrigger:
        trigger = orm_trigger(target)
        assert trigger is not None
        return trigger

    def create(target: Table, connection: Any, **kw: Any) -> None:
        server, trigger = backend(connection), trigger_of(target)
        schema = server.trigger_schema(connection, target.schema)
        server.clear_trigger_names(connection, schema, trigger.names)
        for statement in trigger.create_statements(server, schema):
            execute_sql(connection, statement)
        # recorded where simsql is installed, so its command line sees the table like an
        # attached one (status, backfill, similar, dupes); nothing is installed otherwise
        bound = binding()
        table_schema, name = bound.registry_key
        registry.claim(connection, name, table_schema, bound.fingerprinter, bound.source_columns, bound.names)

    def drop(target: Table, connection: Any, **kw: Any) -> None:
        server, trigger = backend(connection), trigger_of(target)
        schema = server.trigger_schema(connection, target.schema)
        for statement in trigger.drop_statements(server, schema, table_dropped=trigger.names.side is None):
            execute_sql(connection, statement)
        table_schema, name = binding().registry_key
        registry.remove(connection, name, table_schema)  # what create recorded

    def check(target: Table, connection: Any, **kw: Any) -> None:
        # before the table exists: its trigger could not work on a server without the digest
        backend(connection).check_digest(connection)

    event.listen(table, "before_create", check)
    event.listen(table, "after_create", create)
    event.listen(table, "after_drop", drop)


def register(model: type, binding: Binding) -> None:
    """Make ``binding_for(model)`` return ``binding`` (used by :func:`attach_model` and reflection)."""
    _SIDE_BINDINGS[model] = binding
