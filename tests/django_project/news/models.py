from __future__ import annotations

from django.db import models

from simsql.django.models import WideSimHashModel


class Article(WideSimHashModel):
    simhash_source = ("title", "body")
    title = models.CharField(max_length=200)
    body = models.TextField(null=True)

    class Meta:
        app_label = "news"
