"""pgvector on PostgreSQL: the extension's state from the catalog, an HNSW index
(``vector_cosine_ops``) on a table's vector, and the ``<=>`` a query orders by.

The index holds the source column itself when it is a ``vector(d)``, else the column cast to
``vector(d)`` (pgvector's casts from ``real[]``, ``double precision[]``, ``numeric[]``,
``integer[]`` and an unsized ``vector`` are immutable, so an expression index holds them and the
user's column stays as it is). Type, operator and operator class are qualified with the schema
the extension was created in, so neither the DDL nor the query depends on ``search_path``.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

import numpy as np
from sqlalchemy import bindparam, cast, text
from sqlalchemy.engine import Connection
from sqlalchemy.sql import ColumnElement
from sqlalchemy.types import Float, UserDefinedType

from ...text.errors import SchemaError, UnsupportedDatabase
from ..ddl_plan import DDLPlan, Step
from ..vector_index import QUERY_VECTOR, HnswSettings, VectorIndexFacts, VectorIndexSQL
from .ddl import qualified, quote

CASTABLE = ("real[]", "double precision[]", "numeric[]", "integer[]", "vector")
"""Column types pgvector casts to ``vector(d)`` (immutably, so an index can hold the cast)."""

FACTS_SQL = text(
    "SELECT e.extversion, n.nspname, EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector'), "
    "(SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a WHERE a.attrelid = to_regclass(:relation) "
    "AND a.attname = :column AND NOT a.attisdropped), "
    "(SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass(:index)) "
    "FROM (SELECT 1) one LEFT JOIN pg_extension e ON e.extname = 'vector' LEFT JOIN pg_namespace n ON n.oid = e.extnamespace"
)


def vector_text(values: Any) -> str:
    """pgvector's text form ``[x1,x2,...]`` of a sequence of numbers: each the float32 pgvector
    stores, in the 9 significant digits that restore that float32 exactly. Half the characters of
    a float64's repr, and formatted in half the time: the server parses the same values."""
    with np.errstate(over="ignore"):  # beyond float32: "inf", which pgvector refuses by name
        single = np.asarray(values, dtype=np.float32)
    return _text_form(len(single)) % tuple(single.tolist())


@functools.lru_cache(maxsize=64)
def _text_form(length: int) -> str:
    """``[%.9g,...]`` for ``length`` values: one formatting call a vector, not one a value."""
    return "[" + ",".join(["%.9g"] * length) + "]"


class PgVectorType(UserDefinedType[Any]):
    """pgvector's ``vector(d)``, qualified with the extension's schema; binds a sequence of
    numbers (a list, a numpy array) as pgvector's float32 text form (:func:`vector_text`)."""

    cache_ok = True

    def __init__(self, schema: str, dimensions: int) -> None:
        self.schema = schema
        self.dimensions = dimensions

    def get_col_spec(self, **kw: Any) -> str:
        return f"{quote(self.schema)}.vector({self.dimensions})"

    def bind_processor(self, dialect: Any) -> Any:
        def process(value: Any) -> Any:
            return None if value is None else vector_text(value)

        return process


class PostgresVectorIndex(VectorIndexSQL):
    name = "postgresql"

    def facts(self, connection: Connection, schema: str, table: str, column: str, index: str) -> VectorIndexFacts:
        params = {"relation": qualified(schema, table), "column": column, "index": qualified(schema, index)}
        version, where, available, column_type, valid = connection.execute(FACTS_SQL, params).one()
        state: Literal["installed", "available", "missing"] = (
            "installed" if version is not None else "available" if available else "missing"
        )
        return VectorIndexFacts(state, where, column_type, valid, version)

    def create(
        self, facts: VectorIndexFacts, schema: str, table: str, column: str, index: str, dimensions: int,
        settings: HnswSettings, *, concurrently: bool = True,
    ) -> DDLPlan:  # fmt: skip
        self._check(facts, f"{schema}.{table}.{column}", dimensions)
        assert facts.extension_schema is not None
        steps: list[Step] = []
        if facts.index_valid is False:  # an interrupted concurrent build: dropped, then built again
            steps.extend(self.drop(schema, index, concurrently=concurrently).steps)
        keyword = "CONCURRENTLY " if concurrently else ""
        ops = f"{quote(facts.extension_schema)}.vector_cosine_ops"
        steps.append(Step(
            f"CREATE INDEX {keyword}IF NOT EXISTS {quote(index)} ON {qualified(schema, table)} USING hnsw "
            f"(({self._indexed_sql(facts, column, dimensions)}) {ops}) "
            f"WITH (m = {int(settings.m)}, ef_construction = {int(settings.ef_construction)})",
            f"build HNSW index {index} on {schema}.{table}", concurrently=concurrently, online=concurrently,
        ))  # fmt: skip
        return DDLPlan(tuple(steps), self.name)

    def drop(self, schema: str, index: str, *, concurrently: bool = True) -> DDLPlan:
        keyword = "CONCURRENTLY " if concurrently else ""
        step = Step(f"DROP INDEX {keyword}IF EXISTS {qualified(schema, index)}", f"drop index {index}", concurrently=concurrently)
        return DDLPlan((step,), self.name)

    def indexed(self, facts: VectorIndexFacts, column: ColumnElement[Any], dimensions: int) -> ColumnElement[Any]:
        assert facts.extension_schema is not None
        if facts.column_type == f"vector({dimensions})":
            return column
        return cast(column, PgVectorType(facts.extension_schema, dimensions))

    def distance(self, facts: VectorIndexFacts, indexed: ColumnElement[Any], dimensions: int) -> ColumnElement[float]:
        assert facts.extension_schema is not None
        kind = PgVectorType(facts.extension_schema, dimensions)
        operator = f"OPERATOR({quote(facts.extension_schema)}.<=>)"
        return indexed.op(operator, return_type=Float())(cast(bindparam(QUERY_VECTOR, type_=kind), kind))

    def set_ef_search(self, connection: Connection, ef_search: int) -> None:
        connection.execute(text("SELECT set_config('hnsw.ef_search', :value, true)"), {"value": str(int(ef_search))})

    def _indexed_sql(self, facts: VectorIndexFacts, column: str, dimensions: int) -> str:
        if facts.column_type == f"vector({dimensions})":
            return quote(column)
        return f"CAST({quote(column)} AS {quote(str(facts.extension_schema))}.vector({dimensions}))"

    @staticmethod
    def _check(facts: VectorIndexFacts, where: str, dimensions: int) -> None:
        if facts.extension == "missing":
            raise UnsupportedDatabase(
                "pgvector is not available on this server (pg_available_extensions has no 'vector'): "
                "most_similar_vectors ranks with simsql's own signatures and lists there"
            )
        if facts.extension == "available":
            raise UnsupportedDatabase(
                "pgvector is available on this server but not created in this database: run CREATE EXTENSION vector "
                "(simsql does not create extensions), then add the index again"
            )
        found = facts.column_type
        if found is None:
            raise SchemaError(f"{where} does not exist")
        if found != f"vector({dimensions})" and found not in CASTABLE:
            raise SchemaError(
                f"{where} is {found}: pgvector's HNSW index needs vector({dimensions}), or a real[], double precision[], "
                "numeric[] or integer[] column it casts (store the vectors in one of those to rank them with pgvector)"
            )


POSTGRES_VECTOR_INDEX = PostgresVectorIndex()

__all__ = ["CASTABLE", "POSTGRES_VECTOR_INDEX", "PgVectorType", "PostgresVectorIndex", "vector_text"]
