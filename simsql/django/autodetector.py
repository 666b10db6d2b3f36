"""``makemigrations`` for models with simsql's fields: ``AddSimHash`` in place of their columns.

Django's autodetector would write simsql's fields into ``CreateModel`` (or ``AddField``s) like
any others, and Django would then create columns simsql did not: no trigger, no registry entry,
no block indexes. :class:`SimHashAutodetector` takes simsql's fields out of what it compares and
writes ``AddSimHash(model, source=..., wide=...)`` for each model that gains them: one migration
per app for all of them, after the ones creating their tables, after ``InstallSimSQL()``, in
the app's one line of migrations (several models never make two leaves). simsql's own objects
are installed by the first such migration and removed when the last one is migrated back. The
``makemigrations`` and ``migrate`` commands of the ``simsql.django`` app use it (Django 5.2's
``autodetector`` attribute).
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db.migrations import Migration
from django.db.migrations.autodetector import MigrationAutodetector
from django.db.migrations.operations import CreateModel

from ..schema.names import MIN_BLOCK_WIDTH
from ..text.signature import WIDE_BITS
from .fields import SimHashField
from .models import NAMES, source_of
from .operations import AddSimHash, InstallSimSQL

SIMSQL_FIELDS = frozenset(
    (NAMES.fingerprint, NAMES.digest, *NAMES.blocks, *NAMES.wide_words, *(f"{NAMES.prefix}_v{i}" for i in range(WIDE_BITS // MIN_BLOCK_WIDTH)))
)
"""simsql's fields on a model: every wide block column a layout may have (:func:`~simsql.schema.names.block_layout`)."""


def has_simsql_fields(model_state: Any) -> bool:
    return isinstance(model_state.fields.get(NAMES.fingerprint), SimHashField) and NAMES.digest in model_state.fields


class AttachMigration(Migration):
    """The migration attaching an app's new simsql models, named after them
    (``0002_simhash_article``, ``0002_simhash_memo_note``)."""

    def suggest_name(self) -> str:
        models = [operation.model_name_lower for operation in self.operations if isinstance(operation, AddSimHash)]
        return "simhash_" + "_".join(models) if len(models) <= 3 else f"simhash_{len(models)}_models"


class SimHashAutodetector(MigrationAutodetector):
    """Django's autodetector, with simsql's columns added by ``AddSimHash``: one migration per
    app, after the ones creating its models, in the app's one line of migrations (any number of
    models, one leaf)."""

    def _detect_changes(self, convert_apps: Any = None, graph: Any = None) -> dict[str, list[Any]]:
        attaching: dict[str, list[AddSimHash]] = {}
        for (app_label, model_name), model_state in self.to_state.models.items():
            if not has_simsql_fields(model_state):
                continue
            before = self.from_state.models.get((app_label, model_name))
            if before is not None and has_simsql_fields(before):
                continue
            wide = NAMES.wide_words[0] in model_state.fields
            source = source_of(apps.get_model(app_label, model_state.name))
            expression = getattr(model_state.fields.get(NAMES.wide_blocks[0]), "expression", None)
            wide_blocks = getattr(expression, "layout", "") or None  # a wide_simhash_model's layout
            attaching.setdefault(app_label, []).append(
                AddSimHash(model_state.name, source=list(source), wide=wide, wide_blocks=wide_blocks)
            )
            model_state.fields = {name: field for name, field in model_state.fields.items() if name not in SIMSQL_FIELDS}
        changes: dict[str, list[Any]] = super()._detect_changes(convert_apps, graph)
        for app_label, operations in attaching.items():
            add_attach_migration(app_label, changes.setdefault(app_label, []), operations)
        return changes


def add_attach_migration(app_label: str, migrations: list[Any], operations: list[AddSimHash]) -> None:
    """Put one :class:`AttachMigration` of ``operations`` into the app's new ``migrations``: after
    the last one creating one of their models (else at the end), depending on the one before it,
    and the one after it (if any) depending on it, so the app keeps one leaf."""
    names = {operation.model_name_lower for operation in operations}
    creating = [
        index for index, migration in enumerate(migrations)
        if any(isinstance(o, CreateModel) and o.name_lower in names for o in migration.operations)
    ]  # fmt: skip
    position = creating[-1] + 1 if creating else len(migrations)
    attach = AttachMigration("auto_simsql", app_label)
    attach.operations = [InstallSimSQL(), *operations]
    attach.dependencies = [(app_label, migrations[position - 1].name)] if position else []
    migrations.insert(position, attach)
    if position + 1 < len(migrations):
        migrations[position + 1].dependencies.append((app_label, attach.name))


__all__ = ["AttachMigration", "SimHashAutodetector", "add_attach_migration", "has_simsql_fields"]
