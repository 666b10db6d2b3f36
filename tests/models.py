"""Models shared by the database tests.

``Base``: one model per storage mode with the same columns (Article, Post), for queries and
storage. ``KeyedBase``: the tables backfill resumes on, keyed every way a cursor can be read
back wrong; their rows are written by raw SQL (tests/tables.py ``insert_rows``) with no
fingerprint, as a bulk loader leaves them. The keys of Blob, Huge, Stamp and Amount are
MySQL/MariaDB types: those tables are created only there.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.dialects.mysql import BIGINT, DATETIME, DECIMAL, VARBINARY
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


POST_BINDING = simsql.attach_model(Post, source=("title", "body"))
MODELS = {"columns": Article, "side_table": Post}


class KeyedBase(DeclarativeBase):
    pass


class Doc(simsql.SimHashMixin, KeyedBase):
    """Columns mode."""

    __tablename__ = "docs"
    __simhash_source__ = ("title", "body")
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


class SideDoc(KeyedBase):
    """Side-table mode, same columns."""

    __tablename__ = "side_docs"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


class Part(KeyedBase):
    """A composite key (text under MySQL's case-insensitive collation, then a number), side table."""

    __tablename__ = "parts"
    shelf: Mapped[str] = mapped_column(String(10), primary_key=True)
    slot: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    body: Mapped[str | None] = mapped_column(Text)


class Blob(simsql.SimHashMixin, KeyedBase):
    """A binary key."""

    __tablename__ = "blobs"
    __simhash_source__ = ("body",)
    id: Mapped[bytes] = mapped_column(VARBINARY(8), primary_key=True)
    body: Mapped[str | None] = mapped_column(Text)


class Huge(simsql.SimHashMixin, KeyedBase):
    """Keys past 2**53: bound as text they would compare as doubles and collapse."""

    __tablename__ = "huge"
    __simhash_source__ = ("body",)
    id: Mapped[int] = mapped_column(BIGINT(unsigned=True), primary_key=True, autoincrement=False)
    body: Mapped[str | None] = mapped_column(Text)


class Stamp(simsql.SimHashMixin, KeyedBase):
    """A key of microsecond timestamps (the cursor keeps them as text)."""

    __tablename__ = "stamps"
    __simhash_source__ = ("body",)
    id: Mapped[datetime] = mapped_column(DATETIME(fsp=6), primary_key=True)
    body: Mapped[str | None] = mapped_column(Text)


class Amount(simsql.SimHashMixin, KeyedBase):
    """A decimal key finer than a double can tell apart."""

    __tablename__ = "amounts"
    __simhash_source__ = ("body",)
    id: Mapped[Decimal] = mapped_column(DECIMAL(30, 10), primary_key=True)
    body: Mapped[str | None] = mapped_column(Text)


simsql.attach_model(SideDoc, source=("title", "body"))
simsql.attach_model(Part, source=("body",))
KEYED_MODES = {"columns": Doc, "side_table": SideDoc}
