"""The Django application ``simsql.django``: add it to ``INSTALLED_APPS`` for the system checks,
the ``manage.py simsql`` command and the fingerprints of rows loaded raw (fixtures)."""

from __future__ import annotations

from django.apps import AppConfig


class SimsqlConfig(AppConfig):
    name = "simsql.django"
    label = "simsql"
    verbose_name = "simsql"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import pre_save

        from . import checks  # noqa: F401  registers the system checks
        from .models import fill_raw_rows

        pre_save.connect(fill_raw_rows, dispatch_uid="simsql.django.fill_raw_rows")
