"""Three simsql models in one app (one with partition lists) without migrations in the repository: tests/test_django_transaction.py
has ``makemigrations`` write them (one run, one leaf) into a directory of its own."""

from __future__ import annotations

from django.db import models

from simsql.django.models import ListsModel, SimHashModel, WideSimHashModel, wide_simhash_model


class Memo(WideSimHashModel):
    simhash_source = ("subject", "body")
    subject = models.CharField(max_length=200)
    body = models.TextField()

    class Meta:
        app_label = "shelf"


class Note(SimHashModel):
    simhash_source = "text"
    text = models.TextField()

    class Meta:
        app_label = "shelf"


class Clipping(ListsModel, WideSimHashModel):
    """Partition lists on a Django model (tests/test_django_transaction.py)."""

    simhash_source = "text"
    text = models.TextField()

    class Meta:
        app_label = "shelf"


class Leaf(wide_simhash_model("10x24")):
    """Ten wide blocks of 24 bits (issue 43: the layout chosen per table; tests/test_wide_layout_django.py)."""

    simhash_source = "text"
    text = models.TextField()

    class Meta:
        app_label = "shelf"
