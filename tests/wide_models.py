"""Models with the wide originality signature (``WideSimHashMixin``, ``attach_model(wide=True)``),
on their own metadata so the shared models' tables stay as they are."""

from __future__ import annotations

from sqlalchemy import String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

import simsql


class WideBase(DeclarativeBase):
    pass


class WideArticle(simsql.WideSimHashMixin, WideBase):
    """Columns mode, wide."""

    __tablename__ = "wide_articles"
    __simhash_source__ = ("title", "body")

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


class WidePost(WideBase):
    """Side-table mode, wide."""

    __tablename__ = "wide_posts"

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


WIDE_POST_BINDING = simsql.attach_model(WidePost, source=("title", "body"), wide=True)
WIDE_MODELS = {"columns": WideArticle, "side_table": WidePost}
