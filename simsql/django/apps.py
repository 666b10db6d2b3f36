"""The Django application ``simsql.django``: add it to ``INSTALLED_APPS`` for the system checks
and the ``manage.py simsql`` command."""

from __future__ import annotations

from django.apps import AppConfig


class SimsqlConfig(AppConfig):
    name = "simsql.django"
    label = "simsql"
    verbose_name = "simsql"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401  registers the system checks
