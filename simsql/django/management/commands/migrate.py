"""Django's ``migrate``, whose check for changes not yet in migrations knows ``AddSimHash``."""

from __future__ import annotations

from django.core.management.commands import migrate

from ...autodetector import SimHashAutodetector


class Command(migrate.Command):
    autodetector = SimHashAutodetector
