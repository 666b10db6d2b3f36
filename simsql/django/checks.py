"""``manage.py check``: a model simsql cannot fingerprint, or a database it cannot serve, is an
error before anything is migrated or written.

* ``simsql.E001`` the model declares no ``simhash_source``;
* ``simsql.E002`` ``simhash_source`` is not a field name or a list or tuple of them;
* ``simsql.E003`` a source names no field of the model;
* ``simsql.E004`` a source field does not hold text (``CharField``, ``TextField`` and their subclasses do);
* ``simsql.E005`` ``simhash_fingerprinter`` is not a :class:`simsql.Fingerprinter` of the model's kind;
* ``simsql.E006`` a database the model may be migrated to is not PostgreSQL, MySQL or MariaDB.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.core import checks
from django.core.exceptions import FieldDoesNotExist
from django.db import connections, models, router

from ..dialects.base import supported
from ..schema.names import configuration_for
from ..store.storage import source_names
from ..text.fingerprint import Fingerprinter
from .connection import serves
from .models import SimHashModel, is_wide


@checks.register(checks.Tags.models)
def check_models(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    errors: list[checks.CheckMessage] = []
    configs = app_configs if app_configs is not None else apps.get_app_configs()
    for config in configs:
        for model in config.get_models():
            if issubclass(model, SimHashModel) and not model._meta.abstract:
                errors += check_model(model)
    return errors


def check_model(model: type[SimHashModel]) -> list[checks.CheckMessage]:
    """The errors of one model: its source, its configuration, its databases."""
    return [*_source_errors(model), *_fingerprinter_errors(model), *_database_errors(model)]


def _source_errors(model: type[SimHashModel]) -> list[checks.CheckMessage]:
    name = model.__name__
    try:
        source = source_names(getattr(model, "simhash_source", ()), f"{name}.simhash_source")
    except TypeError as error:
        return [checks.Error(str(error), obj=model, id="simsql.E002")]
    if not source:
        hint = 'Name the fields holding its text, e.g. simhash_source = ("title", "body").'
        return [checks.Error(f"{name} inherits simsql's fingerprints but declares no simhash_source", hint=hint, obj=model, id="simsql.E001")]
    errors: list[checks.CheckMessage] = []
    for field_name in source:
        try:
            field = model._meta.get_field(field_name)
        except FieldDoesNotExist:
            errors.append(checks.Error(f"{name}.simhash_source names {field_name!r}, which is not a field of {name}", obj=model, id="simsql.E003"))
            continue
        if not isinstance(field, (models.CharField, models.TextField)):
            errors.append(checks.Error(
                f"{name}.simhash_source names {field_name!r}, a {type(field).__name__}: simsql fingerprints text "
                "(CharField, TextField)", obj=model, id="simsql.E004",
            ))  # fmt: skip
    return errors


def _fingerprinter_errors(model: type[SimHashModel]) -> list[checks.CheckMessage]:
    found = getattr(model, "simhash_fingerprinter", None)
    if found is None:
        return []
    if not isinstance(found, Fingerprinter):
        return [checks.Error(f"{model.__name__}.simhash_fingerprinter must be a simsql.Fingerprinter, got {type(found).__name__}", obj=model, id="simsql.E005")]
    try:
        configuration_for(found, is_wide(model))
    except ValueError as error:
        kind = "WideSimHashModel" if found.wide else "SimHashModel"
        return [checks.Error(f"{model.__name__}.simhash_fingerprinter: {error} (or inherit {kind})", obj=model, id="simsql.E005")]
    return []


def _database_errors(model: type[SimHashModel]) -> list[checks.CheckMessage]:
    errors: list[checks.CheckMessage] = []
    for alias in settings.DATABASES:
        if not router.allow_migrate_model(alias, model):
            continue
        vendor = connections[alias].vendor
        if not serves(vendor):
            engine = connections[alias].settings_dict.get("ENGINE")
            errors.append(checks.Error(
                f"{model.__name__} is fingerprinted by simsql, which needs {supported()}; the database {alias!r} is "
                f"{vendor} ({engine})", hint="Route the model to a PostgreSQL or MySQL/MariaDB database, or leave simsql out of it.",
                obj=model, id="simsql.E006",
            ))  # fmt: skip
    return errors
