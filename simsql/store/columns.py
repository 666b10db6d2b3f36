"""The columns and block indexes simsql declares on a holder table (a side table, or an
attachment's own), as SQLAlchemy objects: what ``create_all`` and a mapped binding build, the
DDL describers writing the same in SQL (:mod:`simsql.dialects`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Column, Index, Integer, Table

from ..dialects import COVERING_INFO, block_computed, wide_block_computed
from ..schema.names import Names
from .types import SimHash


def block_columns(names: Names) -> list[Column[Any]]:
    return [
        Column(name, Integer, block_computed(names.fingerprint, i), nullable=True)
        for i, name in enumerate(names.blocks)
    ]


def wide_columns(names: Names) -> list[Column[Any]]:
    """Words 1-3 of the wide signature, then its block columns, generated from the four words."""
    words: list[Column[Any]] = [Column(name, SimHash(), nullable=True) for name in names.wide_words]
    blocks = [
        Column(name, Integer, wide_block_computed(names.signature_words, i, names.layout), nullable=True)
        for i, name in enumerate(names.wide_blocks)
    ]
    return words + blocks


def wide_indexes(table: Table, names: Names, key_names: Sequence[str]) -> list[Index]:
    """One btree per wide block covering the four words and the key: a probe computes each
    candidate's distance from the index alone, and reads the table for the nearest rows only."""
    covering = (*names.signature_words, *key_names)
    return [
        Index(names.index(block), table.c[block], postgresql_include=list(covering), info={COVERING_INFO: names.signature_words})
        for block in names.wide_blocks
    ]


def block_indexes(table: Table, names: Names, key_names: Sequence[str]) -> list[Index]:
    """One btree per block, covering the fingerprint and the key, so candidate lookups are
    index-only scans and touch the heap only for the final rows. (MySQL has no INCLUDE: there
    the fingerprint is a second key column and InnoDB adds the primary key by itself, see
    :mod:`simsql.dialects.mysql`.)"""
    return [
        Index(
            names.index(block),
            table.c[block],
            postgresql_include=[names.fingerprint, *key_names],
            info={COVERING_INFO: (names.fingerprint,)},
        )
        for block in names.blocks
    ]


__all__ = ["block_columns", "block_indexes", "wide_columns", "wide_indexes"]
