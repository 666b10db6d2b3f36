"""pgvector's side of the seam: what a server says about its ``vector`` extension, the DDL of an
HNSW index on a table's vector, and the cosine distance a query orders by.

:class:`VectorIndexSQL` is the portable default: a server without pgvector (MySQL/MariaDB), whose
:meth:`~VectorIndexSQL.facts` say so, and whose DDL refuses. PostgreSQL's subclass
(:mod:`simsql.dialects.postgresql.pgvector`) reads the extension from the catalog and writes
pgvector's SQL. Code above asks ``backend(bind).vector_index`` and never asks which server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from sqlalchemy.engine import Connection
from sqlalchemy.sql import ColumnElement

from ..text.errors import UnsupportedDatabase
from .ddl_plan import DDLPlan

Extension = Literal["installed", "available", "missing"]
"""pgvector on a server: created in the database, shipped but not created, or not there."""


@dataclass(frozen=True)
class VectorIndexFacts:
    """What the catalog says about one table's vector for pgvector: the extension's state (and
    the schema it was created in), the source column's SQL type, and simsql's HNSW index
    (None: absent; else whether it is valid, an interrupted concurrent build leaves it not)."""

    extension: Extension
    extension_schema: str | None
    column_type: str | None
    index_valid: bool | None
    version: str | None = None

    @property
    def ranks(self) -> bool:
        """Whether pgvector can rank this table's vector now: installed, and simsql's index valid."""
        return self.extension == "installed" and bool(self.index_valid)


@dataclass(frozen=True)
class HnswSettings:
    """pgvector's HNSW build settings: ``m`` (links per node, 2-100) and ``ef_construction``
    (the candidate list of the build, 4-1000, at least ``2 * m``); pgvector's defaults."""

    m: int = 16
    ef_construction: int = 64

    def __post_init__(self) -> None:
        for name, value, low, high in (("m", self.m, 2, 100), ("ef_construction", self.ef_construction, 4, 1000)):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"{name} must be an integer in [{low}, {high}], got {value!r}")
        if self.ef_construction < 2 * self.m:
            raise ValueError(f"ef_construction must be at least 2 * m ({2 * self.m}), got {self.ef_construction}")


QUERY_VECTOR = "simsql_query_vector"
"""The name of the parameter :meth:`VectorIndexSQL.distance` binds the target vector to: the
expression is built once, the vector passed with each execution (``{QUERY_VECTOR: vector}``)."""

ONLY_POSTGRESQL = "pgvector runs on PostgreSQL only, and this server is not PostgreSQL (MySQL/MariaDB)"


class VectorIndexSQL:
    """A server without pgvector: the facts say ``missing``, and DDL is refused."""

    name: ClassVar[str] = "default"

    def facts(self, connection: Connection, schema: str, table: str, column: str, index: str) -> VectorIndexFacts:
        return VectorIndexFacts("missing", None, None, None)

    def create(
        self, facts: VectorIndexFacts, schema: str, table: str, column: str, index: str, dimensions: int,
        settings: HnswSettings, *, concurrently: bool = True,
    ) -> DDLPlan:  # fmt: skip
        raise UnsupportedDatabase(f"{ONLY_POSTGRESQL}: simsql ranks vectors with its own signatures and lists here")

    def drop(self, schema: str, index: str, *, concurrently: bool = True) -> DDLPlan:
        return DDLPlan()

    def indexed(self, facts: VectorIndexFacts, column: ColumnElement[Any], dimensions: int) -> ColumnElement[Any]:
        """The expression the HNSW index holds for ``column``."""
        raise UnsupportedDatabase(ONLY_POSTGRESQL)

    def distance(self, facts: VectorIndexFacts, indexed: ColumnElement[Any], dimensions: int) -> ColumnElement[float]:
        """pgvector's cosine distance of ``indexed`` to the vector bound as :data:`QUERY_VECTOR`
        (``<=>``), which the index orders by."""
        raise UnsupportedDatabase(ONLY_POSTGRESQL)

    def set_ef_search(self, connection: Connection, ef_search: int) -> None:
        """``hnsw.ef_search`` for the rest of the current transaction (``SET LOCAL``)."""
        raise UnsupportedDatabase(ONLY_POSTGRESQL)


NO_PGVECTOR = VectorIndexSQL()

__all__ = ["NO_PGVECTOR", "QUERY_VECTOR", "Extension", "HnswSettings", "VectorIndexFacts", "VectorIndexSQL"]
