"""simsql's statements inside a Django query: ``pk IN (<simsql's SQL>)``.

A queryset's ``most_similar`` and ``within`` are simsql's own statements (the planner's bands,
``exact``, ``probes``, the block probes of :func:`simsql.similar_to`), built over the model's
mirror (:mod:`.mirror`) when the method is called, which checks every argument at once. Django
compiles its query later, when it runs (in the thread that runs it, async iteration included):
:class:`SimsqlRows` compiles the statement then, for the dialect of the alias's own connection,
its values rendered in the SQL, and selects the primary keys it finds. A queryset filtered before
``most_similar`` hands its filter to simsql as ``key IN (<the queryset's own SQL>)``, so simsql
ranks the rows the queryset holds, as ``most_similar(select(Model).where(...))`` does.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Expression, Field, QuerySet
from sqlalchemy import Select, literal_column, select

from .connection import sqlalchemy_connection
from .mirror import primary_key

ROWS_MARKER = "simsql_django_rows"
"""Stands where the queryset's own SQL goes, until Django compiles it."""


def queryset_rows(mirror: type) -> Any:
    """``key IN (<the queryset's rows>)`` over the mirror, for a statement's ``where``."""
    return primary_key(mirror).in_(select(literal_column(ROWS_MARKER)))


class SimsqlRows(Expression):
    """The primary keys a simsql statement selects, as the right side of ``pk__in``.

    ``statement``: a SQLAlchemy ``Select`` over a model's mirror; ``rows``: the queryset whose
    SQL replaces :func:`queryset_rows` in it (None: the statement has none)."""

    contains_aggregate = False
    contains_over_clause = False

    def __init__(self, statement: Select[Any], key: Any, rows: QuerySet[Any] | None = None, output_field: Field | None = None) -> None:
        super().__init__(output_field=output_field)
        self.statement = statement
        self.key = key
        self.rows = rows

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.statement.__class__.__name__})"

    def resolve_expression(self, *args: Any, **kwargs: Any) -> SimsqlRows:
        return self

    def get_group_by_cols(self) -> list[Any]:
        return []

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        sub = self.statement.subquery("simsql_ranked")
        sql = compile_for(select(sub.c[self.key.name]), connection.alias)
        params: list[Any] = []
        if self.rows is not None:
            rows_sql, rows_params = self.rows.values("pk").query.get_compiler(connection=connection).as_sql()
            used = sql.count(f"SELECT {ROWS_MARKER}")
            sql = sql.replace(f"SELECT {ROWS_MARKER}", rows_sql)
            params = list(rows_params) * used
        return sql, params


def compile_for(statement: Select[Any], alias: str) -> str:
    """``statement`` as SQL for the alias's own dialect (driver and server version included),
    its values rendered in place; a literal ``%`` doubled, as Django's cursor takes it."""
    dialect = sqlalchemy_connection(alias).dialect  # connected once: the server's version is known
    compiled = statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True, "render_postcompile": True})
    sql = str(compiled)
    if not dialect.paramstyle.endswith("format"):  # a dialect that left "%" single: Django's cursors read "%%"
        sql = sql.replace("%", "%%")
    return sql


def rows_of(statement: Select[Any], mirror: type, rows: QuerySet[Any] | None = None) -> SimsqlRows:
    """:class:`SimsqlRows` of ``statement``'s rows of ``mirror``."""
    return SimsqlRows(statement, primary_key(mirror), rows)


__all__ = ["ROWS_MARKER", "SimsqlRows", "compile_for", "queryset_rows", "rows_of"]
