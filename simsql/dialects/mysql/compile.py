"""How MySQL and MariaDB spell simsql's SQL constructs (:mod:`simsql.dialects.constructs`):
``BIT_COUNT(a ^ b)`` on ``BIGINT UNSIGNED``, ``IN`` lists, ``DIV``, constant ``LIMIT`` s, scans bounded
before their sort, and the ``CREATE INDEX`` that names its algorithm. Registered for both dialect names on import."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, String
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.schema import CreateIndex

from ..constructs import (
    COVERING_INFO,
    BlockComputed,
    BlockExpression,
    CurrentSchema,
    EagerChoice,
    EagerGuard,
    EagerOrder,
    EqualsAny,
    HammingDistance,
    HashJoinHint,
    RowEstimate,
    RunTimeLimit,
    SortBound,
    WholeQuotient,
)
from .ddl import block_expression_sql
from .server import check_version

MYSQL_DIALECTS = ("mysql", "mariadb")
"""SQLAlchemy names the MariaDB dialect ``mariadb`` (``mariadb+pymysql://``) and reads a
MariaDB server behind ``mysql+pymysql://`` as ``mysql``: both compile the same way."""


def _hamming(element: HammingDistance, compiler: Any, **kw: Any) -> str:
    check_version(compiler.dialect)
    a, b = list(element.clauses)
    return f"BIT_COUNT({compiler.process(a, **kw)} ^ {compiler.process(b, **kw)})"


def _equals_any(element: EqualsAny, compiler: Any, **kw: Any) -> str:
    values = element.values._clone()
    values.type = Integer()  # type: ignore[assignment]  # each value, no longer the array
    values.expanding = True
    return compiler.process(element.column.in_(values), **kw)  # type: ignore[no-any-return]


def _block(element: BlockExpression, compiler: Any, **kw: Any) -> str:
    return block_expression_sql(compiler.preparer.quote_identifier(element.fingerprint), element.index)


def _computed(element: BlockComputed, compiler: Any, **kw: Any) -> str:
    expression = compiler.sql_compiler.process(element.sqltext, include_table=False, literal_binds=True)
    return f"GENERATED ALWAYS AS ({expression}) VIRTUAL"


def _create_index(element: CreateIndex, compiler: Any, **kw: Any) -> str:
    """simsql's block indexes get their covering columns as trailing key columns (MySQL has no
    INCLUDE; InnoDB secondary indexes carry the primary key already). Other indexes unchanged."""
    index = element.element
    covering = index.info.get(COVERING_INFO)
    if not covering:
        return compiler.visit_create_index(element, **kw)  # type: ignore[no-any-return]
    preparer = compiler.preparer
    columns = [preparer.quote(column.name) for column in index.columns]
    columns += [preparer.quote(name) for name in covering if name not in {c.name for c in index.columns}]
    return (
        f"CREATE INDEX {preparer.format_index(index)} ON {preparer.format_table(index.table)} "
        f"({', '.join(columns)})"
    )


def _eager_guard(element: EagerGuard, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.condition, **kw)  # type: ignore[no-any-return]


def _eager_choice(element: EagerChoice, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.eager, **kw)  # type: ignore[no-any-return]


def _eager_order(element: EagerOrder, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.ordered, **kw)  # type: ignore[no-any-return]


def _hash_join_hint(element: HashJoinHint, compiler: Any, **kw: Any) -> str:
    return f"/*+ NO_RANGE_OPTIMIZATION({compiler.preparer.quote(element.inner)}) */"


def _sort_bound(element: SortBound, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.bounded, **kw)  # type: ignore[no-any-return]


def _row_estimate(element: RowEstimate, compiler: Any, **kw: Any) -> str:
    # InnoDB's sampled estimate (what ANALYZE TABLE refreshes). Names are string literals here,
    # rendered by the dialect's own literal rule (quotes, backslashes, percent signs).
    table = element.table

    def literal(value: str) -> str:
        return str(compiler.render_literal_value(value, String()))

    schema = getattr(table, "schema", None)
    where_schema = "DATABASE()" if schema is None else literal(str(schema))
    return (
        "(SELECT COALESCE(MAX(TABLE_ROWS), 0) FROM information_schema.TABLES "
        f"WHERE TABLE_SCHEMA = {where_schema} AND TABLE_NAME = {literal(str(table.name))})"
    )


def _run_time_limit(element: RunTimeLimit, compiler: Any, **kw: Any) -> str:
    return "18446744073709551615"  # LIMIT takes constants only here: every row


def _whole_quotient(element: WholeQuotient, compiler: Any, **kw: Any) -> str:
    return f"({compiler.process(element.dividend, **kw)} DIV {element.divisor})"


def _current_schema(element: CurrentSchema, compiler: Any, **kw: Any) -> str:
    return "DATABASE()"


for _name in MYSQL_DIALECTS:
    compiles(CurrentSchema, _name)(_current_schema)
    compiles(WholeQuotient, _name)(_whole_quotient)
    compiles(RunTimeLimit, _name)(_run_time_limit)
    compiles(RowEstimate, _name)(_row_estimate)
    compiles(EagerOrder, _name)(_eager_order)
    compiles(EagerGuard, _name)(_eager_guard)
    compiles(EagerChoice, _name)(_eager_choice)
    compiles(SortBound, _name)(_sort_bound)
    compiles(HashJoinHint, _name)(_hash_join_hint)
    compiles(CreateIndex, _name)(_create_index)
    compiles(HammingDistance, _name)(_hamming)
    compiles(EqualsAny, _name)(_equals_any)
    compiles(BlockExpression, _name)(_block)
    compiles(BlockComputed, _name)(_computed)
