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
simsql's own machinery (:func:`simsql.alembic.upgrade`, :func:`simsql.attach_table`, whose DDL
is described, then run bounded in time, and :func:`simsql.detach_table`, its exact undo) on a
SQLAlchemy engine on the migration's database (:mod:`simsql.django.bridge`). That engine is a
connection of its own: write ``AddSimHash`` in a migration after the one creating the table, or
mark the migration ``atomic = False`` (PostgreSQL builds the indexes ``CONCURRENTLY``, outside
any transaction, as Django's ``AddIndexConcurrently`` does).

``AddSimHash`` also adds simsql's fields to the migration state, so a model inheriting
``WideSimHashModel`` (or ``SimHashModel`` with ``wide=False``) matches it and ``makemigrations``
writes nothing more. The indexes, trigger and registry entry are simsql's, outside Django's
state, as Alembic's autogenerate leaves them to simsql.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from django.db import models
from django.db.migrations.operations.base import Operation, OperationCategory

import simsql
import simsql.alembic

from ..alembic.revisions import attached_tables
from ..text.errors import SchemaError, SimsqlError
from . import bridge


def simsql_fields(wide: bool) -> list[tuple[str, models.Field]]:
    """(name, field) of the columns simsql adds, as the abstract models declare them."""
    from .models import SimHashModel, WideSimHashModel  # needs the app registry: imported when run

    model = WideSimHashModel if wide else SimHashModel
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
        simsql.alembic.upgrade(bridge.engine_for(schema_editor.connection.alias))

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        engine = bridge.engine_for(schema_editor.connection.alias)
        with engine.connect() as connection:
            attached = [f"{entry.table_schema}.{entry.table_name}" for entry in attached_tables(connection)]
        if attached:  # simsql.alembic.downgrade would refuse, with the command line's advice
            warnings.warn(
                f"simsql's objects are kept: attached tables still use them ({', '.join(attached)}); an InstallSimSQL "
                "migrated back after the last of them is detached (its AddSimHash migrated back) removes them",
                stacklevel=2,
            )
            return
        try:
            simsql.alembic.downgrade(engine)
        except SchemaError as error:  # a table attached meanwhile
            warnings.warn(f"simsql's objects are kept: {error}", stacklevel=2)

    def describe(self) -> str:
        return "Install simsql's own objects"

    @property
    def migration_name_fragment(self) -> str:
        return "install_simsql"


class AddSimHash(Operation):
    """Attach simsql to the table of ``model_name``: fingerprint columns, the trigger that keeps
    them true to the text, the registry entry and the block indexes (:func:`simsql.attach_table`;
    a table with rows gets the wide indexes from ``manage.py simsql backfill``). ``source``:
    the model's text fields, in the order their text is joined. ``wide`` (the default, algorithm
    version 3): with the 256-bit originality signature. Reversed: :func:`simsql.detach_table`,
    which leaves the table exactly as it was."""

    reversible = True
    reduces_to_sql = False
    category = OperationCategory.ADDITION

    def __init__(self, model_name: str, source: Sequence[str], wide: bool = True) -> None:
        self.model_name = model_name
        self.source = list(source)
        self.wide = wide

    @property
    def model_name_lower(self) -> str:
        return self.model_name.lower()

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        kwargs: dict[str, Any] = {"source": self.source}
        if not self.wide:
            kwargs["wide"] = False
        return type(self).__qualname__, [self.model_name], kwargs

    def state_forwards(self, app_label: str, state: Any) -> None:
        for name, field in simsql_fields(self.wide):
            state.add_field(app_label, self.model_name_lower, name, field, preserve_default=True)

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = from_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        columns = [model._meta.get_field(name).column for name in self.source]
        engine = bridge.engine_for(schema_editor.connection.alias)
        try:
            simsql.attach_table(engine, model._meta.db_table, columns, wide=self.wide)
        except SimsqlError as error:
            if not schema_editor.connection.in_atomic_block:
                raise
            raise SchemaError(
                f"{error} (AddSimHash runs on a connection of its own, which sees only committed tables: "
                f"put it in a migration after the one creating {model._meta.db_table}, or set atomic = False "
                "on this migration)"
            ) from error
        bridge.forget(model._meta.db_table)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        simsql.detach_table(bridge.engine_for(schema_editor.connection.alias), model._meta.db_table)
        bridge.forget(model._meta.db_table)

    def describe(self) -> str:
        return f"Attach simsql to {self.model_name} (source {', '.join(self.source)})"

    @property
    def migration_name_fragment(self) -> str:
        return f"simhash_{self.model_name_lower}"

    def references_model(self, name: str, app_label: str) -> bool:
        return name.lower() == self.model_name_lower


__all__ = ["AddSimHash", "InstallSimSQL", "simsql_fields"]
