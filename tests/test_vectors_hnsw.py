"""pgvector ranking simsql's vector queries (issue 44): ``simsql.lifecycle.add_vector_index``
builds an HNSW index on the table's vector (the column itself when it is ``vector(d)``, else
the column cast to ``vector(d)``), ``most_similar_vectors`` then orders by ``<=>`` through it,
detach and ``drop_vector_index`` remove only it. Where the server has no pgvector (the
PostgreSQL 15 service, MySQL/MariaDB) the add is refused saying why and the query keeps
simsql's own ranking. Answers are checked against numpy's brute force."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sqlalchemy import JSON, Double, Engine, Integer, LargeBinary, event, select, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, load_only, mapped_column

import simsql
import simsql.cli
import simsql.queries
import simsql.schema.names
from simsql.dialects import backend
from simsql.errors import SchemaError, UnsupportedDatabase
from simsql.lifecycle import add_vector_index, drop_vector_index
from simsql.lifecycle.vector_index import plan_vector_index
from simsql.schema.names import metadata as simsql_metadata
from tests.test_vectors_pgvector import DIMENSIONS, SIGNER, PgVector

VECTOR = ARRAY(Double()).with_variant(JSON(), "mysql", "mariadb")


class Base(DeclarativeBase):
    pass


class Story(simsql.SimHashMixin, Base):
    """``double precision[]``: the index holds the column cast to ``vector(12)``."""

    __tablename__ = "hnsw_stories"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(VECTOR, nullable=True)


class Clip(simsql.SimHashMixin, Base):
    """A float32 BLOB: pgvector cannot read it."""

    __tablename__ = "hnsw_clips"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(LargeBinary, nullable=True)


class Note(simsql.SimHashMixin, Base):
    """``vector(12)``: the index holds the column itself."""

    __tablename__ = "hnsw_notes"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(PgVector(), nullable=True)


def _has_pgvector(engine: Engine) -> bool:
    """Whether pgvector can be created in the test database (and is, after this)."""
    if engine.dialect.name != "postgresql":
        return False
    with engine.connect() as connection:
        if connection.execute(text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).scalar() is None:
            return False
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public"))
    except DBAPIError:
        return False
    return True


@pytest.fixture
def pg(engine: Engine) -> Engine:
    if not _has_pgvector(engine):
        pytest.skip("pgvector is not installed on the test server (the embedded PostgreSQL ships it)")
    simsql_metadata.create_all(engine)
    Base.metadata.create_all(engine, tables=[Story.__table__, Note.__table__, Clip.__table__])
    return engine


def _vectors(n: int, seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, DIMENSIONS)) + 0.5).astype(np.float32).astype(np.float64)


def _raw_load(engine: Engine, table: str, vectors: np.ndarray, cast: str = "") -> None:
    """Rows written without the ORM: no signature, so only pgvector can find them."""
    with engine.begin() as connection:
        connection.execute(
            text(f"INSERT INTO {table} (id, embedding) VALUES (:id, CAST(:v AS {cast or 'double precision[]'}))"),
            [{"id": i + 1, "v": "[" + ",".join(map(repr, v.tolist())) + "]" if cast else v.tolist()} for i, v in enumerate(vectors)],
        )


def _truth(vectors: np.ndarray, query: np.ndarray, limit: int, keys: list[int] | None = None) -> list[int]:
    keys = keys or list(range(1, len(vectors) + 1))
    cosine = {k: float(vectors[k - 1] @ query / np.linalg.norm(vectors[k - 1]) / np.linalg.norm(query)) for k in keys}
    return sorted(keys, key=lambda k: (-cosine[k], k))[:limit]


def _index_sql(engine: Engine, name: str) -> str | None:
    with engine.connect() as connection:
        return connection.execute(text("SELECT indexdef FROM pg_indexes WHERE indexname = :n"), {"n": name}).scalar()


@pytest.mark.parametrize("model", [Story, Note], ids=["double-precision-array", "vector"])
def test_pgvector_ranks_once_simsql_built_its_index(pg: Engine, model: type) -> None:
    vectors = _vectors(300)
    _raw_load(pg, model.__tablename__, vectors, "vector" if model is Note else "")
    query = _vectors(1, seed=8)[0]
    with Session(pg) as session:  # before the index: simsql's signatures, and these rows have none
        assert simsql.most_similar_vectors(session, select(model), query, limit=5) == []
        with pytest.raises(UnsupportedDatabase, match="no HNSW index of simsql's"):
            simsql.most_similar_vectors(session, select(model), query, using="pgvector")
    assert add_vector_index(pg, model, m=8, ef_construction=32) is True
    assert add_vector_index(pg, model) is False  # there and valid: kept
    index = simsql.store.binding_for(model).names.vector_index
    definition = _index_sql(pg, index)
    assert definition is not None and "USING hnsw" in definition and "m='8'" in definition.replace(" ", "")
    assert ("::vector(12)" in definition) is (model is Story)
    with Session(pg) as session:
        found = simsql.most_similar_vectors(session, select(model), query, limit=10, ef_search=400)
        assert [m.row.id for m in found] == _truth(vectors, query, 10)
        cosines = [float(vectors[m.row.id - 1] @ query / np.linalg.norm(vectors[m.row.id - 1]) / np.linalg.norm(query)) for m in found]
        assert [m.cosine for m in found] == pytest.approx(cosines, abs=1e-6)  # pgvector's float32 cosine
        assert [m.distance for m in found] == [None] * 10  # rows written without the ORM: no signature yet
        with Session(pg) as other:  # the vector stays deferred: pgvector's cosine, nothing decoded
            keys = simsql.most_similar_vectors(other, select(model).options(load_only(model.id)), query, limit=10, ef_search=400)
            assert [(m.row.id, m.cosine) for m in keys] == [(m.row.id, m.cosine) for m in found]
            assert all("embedding" not in m.row.__dict__ for m in keys)
        # ef_search is SET LOCAL: the session's transaction sees it, the next one does not
        assert session.execute(text("SELECT current_setting('hnsw.ef_search')")).scalar() == "400"
        session.commit()
        assert session.execute(text("SELECT current_setting('hnsw.ef_search')")).scalar() == "40"
        exact = simsql.most_similar_vectors(session, select(model), query, limit=10, exact=True)
        assert [m.row.id for m in exact] == _truth(vectors, query, 10)
        # float64, from the stored vectors (a vector column is read as float32 text: 1e-8 apart)
        assert [m.cosine for m in exact] == pytest.approx(cosines, rel=1e-7 if model is Note else 1e-12)
        # the same call can still ask simsql's own paths (and these rows have no signature yet)
        assert simsql.most_similar_vectors(session, select(model), query, using="signatures") == []
    simsql.backfill(pg, model, workers=0)
    with Session(pg) as session:  # signed now: the distance of the stored signature
        found = simsql.most_similar_vectors(session, select(model), query, limit=10, ef_search=400)
        target = SIGNER.fingerprint(query)
        assert [m.distance for m in found] == [bin(target ^ SIGNER.fingerprint(vectors[m.row.id - 1])).count("1") for m in found]
        # filters, exclusions and a row as the target
        row = session.get(model, 20)
        kept = simsql.most_similar_vectors(session, select(model).where(model.id > 100), row, limit=5, exclude=[150], ef_search=400)
        assert [m.row.id for m in kept] == _truth(vectors, vectors[19], 5, [k for k in range(101, 301) if k != 150])


def test_detach_and_drop_remove_simsql_s_index_and_nothing_else(pg: Engine) -> None:
    vectors = _vectors(50, seed=2)
    with Session(pg) as session:  # the ORM: signed, and registered (detach reads the registry)
        session.add_all(Story(id=i + 1, embedding=v.tolist()) for i, v in enumerate(vectors))
        session.commit()
    with pg.begin() as connection:  # the user's own HNSW index on the same expression
        connection.execute(text("CREATE INDEX users_hnsw ON hnsw_stories USING hnsw ((CAST(embedding AS vector(12))) vector_cosine_ops)"))
    index = simsql.store.binding_for(Story).names.vector_index
    assert add_vector_index(pg, "hnsw_stories") is True  # by the attached table's name
    assert drop_vector_index(pg, Story) is True
    assert _index_sql(pg, index) is None and _index_sql(pg, "users_hnsw") is not None
    assert drop_vector_index(pg, Story) is False
    add_vector_index(pg, Story)
    simsql.detach_table(pg, "hnsw_stories")
    assert _index_sql(pg, index) is None and _index_sql(pg, "users_hnsw") is not None


def test_the_index_refuses_what_pgvector_cannot_read(pg: Engine) -> None:
    with pytest.raises(SchemaError, match=r"hnsw_clips\.embedding is bytea: pgvector's HNSW index needs vector\(12\)"):
        add_vector_index(pg, Clip)
    with pytest.raises(ValueError, match="ef_construction must be at least 2 \\* m"):
        add_vector_index(pg, Story, m=40, ef_construction=64)
    with pytest.raises(ValueError, match="m must be an integer in"):
        add_vector_index(pg, Story, m=1)
    with pg.connect() as connection:
        plan = plan_vector_index(connection, Story, m=24, ef_construction=100)
    assert len(plan.steps) == 1 and plan.steps[0].concurrently
    assert plan.steps[0].sql.startswith('CREATE INDEX CONCURRENTLY IF NOT EXISTS "ix_hnsw_stories_simhash_hnsw"')
    assert 'CAST("embedding" AS "public".vector(12))) "public".vector_cosine_ops) WITH (m = 24, ef_construction = 100)' in plan.steps[0].sql


def test_without_pgvector_the_index_is_refused_and_the_query_falls_back(any_engine: Engine) -> None:
    """The PostgreSQL service (no pgvector) and MySQL/MariaDB; skipped where pgvector is there."""
    if _has_pgvector(any_engine):
        pytest.skip("this server has pgvector: the fallback is tested on one without it")
    Base.metadata.create_all(any_engine, tables=[Story.__table__])
    vectors = _vectors(120, seed=3)
    with Session(any_engine) as session:
        session.add_all(Story(id=i + 1, embedding=v.tolist()) for i, v in enumerate(vectors))
        session.commit()
    with pytest.raises(UnsupportedDatabase, match="pgvector"):
        add_vector_index(any_engine, Story)
    query = _vectors(1, seed=4)[0]
    with Session(any_engine) as session:
        with pytest.raises(UnsupportedDatabase, match="pgvector cannot rank hnsw_stories"):
            simsql.most_similar_vectors(session, select(Story), query, using="pgvector")
        auto = simsql.most_similar_vectors(session, select(Story), query, limit=5, candidates=120, ef_search=100)
        assert [m.row.id for m in auto] == _truth(vectors, query, 5)  # every row a candidate: exact
        own = simsql.most_similar_vectors(session, select(Story), query, limit=5, candidates=40, using="signatures")
        assert [m.row.id for m in own] == [m.row.id for m in simsql.most_similar_vectors(session, select(Story), query, limit=5, candidates=40)]
    assert drop_vector_index(any_engine, Story) is False


def test_bad_arguments_are_refused_naming_them(any_engine: Engine) -> None:
    Base.metadata.create_all(any_engine, tables=[Story.__table__])
    with Session(any_engine) as session:
        for kwargs, message in [
            ({"ef_search": 0}, "ef_search must be an integer in"),
            ({"ef_search": True}, "ef_search must be an integer in"),
            ({"using": "hnsw"}, "using must be one of pgvector, lists, signatures"),
            ({"using": "lists"}, "using='lists' needs probes"),
        ]:
            with pytest.raises(ValueError, match=message):
                simsql.most_similar_vectors(session, select(Story), [1.0] * DIMENSIONS, **kwargs)
        with pytest.raises(TypeError, match="exact must be True or False"):
            simsql.most_similar_vectors(session, select(Story), [1.0] * DIMENSIONS, exact="yes")  # type: ignore[arg-type]
    assert backend(any_engine).vector_index.drop("s", "i").steps == () or any_engine.dialect.name == "postgresql"


def test_the_command_line_adds_and_drops_the_index_of_an_attached_table(pg: Engine, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``simsql vector-index add|drop`` on a plain table attached by name (search_path without
    ``public``: the DDL names pgvector's schema itself)."""
    with pg.begin() as connection:
        connection.execute(text("CREATE TABLE plain_vectors (id integer PRIMARY KEY, embedding real[])"))
    simsql.attach_table(pg, "plain_vectors", ["embedding"], fingerprinter=SIGNER)
    index = simsql.schema.names.Names("plain_vectors").vector_index
    assert simsql.cli.main(["vector-index", "add", "--url", url, "--table", "plain_vectors", "--m", "12", "--ef-construction", "48"]) == 0
    assert "built the HNSW index of plain_vectors" in capsys.readouterr().out
    definition = _index_sql(pg, index)
    assert definition is not None and "ef_construction='48'" in definition.replace(" ", "")
    assert simsql.cli.main(["vector-index", "add", "--url", url, "--table", "plain_vectors", "--m", "40"]) == 2  # 64 < 2 * 40
    assert simsql.cli.main(["vector-index", "drop", "--url", url, "--table", "plain_vectors"]) == 0
    assert _index_sql(pg, index) is None


def test_the_refusals_say_what_to_do_without_a_server() -> None:
    """The describer's refusals and DDL as text (no server): pgvector shipped but not created,
    not there, a column of the wrong length; a ``vector(d)`` column indexed as it is."""
    from simsql.dialects.postgresql.pgvector import POSTGRES_VECTOR_INDEX
    from simsql.dialects.vector_index import HnswSettings, VectorIndexFacts

    def create(facts: VectorIndexFacts) -> Any:
        return POSTGRES_VECTOR_INDEX.create(facts, "s", "t", "v", "ix", 12, HnswSettings(), concurrently=False)

    with pytest.raises(UnsupportedDatabase, match="available on this server but not created in this database: run CREATE EXTENSION vector"):
        create(VectorIndexFacts("available", None, "real[]", None))
    with pytest.raises(UnsupportedDatabase, match="pgvector is not available on this server"):
        create(VectorIndexFacts("missing", None, "real[]", None))
    with pytest.raises(SchemaError, match=r"s\.t\.v is vector\(16\): pgvector's HNSW index needs vector\(12\)"):
        create(VectorIndexFacts("installed", "ext", "vector(16)", None))
    plan = create(VectorIndexFacts("installed", "ext", "vector(12)", False))  # an invalid index: dropped first
    assert plan.sql == [
        'DROP INDEX IF EXISTS "s"."ix"',
        'CREATE INDEX IF NOT EXISTS "ix" ON "s"."t" USING hnsw (("v") "ext".vector_cosine_ops) WITH (m = 16, ef_construction = 64)',
    ]


def test_a_ranked_query_is_one_statement_and_binds_pgvector_s_float32_text(pg: Engine) -> None:
    """The round trips docs/vectors.md counts, seen by a statement listener on the server: one
    statement a query, and one more (``set_config(..., true)``, ``SET LOCAL``) the first time a
    transaction asks for an ``ef_search`` or another value. The target is bound once, as
    pgvector's text form of the float32 values it stores (each in the 9 digits that restore it)."""
    vectors = _vectors(40, seed=6)
    _raw_load(pg, Note.__tablename__, vectors, "vector")
    add_vector_index(pg, Note)
    query = np.random.default_rng(9).normal(size=DIMENSIONS) * 1e3  # values with 17 significant digits
    sent: list[tuple[str, Any]] = []

    def listen(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        sent.append((statement, parameters))

    def statements(**kwargs: Any) -> list[str]:
        sent.clear()
        found = simsql.most_similar_vectors(session, select(Note), query, limit=5, **kwargs)
        assert [m.row.id for m in found] == _truth(vectors, query, 5)
        return ["set_config" if "set_config" in s else "select" for s, _ in sent]

    event.listen(pg, "before_cursor_execute", listen)
    try:
        with Session(pg) as session:
            statements()  # the table's facts are read once per engine, then kept
            assert statements() == ["select"]
            assert statements(ef_search=64) == ["set_config", "select"]
            assert statements(ef_search=64) == ["select"]
            assert statements(ef_search=80) == ["set_config", "select"]
            assert statements() == ["select"]
            bound = [value for value in sent[-1][1].values() if isinstance(value, str) and value.startswith("[")]
            session.commit()
            assert statements(ef_search=80) == ["set_config", "select"]
    finally:
        event.remove(pg, "before_cursor_execute", listen)
    assert len(bound) == 1
    values = bound[0][1:-1].split(",")
    assert np.array_equal(np.array(values, dtype=np.float32), query.astype(np.float32))
    assert max(len(v.lstrip("-").replace(".", "").split("e")[0].lstrip("0")) for v in values) <= 9


def test_the_ranked_statement_is_built_once_and_reused(pg: Engine) -> None:
    """A query of the same statement, limit and options executes the very Select it executed
    before (SQLAlchemy keeps its cache key: neither built nor keyed again), and one that
    differs in a filter's value, the options, the limit or the keys left out gets its own:
    every answer is numpy's."""
    vectors = _vectors(60, seed=8)
    _raw_load(pg, Note.__tablename__, vectors, "vector")
    add_vector_index(pg, Note)
    queries = np.random.default_rng(10).normal(size=(3, DIMENSIONS))
    executed: list[Any] = []

    def seen(state: Any) -> None:
        if "simsql_cosine_distance" in str(state.statement):
            executed.append(state.statement)

    with Session(pg) as session:
        event.listen(session, "do_orm_execute", seen)

        def ids(stmt: Any, query: Any, limit: int = 5, **kwargs: Any) -> list[int]:
            return [m.row.id for m in simsql.most_similar_vectors(session, stmt, query, limit=limit, ef_search=100, **kwargs)]

        for query in queries:
            assert ids(select(Note), query) == _truth(vectors, query, 5)
        assert len(executed) == 3 and executed[0] is executed[1] is executed[2]
        for low in (10, 30):  # one filter, two values: two statements, each its own answer
            keys = list(range(low + 1, 61))
            assert ids(select(Note).where(Note.id > low), queries[0]) == _truth(vectors, queries[0], 5, keys)
        assert executed[3] is not executed[4]
        assert ids(select(Note).options(load_only(Note.id)), queries[0], limit=7) == _truth(vectors, queries[0], 7)
        rows = [session.get(Note, k) for k in (3, 9)]
        for row in rows:  # the row as target is left out; each its own keys, one statement
            target = np.asarray(vectors[row.id - 1])
            others = [k for k in range(1, 61) if k != row.id]
            assert ids(select(Note), row) == _truth(vectors, target, 5, others)
        assert executed[-1] is executed[-2] and executed[-1] is not executed[0]
        assert ids(select(Note), queries[1], exclude=[1, 2, 3]) == _truth(vectors, queries[1], 5, list(range(4, 61)))


def test_a_statement_of_columns_returns_rows_of_those_columns_ranked_by_pgvector(pg: Engine) -> None:
    """``select(Note.id)`` (or any columns of the model) where pgvector ranks: plain rows of
    those columns, no ORM instance, ranked by the same statement as ``select(Note)`` (the same
    ``ef_search``, filters, left-out keys and row as target, the statement built once and
    reused), each with pgvector's cosine and no signature distance (none is read)."""
    vectors = _vectors(2000, seed=11)
    _raw_load(pg, Note.__tablename__, vectors, "vector")
    add_vector_index(pg, Note)
    queries = np.random.default_rng(12).normal(size=(3, DIMENSIONS)) + 0.5
    executed: list[Any] = []

    def seen(conn: Any, clause: Any, multiparams: Any, params: Any, options: Any) -> None:
        if "simsql_cosine_distance" in str(clause):
            executed.append(clause)

    def cosine(key: int, query: np.ndarray) -> float:
        return float(vectors[key - 1] @ query / np.linalg.norm(vectors[key - 1]) / np.linalg.norm(query))

    event.listen(pg, "before_execute", seen)
    instances: list[Note] = []
    try:
        with Session(pg) as session:
            for query in queries:
                found = simsql.most_similar_vectors(session, select(Note.id), query, limit=10, ef_search=1000)
                assert [m.row.id for m in found] == _truth(vectors, query, 10)
                assert all(type(m.row).__name__ == "Row" and tuple(m.row) == (m.row.id,) for m in found)
                assert [m.cosine for m in found] == pytest.approx([cosine(m.row.id, query) for m in found], abs=1e-6)
                assert [m.distance for m in found] == [None] * 10
                whole = simsql.most_similar_vectors(session, select(Note), query, limit=10, ef_search=1000)
                assert [(m.row.id, m.cosine) for m in whole] == [(m.row.id, m.cosine) for m in found]
                instances += [m.row for m in whole]
            assert len(executed) == 6 and executed[0] is executed[2] is executed[4]  # built once, reused
            assert executed[1] is executed[3] is executed[5] and executed[0] is not executed[1]  # the entity form's own
            assert len(session.identity_map) == len({row.id for row in instances})  # the entity form's; the columns made none
            # filters, left-out keys and a row as target; two columns
            row = session.get(Note, 20)
            assert row is not None
            two = simsql.most_similar_vectors(
                session, select(Note.id, Note.embedding).where(Note.id > 100), row, limit=5, exclude=[150], ef_search=1000
            )
            keys = [k for k in range(101, 2001) if k != 150]
            assert [m.row.id for m in two] == _truth(vectors, vectors[19], 5, keys)
            assert all(len(m.row) == 2 and m.row[0] == m.row.id for m in two)
            # exact: every row by <=> in the server, re-ranked in float64; the columns asked, no more
            exact = simsql.most_similar_vectors(session, select(Note.id), queries[0], limit=10, exact=True)
            assert [m.row.id for m in exact] == _truth(vectors, queries[0], 10)
            assert [tuple(m.row) for m in exact] == [(m.row.id,) for m in exact]
            assert [m.cosine for m in exact] == pytest.approx([cosine(m.row.id, queries[0]) for m in exact], rel=1e-7)
            # a row added and not yet flushed is found, as by the entity form (the session autoflushes)
            session.add(Note(id=5000, embedding=queries[1].tolist()))
            assert simsql.most_similar_vectors(session, select(Note.id), queries[1], limit=1, ef_search=1000)[0].row.id == 5000
    finally:
        event.remove(pg, "before_execute", seen)


def test_a_statement_of_columns_is_refused_where_simsql_s_own_rankers_run(any_engine: Engine) -> None:
    """simsql's lists and signatures read rows of the model: a statement of columns is refused
    there, saying what to pass, before any statement of the query (and ``related_vectors``,
    which needs each row's vector, refuses it everywhere)."""
    Base.metadata.create_all(any_engine, tables=[Story.__table__])
    with Session(any_engine) as session:
        session.add_all(Story(id=i + 1, embedding=v.tolist()) for i, v in enumerate(_vectors(20, seed=13)))
        session.commit()
        query = _vectors(1, seed=14)[0]
        for using in ("signatures", None):  # no HNSW index here: simsql's signatures would rank
            with pytest.raises(TypeError, match=r"a statement of columns .* only where pgvector ranks .* select\(Story\)"):
                simsql.most_similar_vectors(session, select(Story.id), query, using=using)
        with pytest.raises(TypeError, match=r"a statement of columns .* only where pgvector ranks"):
            simsql.most_similar_vectors(session, select(Story.id), query, probes=4, using="lists")
        with pytest.raises(TypeError, match=r"related_vectors needs rows of the model"):
            simsql.queries.related_vectors(session, select(Story.id), query)
        with pytest.raises(TypeError, match=r"near_copy_vectors needs rows of the model"):
            simsql.near_copy_vectors(session, select(Story.id), query)
