"""The tables of :mod:`benchmarks.lists` and of its refit run (:mod:`benchmarks.lists_refit`),
and the two helpers both report with: one module below both, so neither imports the other's."""

from __future__ import annotations

import dataclasses
from typing import Any

from sqlalchemy import BigInteger, Engine, Integer, LargeBinary, Text
from sqlalchemy.dialects.mysql import MEDIUMTEXT
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

import simsql
from simsql.lists import ListsMixin

BODY = Text().with_variant(MEDIUMTEXT(), "mysql", "mariadb")
"""An article's text: MySQL's TEXT holds 64 KB, and a few articles are longer."""


class ListsBase(DeclarativeBase):
    pass


class TextDoc(ListsMixin, simsql.SimHashMixin, ListsBase):
    """The 1M articles, text in the row, partition lists on."""

    __tablename__ = "parts_text"
    __simhash_source__ = ("body",)
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    body: Mapped[str | None] = mapped_column(BODY)


class TextLists(ListsMixin, simsql.SimHashMixin, ListsBase):
    """Insert cost: a smaller table with lists ..."""

    __tablename__ = "parts_ins_lists"
    __simhash_source__ = ("body",)
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    body: Mapped[str | None] = mapped_column(BODY)


class TextPlain(simsql.SimHashMixin, ListsBase):
    """... and its twin without."""

    __tablename__ = "parts_ins_plain"
    __simhash_source__ = ("body",)
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    body: Mapped[str | None] = mapped_column(BODY)


class VectorDoc(ListsMixin, simsql.WideSimHashMixin, ListsBase):
    """The 1M embeddings (float32 bytes), 256-bit centred signatures, partition lists on."""

    __tablename__ = "parts_vectors"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = simsql.VectorFingerprinter(256)  # replaced by the fitted one in main
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[bytes] = mapped_column(LargeBinary)


def as_dict(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: as_dict(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, (list, tuple)):
        return [as_dict(v) for v in value]
    if isinstance(value, dict):
        return {str(k): as_dict(v) for k, v in value.items()}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)



def lists_status(engine: Engine, table: str) -> Any:
    """What ``simsql.status`` reports of ``table``'s lists (largest/median list, rows left behind)."""
    return next((as_dict(entry.lists) for entry in simsql.status(engine) if entry.table == table), None)
