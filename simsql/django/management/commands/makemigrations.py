"""Django's ``makemigrations``, writing ``AddSimHash`` for simsql's fields (:mod:`simsql.django.autodetector`)."""

from __future__ import annotations

from django.core.management.commands import makemigrations

from ...autodetector import SimHashAutodetector


class Command(makemigrations.Command):
    autodetector = SimHashAutodetector
