"""Where fingerprints live: columns on the model's own table, or a side table.

Both modes describe themselves with a :class:`Binding`, and every query in
:mod:`simsql.queries` is written against a Binding only, so both modes answer identically.

The 16-bit block columns are always derived by the database from the fingerprint (generated
columns here, a trigger for tables altered in place by migrations): Python never writes a
block, so blocks cannot disagree with their fingerprint whatever path a row was written by.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from sqlalchemy import Column, Integer, Table, event, inspect, update
from sqlalchemy.orm import Mapped, Mapper, declared_attr, mapped_column
from sqlalchemy.orm.attributes import get_history, set_attribute

from ..dialects import block_computed, wide_block_computed
from ..dialects.sqltext import is_autocommit
from ..schema.names import BLOCK_COUNT, DEFAULT_PREFIX, WIDE_LAYOUT, Attachment, Names, block_layout, configuration_for, layout_text
from ..text.errors import ConfigMismatch, NotAttached, SchemaError
from ..text.fingerprint import DEFAULT, DEFAULT_WIDE, WIDE_VERSION, Fingerprinter
from ..text.signature import BlockLayout
from ..text.vectors import AnyFingerprinter, VectorFingerprinter, vector_of
from . import registry, statement_checks
from .columns import block_indexes, wide_indexes
from .orm_triggers import install_trigger_on_create
from .types import TEXT_DIGEST, SimHash

_MIXIN_NAMES = Names("mixin", DEFAULT_PREFIX)
FINGERPRINT_COLUMN = _MIXIN_NAMES.fingerprint
"""The mixin's fingerprint column (a table attached with another prefix names its own)."""
DIGEST_COLUMN = _MIXIN_NAMES.digest
BLOCK_COLUMNS = _MIXIN_NAMES.blocks
assert BLOCK_COUNT == len(BLOCK_COLUMNS)
_WIDE_NAMES = Names("mixin", DEFAULT_PREFIX, wide=True)


# -- the invariant, kept by the database: a fingerprint is stored with the md5 of its text
# (``<prefix>_src``); triggers compare it with the row's text on every write, whoever the writer
# (ORM, Core, raw SQL, COPY), and drop a fingerprint whose text is gone, in either storage mode.
# Each backend writes the trigger in its own SQL (:meth:`simsql.dialects.Backend.create_trigger_sql`).


def join_text(parts: Sequence[str | None]) -> str | None:
    """The text of a row: its non-NULL source values, one per line (None if all are NULL).
    :meth:`simsql.dialects.Backend.digest_sql` is the same rule in SQL."""
    present = [p for p in parts if p is not None]
    return "\n".join(present) if present else None


def text_digest(text_value: str) -> uuid.UUID:
    """md5 of a row's text, as PostgreSQL's ``CAST(md5(...) AS uuid)`` computes it."""
    return uuid.UUID(hashlib.md5(text_value.encode("utf-8", "surrogatepass")).hexdigest())


def stored_for_text(fingerprinter: Fingerprinter, names: Names, text_value: str | None) -> dict[str, Any]:
    """Column name -> value written for a row of text ``text_value``: fingerprint, digest and
    (wide ``names``) words 1-3, all None without features. The one rule of every Python writer
    (the ORM's hooks, side rows, :mod:`simsql.django`)."""
    empty = dict.fromkeys((names.fingerprint, names.digest, *names.wide_words))
    if text_value is None:
        return empty
    if names.wide:
        signature = fingerprinter.signatures_many([text_value], empty="none")[0]
        words: Sequence[int | None] | None = None if signature is None else signature.words
    else:
        words = fingerprinter.fingerprint_many([text_value], empty="none")
    if words is None or words[0] is None:
        return empty
    return {**dict(zip((names.fingerprint, *names.wide_words), words)), names.digest: text_digest(text_value)}


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
    words: tuple[Column[Any], ...] = ()
    """The wide signature's four word columns (word 0 is ``fingerprint``); empty unless ``names.wide``."""
    wide_blocks: tuple[Column[Any], ...] = ()
    """The wide signature's block columns, one per block of ``names.layout`` (by default
    :data:`simsql.schema.names.WIDE_LAYOUT`)."""

    def text_of(self, instance: object) -> str | None:
        """The text a row is fingerprinted from: its non-NULL source columns, one per line."""
        return self.text_of_values([getattr(instance, name) for name in self.source], type(instance).__name__)

    def text_of_values(self, values: Sequence[Any], owner: str | None = None) -> str | None:
        """:meth:`text_of` from the values of the source columns, in :attr:`source` order (a
        row read as columns rather than as an instance of ``owner``, the model by default)."""
        for name, value in zip(self.source, values):
            if value is not None and not isinstance(value, str):
                raise TypeError(
                    f"{owner or self.model.__name__}.{name} must hold str to be fingerprinted, "
                    f"got {type(value).__name__}"
                )
        return join_text(values)

    def fingerprint_of(self, instance: object) -> int | None:
        """Fingerprint of a row, or None (stored as NULL) when its text has no features."""
        return self.stored_values(instance)[0]

    def stored_values(self, instance: object) -> tuple[int | None, uuid.UUID | None]:
        """(fingerprint, digest of its text) for a row; None without features (a vector: no digest)."""
        if isinstance(self.fingerprinter, VectorFingerprinter):  # 64 hyperplanes, even for a wide table
            checked = self.checked_vector(instance)
            return (None if checked is None else int(self.fingerprinter.fingerprint_array(checked)[0])), None
        names = self.names.with_wide(False)
        row = stored_for_text(self.fingerprinter, names, self.text_of(instance))
        return row[names.fingerprint], row[names.digest]

    def stored_row(self, instance: object) -> dict[str, Any]:
        """Column name -> value of what Python writes for a row: fingerprint, digest and, on a wide
        table, the signature's words 1-3 (word 0 is the fingerprint; all None without features).
        A vector row has no digest (the triggers' is of text): see :func:`_rewrite_vector_signature`;
        ``ValueError``/``TypeError`` for a bad vector."""
        names, fingerprinter = self.names, self.fingerprinter
        if not isinstance(fingerprinter, VectorFingerprinter):
            return stored_for_text(fingerprinter, names, self.text_of(instance))
        written = names.signature_words if names.wide else (names.fingerprint,)
        checked = self.checked_vector(instance)
        if checked is None:
            return {names.digest: None, **dict.fromkeys(written)}
        unit = None if fingerprinter.center is None else fingerprinter.unit(checked)
        _LAST_VECTOR.seen = (getattr(instance, self.source[0]), checked, unit)
        words = fingerprinter.signatures_of(checked, unit)[0].words if names.wide else (int(fingerprinter.fingerprint_array(checked, unit)[0]),)
        return {names.digest: None, **dict(zip(written, words))}

    def unit_vector(self, instance: object) -> np.ndarray:
        """A vector row's vector (not NULL) checked, at unit length: what lists compare. The one
        :meth:`stored_row` checked last in this thread if of this very value (an ORM write's hooks), else checked now."""
        seen = getattr(_LAST_VECTOR, "seen", (None, None, None))
        same = seen[0] is not None and seen[0] is getattr(instance, self.source[0])
        checked, unit = (seen[1], seen[2]) if same else (self.checked_vector(instance), None)
        assert checked is not None, "a row without a vector is not placed"
        return VectorFingerprinter.unit(checked) if unit is None else unit

    def checked_vector(self, instance: object) -> np.ndarray | None:
        """A vector row's vector as :meth:`VectorFingerprinter.check_one` passes it (``[1,
        dimensions]``), or None for NULL; ``ValueError``/``TypeError`` naming the column for a bad one."""
        value = getattr(instance, self.source[0])
        assert isinstance(self.fingerprinter, VectorFingerprinter)
        return None if value is None else self.fingerprinter.check_one(vector_of(value, f"{type(instance).__name__}.{self.source[0]}"))

    def key_of(self, instance: object) -> tuple[Any, ...]:
        return tuple(getattr(instance, column.key) for column in self.keys)

    @property
    def registry_key(self) -> tuple[str | None, str]:
        """(schema, table) under which the registry records this model's configuration."""
        table: Any = inspect(self.model).local_table
        return table.schema, table.name

    def check_config(self, connection: Any, *, claim: bool = False) -> None:
        """Refuse to read or write fingerprints of another configuration (cached per engine).
        ``claim`` (writes): a table simsql's registry does not know yet is recorded with this
        configuration, so that a later writer or reader with another one is refused."""
        schema, name = self.registry_key
        if claim:
            registry.claim(connection, name, schema, self.fingerprinter, self.source_columns, self.names)
        registry.check(connection, name, schema, self.fingerprinter.config_id, self.mismatch_advice)
        registry.check_layout(connection, name, schema, self.declared_layout, self.model.__name__)

    @property
    def declared_layout(self) -> str | None:
        """The wide blocks this binding's queries cut (``"10x24"``), checked against the table's
        record before they run; None without a wide signature."""
        return layout_text(self.names.layout) if self.names.wide else None

    def mismatch_advice(self, found: Attachment) -> str | None:
        """The one change that fits this model to a table of the same configuration but for the
        wide signature: the other mixin (or ``wide=`` of :func:`attach_model`); None otherwise."""
        ours, version = self.fingerprinter, found.settings.get("algorithm")
        if not isinstance(ours, Fingerprinter) or not registry.only_wide_differs(found.settings, ours.settings):
            return None
        mixins = ("WideSimHashMixin", "SimHashMixin")[:: 1 if version == WIDE_VERSION else -1]
        change = (f"pass wide={version == WIDE_VERSION} to simsql.attach_model({self.model.__name__}, ...)" if self.mode == "side_table"
                  else f"declare {self.model.__name__} with simsql.{mixins[0]} instead of simsql.{mixins[1]}")  # fmt: skip
        custom = "" if ours in (DEFAULT, DEFAULT_WIDE) else f" and its configuration as Fingerprinter(version={version}, ...)"
        return change + custom + ("" if version == WIDE_VERSION else "; or move the table to version 3 first with `simsql refingerprint`")

    def confirm_config(self, connection: Any, instance: object) -> None:
        """After ``instance``'s fingerprint was written in ``connection``'s transaction: refuse
        it (:func:`simsql.store.registry.confirm`, :class:`~simsql.text.errors.ConfigMismatch`, nothing
        of the transaction kept) if the table moved to another configuration since the check
        before the write. In autocommit mode the write is already committed: its fingerprint
        is cleared first, so the row reads as missing and a backfill fingerprints it with the
        table's configuration."""
        schema, name = self.registry_key
        try:
            registry.confirm(connection, name, schema, self.fingerprinter.config_id, self.mismatch_advice)
        except ConfigMismatch:
            if is_autocommit(connection):
                where = [column == value for column, value in zip(self.table_keys, self.key_of(instance))]
                values = {self.names.fingerprint: None, self.names.digest: None}
                connection.execute(update(self.table).where(*where).values(values))
            raise

    def guard(self, expression: Any) -> Any:
        """``expression`` unchanged in SQL, but the statement it ends up in checks this
        binding's configuration against the registry when it runs (whatever executes it)."""
        return statement_checks.checked(expression, self.statement_check)

    @property
    def statement_check(self) -> statement_checks.StatementCheck:
        """What a statement of this binding checks before it runs: the configuration, and the
        wide block layout its probes cut (:mod:`.statement_checks`)."""
        schema, name = self.registry_key
        return statement_checks.StatementCheck(schema, name, self.fingerprinter.config_id, self.declared_layout, self.model.__name__)

    @property
    def source_columns(self) -> tuple[str, ...]:
        """Database column names of the source attributes."""
        mapper: Any = inspect(self.model)
        return tuple(mapper.attrs[name].columns[0].name for name in self.source)

    def source_changed(self, instance: object) -> bool:
        return any(get_history(instance, name).has_changes() for name in self.source)


_SIDE_BINDINGS: dict[type, Binding] = {}
_LAST_VECTOR = threading.local()
"""``seen``: the source value, checked vector and unit vector (or None) of the last vector row
this thread's :meth:`Binding.stored_row` signed; the value is held, so its identity is not reused."""


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


class WideSimHashMixin(SimHashMixin):
    """:class:`SimHashMixin` plus the wide 256-bit originality signature (:mod:`simsql.text.signature`):
    words 1-3 beside ``simhash`` (word 0), written with it on every ORM write, and the indexed
    blocks generated from the words, which :func:`simsql.find_original` probes: those of
    :data:`simsql.schema.names.WIDE_LAYOUT` (8 x 20 bits), or of ``__simhash_wide_blocks__``
    (``"10x24"``, or a :class:`~simsql.text.signature.BlockLayout`: the ``wide_blocks`` of
    :func:`simsql.attach_table`), which must hold at least 8 blocks (the mixin declares
    ``simhash_v0..v7``). Its configuration is algorithm version 3
    (:data:`simsql.text.fingerprint.DEFAULT_WIDE` unless ``__simhash_fingerprinter__`` names another
    version 3 one). Opt-in: tables without it keep working unchanged."""

    __simhash_fingerprinter__: ClassVar[AnyFingerprinter] = DEFAULT_WIDE
    __simhash_wide_blocks__: ClassVar[str | BlockLayout | None] = None

    def __init_subclass__(cls, **kw: Any) -> None:
        """A class that names its own ``__simhash_wide_blocks__`` gets the block columns of that
        layout (declared before SQLAlchemy maps it; a bad layout fails at its declaration)."""
        if cls.__dict__.get("__simhash_wide_blocks__") is not None:
            layout = block_layout(cls.__dict__["__simhash_wide_blocks__"])
            if layout.count < WIDE_LAYOUT.count:
                raise SchemaError(
                    f"{cls.__name__}.__simhash_wide_blocks__: WideSimHashMixin declares {WIDE_LAYOUT.count} block columns, "
                    f"so a layout of at least {WIDE_LAYOUT.count} blocks; attach_model(..., wide_blocks=...) takes any"
                )
            names = Names("mixin", DEFAULT_PREFIX, wide=True, layout=layout)
            for index, name in enumerate(names.wide_blocks):
                setattr(cls, name, _wide_attr(name, index, layout))
        super().__init_subclass__(**kw)


def mixin_layout(model: type) -> BlockLayout:
    """The wide block layout a ``WideSimHashMixin`` model declares (8 x 20 unless ``__simhash_wide_blocks__``)."""
    return block_layout(getattr(model, "__simhash_wide_blocks__", None))


def _wide_attr(name: str, block: int | None, layout: BlockLayout) -> declared_attr[int | None]:
    """Word column ``name`` (``block`` None), or wide block ``block`` of ``layout``, generated from the words."""
    def column(cls: type) -> Mapped[int | None]:
        if block is None:
            return mapped_column(name, SimHash(), nullable=True)
        return mapped_column(name, Integer, wide_block_computed(_WIDE_NAMES.signature_words, block, layout))

    return declared_attr(column)


for _name in _WIDE_NAMES.wide_words:
    setattr(WideSimHashMixin, _name, _wide_attr(_name, None, WIDE_LAYOUT))
for _index, _name in enumerate(_WIDE_NAMES.wide_blocks):
    setattr(WideSimHashMixin, _name, _wide_attr(_name, _index, WIDE_LAYOUT))


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
    if isinstance(fingerprinter, Fingerprinter):
        try:
            configuration_for(fingerprinter, issubclass(model, WideSimHashMixin))
        except ValueError as error:
            mixin = "WideSimHashMixin" if fingerprinter.wide else "SimHashMixin"
            raise TypeError(f"{model.__name__}.__simhash_fingerprinter__: {error} (or declare it with {mixin})") from None
    table = mapper.local_table
    assert isinstance(table, Table)
    keys = tuple(mapper.primary_key)
    wide = issubclass(model, WideSimHashMixin)
    names = Names(table.name, wide=wide, layout=mixin_layout(model) if wide else WIDE_LAYOUT)
    return Binding(
        model=model, mode="columns", table=table, fingerprint=table.c[FINGERPRINT_COLUMN],
        blocks=tuple(table.c[name] for name in BLOCK_COLUMNS), keys=keys, table_keys=keys, source=source,
        fingerprinter=fingerprinter, names=names, words=tuple(table.c[name] for name in names.signature_words),
        wide_blocks=tuple(table.c[name] for name in names.wide_blocks),
    )  # fmt: skip


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
def _addblock_indexes(mapper: Mapper[Any], cls: type) -> None:
    """Indexes are added when the class is mapped, so they exist before any ``create_all``
    or autogenerate run, whatever order the application imports things in."""
    table = mapper.local_table
    if not isinstance(table, Table) or FINGERPRINT_COLUMN not in table.c:
        return
    wide = _WIDE_NAMES.wide_words[0] in table.c
    names = Names(table.name, wide=wide, layout=mixin_layout(cls) if wide else WIDE_LAYOUT)
    if any(index.name == names.indexes[0] for index in table.indexes):
        return
    keys = [column.name for column in table.primary_key.columns]
    block_indexes(table, names, keys)
    wide_indexes(table, names, keys)
    install_trigger_on_create(table, lambda: binding_for(cls))


def _store_fingerprint(binding: Binding, target: Any) -> None:
    """Set the row's fingerprint and digest through SQLAlchemy's instrumentation, not the
    class's ``__setattr__``: a SQLModel (pydantic) model refuses attributes that are not
    pydantic fields, and the mixin's columns are SQLAlchemy's only. Same effect otherwise."""
    for name, value in binding.stored_row(target).items():  # fingerprint, digest (and a wide table's words)
        set_attribute(target, name, value)


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
    its source (it cannot tell an ORM write from a raw one), and a vector has no text digest. On a
    wide table the signature's words 1-3 go with it (the trigger drops them with the fingerprint)."""
    where = [column == value for column, value in zip(binding.table_keys, binding.key_of(target))]
    names = binding.names
    written = names.signature_words if names.wide else (names.fingerprint,)
    connection.execute(update(binding.table).where(*where).values({name: getattr(target, name) for name in written}))


def bound_to(model: type) -> Binding | None:
    """The side-table binding :func:`register` recorded for ``model``, if any."""
    return _SIDE_BINDINGS.get(model)


def register(model: type, binding: Binding) -> None:
    """Make ``binding_for(model)`` return ``binding`` (used by :func:`attach_model` and reflection)."""
    _SIDE_BINDINGS[model] = binding
