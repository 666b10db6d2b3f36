"""Migration operations: simsql's own objects, and attaching simsql to a model's table.

::

    from .operations import AddSimHash, InstallSimSQL

    class Migration(migrations.Migration):
        dependencies = [("news", "0001_initial")]
        operations = [
            InstallSimSQL(),
            AddSimHash("article", source=["title", "body"]),
        ]

They are the Django counterparts of ``op.upgrade_simsql()`` and ``op.add_simhash(...)`` and run
simsql's own machinery (:func:`simsql.alembic.upgrade`, :func:`simsql.lifecycle.attach.add_simhash`
and ``create_simhash_indexes``, ``drop_simhash``: described, then run bounded in time) on the
migration's own connection, in its transaction (:mod:`simsql.django.connection`): a migration
may create a table and attach it, and migrating back undoes both. Inside an atomic migration
(PostgreSQL's default) the block indexes are built in that transaction, as Django's ``AddIndex``;
in a migration with ``atomic = False`` they are built ``CONCURRENTLY``, as ``AddIndexConcurrently``,
each committing on its own while writes go on (MySQL/MariaDB build them online either way).

``AddSimHash`` also adds simsql's fields to the migration state, so a model inheriting
``WideSimHashModel`` (or ``SimHashModel`` with ``wide=False``) matches it and ``makemigrations``
writes nothing more. The indexes, trigger and registry entry are simsql's, outside Django's
state, as Alembic's autogenerate leaves them to simsql.

``AddVectorIndex("clip", m=16, ef_construction=64)`` is ``op.add_vector_index``'s counterpart:
pgvector's HNSW index on a table attached with a ``VectorFingerprinter``, built by
:func:`simsql.lifecycle.add_vector_index` on the migration's connection (in its transaction, or
``CONCURRENTLY`` with ``atomic = False``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from django.db import models
from django.db.migrations.operations.base import Operation, OperationCategory

import simsql.alembic

from ..alembic.revisions import attached_tables, install
from ..lifecycle import add_vector_index, attach, drop_vector_index
from ..lifecycle.catalog import has_rows
from ..schema.names import block_layout, layout_text
from ..store import registry
from ..text.errors import SchemaError
from . import connection


def simsql_fields(wide: bool, wide_blocks: str | None = None) -> list[tuple[str, models.Field]]:
    """(name, field) of the columns simsql adds, as the abstract models declare them
    (``wide_blocks``: those of :func:`simsql.django.models.wide_simhash_model`)."""
    from .models import SimHashModel, WideSimHashModel, wide_simhash_model  # needs the app registry: imported when run

    model = (wide_simhash_model(wide_blocks) if wide_blocks else WideSimHashModel) if wide else SimHashModel
    return [(field.name, field.clone()) for field in model._meta.local_fields]


class InstallSimSQL(Operation):
    """simsql's own objects (its registry, backfill cursors and SQL functions), as
    ``simsql db upgrade`` installs them; nothing to do when they are. Reversed, they are removed,
    unless other tables still use them (kept then, with a warning, as ``op.downgrade_simsql()``)."""

    reversible = True
    reduces_to_sql = False
    category = OperationCategory.ADDITION  # "+" in makemigrations' list

    def state_forwards(self, app_label: str, state: Any) -> None:
        pass

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        with connection.borrowed(schema_editor.connection.alias) as bound:
            install(bound)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        with connection.borrowed(schema_editor.connection.alias) as bound:
            attached = [f"{entry.table_schema}.{entry.table_name}" for entry in attached_tables(bound)]
            if attached:  # simsql.alembic.downgrade would refuse, with the command line's advice
                warnings.warn(
                    f"simsql's objects are kept: attached tables still use them ({', '.join(attached)}); an InstallSimSQL "
                    "migrated back after the last of them is detached (its AddSimHash migrated back) removes them",
                    stacklevel=2,
                )
                return
            simsql.alembic.downgrade(bound)
            registry.forget(bound.engine)

    def describe(self) -> str:
        return "Install simsql's own objects"

    @property
    def migration_name_fragment(self) -> str:
        return "install_simsql"


class AddSimHash(Operation):
    """Attach simsql to the table of ``model_name``: fingerprint columns, the trigger that keeps
    them true to the text, the registry entry and the block indexes (as :func:`simsql.attach_table`;
    a table with rows gets the wide indexes from ``manage.py simsql backfill``). ``source``:
    the model's text fields, in the order their text is joined. ``wide`` (the default, algorithm
    version 3): with the 256-bit originality signature; ``wide_blocks``: its block layout
    (``"10x24"``; None: 8 x 20), what :func:`simsql.django.models.wide_simhash_model` declares.
    Reversed: the exact undo (:func:`simsql.detach_table`'s), which leaves the table as it was."""

    reversible = True
    reduces_to_sql = False
    category = OperationCategory.ADDITION

    def __init__(self, model_name: str, source: Sequence[str], wide: bool = True, wide_blocks: str | None = None) -> None:
        self.model_name = model_name
        self.source = list(source)
        self.wide = wide
        if wide_blocks is not None and not wide:
            raise SchemaError(f"wide_blocks={wide_blocks!r} cuts the wide signature into blocks: pass wide=True too")
        self.wide_blocks = None if wide_blocks is None else layout_text(block_layout(wide_blocks))

    @property
    def model_name_lower(self) -> str:
        return self.model_name.lower()

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        kwargs: dict[str, Any] = {"source": self.source}
        if not self.wide:
            kwargs["wide"] = False
        if self.wide_blocks is not None:
            kwargs["wide_blocks"] = self.wide_blocks
        return type(self).__qualname__, [self.model_name], kwargs

    def state_forwards(self, app_label: str, state: Any) -> None:
        for name, field in simsql_fields(self.wide, self.wide_blocks):
            state.add_field(app_label, self.model_name_lower, name, field, preserve_default=True)

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = from_state.apps.get_model(app_label, self.model_name)
        alias = schema_editor.connection.alias
        if not self.allow_migrate_model(alias, model):
            return
        table = model._meta.db_table
        columns = [model._meta.get_field(name).column for name in self.source]
        with connection.borrowed(alias) as bound:
            install(bound)
            attach.add_simhash(bound, table, columns, wide=self.wide, wide_blocks=self.wide_blocks)
            registry.forget(bound.engine)
            later = self.wide and has_rows(bound, registry.current_schema(bound), table)  # built after the backfill
        if not later:
            concurrently = not schema_editor.connection.in_atomic_block
            with connection.borrowed(alias, atomic=not concurrently) as bound:
                attach.create_simhash_indexes(bound, table, concurrently=concurrently)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        alias = schema_editor.connection.alias
        if not self.allow_migrate_model(alias, model):
            return
        with connection.borrowed(alias) as bound:
            attach.drop_simhash(bound, model._meta.db_table)

    def describe(self) -> str:
        return f"Attach simsql to {self.model_name} (source {', '.join(self.source)})"

    @property
    def migration_name_fragment(self) -> str:
        return f"simhash_{self.model_name_lower}"

    def references_model(self, name: str, app_label: str) -> bool:
        return name.lower() == self.model_name_lower


class AddVectorIndex(Operation):
    """pgvector's HNSW index (cosine) on the table of ``model_name``, attached already with a
    :class:`~simsql.VectorFingerprinter`: :func:`simsql.lifecycle.add_vector_index` with the same
    ``m`` and ``ef_construction``, on the migration's connection. In an atomic migration it is
    built in the migration's transaction (writes to the table wait for it, as with Django's
    ``AddIndex``); with ``atomic = False`` it is built ``CONCURRENTLY`` (as ``AddIndexConcurrently``).
    Reversed: the index is dropped, and nothing else. Where pgvector is not created, or on
    MySQL/MariaDB, the migration stops with the ``UnsupportedDatabase`` the function raises.
    The index is simsql's, outside Django's state, as :class:`AddSimHash`'s block indexes."""

    reversible = True
    reduces_to_sql = False
    category = OperationCategory.ADDITION

    def __init__(self, model_name: str, m: int = 16, ef_construction: int = 64) -> None:
        self.model_name = model_name
        self.m = m
        self.ef_construction = ef_construction

    @property
    def model_name_lower(self) -> str:
        return self.model_name.lower()

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        kwargs = {name: value for name, value, default in (("m", self.m, 16), ("ef_construction", self.ef_construction, 64)) if value != default}
        return type(self).__qualname__, [self.model_name], kwargs

    def state_forwards(self, app_label: str, state: Any) -> None:
        pass

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        alias = schema_editor.connection.alias
        if self.allow_migrate_model(alias, model):
            with connection.borrowed(alias, atomic=schema_editor.connection.in_atomic_block) as bound:
                add_vector_index(bound, model._meta.db_table, m=self.m, ef_construction=self.ef_construction)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = from_state.apps.get_model(app_label, self.model_name)
        alias = schema_editor.connection.alias
        if self.allow_migrate_model(alias, model):
            with connection.borrowed(alias, atomic=schema_editor.connection.in_atomic_block) as bound:
                drop_vector_index(bound, model._meta.db_table)

    def describe(self) -> str:
        return f"pgvector's HNSW index on {self.model_name} (m={self.m}, ef_construction={self.ef_construction})"

    @property
    def migration_name_fragment(self) -> str:
        return f"vector_index_{self.model_name_lower}"

    def references_model(self, name: str, app_label: str) -> bool:
        return name.lower() == self.model_name_lower


__all__ = ["AddSimHash", "AddVectorIndex", "InstallSimSQL", "simsql_fields"]
