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

from sqlalchemy import Column, Computed, ForeignKeyConstraint, Index, Integer, Table, event, inspect
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Mapped, Mapper, declared_attr, mapped_column
from sqlalchemy.orm.attributes import get_history

from .dialects import BLOCK_COUNT, block_expression_sql
from .errors import NotAttached, SchemaError
from .fingerprint import DEFAULT, Fingerprinter
from .types import SimHash

FINGERPRINT_COLUMN = "simhash"
BLOCK_COLUMNS = tuple(f"{FINGERPRINT_COLUMN}_b{i}" for i in range(BLOCK_COUNT))


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
        from . import registry

        schema, name = self.registry_key
        registry.check(connection, name, schema, self.fingerprinter.config_id)

    def source_changed(self, instance: object) -> bool:
        return any(get_history(instance, name).has_changes() for name in self.source)


_SIDE_BINDINGS: dict[type, Binding] = {}


def _index_name(table: str, suffix: str) -> str:
    name = f"ix_{table}_{suffix}"
    if len(name) <= 63:
        return name
    import xxhash

    return f"ix_{table[:40]}_{xxhash.xxh32_hexdigest(table.encode())}_{suffix}"[:63]


def _block_columns(fingerprint_name: str) -> list[Column[Any]]:
    quoted = '"' + fingerprint_name.replace('"', '""') + '"'
    return [
        Column(name, Integer, Computed(block_expression_sql(quoted, i), persisted=True), nullable=True)
        for i, name in enumerate(BLOCK_COLUMNS)
    ]


def _block_indexes(table: Table, key_names: Sequence[str]) -> list[Index]:
    """One btree per block, covering the fingerprint and the key, so candidate lookups are
    index-only scans and touch the heap only for the final rows."""
    return [
        Index(
            _index_name(table.name, name),
            table.c[name],
            postgresql_include=[FINGERPRINT_COLUMN, *key_names],
        )
        for name in BLOCK_COLUMNS
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
        return mapped_column(Integer, Computed(block_expression_sql(f'"{FINGERPRINT_COLUMN}"', index), persisted=True))

    return declared_attr(column)


# simhash_b0 .. simhash_b3: generated by PostgreSQL from the fingerprint, never written by Python.
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
    first = _index_name(table.name, BLOCK_COLUMNS[0])
    if any(index.name == first for index in table.indexes):
        return
    _block_indexes(table, [column.name for column in table.primary_key.columns])


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
    if isinstance(source, str):
        source = (source,)
    source = tuple(source)
    if not source:
        raise ValueError("attach() needs at least one source column")
    for name in source:
        if name not in mapper.attrs:
            raise SchemaError(f"{model.__name__} has no mapped attribute {name!r}")
    fingerprinter = fingerprinter or DEFAULT
    existing = _SIDE_BINDINGS.get(model)
    if existing is not None:
        if existing.source == source and existing.fingerprinter == fingerprinter:
            return existing
        raise ValueError(f"{model.__name__} is already attached with different settings")

    base = mapper.local_table
    assert isinstance(base, Table)
    keys = tuple(mapper.primary_key)
    name = table_name or f"{base.name}_{FINGERPRINT_COLUMN}"
    key_columns = [Column(f"key_{k.name}" if len(keys) > 1 else k.name, k.type, primary_key=True) for k in keys]
    side = Table(
        name,
        base.metadata,
        *key_columns,
        Column(FINGERPRINT_COLUMN, SimHash(), nullable=True),
        *_block_columns(FINGERPRINT_COLUMN),
        ForeignKeyConstraint(
            [c.name for c in key_columns], [k for k in keys], ondelete="CASCADE"
        ),
        schema=base.schema,
    )
    _block_indexes(side, [c.name for c in key_columns])
    binding = Binding(
        model=model,
        mode="side_table",
        table=side,
        fingerprint=side.c[FINGERPRINT_COLUMN],
        blocks=tuple(side.c[b] for b in BLOCK_COLUMNS),
        keys=keys,
        table_keys=tuple(side.c[c.name] for c in key_columns),
        source=source,
        fingerprinter=fingerprinter,
    )
    _SIDE_BINDINGS[model] = binding

    def upsert(connection: Any, target: Any) -> None:
        binding.check_config(connection)
        values = {c.name: v for c, v in zip(binding.table_keys, binding.key_of(target))}
        values[FINGERPRINT_COLUMN] = binding.fingerprint_of(target)
        statement = postgresql.insert(side).values(values)
        statement = statement.on_conflict_do_update(
            index_elements=[c.name for c in binding.table_keys],
            set_={FINGERPRINT_COLUMN: statement.excluded[FINGERPRINT_COLUMN]},
        )
        connection.execute(statement)

    @event.listens_for(model, "after_insert", propagate=True)
    def _side_insert(mapper: Mapper[Any], connection: Any, target: Any) -> None:
        upsert(connection, target)

    @event.listens_for(model, "after_update", propagate=True)
    def _side_update(mapper: Mapper[Any], connection: Any, target: Any) -> None:
        if binding.source_changed(target):
            upsert(connection, target)

    return binding


def reflect(connection: Any, table: str, schema: str | None = None) -> type:
    """A mapped class for a table attached by a migration or the CLI, for tools without an ORM
    model of their own (the command line, scripts). Queries accept it like any model."""
    from sqlalchemy import MetaData
    from sqlalchemy.orm import registry as orm_registry

    from . import registry

    schema_name = schema or registry.current_schema(connection)
    entry = registry.read(connection, table, schema_name)
    if entry is None:
        raise NotAttached(f"{schema_name}.{table} is not attached to simsql; run `simsql attach --table {table}`")
    from .backfill import fingerprinter_from_settings

    fingerprinter = fingerprinter_from_settings(entry.settings)
    metadata = MetaData()
    base = Table(table, metadata, autoload_with=connection, schema=schema_name)
    holder = (
        Table(entry.side_table, metadata, autoload_with=connection, schema=schema_name)
        if entry.side_table
        else base
    )
    mapper_registry = orm_registry(metadata=metadata)
    model = type(f"Reflected_{table}", (), {"__repr__": lambda self: f"<{table} {inspect(self).identity}>"})
    mapper_registry.map_imperatively(model, base)
    keys: tuple[Any, ...] = tuple(inspect(model).primary_key)
    binding = Binding(
        model=model,
        mode="side_table" if entry.side_table else "columns",
        table=holder,
        fingerprint=holder.c[FINGERPRINT_COLUMN],
        blocks=tuple(holder.c[name] for name in BLOCK_COLUMNS),
        keys=keys,
        table_keys=tuple(holder.c[k.name] for k in keys),
        source=tuple(entry.source),
        fingerprinter=fingerprinter,
    )
    _SIDE_BINDINGS[model] = binding
    return model
