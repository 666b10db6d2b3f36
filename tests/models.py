"""Models shared by the database tests: one per storage mode, same columns."""

from __future__ import annotations

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

import simsql


class Base(DeclarativeBase):
    pass


class Article(simsql.SimHashMixin, Base):
    """Fingerprint columns on the table itself."""

    __tablename__ = "articles"
    __simhash_source__ = ("title", "body")

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)
    category: Mapped[str] = mapped_column(String(20), default="news")


class Post(Base):
    """A model that cannot be altered: fingerprints go to a side table."""

    __tablename__ = "posts"

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)
    category: Mapped[str] = mapped_column(String(20), default="news")


class Comment(Base):
    """Something pointing at posts, so cascades are exercised."""

    __tablename__ = "comments"

    id: Mapped[int] = mapped_column(primary_key=True)
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id", ondelete="CASCADE"))


POST_BINDING = simsql.attach(Post, source=("title", "body"))
MODELS = {"columns": Article, "side_table": Post}
