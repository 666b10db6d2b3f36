"""pgvector's HNSW index on a vector table: :func:`add_vector_index` builds it online, and
:func:`drop_vector_index` (or detaching the table) removes it; the column stays the user's.

The index (``vector_cosine_ops``) holds the table's source column when it is a ``vector(d)``,
else that column cast to ``vector(d)`` (:mod:`simsql.dialects.postgresql.pgvector`), so nothing
is added to the table and nothing needs a backfill: PostgreSQL keeps the index current on every
write. The build is ``CREATE INDEX CONCURRENTLY`` (writers go on; an interrupted build leaves an
invalid index, which the next call drops and builds again). simsql never creates the extension
(that needs rights an application seldom has) and drops only the index it named
(:attr:`~simsql.schema.names.Names.vector_index`). Where pgvector is missing, the add is refused
saying why, and :func:`simsql.most_similar_vectors` keeps ranking with simsql's signatures.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine
from sqlalchemy.engine import Connection

from ..dialects import backend
from ..dialects.ddl_plan import DDLPlan
from ..dialects.sqltext import is_autocommit
from ..dialects.vector_index import HnswSettings, VectorIndexFacts
from ..queries.pgvector import forget_vector_index
from ..schema.names import Attachment, Names
from ..schema.urls import engine_for
from ..store import registry
from ..store.storage import binding_for
from ..text.errors import SchemaError
from ..text.vectors import VectorFingerprinter
from . import apply, catalog


@dataclass(frozen=True)
class VectorTable:
    """A vector table as the index needs it: where it is, simsql's names, its vector column and length."""

    schema: str
    table: str
    names: Names
    column: str
    dimensions: int

    def facts(self, connection: Connection) -> VectorIndexFacts:
        return backend(connection).vector_index.facts(connection, self.schema, self.table, self.column, self.names.vector_index)


def vector_table(connection: Connection, target: type | str, schema: str | None = None) -> VectorTable:
    """``target`` (a model signed by a :class:`~simsql.VectorFingerprinter`, or an attached
    table's name) as a :class:`VectorTable`; ``SchemaError`` for a text table."""
    if isinstance(target, str):
        schema = schema or registry.current_schema(connection)
        entry = registry.read(connection, target, schema)
        if entry is None:
            raise catalog.not_attached(schema, target)
        return _from_entry(schema, entry)
    binding = binding_for(target)
    fingerprinter = binding.fingerprinter
    if not isinstance(fingerprinter, VectorFingerprinter):
        raise SchemaError(f"{target.__name__} is fingerprinted from text: pgvector's index is for a vector model")
    found_schema, table = binding.registry_key
    schema = found_schema or schema or registry.current_schema(connection)
    return VectorTable(schema, table, binding.names, binding.source[0], fingerprinter.dimensions)


def _from_entry(schema: str, entry: Attachment) -> VectorTable:
    fingerprinter = registry.fingerprinter_from_settings(entry.settings)
    if not isinstance(fingerprinter, VectorFingerprinter):
        raise SchemaError(f"{schema}.{entry.table_name} is fingerprinted from text: pgvector's index is for a vector table")
    return VectorTable(schema, entry.table_name, entry.names, entry.source[0], fingerprinter.dimensions)


def plan_vector_index(
    connection: Connection, target: type | str, *, schema: str | None = None, m: int = 16, ef_construction: int = 64,
    concurrently: bool = True,
) -> DDLPlan:  # fmt: skip
    """The statements :func:`add_vector_index` runs (empty when the index is there and valid):
    for ``--sql`` and tests. Refuses as :func:`add_vector_index` does."""
    settings = HnswSettings(m, ef_construction)
    found = vector_table(connection, target, schema)
    facts = found.facts(connection)
    if facts.extension == "installed" and facts.index_valid:
        return DDLPlan()
    return backend(connection).vector_index.create(
        facts, found.schema, found.table, found.column, found.names.vector_index, found.dimensions, settings, concurrently=concurrently
    )


def add_vector_index(
    bind: Engine | Connection | str, target: type | str, *, schema: str | None = None, m: int = 16, ef_construction: int = 64,
) -> bool:  # fmt: skip
    """Build pgvector's HNSW index (cosine) on ``target``'s vector, online (``CONCURRENTLY``),
    with pgvector's ``m`` and ``ef_construction``; from then on :func:`simsql.most_similar_vectors`
    ranks the table with pgvector. ``target``: a vector model, or an attached vector table's
    name. Returns whether it built one (False: a valid one was there; its settings are kept).

    Given a ``Connection`` (a migration's: ``op.add_vector_index``, Django's ``AddVectorIndex``)
    it runs there: inside the connection's transaction, which then holds a write lock on the
    table until it commits (and undoes the build if it rolls back), or ``CONCURRENTLY`` when the
    connection is in autocommit mode (Alembic's ``autocommit_block``, a non-atomic Django migration).

    ``UnsupportedDatabase`` where pgvector is missing or not created in the database (saying
    which: simsql never creates the extension); ``SchemaError`` for a text table or a column
    pgvector cannot read (``bytea``, JSON: store ``vector(d)``, ``real[]`` or ``double
    precision[]``); ``ValueError`` for ``m`` or ``ef_construction`` out of pgvector's bounds."""
    if isinstance(bind, Connection):
        concurrently = is_autocommit(bind)
        found = vector_table(bind, target, schema)
        plan = plan_vector_index(bind, target, schema=schema, m=m, ef_construction=ef_construction, concurrently=concurrently)
        apply.run(bind, plan, apply.INDEX_BUILD if concurrently else apply.DDL_TIMEOUTS)
    else:
        engine = engine_for(bind) if isinstance(bind, str) else bind
        with engine.connect() as connection:
            found = vector_table(connection, target, schema)
            plan = plan_vector_index(connection, target, schema=schema, m=m, ef_construction=ef_construction)
        if plan:
            apply.run_on_engine(engine, plan, relations=[f"{found.schema}.{found.table}"])
    forget_vector_index(found.schema, found.table)
    return bool(plan)


def plan_drop_vector_index(
    connection: Connection, schema: str, names: Names, column: str, *, concurrently: bool = True
) -> DDLPlan:  # fmt: skip
    """What removes simsql's HNSW index from ``schema.names.table`` (empty when there is none):
    detach runs it before the rest."""
    server = backend(connection).vector_index
    facts = server.facts(connection, schema, names.table, column, names.vector_index)
    if facts.index_valid is None:
        return DDLPlan()
    return server.drop(schema, names.vector_index, concurrently=concurrently)


def drop_vector_index(bind: Engine | Connection | str, target: type | str, *, schema: str | None = None) -> bool:
    """Drop simsql's HNSW index from ``target`` (``CONCURRENTLY``); an index simsql did not name
    is never touched. Returns whether there was one. Given a ``Connection``, in its transaction
    (``CONCURRENTLY`` in autocommit mode), as :func:`add_vector_index`."""
    if isinstance(bind, Connection):
        found = vector_table(bind, target, schema)
        plan = plan_drop_vector_index(bind, found.schema, found.names, found.column, concurrently=is_autocommit(bind))
        apply.run(bind, plan)
    else:
        engine = engine_for(bind) if isinstance(bind, str) else bind
        with engine.connect() as connection:
            found = vector_table(connection, target, schema)
            plan = plan_drop_vector_index(connection, found.schema, found.names, found.column)
        if plan:
            apply.run_on_engine(engine, plan, relations=[f"{found.schema}.{found.table}"])
    forget_vector_index(found.schema, found.table)
    return bool(plan)


__all__ = ["VectorTable", "add_vector_index", "drop_vector_index", "plan_drop_vector_index", "plan_vector_index", "vector_table"]
