"""Partition lists on an ORM model: :class:`ListsMixin` declares the list column and
its covering index, and every ORM write places the row in the list of its nearest centre.

The write hooks are registered on :class:`~simsql.SimHashMixin` after its own (this module is
imported after :mod:`simsql.store.storage`), so they run once the row's fingerprint is set, and act on
models that also inherit :class:`ListsMixin`. A table without fitted lists gets NULL
(the row is read by every query until placed); a writer never waits for a fit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy import Index, Integer, Table, event
from sqlalchemy.orm import Mapped, Mapper, declared_attr, mapped_column
from sqlalchemy.orm.attributes import flag_modified, set_attribute

from ..dialects import COVERING_INFO
from ..schema.names import DEFAULT_PREFIX, Names
from .lists import writer_centres
from .storage import Binding, SimHashMixin, binding_for

PART_COLUMN = Names("t", DEFAULT_PREFIX).part


class ListsMixin:
    """Partition lists for a :class:`~simsql.SimHashMixin` (or ``WideSimHashMixin``) model: an
    integer column ``simhash_part`` and a covering index on it, created by ``create_all`` or
    an Alembic autogenerate like the model's other columns::

        class Article(ListsMixin, simsql.WideSimHashMixin, Base):
            ...

    Then :func:`simsql.lists.fit_lists` fits the lists on the table's rows, and
    ``most_similar(..., probes=N)`` reads them. Every ORM insert, and every update that changes
    the text (or the vector), places the row in the list of its nearest centre."""

    @declared_attr
    def simhash_part(cls) -> Mapped[int | None]:
        return mapped_column(PART_COLUMN, Integer, nullable=True)


@event.listens_for(ListsMixin, "instrument_class", propagate=True)
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


def list_value(connection: Any, binding: Binding, target: Any) -> int | None:
    """The list of ``target``'s nearest centre (None: no lists fitted, or nothing to place). A
    vector row is placed by the vector its signature was just computed from, checked once for
    both (:meth:`~simsql.store.storage.Binding.unit_vector`): the list ``Centres.place`` gives
    that vector (``tests/test_lists_writes.py`` compares them row by row)."""
    fingerprint = getattr(target, binding.names.fingerprint)
    if fingerprint is None:
        return None
    schema, table = binding.registry_key
    centres = writer_centres(connection, schema, table)
    if centres is None:
        return None
    if centres.kind == "modes":
        return int(centres.place(np.array([int(fingerprint) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))[0])
    return int(centres.place_unit(binding.unit_vector(target))[0])


def _place(connection: Any, target: Any) -> None:
    """The row's list, always written with its fingerprint: a value equal to the one loaded
    would otherwise be left out of the UPDATE, and a concurrent writer's list would stay
    beside this writer's fingerprint."""
    if isinstance(target, ListsMixin):
        binding = binding_for(type(target))
        set_attribute(target, binding.names.part, list_value(connection, binding, target))
        flag_modified(target, binding.names.part)


@event.listens_for(SimHashMixin, "before_insert", propagate=True)
def _place_on_insert(mapper: Mapper[Any], connection: Any, target: Any) -> None:
    _place(connection, target)


@event.listens_for(SimHashMixin, "before_update", propagate=True)
def _place_on_update(mapper: Mapper[Any], connection: Any, target: Any) -> None:
    if isinstance(target, ListsMixin) and binding_for(type(target)).source_changed(target):
        _place(connection, target)


__all__ = ["PART_COLUMN", "ListsMixin", "list_value"]
