"""Where fingerprints live: columns on the model's own table, or a side table.

Both modes describe themselves with a :class:`Binding`, and every query in
:mod:`simsql.queries` is written against a Binding only, so both modes answer identically.

The 16-bit block columns are always derived by the database from the fingerprint (generated
columns here, a trigger for tables altered in place by migrations): Python never writes a
block, so blocks cannot disagree with their fingerprint whatever path a row was written by.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from sqlalchemy import Column, ForeignKeyConstraint, Index, Integer, Table, event, inspect
from sqlalchemy.orm import Mapped, Mapper, declared_attr, mapped_column
from sqlalchemy.orm.attributes import get_history

from . import registry
from . import dialects
from .dialects import BLOCK_COUNT, block_computed
from .errors import NotAttached, SchemaError
from .fingerprint import DEFAULT, Fingerprinter
from .schema import DEFAULT_PREFIX, Names, default_side_table
from .types import SimHash

_MIXIN_NAMES = Names("mixin", DEFAULT_PREFIX)
FINGERPRINT_COLUMN = _MIXIN_NAMES.fingerprint
"""The mixin's fingerprint column (a table attached with another prefix names its own)."""
BLOCK_COLUMNS = _MIXIN_NAMES.blocks
assert BLOCK_COUNT == len(BLOCK_COLUMNS)


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
            if value is None:
                continue
            if not isinstance(value, str):
                raise TypeError(
                    f"{type(instance).__name__}.{name} must hold str to be fingerprinted, "
                    f"got {type(value).__name__}"
                )
            parts.append(value)
        return "\n".join(parts) if parts else None

    def fingerprint_of(self, instance: object) -> int | None:
        """Fingerprint of a row, or None (stored as NULL) when its text has no features."""
        text = self.text_of(instance)
        if text is None:
            return None
        return self.fingerprinter.fingerprint_many([text], empty="none")[0]

    def key_of(self, instance: object) -> tuple[Any, ...]:
        return tuple(getattr(instance, column.key) for column in self.keys)

    @property
    def registry_key(self) -> tuple[str | None, str]:
        """(schema, table) under which the registry records this model's configuration."""
        table: Any = inspect(self.model).local_table
        return table.schema, table.name

    def check_config(self, connection: Any) -> None:
        """Refuse to read or write fingerprints of another configuration (cached per engine)."""
        schema, name = self.registry_key
        registry.check(connection, name, schema, self.fingerprinter.config_id)

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
    raise NotAttached(
        f"{model.__name__} has no fingerprints: inherit simsql.SimHashMixin or call "
        f"simsql.attach({model.__name__}, source=[...]) first"
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


@event.listens_for(SimHashMixin, "before_insert", propagate=True)
def _fingerprint_on_insert(mapper: Mapper[Any], connection: Any, target: Any) -> None:
    binding = binding_for(type(target))
    binding.check_config(connection)
    target.simhash = binding.fingerprint_of(target)


@event.listens_for(SimHashMixin, "before_update", propagate=True)
def _fingerprint_on_update(mapper: Mapper[Any], connection: Any, target: Any) -> None:
    binding = binding_for(type(target))
    if binding.source_changed(target):
        binding.check_config(connection)
        target.simhash = binding.fingerprint_of(target)


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
        *_block_columns(names),
        ForeignKeyConstraint(list(key_names), list(keys), ondelete="CASCADE"),
        schema=base.schema,
    )
    _block_indexes(side, names, key_names)
    return side


def _follow_orm_writes(model: type, binding: Binding) -> None:
    """Side rows follow ORM inserts and source changes, in the writer's own transaction."""
    side = binding.table
    fingerprint = binding.fingerprint.name

    def upsert(connection: Any, target: Any) -> None:
        binding.check_config(connection)
        values = {c.name: v for c, v in zip(binding.table_keys, binding.key_of(target))}
        values[fingerprint] = binding.fingerprint_of(target)
        keys = [c.name for c in binding.table_keys]
        connection.execute(dialects.upsert(connection, side, values, keys, [fingerprint]))

    @event.listens_for(model, "after_insert", propagate=True)
    def _side_insert(mapper: Mapper[Any], connection: Any, target: Any) -> None:
        upsert(connection, target)

    @event.listens_for(model, "after_update", propagate=True)
    def _side_update(mapper: Mapper[Any], connection: Any, target: Any) -> None:
        if binding.source_changed(target):
            upsert(connection, target)


def register(model: type, binding: Binding) -> None:
    """Make ``binding_for(model)`` return ``binding`` (used by :func:`attach` and reflection)."""
    _SIDE_BINDINGS[model] = binding
