"""simsql's SQL as Django expressions: Hamming distance, similarity, blocks; NULL last when ranked.

Each expression's SQL is *simsql's own*: the SQLAlchemy construct that simsql compiles per
server (:mod:`simsql.dialects.constructs`, :mod:`simsql.dialects.wide`) is compiled once per
Django vendor with placeholder columns, and Django's compiled arguments are put in their place.
So ``HammingDistance`` is ``bit_count(CAST((a # b) AS BIT(64)))`` on PostgreSQL and
``BIT_COUNT(a ^ b)`` on MySQL/MariaDB exactly as in simsql's SQLAlchemy queries, and a block is
derived by the same arithmetic as the table's trigger or generated column.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from django.db.models import F, FloatField, IntegerField, Value
from django.db.models.expressions import ExpressionWrapper, Func, OrderBy
from sqlalchemy import literal_column
from sqlalchemy.sql import ColumnElement

from ..dialects import BlockExpression, WideBlockExpression, hamming_expression
from ..schema.names import BLOCK_COUNT, block_layout, layout_text
from ..text.bits import check_fingerprint
from .connection import dialect_for
from .fields import SimHashField

_PLACEHOLDER = "simsql_argument_{}"
_PLACES = re.compile(r"%\(a(\d+)\)s")


def _hamming(names: Sequence[str], index: int, layout: str) -> ColumnElement[Any]:
    return hamming_expression(literal_column(names[0]), literal_column(names[1]))


def _block(names: Sequence[str], index: int, layout: str) -> ColumnElement[Any]:
    return BlockExpression(names[0], index)


def _wide_block(names: Sequence[str], index: int, layout: str) -> ColumnElement[Any]:
    return WideBlockExpression(list(names), index, block_layout(layout or None))


_BUILDERS: dict[str, tuple[Callable[[Sequence[str], int, str], ColumnElement[Any]], int]] = {
    "hamming": (_hamming, 2),
    "block": (_block, 1),
    "wide_block": (_wide_block, 4),
}
"""simsql's construct behind each expression, and its number of arguments."""


@lru_cache(maxsize=None)
def sql_template(vendor: str, kind: str, index: int = 0, layout: str = "") -> str:
    """The SQL of simsql's construct ``kind`` compiled for ``vendor`` with placeholder
    columns, as a %-template whose ``%(a0)s``, ``%(a1)s``... take the compiled arguments
    (``layout``: a wide block's, ``"10x24"``; empty: 8 x 20)."""
    build, arity = _BUILDERS[kind]
    dialect = dialect_for(vendor)
    names = [_PLACEHOLDER.format(i) for i in range(arity)]
    sql = str(build(names, index, layout).compile(dialect=dialect)).replace("%", "%%")
    quote = dialect.identifier_preparer.quote_identifier
    for i, name in enumerate(names):
        sql = sql.replace(quote(name), f"%(a{i})s").replace(name, f"%(a{i})s")
    return sql


class SimsqlFunc(Func):
    """A function whose SQL is simsql's construct :attr:`kind` (block ``index``)."""

    kind = ""
    index = 0
    layout = ""

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        template = sql_template(connection.vendor, self.kind, self.index, self.layout)
        compiled = [compiler.compile(argument) for argument in self.get_source_expressions()]
        parts = {f"a{i}": f"({sql})" for i, (sql, _) in enumerate(compiled)}
        # each argument's parameters where the template places it (in its order, as often as it does)
        params = [param for i in _PLACES.findall(template) for param in compiled[int(i)][1]]
        return template % parts, params


def fingerprint_value(fingerprint: int) -> Value:
    """A 64-bit fingerprint as a bound value, stored the way the column stores it."""
    return Value(check_fingerprint(fingerprint), output_field=SimHashField())


def _operand(value: Any) -> Any:
    if isinstance(value, str):
        return F(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return fingerprint_value(value)
    return value


class HammingDistance(SimsqlFunc):
    """Bits that differ between two fingerprints (0..64; NULL if either is NULL); a str is a
    field name, an int a fingerprint::

        Article.objects.annotate(d=HammingDistance("simhash", simhash(text))).order_by("d")
    """

    kind = "hamming"
    output_field = IntegerField()

    def __init__(self, left: Any, right: Any, **extra: Any) -> None:
        super().__init__(_operand(left), _operand(right), **extra)


def Similarity(left: Any, right: Any) -> ExpressionWrapper:  # noqa: N802 - reads as an expression class
    """``1 - HammingDistance(left, right) / 64``, a float as simsql's queries report it."""
    distance = HammingDistance(left, right)
    return ExpressionWrapper(Value(1.0) - distance / Value(64.0), output_field=FloatField())


class Block(SimsqlFunc):
    """Block ``index`` (0 = the most significant 16 bits) of a fingerprint column, as the
    table's trigger or generated column derives it: the expression of a block ``GeneratedField``."""

    kind = "block"
    output_field = IntegerField()

    def __init__(self, fingerprint: Any, index: int, **extra: Any) -> None:
        if not 0 <= index < BLOCK_COUNT:
            raise ValueError(f"block index must be in 0..{BLOCK_COUNT - 1}, got {index}")
        self.index = index
        super().__init__(_operand(fingerprint), **extra)


class WideBlock(SimsqlFunc):
    """Block ``index`` of the wide 256-bit signature held in four word columns (word 0 the
    fingerprint), cut as ``layout`` says (``"10x24"``; None: :data:`simsql.schema.names.WIDE_LAYOUT`,
    8 x 20)."""

    kind = "wide_block"
    output_field = IntegerField()

    def __init__(self, *words: Any, index: int, layout: str | None = None, **extra: Any) -> None:
        cut = block_layout(layout)
        if not 0 <= index < cut.count:
            raise ValueError(f"wide block index must be in 0..{cut.count - 1}, got {index}")
        if len(words) != 4:
            raise ValueError(f"the wide signature has 4 word columns, got {len(words)}")
        self.index = index
        self.layout = "" if layout is None else layout_text(cut)
        super().__init__(*(_operand(word) for word in words), **extra)


def ranks(expression: Any) -> bool:
    """Whether ``expression`` is (or holds) a :class:`HammingDistance`: a distance or a similarity."""
    if isinstance(expression, HammingDistance):
        return True
    return any(ranks(source) for source in expression.get_source_expressions() if source is not None)


def nulls_last(annotations: dict[str, Any], ordering: Any) -> Any:
    """An ``order_by`` argument with NULL last when it orders by a distance or similarity
    (an annotation's name, ``-name``, the expression, or its ``asc()`` / ``desc()``): NULL, a row
    without a fingerprint, never ranks, whichever the direction and the server (PostgreSQL puts
    NULL first in descending order, MySQL and MariaDB in ascending order). Anything else as given."""
    if isinstance(ordering, str):
        name = ordering.removeprefix("-")
        if name in annotations and ranks(annotations[name]):
            return F(name).desc(nulls_last=True) if ordering.startswith("-") else F(name).asc(nulls_last=True)
        return ordering
    if isinstance(ordering, OrderBy):
        if ordering.nulls_first or ordering.nulls_last or not ranks(ordering.expression):
            return ordering
        return OrderBy(ordering.expression, descending=ordering.descending, nulls_last=True)
    if hasattr(ordering, "get_source_expressions") and ranks(ordering):
        return ordering.asc(nulls_last=True)
    return ordering


__all__ = ["Block", "HammingDistance", "Similarity", "WideBlock", "fingerprint_value", "nulls_last", "ranks", "sql_template"]
