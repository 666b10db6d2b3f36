"""A model without migrations in the repository: tests/test_django.py has ``makemigrations``
write them (CreateModel, then AddSimHash) into a directory of its own."""

from __future__ import annotations

from django.db import models

from simsql.django.models import SimHashModel


class Post(SimHashModel):
    simhash_source = "body"
    body = models.TextField()

    class Meta:
        app_label = "blog"
