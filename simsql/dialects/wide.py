"""The wide signature's block columns in SQL: generated from its four 64-bit words.

A block of the attachment's layout (:attr:`simsql.schema.names.Names.layout`, by default
:data:`simsql.schema.names.WIDE_LAYOUT`) is a run of signature bits from bit 0 (bit ``j`` is
bit ``j % 64`` of word ``j // 64``, least significant first, as :mod:`simsql.text.signature` numbers
them), so a block may take its low bits from one word and its high bits from the next. The
database derives every block from the words, as it derives the 16-bit blocks from the
fingerprint: Python never writes one, so a block cannot disagree with its words.

PostgreSQL stores the words as signed ``bigint`` (``>>`` sign-extends; the mask drops it) and
casts each block to ``integer``; MySQL/MariaDB store ``BIGINT UNSIGNED`` and need no cast.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Computed, Integer
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal

from ..text.signature import WIDE_WORDS, BlockLayout
from .mysql.compile import MYSQL_DIALECTS
from .wide_sql import wide_block_sql


class WideBlockExpression(ColumnElement[int]):
    """Block ``index`` of ``layout`` of the wide signature held in columns ``words`` (no table
    prefix: DDL)."""

    type = Integer()
    inherit_cache = True
    _traverse_internals = [
        ("words", InternalTraversal.dp_plain_obj),
        ("index", InternalTraversal.dp_plain_obj),
        ("layout", InternalTraversal.dp_plain_obj),
    ]

    def __init__(self, words: Sequence[str], index: int, layout: BlockLayout) -> None:
        if len(words) != WIDE_WORDS:
            raise ValueError(f"the wide signature has 4 word columns, got {len(words)}")
        if not 0 <= index < layout.count:
            raise ValueError(f"wide block index must be in 0..{layout.count - 1}, got {index}")
        self.words = tuple(words)
        self.index = index
        self.layout = layout


def _quoted(element: WideBlockExpression, compiler: Any) -> list[str]:
    return [compiler.preparer.quote_identifier(word) for word in element.words]


@compiles(WideBlockExpression)
def _wide_block_default(element: WideBlockExpression, compiler: Any, **kw: Any) -> str:
    # outside any dialect (repr, Alembic autogenerate) it reads as PostgreSQL's
    quoted = ['"' + word.replace('"', '""') + '"' for word in element.words]
    return wide_block_sql(quoted, element.index, cast=True, layout=element.layout)


@compiles(WideBlockExpression, "postgresql")
def _wide_block_postgresql(element: WideBlockExpression, compiler: Any, **kw: Any) -> str:
    return wide_block_sql(_quoted(element, compiler), element.index, cast=True, layout=element.layout)


def _wide_block_mysql(element: WideBlockExpression, compiler: Any, **kw: Any) -> str:
    return wide_block_sql(_quoted(element, compiler), element.index, cast=False, layout=element.layout)


class WideBlockComputed(Computed):
    """Generation clause of a wide block column: ``STORED`` on PostgreSQL (indexable),
    ``VIRTUAL`` on MySQL/MariaDB (no row bytes; the index holds the values), as the 16-bit blocks."""

    inherit_cache = True

    def __init__(self, words: Sequence[str], index: int, layout: BlockLayout) -> None:
        super().__init__(WideBlockExpression(words, index, layout), persisted=True)

    def _copy(self, **kw: Any) -> WideBlockComputed:
        expression = self.sqltext
        assert isinstance(expression, WideBlockExpression)
        copied = WideBlockComputed(expression.words, expression.index, expression.layout)
        return self._schema_item_copy(copied)  # type: ignore[no-any-return]


def _computed_mysql(element: WideBlockComputed, compiler: Any, **kw: Any) -> str:
    expression = compiler.sql_compiler.process(element.sqltext, include_table=False, literal_binds=True)
    return f"GENERATED ALWAYS AS ({expression}) VIRTUAL"


for _name in MYSQL_DIALECTS:
    compiles(WideBlockExpression, _name)(_wide_block_mysql)
    compiles(WideBlockComputed, _name)(_computed_mysql)


def wide_block_computed(words: Sequence[str], index: int, layout: BlockLayout) -> WideBlockComputed:
    """The ``Computed`` clause of wide block column ``index`` of ``layout`` over the word columns ``words``."""
    return WideBlockComputed(words, index, layout)
