"""Partition lists on an ORM model: :class:`PartitionListsMixin` declares the list column and
its covering index, and every ORM write places the row in the list of its nearest centre.

The write hooks are registered on :class:`~simsql.SimHashMixin` after its own (this module is
imported after :mod:`simsql.storage`), so they run once the row's fingerprint is set, and act on
models that also inherit :class:`PartitionListsMixin`. A table without fitted lists gets NULL
(the row is read by every query until placed); a writer never waits for a fit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy import Index, Integer, Table, event
from sqlalchemy.orm import Mapped, Mapper, declared_attr, mapped_column
from sqlalchemy.orm.attributes import set_attribute

from . import registry
from .dialects import COVERING_INFO
from .partition_sets import writer_centres
from .schema import DEFAULT_PREFIX, Names
from .storage import Binding, SimHashMixin, binding_for
from .vectors import VectorFingerprinter, vector_of

PART_COLUMN = Names("t", DEFAULT_PREFIX).part


class PartitionListsMixin:
    """Partition lists for a :class:`~simsql.SimHashMixin` (or ``WideSimHashMixin``) model: an
    integer column ``simhash_part`` and a covering index on it, created by ``create_all`` or
    an Alembic autogenerate like the model's other columns::

        class Article(PartitionListsMixin, simsql.WideSimHashMixin, Base):
            ...

    Then :func:`simsql.partitions.fit_partitions` fits the lists on the table's rows, and
    ``most_similar(..., probes=N)`` reads them. Every ORM insert, and every update that changes
    the text (or the vector), places the row in the list of its nearest centre."""

    @declared_attr
    def simhash_part(cls) -> Mapped[int | None]:
        return mapped_column(PART_COLUMN, Integer, nullable=True)


@event.listens_for(PartitionListsMixin, "instrument_class", propagate=True)
def _add_list_index(mapper: Mapper[Any], cls: type) -> None:
    """The covering index, added when the class is mapped (as the block indexes are)."""
    table = mapper.local_table
    if not isinstance(table, Table) or PART_COLUMN not in table.c:
        return
    names = Names(table.name, wide=f"{DEFAULT_PREFIX}_w1" in table.c)
    if any(index.name == names.part_index for index in table.indexes):
        return
    keys = [column.name for column in table.primary_key.columns]
    Index(
        names.part_index,
        table.c[names.part],
        postgresql_include=[*names.part_covered, *keys],
        info={COVERING_INFO: names.part_covered},
    )


def _schema_of(connection: Any, binding: Binding) -> str:
    schema, _ = binding.registry_key
    return schema or registry.current_schema(connection)


def list_value(connection: Any, binding: Binding, target: Any) -> int | None:
    """The list of ``target``'s nearest centre (None: no lists fitted, or nothing to place)."""
    fingerprint = getattr(target, binding.names.fingerprint)
    if fingerprint is None:
        return None
    centres = writer_centres(connection, _schema_of(connection, binding), binding.registry_key[1])
    if centres is None:
        return None
    if centres.kind == "modes":
        return int(centres.place(np.array([int(fingerprint) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))[0])
    fingerprinter = binding.fingerprinter
    assert isinstance(fingerprinter, VectorFingerprinter)
    vector = vector_of(getattr(target, binding.source[0]), binding.source[0])
    return int(centres.place(fingerprinter.check(vector))[0])


def _place(connection: Any, target: Any) -> None:
    if isinstance(target, PartitionListsMixin):
        binding = binding_for(type(target))
        set_attribute(target, binding.names.part, list_value(connection, binding, target))


@event.listens_for(SimHashMixin, "before_insert", propagate=True)
def _place_on_insert(mapper: Mapper[Any], connection: Any, target: Any) -> None:
    _place(connection, target)


@event.listens_for(SimHashMixin, "before_update", propagate=True)
def _place_on_update(mapper: Mapper[Any], connection: Any, target: Any) -> None:
    if isinstance(target, PartitionListsMixin) and binding_for(type(target)).source_changed(target):
        _place(connection, target)


__all__ = ["PART_COLUMN", "PartitionListsMixin", "list_value"]
