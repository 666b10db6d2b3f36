"""simsql's SQL as Django expressions: Hamming distance, similarity, blocks, "within N bits".

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

from django.db.models import F, FloatField, IntegerField, Q, Value
from django.db.models.expressions import ExpressionWrapper, Func
from django.db.models.lookups import Exact, In, LessThanOrEqual
from django.db.models.sql.where import AND, OR, WhereNode
from sqlalchemy import literal_column
from sqlalchemy.sql import ColumnElement

import simsql.text.bits

from ..dialects import BlockExpression, WideBlockExpression, hamming_expression, probe_values, radius_for
from ..schema.names import BLOCK_COUNT, WIDE_LAYOUT
from ..text.bits import check_fingerprint
from .bridge import dialect_for
from .fields import SimHashField

MAX_DISTANCE = 64
_PLACEHOLDER = "simsql_argument_{}"
_PLACES = re.compile(r"%\(a(\d+)\)s")


def _hamming(names: Sequence[str], index: int) -> ColumnElement[Any]:
    return hamming_expression(literal_column(names[0]), literal_column(names[1]))


def _block(names: Sequence[str], index: int) -> ColumnElement[Any]:
    return BlockExpression(names[0], index)


def _wide_block(names: Sequence[str], index: int) -> ColumnElement[Any]:
    return WideBlockExpression(list(names), index)


_BUILDERS: dict[str, tuple[Callable[[Sequence[str], int], ColumnElement[Any]], int]] = {
    "hamming": (_hamming, 2),
    "block": (_block, 1),
    "wide_block": (_wide_block, 4),
}
"""simsql's construct behind each expression, and its number of arguments."""


@lru_cache(maxsize=None)
def sql_template(vendor: str, kind: str, index: int = 0) -> str:
    """The SQL of simsql's construct ``kind`` compiled for ``vendor`` with placeholder
    columns, as a %-template whose ``%(a0)s``, ``%(a1)s``... take the compiled arguments."""
    build, arity = _BUILDERS[kind]
    dialect = dialect_for(vendor)
    names = [_PLACEHOLDER.format(i) for i in range(arity)]
    sql = str(build(names, index).compile(dialect=dialect)).replace("%", "%%")
    quote = dialect.identifier_preparer.quote_identifier
    for i, name in enumerate(names):
        sql = sql.replace(quote(name), f"%(a{i})s").replace(name, f"%(a{i})s")
    return sql


class SimsqlFunc(Func):
    """A function whose SQL is simsql's construct :attr:`kind` (block ``index``)."""

    kind = ""
    index = 0

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        template = sql_template(connection.vendor, self.kind, self.index)
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
    fingerprint), cut as :data:`simsql.schema.names.WIDE_LAYOUT` says."""

    kind = "wide_block"
    output_field = IntegerField()

    def __init__(self, *words: Any, index: int, **extra: Any) -> None:
        if not 0 <= index < WIDE_LAYOUT.count:
            raise ValueError(f"wide block index must be in 0..{WIDE_LAYOUT.count - 1}, got {index}")
        if len(words) != 4:
            raise ValueError(f"the wide signature has 4 word columns, got {len(words)}")
        self.index = index
        super().__init__(*(_operand(word) for word in words), **extra)


def _probes(fingerprint: int, max_distance: int) -> list[list[int]]:
    """Each block's probe values: a row within ``max_distance`` bits has a block among them."""
    if isinstance(max_distance, bool) or not isinstance(max_distance, int) or not 0 <= max_distance <= MAX_DISTANCE:
        raise ValueError(f"max_distance must be an int in 0..{MAX_DISTANCE}, got {max_distance!r}")
    radius = radius_for(max_distance)
    return [probe_values(value, radius) for value in simsql.text.bits.blocks(check_fingerprint(fingerprint))]


def within(fingerprint: int, max_distance: int = 3, *, blocks: Sequence[str], column: str = "simhash") -> Q:
    """Rows within ``max_distance`` bits of ``fingerprint``, found through the block indexes.

    Pigeonhole over the four 16-bit blocks: a row within ``4 * (r + 1) - 1`` bits has a block
    within ``r`` bits of the target's, so the filter is "one block among its probe values"
    (the block itself up to 3 bits; :func:`simsql.dialects.probe_values` beyond) and the exact
    distance. Exact at every distance, like :func:`simsql.similar_to`.
    """
    probes = Q()
    for name, values in zip(blocks, _probes(fingerprint, max_distance)):
        probes |= Q(**{name: values[0]}) if len(values) == 1 else Q(**{f"{name}__in": values})
    return probes & Q(LessThanOrEqual(HammingDistance(column, fingerprint), max_distance))


def within_condition(fingerprint_column: Any, block_columns: Sequence[Any], fingerprint: int, max_distance: int) -> WhereNode:
    """:func:`within` over resolved columns (what a lookup compiles)."""
    probes = [
        Exact(column, values[0]) if len(values) == 1 else In(column, values)
        for column, values in zip(block_columns, _probes(fingerprint, max_distance))
    ]
    distance = LessThanOrEqual(HammingDistance(fingerprint_column, fingerprint), max_distance)
    return WhereNode([WhereNode(probes, connector=OR), distance], connector=AND)


__all__ = ["Block", "HammingDistance", "Similarity", "WideBlock", "fingerprint_value", "sql_template", "within", "within_condition"]
