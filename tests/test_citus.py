"""simsql on Citus (distributed PostgreSQL), issue 24: every feature on distributed and reference
tables, exact, with no setting the user has to know.

The cluster comes from ``SIMSQL_TEST_CITUS_URL`` (``.ci/citus-cluster`` starts a coordinator and
two workers and prints it); without it the Citus tests skip with one line. The session works in
a database of its own on every node (``citus_url``, tests/conftest.py), and each test gets its
own schema there. Answers are compared with plain PostgreSQL's on the same rows (the ``engine`` fixture's
server), so "exact" means "what one PostgreSQL answers".

The last test here is plain PostgreSQL's, found on the way: detaching a side-table attachment
whose schema is not on ``search_path``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, String, Text, create_engine, event, select, table, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.alembic
import simsql.bits
import simsql.citus
import simsql.errors
import simsql.queries
import simsql.store
from simsql import dialects
from simsql.dialects.citus import CitusBackend
from simsql.dialects.postgresql import PostgresBackend
from simsql.lifecycle.refingerprinting import refingerprint
from simsql.lists import ListsMixin, fit_lists
from simsql.queries.originality import ORIGINALITY_CANDIDATES

from .command_line import cli
from .tables import create_models, insert_rows, run, texts


class Base(DeclarativeBase):
    pass


class Note(simsql.SimHashMixin, Base):
    """Columns mode: the fingerprint on the table itself (its row trigger goes to the shards)."""

    __tablename__ = "notes"
    __simhash_source__ = ("title", "body")

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


class Page(Base):
    """Side-table mode: fingerprints in ``pages_simhash``, co-located with ``pages``."""

    __tablename__ = "pages"

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


class WideNote(simsql.WideSimHashMixin, Base):
    """Columns mode with the wide 256-bit signature (``find_original``'s own index stage)."""

    __tablename__ = "wide_notes"
    __simhash_source__ = ("title", "body")

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


PAGE_BINDING = simsql.attach_model(Page, source=("title", "body"))
MODELS = {"columns": Note, "side_table": Page}
ROWS = 240


@pytest.fixture
def citus_engine(citus_url: str) -> Iterator[Engine]:
    """An engine on the cluster whose unqualified names resolve in this test's own schema."""
    name = f"c_{uuid.uuid4().hex[:12]}"
    admin = create_engine(citus_url)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{name}"'))
    engine = create_engine(citus_url, connect_args={"options": f"-csearch_path={name},public"})
    yield engine
    engine.dispose()
    with admin.begin() as connection:
        connection.execute(text(f'DROP SCHEMA "{name}" CASCADE'))
    admin.dispose()


@pytest.fixture
def citus_cli_url(citus_engine: Engine) -> str:
    schema = _schema(citus_engine)
    return citus_engine.url.set(query={"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)


def _schema(engine: Engine) -> str:
    with engine.connect() as connection:
        return str(connection.execute(text("SELECT current_schema()")).scalar_one())


def rows() -> list[dict[str, Any]]:
    """``texts()`` and copies of some of them, exact and with a word changed: near-duplicates."""
    found = texts(ROWS)
    copies = []
    for row in found[6:60:6]:
        body = row["body"] or ""
        copies.append({"id": len(found) + len(copies) + 1, "title": row["title"], "body": body})
        words = body.split()
        changed = " ".join(words[:-1] + ["changed"]) if words else "changed"
        copies.append({"id": len(found) + len(copies) + 1, "title": row["title"], "body": changed})
    return found + copies


def load(engine: Engine, model: type, how: str | None) -> None:
    """The model's tables, distributed by ``id`` (``how="distributed"``), made reference tables
    (``"reference"``) or left alone (None: plain PostgreSQL), then the rows and a backfill."""
    simsql.alembic.upgrade(engine)
    create_models(engine, model)
    if how is not None:
        simsql.citus.distribute(engine, model, "id" if how == "distributed" else None)
    insert_rows(engine, model, rows())
    simsql.backfill(engine, model, workers=0)


def _text(model: type, key: int) -> str:
    row = rows()[key - 1]
    return "\n".join(part for part in (row["title"], row["body"]) if part is not None)


def _most_similar(session: Session, model: type) -> Any:
    return [
        [(row[0].id, int(row[1])) for row in session.execute(simsql.most_similar(select(model), _text(model, key), limit=5))]
        for key in (7, 13, 42)
    ]


def _similar_to(session: Session, model: type) -> Any:
    return [
        sorted(session.execute(select(model.id).where(simsql.similar_to(model, _text(model, 7), d))).scalars())  # type: ignore[attr-defined]
        for d in (3, 9)
    ]


def _find_original(session: Session, model: type) -> Any:
    found = [simsql.find_original(session, model, _text(model, key)) for key in (7, 13, 42)]
    return [None if match is None else (match.row.id, match.distance, match.similarity) for match in found]


def _most_similar_many(session: Session, model: type) -> Any:
    return simsql.queries.most_similar_many(session, model, [_text(model, key) for key in (7, 13, 42, 100)], limit=4)


def _near_duplicates(session: Session, model: type) -> Any:
    return simsql.near_duplicates(session, model, max_distance=3)


def _duplicate_groups(session: Session, model: type) -> Any:
    return simsql.duplicate_groups(session, model, max_distance=3)


QUERIES: dict[str, Callable[[Session, type], Any]] = {
    "most_similar": _most_similar,
    "similar_to": _similar_to,
    "find_original": _find_original,
    "most_similar_many": _most_similar_many,
    "near_duplicates": _near_duplicates,
    "duplicate_groups": _duplicate_groups,
}


def answer(engine: Engine, model: type, query: str) -> Any:
    with Session(engine) as session:
        return QUERIES[query](session, model)


# -- detection -------------------------------------------------------------------------------


def test_citus_is_detected_and_plain_postgresql_is_not(citus_engine: Engine, engine: Engine) -> None:
    assert type(dialects.backend(citus_engine)) is CitusBackend
    assert type(dialects.backend(engine)) is PostgresBackend


# -- every query on distributed and reference tables, both storage modes, as plain PostgreSQL --


@pytest.mark.parametrize("query", list(QUERIES))
@pytest.mark.parametrize("how", ["distributed", "reference"])
@pytest.mark.parametrize("mode", list(MODELS))
def test_queries_answer_as_plain_postgresql(citus_engine: Engine, engine: Engine, mode: str, how: str, query: str) -> None:
    model = MODELS[mode]
    load(engine, model, None)
    load(citus_engine, model, how)
    expected = answer(engine, model, query)
    assert expected, f"{query} found nothing on plain PostgreSQL: the comparison would prove nothing"
    assert answer(citus_engine, model, query) == expected


def test_distributed_mixin_table_keeps_fingerprints_honest_on_the_shards(citus_engine: Engine) -> None:
    load(citus_engine, Note, "distributed")
    with Session(citus_engine) as session:
        session.add(Note(id=10_000, title="fresh", body="a new row written through the ORM on a distributed table"))
        session.commit()
    run(citus_engine, "UPDATE notes SET body = 'rewritten by raw SQL' WHERE id = 7")
    report = simsql.status(citus_engine)[0]
    assert (report.rows_missing, report.rows_stale) == (1, 0)  # the trigger on the shard dropped the stale one
    assert simsql.backfill(citus_engine, Note, workers=0).rows_fingerprinted == 1
    with citus_engine.connect() as connection:
        stored = connection.execute(text("SELECT simhash FROM notes WHERE id IN (7, 10000) ORDER BY id")).scalars().all()
    assert [simsql.bits.to_unsigned(v) for v in stored] == [
        simsql.store.binding_for(Note).fingerprinter.fingerprint("title 7\nrewritten by raw SQL"),
        simsql.store.binding_for(Note).fingerprinter.fingerprint("fresh\na new row written through the ORM on a distributed table"),
    ]


# -- what the planner reads: the size of a distributed table, and how many round trips ----------


def _docs_of(engine: Engine, count: int, distributed: bool) -> None:
    run(engine, "CREATE TABLE sized (id INT PRIMARY KEY, body TEXT)")
    if distributed:
        run(engine, "SELECT create_distributed_table('sized', 'id')")
    run(engine, f"INSERT INTO sized SELECT i, repeat(md5(i::text), 8) FROM generate_series(1, {count}) AS i", "ANALYZE sized")


def test_row_estimate_of_a_distributed_table_counts_the_rows_on_the_shards(citus_engine: Engine) -> None:
    """The coordinator's shell of a distributed table is empty (``reltuples`` 0), so an
    estimate read there left the band budget at its floor whatever the table held. Its shards'
    estimates, summed, are the table's (exact here: each shard analysed whole)."""
    _docs_of(citus_engine, 60_000, distributed=True)
    with citus_engine.connect() as connection:
        estimate = connection.execute(select(dialects.row_estimate(table("sized")))).scalar_one()
    assert estimate == 60_000


@pytest.mark.parametrize("how", ["distributed", "reference"])
def test_a_table_in_citus_is_sized_by_its_shards_and_keeps_the_plan_its_size_asks(
    citus_engine: Engine, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What chooses a plan by the table's size (:mod:`simsql.queries.plan_size`) read 0 for a
    table in Citus (its coordinator shell is empty; a 1% page sample of a small table found no
    page), so every such table ran as small. Read through the backend it is the shards' sum,
    and exact ``most_similar`` on a table of at least ``BANDS_FROM_ROWS`` rows keeps the
    statement built with bands (one row fewer than the threshold: the small one is sent)."""
    from simsql.queries import plan_size

    load(citus_engine, Note, how)
    run(citus_engine, "ANALYZE notes")
    with citus_engine.connect() as connection:
        assert plan_size.estimated_rows(connection, simsql.store.binding_for(Note)) == len(rows())
    for threshold, kept in ((len(rows()), True), (len(rows()) + 1, False)):
        monkeypatch.setattr(plan_size, "BANDS_FROM_ROWS", threshold)
        sent: list[bool] = []

        def record(connection: Any, statement: Any, *_: Any) -> None:
            options = getattr(statement, "get_execution_options", dict)()
            sent.append(plan_size.SIZED_OPTION in options)

        event.listen(citus_engine, "before_execute", record)  # after plan_size's own choice (a listener on every Engine)
        try:
            with Session(citus_engine) as session:
                found = session.execute(simsql.most_similar(select(Note), _text(Note, 7), limit=5)).all()
        finally:
            event.remove(citus_engine, "before_execute", record)
        assert found and sent[-1] == kept, (threshold, sent)


def test_row_estimate_of_a_local_table_on_citus_is_still_the_planner_s(citus_engine: Engine) -> None:
    _docs_of(citus_engine, 3_000, distributed=False)
    with citus_engine.connect() as connection:
        estimate = connection.execute(select(dialects.row_estimate(table("sized")))).scalar_one()
    assert estimate == 3_000


def _subplans(engine: Engine, statement: Any) -> int:
    """Distributed subplans (each a round trip to the workers before the final query) of
    ``statement``'s plan on the coordinator."""
    with engine.connect() as connection:
        sql = str(statement.compile(connection, compile_kwargs={"literal_binds": True}))
        plan = connection.execute(text("EXPLAIN (COSTS false) " + sql)).scalars().all()
    return sum("Distributed Subplan" in line for line in plan)


def test_most_similar_on_a_distributed_table_plans_few_round_trips(citus_engine: Engine) -> None:
    """PostgreSQL stops pulling ``UNION ALL`` branches at the ``LIMIT``; Citus plans every branch,
    every check and every block probe of them as a subplan of its own and runs them all first
    (25 for a top-10 before): there the plan is the eager one, band 0 and a scan guarded by
    band 0's count."""
    load(citus_engine, Note, "distributed")
    found = _subplans(citus_engine, simsql.most_similar(select(Note), _text(Note, 7), limit=10))
    assert found <= 6, found


def _tasks(connection: Any, sql: str, parameters: Any = None) -> int:
    """Tasks (shard queries) of ``sql``'s plan on the coordinator (its parameters bound)."""
    plan = connection.exec_driver_sql("EXPLAIN (COSTS false) " + sql, parameters).scalars().all()
    return sum(int(line.split(":")[1]) for line in plan if line.strip().startswith("Task Count:"))


@pytest.mark.parametrize("how", ["distributed", "reference"])
def test_find_original_on_a_wide_table_answers_as_plain_postgresql(citus_engine: Engine, engine: Engine, how: str) -> None:
    load(engine, WideNote, None)
    load(citus_engine, WideNote, how)
    expected = answer(engine, WideNote, "find_original")
    assert any(expected), expected
    assert answer(citus_engine, WideNote, "find_original") == expected


@pytest.mark.parametrize("radius", [None, 1, 2, 3])
@pytest.mark.parametrize("how", ["distributed", "reference"])
def test_dedupe_by_text_on_a_wide_table_answers_as_plain_postgresql(citus_engine: Engine, engine: Engine, how: str, radius: int | None) -> None:
    """near_duplicates by text (the fenced split and halves joins over the keys and words read
    once from the shards): the same confirmed pairs as plain PostgreSQL, at every radius."""
    load(engine, WideNote, None)
    load(citus_engine, WideNote, how)
    with Session(engine) as session:
        expected = simsql.near_duplicates(session, WideNote, probe_radius=radius)
    assert expected, "no pair on plain PostgreSQL: the comparison would prove nothing"
    with Session(citus_engine) as session:
        assert simsql.near_duplicates(session, WideNote, probe_radius=radius) == expected


@pytest.mark.parametrize("model", [Note, Page, WideNote])
def test_find_original_reads_its_candidates_from_the_shards_holding_them(citus_engine: Engine, model: type) -> None:
    """The candidates' rows are read by key in a statement of their own, which Citus routes to
    the shards holding those keys (a task per such shard), not joined to the ranked keys on
    every shard (32 tasks)."""
    load(citus_engine, model, "distributed")
    with citus_engine.connect() as connection:
        shards = connection.execute(
            text("SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = CAST(:t AS regclass)"), {"t": model.__tablename__}
        ).scalar_one()
    reads: list[tuple[str, Any]] = []

    def capture(_c: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.startswith("SELECT") and " IN (" in statement:
            reads.append((statement, parameters))

    event.listen(citus_engine, "before_cursor_execute", capture)
    try:
        with Session(citus_engine) as session:
            found = simsql.find_original(session, model, _text(model, 7))
    finally:
        event.remove(citus_engine, "before_cursor_execute", capture)
    assert found is not None and found.row.id == 7
    assert len(reads) == 1, reads
    sql, parameters = reads[0]
    keys = len(parameters)
    assert 1 < keys <= ORIGINALITY_CANDIDATES, parameters
    with citus_engine.connect() as connection:
        tasks = _tasks(connection, sql, parameters)
    assert 1 <= tasks <= keys < shards, (tasks, keys, shards)


def test_backfill_of_a_distributed_side_table_writes_each_batch_shard_by_shard(citus_engine: Engine) -> None:
    """A side table's batch store names its keys, so Citus routes it to one shard and runs it
    there whole, its FOR SHARE lock of the base rows included (the batch's one INSERT ... SELECT
    was pulled to the coordinator, after a lock statement per shard)."""
    model = Page
    simsql.alembic.upgrade(citus_engine)
    create_models(citus_engine, model)
    simsql.citus.distribute(citus_engine, model, "id")
    insert_rows(citus_engine, model, rows())
    writes: list[tuple[str, Any]] = []

    def capture(_c: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.startswith(("UPDATE", "INSERT")) and "unnest(" in statement:
            writes.append((statement, parameters))

    event.listen(citus_engine, "before_cursor_execute", capture)
    try:
        simsql.backfill(citus_engine, model, workers=0)
    finally:
        event.remove(citus_engine, "before_cursor_execute", capture)
    report = simsql.status(citus_engine)[0]
    assert (report.rows_missing, report.rows_stale) == (0, 0)
    assert len(writes) > 1
    with citus_engine.connect() as connection:
        assert [_tasks(connection, sql, parameters) for sql, parameters in writes] == [1] * len(writes)


# -- attach and detach of a table the user distributed -----------------------------------------


def _distributed_docs(engine: Engine) -> None:
    run(engine, "CREATE TABLE docs (id INT PRIMARY KEY, title TEXT, body TEXT)", "SELECT create_distributed_table('docs', 'id')")
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO docs (id, title, body) VALUES (:id, :title, :body)"), rows())


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_cli_attach_backfill_dupes_detach_on_a_distributed_table(citus_engine: Engine, citus_cli_url: str, side_table: bool) -> None:
    _distributed_docs(citus_engine)
    attach = ["attach", "--table", "docs", "--text-column", "title", "--text-column", "body"]
    done = cli(*attach, *(["--side-table"] if side_table else []), "--no-backfill", url=citus_cli_url)
    assert done.returncode == 0, done.stderr
    done = cli("backfill", "--table", "docs", url=citus_cli_url)
    assert done.returncode == 0, done.stderr
    with Session(citus_engine) as session:
        model = simsql.reflect(session.connection(), "docs")
        groups = simsql.duplicate_groups(session, model)
        similar = session.execute(select(model.id).where(simsql.similar_to(model, _text(Note, 7), 3))).scalars().all()
    assert groups and 7 in sorted(similar)
    done = cli("dupes", "--table", "docs", "--format", "json", url=citus_cli_url)
    assert done.returncode == 0, done.stderr
    assert [group["keys"] for group in json.loads(done.stdout)] == groups
    done = cli("detach", "--table", "docs", url=citus_cli_url)
    assert done.returncode == 0, done.stderr
    assert simsql.status(citus_engine) == []


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_attach_table_on_a_distributed_table(citus_engine: Engine, side_table: bool) -> None:
    _distributed_docs(citus_engine)
    simsql.alembic.upgrade(citus_engine)
    simsql.attach_table(citus_engine, "docs", ["title", "body"], side_table=side_table)
    assert simsql.backfill(citus_engine, "docs", workers=0).rows_fingerprinted > ROWS // 2
    with Session(citus_engine) as session:
        model = simsql.reflect(session.connection(), "docs")
        similar = session.execute(select(model.id).where(simsql.similar_to(model, _text(Note, 7), 3))).scalars().all()
    assert 7 in similar
    simsql.detach_table(citus_engine, "docs")
    assert simsql.status(citus_engine) == []


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_distribute_a_table_attached_before_by_name_takes_its_side_table_along(citus_engine: Engine, side_table: bool) -> None:
    run(citus_engine, "CREATE TABLE docs (id INT PRIMARY KEY, title TEXT, body TEXT)")
    simsql.alembic.upgrade(citus_engine)
    simsql.attach_table(citus_engine, "docs", ["title", "body"], side_table=side_table)
    simsql.citus.distribute(citus_engine, "docs", "id")
    with citus_engine.connect() as connection:
        distributed = connection.execute(text(
            "SELECT CAST(logicalrelid AS text) FROM pg_dist_partition WHERE partmethod = 'h' "
            "AND CAST(logicalrelid AS text) IN ('docs', 'docs_simhash') ORDER BY 1"
        )).scalars().all()  # fmt: skip
    assert distributed == (["docs", "docs_simhash"] if side_table else ["docs"])
    with citus_engine.begin() as connection:
        connection.execute(text("INSERT INTO docs (id, title, body) VALUES (:id, :title, :body)"), rows())
    assert simsql.backfill(citus_engine, "docs", workers=0).rows_fingerprinted > ROWS // 2
    report = simsql.status(citus_engine)[0]
    assert (report.rows_missing, report.rows_stale) == (0, 0)


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_refingerprint_a_distributed_table_answers_as_plain_postgresql(citus_engine: Engine, engine: Engine, side_table: bool) -> None:
    for server in (citus_engine, engine):
        run(server, "CREATE TABLE docs (id INT PRIMARY KEY, title TEXT, body TEXT)")
        if server is citus_engine:
            run(server, "SELECT create_distributed_table('docs', 'id')")
        with server.begin() as connection:
            connection.execute(text("INSERT INTO docs (id, title, body) VALUES (:id, :title, :body)"), rows())
        simsql.alembic.upgrade(server)
        simsql.attach_table(server, "docs", ["title", "body"], side_table=side_table)
        simsql.backfill(server, "docs", workers=0)
        assert refingerprint(server, "docs", to=simsql.Fingerprinter(shingle_size=2), workers=0).switched
    answers = []
    for server in (citus_engine, engine):
        report = simsql.status(server)[0]
        assert (report.settings["shingle_size"], report.rows_missing, report.rows_stale) == (2, 0, 0)
        with Session(server) as session:
            answers.append(simsql.duplicate_groups(session, simsql.reflect(session.connection(), "docs")))
    assert answers[0] == answers[1] and answers[0]


def test_distribute_refuses_a_server_without_citus(engine: Engine) -> None:
    run(engine, "CREATE TABLE docs (id INT PRIMARY KEY, title TEXT, body TEXT)")
    with pytest.raises(simsql.text.errors.UnsupportedDatabase, match="needs Citus"):
        simsql.citus.distribute(engine, "docs", "id")


# -- plain PostgreSQL --------------------------------------------------------------------------


@pytest.fixture
def other_schema(engine: Engine) -> Iterator[str]:
    """A second schema, not on the test engine's ``search_path``."""
    name = f"o_{uuid.uuid4().hex[:12]}"
    run(engine, f'CREATE SCHEMA "{name}"')
    yield name
    run(engine, f'DROP SCHEMA "{name}" CASCADE')


def test_detach_of_a_side_table_in_a_schema_off_the_search_path(engine: Engine, other_schema: str) -> None:
    simsql.alembic.upgrade(engine)
    run(engine, f'CREATE TABLE "{other_schema}".docs (id INT PRIMARY KEY, title TEXT, body TEXT)',
        f"INSERT INTO \"{other_schema}\".docs VALUES (1, 'a', 'the quick brown fox jumps over the lazy dog')")  # fmt: skip
    simsql.attach_table(engine, "docs", ["title", "body"], schema=other_schema, side_table=True)
    removed = simsql.detach_table(engine, "docs", schema=other_schema)
    assert (removed.table_schema, removed.table_name) == (other_schema, "docs")
    with engine.connect() as connection:
        left = connection.execute(
            text("SELECT relname FROM pg_class WHERE relnamespace = CAST(:s AS regnamespace) ORDER BY 1"), {"s": other_schema}
        ).scalars().all()
    assert left == ["docs", "docs_pkey"]


# -- partition lists (issue 34): the same lists, the same answers as plain PostgreSQL ----------


class ListedNote(ListsMixin, simsql.SimHashMixin, Base):
    """Columns mode with partition lists: the list column and its covering index on the shards."""

    __tablename__ = "listed_notes"
    __simhash_source__ = ("title", "body")

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


def _listed_answers(engine: Engine) -> list[Any]:
    """The fit's lists and sizes, then probes queries (plain, filtered, a row target, a text)."""
    fitted = fit_lists(engine, "listed_notes", lists=8, seed=3)
    with engine.begin() as connection:  # raw writes: a row taken out of its list (left behind, still found), a new row
        connection.execute(text("UPDATE listed_notes SET simhash_part = NULL WHERE id = 61"))
        connection.execute(text("INSERT INTO listed_notes (id, title, body) VALUES (9999, 'raw', 'written behind the ORM')"))
    answers: list[Any] = [(fitted.lists, fitted.largest_list, fitted.median_list)]
    with Session(engine) as session:
        for key in (7, 61, 200):
            row = session.get(ListedNote, key)
            for stmt, probes in ((select(ListedNote), 2), (select(ListedNote).where(ListedNote.id > 50), 3)):
                found = session.execute(simsql.most_similar(stmt, row, limit=8, probes=probes)).all()
                answers.append([(found_row.id, distance) for found_row, distance, _ in found])
        left = session.get(ListedNote, 61)
        assert left is not None
        found = session.execute(simsql.most_similar(select(ListedNote), f"{left.title}\n{left.body}", limit=3, probes=1)).all()
        answers.append([(found_row.id, distance) for found_row, distance, _ in found])
    answers.append(simsql.backfill(engine, ListedNote, workers=0).rows_placed)  # the new row and the one left behind
    answers.append([(s.lists.lists, s.lists.rows_left_behind) for s in simsql.status(engine) if s.lists is not None])
    return answers


@pytest.mark.parametrize("how", ["distributed", "reference"])
@pytest.mark.parametrize("step_aside", ["chosen", "pinned off"])
def test_partition_lists_answer_as_plain_postgresql(
    citus_engine: Engine, engine: Engine, how: str, step_aside: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same answers on both: with the lists' step-aside as each server chooses it (from its
    row estimate: on Citus the shards' summed, so this small table steps aside on both), and
    with it pinned off (the lists' own answers, through the lists on both)."""
    if step_aside == "pinned off":
        from simsql.queries import plan_size

        monkeypatch.setattr(plan_size, "STEP_ASIDE_SHARE", 10.0)
        monkeypatch.setattr(plan_size, "STEP_ASIDE_ROWS", 0)
    load(engine, ListedNote, None)
    load(citus_engine, ListedNote, how)
    expected = _listed_answers(engine)
    assert all(expected[1:7]) and expected[-2] == 2, "nothing found on plain PostgreSQL: the comparison would prove nothing"
    assert (61, 0) in expected[7]  # left behind, read by every probes query
    assert _listed_answers(citus_engine) == expected
