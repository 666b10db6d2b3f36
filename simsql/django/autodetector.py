"""``makemigrations`` for models with simsql's fields: ``AddSimHash`` in place of their columns.

Django's autodetector would write simsql's fields into ``CreateModel`` (or ``AddField``s) like
any others, and Django would then create columns simsql did not: no trigger, no registry entry,
no block indexes. :class:`SimHashAutodetector` takes simsql's fields out of what it compares and
writes ``AddSimHash(model, source=..., wide=...)`` for each model that gains them, in a
migration of its own after the one creating the table (``AddSimHash`` works on a connection of
its own, which must see the table committed), after ``InstallSimSQL()``: simsql's own objects
are installed by the first such migration and removed when the last one is migrated back. The ``makemigrations`` and ``migrate`` commands of
the ``simsql.django`` app use it (Django 5.2's ``autodetector`` attribute).
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db.migrations import Migration
from django.db.migrations.autodetector import MigrationAutodetector
from django.db.migrations.operations import CreateModel

from .fields import SimHashField
from .models import NAMES, source_of
from .operations import AddSimHash, InstallSimSQL

SIMSQL_FIELDS = frozenset((NAMES.fingerprint, NAMES.digest, *NAMES.blocks, *NAMES.wide_words, *NAMES.wide_blocks))


def has_simsql_fields(model_state: Any) -> bool:
    return isinstance(model_state.fields.get(NAMES.fingerprint), SimHashField) and NAMES.digest in model_state.fields


class AttachMigration(Migration):
    """The migration attaching one model, named after it (``0002_simhash_article``)."""

    def suggest_name(self) -> str:
        return str(self.operations[-1].migration_name_fragment)


class SimHashAutodetector(MigrationAutodetector):
    """Django's autodetector, with simsql's columns added by ``AddSimHash``."""

    def _detect_changes(self, convert_apps: Any = None, graph: Any = None) -> dict[str, list[Any]]:
        self.simsql_attach: list[tuple[str, str, AddSimHash]] = []
        for (app_label, model_name), model_state in self.to_state.models.items():
            if not has_simsql_fields(model_state):
                continue
            before = self.from_state.models.get((app_label, model_name))
            if before is not None and has_simsql_fields(before):
                continue
            wide = NAMES.wide_words[0] in model_state.fields
            source = source_of(apps.get_model(app_label, model_state.name))
            self.simsql_attach.append((app_label, model_name, AddSimHash(model_state.name, source=list(source), wide=wide)))
            model_state.fields = {name: field for name, field in model_state.fields.items() if name not in SIMSQL_FIELDS}
        changes: dict[str, list[Any]] = super()._detect_changes(convert_apps, graph)
        for app_label, model_name, operation in self.simsql_attach:
            migrations = changes.setdefault(app_label, [])
            created = [m for m in migrations if any(isinstance(o, CreateModel) and o.name_lower == model_name for o in m.operations)]
            attach = AttachMigration(f"auto_simsql_{model_name}", app_label)
            attach.operations = [InstallSimSQL(), operation]
            attach.dependencies = []
            if created:
                attach.dependencies.append((app_label, created[0].name))
                migrations.insert(migrations.index(created[0]) + 1, attach)
            else:
                attach.dependencies.extend([(app_label, migrations[-1].name)] if migrations else [])
                migrations.append(attach)
        return changes


__all__ = ["AttachMigration", "SimHashAutodetector", "has_simsql_fields"]
