"""A Django model as simsql's queries take it: a SQLAlchemy mapped class of the same table.

simsql's queries (:func:`simsql.most_similar`, :func:`simsql.similar_to`,
:func:`simsql.find_original`, the deduplication) are functions of a mapped class. The
*mirror* of a Django model is that class, declared from the model's own ``_meta`` (no database
read, so a queryset can be built where the database may not be touched: in async code):
the primary key, the ``simhash_source`` fields under their Django names and columns, the list
column of partition lists if the model has it (:class:`simsql.django.models.ListsModel`), and
simsql's columns through ``SimHashMixin`` or ``WideSimHashMixin`` with the model's
``Fingerprinter``. A query builds and plans its statement over the mirror; :mod:`.statements`
runs it inside the Django query, or a ``Session`` on the alias's own connection runs it
(:mod:`.connection`). One mirror per model class, for every database alias.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from django.db import models
from sqlalchemy import BigInteger, Integer, Text, Uuid, inspect
from sqlalchemy.orm import DeclarativeBase, mapped_column
from sqlalchemy.types import TypeEngine

from ..schema.names import DEFAULT_PREFIX, WIDE_LAYOUT, Names
from ..store.storage import SimHashMixin, WideSimHashMixin
from ..text.fingerprint import Fingerprinter
from ..text.signature import BlockLayout

LIST_COLUMN = Names("simsql_django", DEFAULT_PREFIX).part
"""The list column of partition lists (``simhash_part``), as :class:`simsql.lists.ListsMixin` names it."""

_MIRRORS: dict[type, type] = {}
_LOCK = threading.Lock()

INTEGER_FIELDS = frozenset(
    ("AutoField", "BigAutoField", "SmallAutoField", "IntegerField", "BigIntegerField", "SmallIntegerField",
     "PositiveIntegerField", "PositiveBigIntegerField", "PositiveSmallIntegerField")
)  # fmt: skip


def column_type(field: models.Field) -> TypeEngine[Any]:
    """The SQLAlchemy type a query needs for ``field``: an integer, a UUID, else text."""
    kind = field.get_internal_type()
    if kind in INTEGER_FIELDS:
        return BigInteger()
    if kind == "UUIDField":
        return Uuid()
    return Text()


def mirror_for(
    model: type[models.Model], source: Sequence[str], fingerprinter: Fingerprinter, wide: bool, layout: BlockLayout = WIDE_LAYOUT
) -> type:
    """The SQLAlchemy mapped class of ``model``'s table (made once, then kept): its text in the
    fields ``source``, fingerprinted by ``fingerprinter``, with the wide signature if ``wide``
    (its blocks cut as ``layout`` says)."""
    found = _MIRRORS.get(model)
    if found is not None:
        return found
    with _LOCK:
        found = _MIRRORS.get(model)
        if found is None:
            found = _MIRRORS[model] = _declare(model, source, fingerprinter, wide, layout)
        return found


def _declare(model: type[models.Model], source: Sequence[str], fingerprinter: Fingerprinter, wide: bool, layout: BlockLayout) -> type:
    class Base(DeclarativeBase):
        pass

    meta = model._meta
    attributes: dict[str, Any] = {
        "__tablename__": meta.db_table,
        "__simhash_source__": tuple(source),
        "__simhash_fingerprinter__": fingerprinter,
        meta.pk.name: mapped_column(meta.pk.column, column_type(meta.pk), primary_key=True, autoincrement=False),
    }
    for name in source:
        field = meta.get_field(name)
        attributes[name] = mapped_column(field.column, column_type(field), nullable=True)
    for field in meta.concrete_fields:  # the list column of partition lists, when the model declares it
        if field.column == LIST_COLUMN:
            attributes[field.name] = mapped_column(LIST_COLUMN, Integer, nullable=True)
    if wide and layout != WIDE_LAYOUT:
        attributes["__simhash_wide_blocks__"] = layout
    mixin = WideSimHashMixin if wide else SimHashMixin
    return type(f"Mirror_{meta.db_table}", (mixin, Base), attributes)


def primary_key(mirror: type) -> Any:
    """The mirror's primary-key column (one column: a Django model's)."""
    return inspect(mirror).primary_key[0]


__all__ = ["column_type", "mirror_for", "primary_key"]
