"""Fingerprints in a side table: :func:`attach_model` for a model whose own table stays as it is.

The side table (``<table>_simhash``) holds the fingerprint, its digest, blocks (and with the
wide signature its words) keyed by the model's primary key, with ``ON DELETE CASCADE``; the
ORM's inserts and source changes are followed in the writer's own transaction, and the trigger
simsql installs when the table is created keeps raw writes honest, as for a mixin's table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Column, ForeignKeyConstraint, Table, event, inspect
from sqlalchemy.orm import Mapper

from ..dialects import backend
from ..schema.names import DEFAULT_PREFIX, Names, block_layout, configuration_for, default_side_table, layout_text
from ..text.errors import SchemaError
from ..text.fingerprint import Fingerprinter
from ..text.signature import BlockLayout
from .orm_triggers import install_trigger_on_create
from .columns import block_columns, block_indexes, wide_columns, wide_indexes
from .storage import Binding, bound_to, register, source_names
from .types import TEXT_DIGEST, SimHash


def attach_model(
    model: type,
    source: Sequence[str],
    *,
    fingerprinter: Fingerprinter | None = None,
    table_name: str | None = None,
    prefix: str = DEFAULT_PREFIX,
    wide: bool | None = None,
    wide_blocks: str | BlockLayout | None = None,
) -> Binding:
    """Fingerprint ``model`` without altering its table: a side table keyed by its primary key.

    The side table (``<table>_simhash`` unless ``table_name`` is given) is added to the model's
    ``MetaData``, so ``metadata.create_all()`` or a migration creates it. Rows are deleted with
    their model row (``ON DELETE CASCADE``). Fingerprints follow ORM inserts and source changes;
    calling ``attach`` twice with the same settings returns the same binding. ``wide``: the side
    table also holds the wide originality signature (as :class:`WideSimHashMixin`), part of
    algorithm version 3: ``wide=True`` alone means :data:`simsql.text.fingerprint.DEFAULT_WIDE`, a
    version 3 ``fingerprinter`` means ``wide=True``. ``wide_blocks``: how the wide signature is
    cut into indexed blocks (``"10x24"`` or a :class:`~simsql.text.signature.BlockLayout`;
    None: 8 x 20), as :func:`simsql.attach_table` takes it (given, ``wide`` defaults to True).
    """
    mapper: Any = inspect(model, raiseerr=False)
    if mapper is None or not isinstance(mapper, Mapper):
        raise TypeError(f"attach_model() needs a mapped class, got {model!r}")
    source = _check_source(model, mapper, source)
    fingerprinter = configuration_for(fingerprinter, True if wide is None and wide_blocks is not None else wide)
    wide = fingerprinter.wide
    layout = block_layout(wide_blocks)
    if wide_blocks is not None and not wide:
        raise SchemaError(f"wide_blocks={layout_text(layout)!r} cuts the wide signature into blocks: pass wide=True too")
    existing = bound_to(model)
    if existing is not None:
        same = existing.names.wide == wide and (not wide or existing.names.layout == layout)
        if existing.source == source and existing.fingerprinter == fingerprinter and same:
            return existing
        raise ValueError(f"{model.__name__} is already attached with different settings")
    base = mapper.local_table
    assert isinstance(base, Table)
    names = Names(base.name, prefix, table_name or default_side_table(base.name, prefix), wide=wide, layout=layout)
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
        words=tuple(side.c[w] for w in names.signature_words),
        wide_blocks=tuple(side.c[b] for b in names.wide_blocks),
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
        *block_columns(names),
        *wide_columns(names),
        ForeignKeyConstraint(list(key_names), list(keys), ondelete="CASCADE"),
        schema=base.schema,
    )
    block_indexes(side, names, key_names)
    wide_indexes(side, names, key_names)
    return side


def _follow_orm_writes(model: type, binding: Binding) -> None:
    """Side rows follow ORM inserts and source changes, in the writer's own transaction."""
    side = binding.table

    def upsert(connection: Any, target: Any) -> None:
        binding.check_config(connection, claim=True)
        values = {c.name: v for c, v in zip(binding.table_keys, binding.key_of(target))}
        stored = binding.stored_row(target)
        values.update(stored)
        keys = [c.name for c in binding.table_keys]
        connection.execute(backend(connection).upsert(side, values, keys, list(stored)))
        binding.confirm_config(connection, target)

    @event.listens_for(model, "after_insert", propagate=True)
    def _side_insert(mapper: Mapper[Any], connection: Any, target: Any) -> None:
        upsert(connection, target)

    @event.listens_for(model, "after_update", propagate=True)
    def _side_update(mapper: Mapper[Any], connection: Any, target: Any) -> None:
        if binding.source_changed(target):
            upsert(connection, target)

    install_trigger_on_create(side, lambda: binding)


__all__ = ["attach_model"]
