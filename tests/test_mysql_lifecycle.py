"""The live-table lifecycle on MySQL/MariaDB: catalog, time bounds and who holds a lock (the
seam backfill and attach share), then attach / detach / status on a real server."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine, text

import simsql
import simsql.alembic
from simsql.dialects import mysql as my
from simsql.lifecycle import apply, catalog
from simsql.lifecycle.ddl import Plan, Step


def _run(engine: Engine, *statements: str) -> None:
    with engine.begin() as connection:
        for statement in statements:
            connection.execute(text(statement))


def _within(seconds: float, work: Callable[[], Any]) -> BaseException | None:
    """Run ``work`` in a thread; fail the test if it is still waiting after ``seconds``."""
    outcome: dict[str, BaseException | None] = {"error": None}

    def run() -> None:
        try:
            work()
        except BaseException as error:  # noqa: BLE001 - handed back to the test
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds} s"
    return outcome["error"]


# -- the seam: catalog ------------------------------------------------------------------------


def test_catalog_facts_of_a_real_table(mysql_engine: Engine) -> None:
    _run(
        mysql_engine,
        "CREATE TABLE docs (region VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, n BIGINT UNSIGNED NOT NULL, "
        "title VARCHAR(200), body MEDIUMTEXT, views INT, PRIMARY KEY (region, n))",
        "CREATE TRIGGER docs_audit BEFORE INSERT ON docs FOR EACH ROW SET NEW.views = 0",
        "CREATE VIEW doc_titles AS SELECT title FROM docs",
    )
    with mysql_engine.connect() as connection:
        schema = connection.execute(text("SELECT DATABASE()")).scalar_one()
        facts = catalog.table_facts(connection, "docs", schema)
        assert facts is not None
        assert (facts.schema, facts.name, facts.kind) == (schema, "docs", "r")
        assert list(facts.columns) == ["region", "n", "title", "body", "views"]
        assert {name for name, column in facts.columns.items() if column.is_text} == {"region", "title", "body"}
        assert facts.keys == ("region", "n")
        # key types are spelled so a side table's key can reference them (charset and collation included)
        # (MySQL >= 8.0.19 no longer shows integer display widths; MariaDB does)
        widths = bool(connection.dialect.is_mariadb) or tuple(connection.dialect.server_version_info[:3]) < (8, 0, 19)
        assert facts.key_types == ("varchar(8) CHARACTER SET ascii COLLATE ascii_bin", "bigint(20) unsigned" if widths else "bigint unsigned")
        assert facts.triggers == ("docs_audit",)
        assert catalog.table_facts(connection, "doc_titles", schema) is None  # a view is not a table
        assert catalog.table_facts(connection, "Docs", schema) is None  # names are exact
        assert catalog.table_facts(connection, "missing", schema) is None
        target = catalog.describe(connection, "docs", ["title", "body"])
        assert (target.schema, target.keys, target.source) == (schema, ("region", "n"), ("title", "body"))
        with pytest.raises(simsql.SchemaError, match=r"docs\.views is int\(11\), not text" if widths else r"docs\.views is int, not text"):
            catalog.describe(connection, "docs", ["views"])
        with pytest.raises(simsql.SchemaError, match="does not exist"):
            catalog.describe(connection, "missing", ["body"])


def test_catalog_names_what_depends_on_columns(mysql_engine: Engine) -> None:
    _run(
        mysql_engine,
        "CREATE TABLE docs (id INT PRIMARY KEY, body TEXT, fp BIGINT UNSIGNED, fp_b0 INT AS ((fp >> 48) & 65535) VIRTUAL, "
        "fp_twice BIGINT UNSIGNED AS (fp * 2) VIRTUAL, CONSTRAINT ck_fp CHECK (fp <> 1), CONSTRAINT ck_id CHECK (id > 0))",
        # another table's check on a column of the same name is not one of docs'
        "CREATE TABLE others (fp BIGINT UNSIGNED, CONSTRAINT ck_others CHECK (fp <> 2))",
        "CREATE INDEX ix_mine ON docs (id, fp)",
        "CREATE INDEX ix_simsql ON docs (fp_b0, fp)",
        "CREATE VIEW fps AS SELECT id, fp FROM docs",
        "CREATE VIEW bodies AS SELECT id, body FROM docs",
    )
    with mysql_engine.connect() as connection:
        schema = connection.execute(text("SELECT DATABASE()")).scalar_one()
        found = catalog.dependents(connection, schema, "docs", ["fp", "fp_b0"], own=["ix_simsql"])
    assert found == [
        "check constraint ck_fp on table docs", "generated column docs.fp_twice", "index ix_mine on table docs", f"view {schema}.fps",
    ]


# -- the seam: time bounds --------------------------------------------------------------------


def test_durations_translate_to_seconds() -> None:
    assert my.interval_seconds("5s") == 5
    assert my.interval_seconds("10min") == 600
    assert my.interval_seconds("1500ms") == 1.5
    assert my.interval_seconds("250") == 0.25  # PostgreSQL's unit for a bare timeout: milliseconds
    assert my.interval_seconds("0") is None and my.interval_seconds(None) is None
    with pytest.raises(ValueError, match="not a duration"):
        my.interval_seconds("five seconds")


def _session_bounds(connection: Any) -> tuple[Any, ...]:
    """Lock waits in seconds; the statement bound in seconds as MariaDB's ``max_statement_time``
    holds it, or MySQL's ``max_execution_time`` (milliseconds) in seconds."""
    mariadb = bool(getattr(connection.dialect, "is_mariadb", False))
    statement = "@@SESSION.max_statement_time" if mariadb else "@@SESSION.max_execution_time / 1000"
    lock, row_lock, bound = connection.execute(text(
        f"SELECT @@SESSION.lock_wait_timeout, @@SESSION.innodb_lock_wait_timeout, {statement}"
    )).one()
    return lock, row_lock, float(bound)


def test_bounds_apply_inside_and_the_session_gets_its_own_back(mysql_engine: Engine) -> None:
    with mysql_engine.connect() as connection:
        own = _session_bounds(connection)
        with apply.bounded(connection, apply.Timeouts("1500ms", "2min")):
            assert _session_bounds(connection) == (2, 2, 120)  # whole seconds, rounded up
            with apply.bounded(connection, apply.Timeouts(None, None)):
                assert _session_bounds(connection) == (my.UNBOUNDED_LOCK_WAIT, my.UNBOUNDED_ROW_LOCK_WAIT, 0)
            assert _session_bounds(connection) == (2, 2, 120)
            with apply.bounded(connection, apply.Timeouts("1s", "250ms")):
                assert _session_bounds(connection) == (1, 1, 0.25)  # a statement bound keeps its fraction
        assert _session_bounds(connection) == own
        # a bound meant to last a transaction lasts until the connection goes back to its pool
        apply.set_timeouts(connection, apply.Timeouts("3s", "1s"))
        assert _session_bounds(connection) == (3, 3, 1)
        thread_id = connection.connection.dbapi_connection.thread_id()  # type: ignore[union-attr]
    with mysql_engine.connect() as connection:
        assert connection.connection.dbapi_connection.thread_id() == thread_id  # type: ignore[union-attr]  # the same session
        assert _session_bounds(connection) == own


def test_a_statement_over_its_bound_is_a_statement_timeout(mysql_engine: Engine) -> None:
    # Two rows: MySQL ends a lone SLEEP() at max_execution_time as if it had finished (it returns
    # 1, no error); a query that sleeps per row is stopped with ER_QUERY_TIMEOUT there too.
    plan = Plan((Step("SELECT SLEEP(5) FROM (SELECT 1 UNION ALL SELECT 2) AS two", "sleep"),))
    with mysql_engine.connect() as connection:
        error = _within(15, lambda: apply.run(connection, plan, apply.Timeouts("1s", "300ms")))
    assert isinstance(error, simsql.LockTimeout), error
    assert "sleep: gave up after waiting 300ms for the statement to finish" in str(error)


def test_ddl_behind_a_held_metadata_lock_gives_up_and_names_the_holder(mysql_engine: Engine) -> None:
    _run(mysql_engine, "CREATE TABLE docs (id INT PRIMARY KEY, body TEXT)", "INSERT INTO docs VALUES (1, 'a')")
    holder = mysql_engine.connect()
    try:
        holder.execute(text("SELECT body FROM docs"))  # the transaction stays open: a shared metadata lock
        holder_id = holder.connection.dbapi_connection.thread_id()  # type: ignore[union-attr]
        schema = holder.execute(text("SELECT DATABASE()")).scalar_one()
        plan = Plan((
            Step("ALTER TABLE docs ADD COLUMN first INT", "add column first"),
            Step("ALTER TABLE docs ADD COLUMN second INT", "add column second"),
        ))
        relation = f"{my.quote(schema)}.{my.quote('docs')}"
        # the first statement must wait: run it behind the lock
        error = _within(20, lambda: apply.run_on_engine(mysql_engine, Plan(plan.steps[:1]), apply.Timeouts("1s"), relations=[relation]))
        assert isinstance(error, simsql.LockTimeout), error
        message = str(error)
        assert f"session {holder_id} (idle in transaction" in message
        assert "add column first: gave up after waiting 1s for a lock" in message
        assert "Already committed: nothing" in message
    finally:
        holder.rollback()
        holder.close()
    with mysql_engine.connect() as connection:
        facts = catalog.table_facts(connection, "docs", connection.execute(text("SELECT DATABASE()")).scalar_one())
    assert facts is not None and list(facts.columns) == ["id", "body"]


def test_a_plan_that_stops_halfway_on_mysql_is_undone_or_says_what_it_kept(mysql_engine: Engine) -> None:
    _run(mysql_engine, "CREATE TABLE docs (id INT PRIMARY KEY, body TEXT)", "CREATE TABLE other (id INT PRIMARY KEY)")
    blocked = Step("ALTER TABLE other ADD COLUMN second INT", "add column second")
    undoable = Step("ALTER TABLE docs ADD COLUMN first INT", "add column first", undo="ALTER TABLE docs DROP COLUMN first")
    holder = mysql_engine.connect()
    try:
        holder.execute(text("SELECT id FROM other"))
        error = _within(20, lambda: apply.run_on_engine(mysql_engine, Plan((undoable, blocked)), apply.Timeouts("1s")))
        assert isinstance(error, simsql.LockTimeout), error
        assert "Already committed: nothing. Nothing was changed (its 1 earlier statement(s) were undone)" in str(error)
        assert _columns(mysql_engine, "docs") == ["id", "body"]
        # a statement without an undo stays, and the error says so
        kept = Step("ALTER TABLE docs ADD COLUMN first INT", "add column first")
        error = _within(20, lambda: apply.run_on_engine(mysql_engine, Plan((kept, blocked)), apply.Timeouts("1s")))
        assert isinstance(error, simsql.LockTimeout), error
        assert "Already committed: add column first." in str(error) and "add column first stay(s) in place" in str(error)
        assert _columns(mysql_engine, "docs") == ["id", "body", "first"]
    finally:
        holder.rollback()
        holder.close()


def _columns(engine: Engine, table: str) -> list[str]:
    with engine.connect() as connection:
        facts = catalog.table_facts(connection, table, connection.execute(text("SELECT DATABASE()")).scalar_one())
    assert facts is not None
    return list(facts.columns)


def test_a_postgresql_plan_never_runs_on_mysql(mysql_engine: Engine) -> None:
    from simsql.lifecycle import ddl
    from simsql.schema import Names

    plan = ddl.drop_indexes("test", Names("docs"))
    with pytest.raises(simsql.UnsupportedDatabase, match=r"in postgresql's DDL only; it does not run it on (MariaDB|MySQL) \d+\.\d+\.\d+ yet"):
        apply.run_on_engine(mysql_engine, plan)


def test_unsupported_servers_are_refused_with_the_version_found() -> None:
    from sqlalchemy import create_engine

    engine = create_engine("sqlite://")
    with engine.connect() as connection, pytest.raises(simsql.UnsupportedDatabase, match=r"'sqlite' database \(3\."):
        apply.set_timeouts(connection, apply.DDL)


# -- attach / detach / status on a live table -------------------------------------------------

def _words(seed: int, count: int = 80) -> str:
    rng = random.Random(seed)
    vocabulary = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "sigma", "river", "bank", "fox",
                  "dog", "quick", "brown", "index", "query"]  # fmt: skip
    return " ".join(f"{rng.choice(vocabulary)}{rng.randint(0, 99)}" for _ in range(count))


BODIES = {
    1: _words(3),
    2: _words(3) + " again",  # a near-duplicate of 1 (2 bits apart with its title)
    3: _words(4),
    4: _words(5),
    5: None,
}


def _build(engine: Engine, extra: str = "", options: str = "") -> None:
    """The table an application already has: its own index, trigger, a child table with a
    foreign key, a view, rows. ``extra``: more definitions; ``options``: table options."""
    _run(
        engine,
        "CREATE TABLE docs (id INT AUTO_INCREMENT PRIMARY KEY, title VARCHAR(200), body TEXT, "
        f"edited INT NOT NULL DEFAULT 0, KEY docs_title (title){extra}) {options}",
        "CREATE TABLE notes (id INT PRIMARY KEY, doc_id INT NOT NULL, FOREIGN KEY (doc_id) REFERENCES docs (id) ON DELETE CASCADE)",
        "CREATE TRIGGER docs_edited BEFORE INSERT ON docs FOR EACH ROW SET NEW.edited = 0",
        "CREATE VIEW doc_titles AS SELECT id, title FROM docs",
    )
    with engine.begin() as connection:
        for key, body in BODIES.items():
            connection.execute(
                text("INSERT INTO docs (id, title, body) VALUES (:i, :t, :b)"),
                {"i": key, "t": None if body is None else "title", "b": body},
            )


def _state(engine: Engine, table: str = "docs") -> dict[str, Any]:
    """What a user would compare: the table's definition and checksum, every trigger and table
    of the database, simsql's registry rows."""
    with engine.connect() as connection:
        tables = sorted(connection.execute(text("SHOW TABLES")).scalars())
        registered = (
            connection.execute(text("SELECT table_name, column_name FROM simsql_registry")).all()
            if "simsql_registry" in tables else None
        )
        return {
            "create": connection.execute(text(f"SHOW CREATE TABLE {table}")).one()[1],
            "checksum": connection.execute(text(f"CHECKSUM TABLE {table}")).one()[1],
            "triggers": sorted(connection.execute(text("SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()")).scalars()),
            "tables": tables,
            "registry": registered,
        }


def _fingerprint(engine: Engine, side: str | None = None, prefix: str = "simhash") -> None:
    """What a backfill does, by hand: each row's fingerprint and the digest of its text."""
    from simsql.fingerprint import DEFAULT
    from simsql.storage import join_text, text_digest

    with engine.begin() as connection:
        for key, title, body in connection.execute(text("SELECT id, title, body FROM docs")).all():
            joined = join_text([title, body])
            if joined is None:
                continue
            values = {"fp": DEFAULT.fingerprint_many([joined], empty="none")[0], "src": text_digest(joined).hex, "id": key}
            if side is None:
                connection.execute(text(f"UPDATE docs SET {prefix} = :fp, {prefix}_src = :src WHERE id = :id"), values)
            else:
                connection.execute(text(f"INSERT INTO {side} (id, {prefix}, {prefix}_src) VALUES (:id, :fp, :src)"), values)


def _neighbours(engine: Engine, key: int) -> list[tuple[int, int]]:
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    with Session(engine) as session:
        model = simsql.reflect(session.connection(), "docs")
        target = session.get(model, key)
        rows = session.execute(simsql.most_similar(select(model), target, limit=3)).all()
        return [(row[0].id, int(row[1])) for row in rows]


def _groups(engine: Engine) -> list[list[Any]]:
    from sqlalchemy.orm import Session

    with Session(engine) as session:
        model = simsql.reflect(session.connection(), "docs")
        return simsql.duplicate_groups(session, model, max_distance=3)


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_attach_query_detach_restores_the_table_exactly(mysql_engine: Engine, side_table: bool) -> None:
    _build(mysql_engine)
    simsql.alembic.upgrade(mysql_engine)
    before = _state(mysql_engine)
    entry = simsql.attach_table(mysql_engine, "docs", ["title", "body"], side_table=side_table)
    assert (entry.mode, entry.side_table) == (("side_table", "docs_simhash") if side_table else ("columns", None))
    report = simsql.status(mysql_engine)[0]
    assert (report.rows, report.rows_fingerprinted, report.rows_missing, report.rows_stale) == (5, 0, 4, 0)
    _fingerprint(mysql_engine, "docs_simhash" if side_table else None)
    report = simsql.status(mysql_engine)[0]
    assert (report.rows, report.rows_fingerprinted, report.rows_missing, report.rows_stale) == (5, 4, 0, 0)

    assert _neighbours(mysql_engine, 1)[0][0] == 2
    assert _groups(mysql_engine) == [[1, 2]]

    # the trigger: a raw UPDATE of the text leaves no fingerprint of the old text behind
    _run(mysql_engine, "UPDATE docs SET body = 'rewritten entirely, nothing like before' WHERE id = 2")
    report = simsql.status(mysql_engine)[0]
    assert (report.rows_fingerprinted, report.rows_missing, report.rows_stale) == (3, 1, 0)
    assert _groups(mysql_engine) == []

    removed = simsql.detach(mysql_engine, "docs")
    assert removed.table_name == "docs"
    with mysql_engine.begin() as connection:  # the text as it was: the table is as before attach
        connection.execute(text("UPDATE docs SET body = :b WHERE id = 2"), {"b": BODIES[2]})
    assert _state(mysql_engine) == before
    assert simsql.status(mysql_engine) == []


def test_attach_builds_what_the_orm_builds(mysql_engine: Engine) -> None:
    """A table attached live and one declared with SimHashMixin get the same columns and indexes."""
    from .models import Base

    Base.metadata.create_all(mysql_engine, tables=[Base.metadata.tables["articles"]])
    _run(mysql_engine, "CREATE TABLE plain (id INT AUTO_INCREMENT PRIMARY KEY, title VARCHAR(200), body TEXT, category VARCHAR(20) NOT NULL)")
    simsql.alembic.upgrade(mysql_engine)
    simsql.attach_table(mysql_engine, "plain", ["title", "body"])

    def simsql_lines(table: str) -> list[str]:
        with mysql_engine.connect() as connection:
            create = connection.execute(text(f"SHOW CREATE TABLE {table}")).one()[1]
        return sorted(line.strip().rstrip(",").replace(f"ix_{table}_", "ix_") for line in create.splitlines() if "simhash" in line)

    assert simsql_lines("plain") == simsql_lines("articles")
    assert len(simsql_lines("plain")) == 10  # 6 columns, 4 indexes


def test_conflicts_are_refused_and_change_nothing(mysql_engine: Engine) -> None:
    _build(mysql_engine)
    simsql.alembic.upgrade(mysql_engine)
    _run(mysql_engine, "CREATE TABLE other (id INT PRIMARY KEY)")
    cases = [
        ("ALTER TABLE docs ADD COLUMN SimHash BIGINT", "ALTER TABLE docs DROP COLUMN SimHash", r"column docs\.simhash"),
        ("CREATE TRIGGER simsql_docs_blocks_ins BEFORE INSERT ON other FOR EACH ROW SET NEW.id = NEW.id",
         "DROP TRIGGER simsql_docs_blocks_ins", "trigger simsql_docs_blocks_ins on other"),
        ("CREATE INDEX ix_docs_simhash_b0 ON docs (title)", "DROP INDEX ix_docs_simhash_b0 ON docs", "index ix_docs_simhash_b0 on docs"),
    ]
    for create, drop, named in cases:
        _run(mysql_engine, create)
        before = _state(mysql_engine)
        with pytest.raises(simsql.SchemaError, match=named + ".*another column prefix"):
            simsql.attach_table(mysql_engine, "docs", ["body"])
        assert _state(mysql_engine) == before
        _run(mysql_engine, drop)
    _run(mysql_engine, "CREATE TABLE docs_simhash (id INT PRIMARY KEY)")
    before = _state(mysql_engine)
    with pytest.raises(simsql.SchemaError, match=r"table .*\.docs_simhash already exist"):
        simsql.attach_table(mysql_engine, "docs", ["body"], side_table=True)
    assert _state(mysql_engine) == before

    # another prefix attaches beside a user's column, and detach takes only simsql's away
    _run(mysql_engine, "DROP TABLE docs_simhash", "ALTER TABLE docs ADD COLUMN simhash BIGINT", "UPDATE docs SET simhash = id * 7")
    before = _state(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", ["title", "body"], prefix="fp")
    _fingerprint(mysql_engine, prefix="fp")
    assert _neighbours(mysql_engine, 1)[0][0] == 2
    simsql.detach(mysql_engine, "docs")
    assert _state(mysql_engine) == before


def test_attaching_again_with_the_same_settings_changes_nothing_and_other_settings_are_refused(mysql_engine: Engine) -> None:
    _build(mysql_engine)
    simsql.alembic.upgrade(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", ["title", "body"])
    attached = _state(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", ["title", "body"])
    assert _state(mysql_engine) == attached
    with pytest.raises(simsql.SchemaError, match="already attached .*detach --table docs"):
        simsql.attach_table(mysql_engine, "docs", ["body"])
    with pytest.raises(simsql.SchemaError, match="already attached"):
        simsql.attach_table(mysql_engine, "docs", ["title", "body"], side_table=True)
    with pytest.raises(simsql.ConfigMismatch):
        simsql.attach_table(mysql_engine, "docs", ["title", "body"], fingerprinter=simsql.Fingerprinter(shingle_size=2))
    assert _state(mysql_engine) == attached


def test_a_rerun_finishes_an_attachment_that_stopped_halfway(mysql_engine: Engine) -> None:
    """What an undo that was itself blocked leaves (recorded, columns, no triggers or indexes):
    attaching again adds only the rest; detach would remove it."""
    _build(mysql_engine)
    simsql.alembic.upgrade(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", ["title", "body"])
    complete = _state(mysql_engine)
    _run(
        mysql_engine,
        "DROP TRIGGER simsql_docs_blocks_upd",
        "ALTER TABLE docs DROP INDEX ix_docs_simhash_b2, DROP INDEX ix_docs_simhash_b3",
    )
    simsql.attach_table(mysql_engine, "docs", ["title", "body"])
    assert _state(mysql_engine)["triggers"] == complete["triggers"]
    assert sorted(_state(mysql_engine)["create"].splitlines()) == sorted(complete["create"].splitlines())


def test_a_table_the_server_cannot_alter_online_is_refused_and_left_as_it_was(mysql_engine: Engine) -> None:
    _build(mysql_engine, ", FULLTEXT KEY docs_body (body)")
    simsql.alembic.upgrade(mysql_engine)
    before = _state(mysql_engine)
    with pytest.raises(simsql.WouldLockTable) as refused:
        simsql.attach_table(mysql_engine, "docs", ["body"])
    message = str(refused.value)
    assert "add stored columns simhash, simhash_src to" in message
    reason = (  # the server's own reason, in its own words
        "Fulltext index creation requires a lock" if mysql_engine.dialect.is_mariadb
        else "InnoDB presently supports one FULLTEXT index creation at a time"
    )
    assert reason in message
    assert "Nothing was changed (its 1 earlier statement(s) were undone)" in message
    assert _state(mysql_engine) == before
    # side-table mode leaves the table alone
    simsql.attach_table(mysql_engine, "docs", ["title", "body"], side_table=True)
    _fingerprint(mysql_engine, "docs_simhash")
    assert _neighbours(mysql_engine, 1)[0][0] == 2


def test_a_table_that_cannot_change_instantly_is_changed_online(mysql_engine: Engine) -> None:
    _build(mysql_engine, options="ROW_FORMAT=COMPRESSED")
    simsql.alembic.upgrade(mysql_engine)
    before = _state(mysql_engine)
    assert "ROW_FORMAT=COMPRESSED" in before["create"]
    simsql.attach_table(mysql_engine, "docs", ["title", "body"])
    _fingerprint(mysql_engine)
    assert _neighbours(mysql_engine, 1)[0][0] == 2
    simsql.detach(mysql_engine, "docs")
    assert _state(mysql_engine) == before


def test_a_table_out_of_instant_row_versions_is_changed_online(mysql_engine: Engine) -> None:
    """MySQL >= 8.0.29 counts instant ADD/DROP COLUMNs per table (64, 255 from 9.1) and then
    refuses ALGORITHM=INSTANT with ER_INNODB_MAX_ROW_VERSION: attach and detach rebuild online
    then, as for any table that cannot change instantly (a rebuild also resets the count)."""
    _build(mysql_engine)  # connects: what the server is, is known from here on
    if mysql_engine.dialect.is_mariadb:
        pytest.skip("MariaDB's instant ADD/DROP COLUMN has no row-version budget")
    exhausted = False
    with mysql_engine.connect() as connection:
        for _ in range(300):
            try:
                connection.exec_driver_sql("ALTER TABLE docs ADD COLUMN spent INT, ALGORITHM=INSTANT")
                connection.exec_driver_sql("ALTER TABLE docs DROP COLUMN spent, ALGORITHM=INSTANT")
            except Exception as error:  # noqa: BLE001 - which error is what the test checks
                assert "Maximum row versions reached" in str(error), error
                exhausted = True
                break
    assert exhausted, "300 instant changes and the server still allows more"
    # (should the budget run out on a DROP, `spent` stays: a column of the user's like any other)
    simsql.alembic.upgrade(mysql_engine)
    before = _state(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", ["title", "body"])
    _fingerprint(mysql_engine)
    assert _neighbours(mysql_engine, 1)[0][0] == 2
    simsql.detach(mysql_engine, "docs")
    assert _state(mysql_engine) == before


def test_detach_refuses_to_harm_what_depends_on_simsql(mysql_engine: Engine) -> None:
    _build(mysql_engine)
    simsql.alembic.upgrade(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", ["body"])
    for create, drop, named in [
        ("CREATE VIEW prints AS SELECT id, simhash FROM docs", "DROP VIEW prints", r"view .*\.prints"),
        ("CREATE INDEX mine ON docs (simhash_b1, id)", "DROP INDEX mine ON docs", "index mine on table docs"),
    ]:
        _run(mysql_engine, create)
        before = _state(mysql_engine)
        with pytest.raises(simsql.SchemaError, match=f"would drop objects simsql did not create: {named}"):
            simsql.detach(mysql_engine, "docs")
        assert _state(mysql_engine) == before
        _run(mysql_engine, drop)
    simsql.detach(mysql_engine, "docs")

    simsql.attach_table(mysql_engine, "docs", ["body"], side_table=True)
    _run(mysql_engine, "CREATE TABLE likes (doc_id INT PRIMARY KEY, FOREIGN KEY (doc_id) REFERENCES docs_simhash (id))")
    before = _state(mysql_engine)
    with pytest.raises(simsql.SchemaError, match="constraint likes_ibfk_1 on table likes"):
        simsql.detach(mysql_engine, "docs")
    assert _state(mysql_engine) == before


def test_status_counts_rows_written_behind_the_triggers(mysql_engine: Engine) -> None:
    _build(mysql_engine)
    simsql.alembic.upgrade(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", ["title", "body"])
    _fingerprint(mysql_engine)
    _run(mysql_engine, "DROP TRIGGER simsql_docs_blocks_upd", "UPDATE docs SET body = 'edited behind simsql' WHERE id IN (2, 3)")
    report = simsql.status(mysql_engine)[0]
    assert (report.rows_fingerprinted, report.rows_missing, report.rows_stale) == (4, 0, 2)


def test_attach_behind_a_held_lock_gives_up_names_the_holder_and_changes_nothing(mysql_engine: Engine) -> None:
    _build(mysql_engine)
    simsql.alembic.upgrade(mysql_engine)
    before = _state(mysql_engine)
    holder = mysql_engine.connect()
    try:
        holder.execute(text("SELECT count(*) FROM docs"))  # a transaction left open
        holder_id = holder.connection.dbapi_connection.thread_id()  # type: ignore[union-attr]
        error = _within(20, lambda: simsql.attach_table(mysql_engine, "docs", ["body"], lock_timeout="1s"))
        assert isinstance(error, simsql.LockTimeout), error
        message = str(error)
        assert f"session {holder_id} (idle in transaction" in message
        assert "gave up after waiting 1s for a lock" in message
        assert "Nothing was changed (its 1 earlier statement(s) were undone)" in message
    finally:
        holder.rollback()
        holder.close()
    assert _state(mysql_engine) == before


def test_detach_behind_a_held_lock_gives_up_and_keeps_the_attachment(mysql_engine: Engine) -> None:
    _build(mysql_engine)
    simsql.alembic.upgrade(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", ["title", "body"])
    _fingerprint(mysql_engine)
    attached = _state(mysql_engine)
    holder = mysql_engine.connect()
    try:
        holder.execute(text("SELECT count(*) FROM docs"))
        error = _within(30, lambda: simsql.detach(mysql_engine, "docs", lock_timeout="1s"))
        assert isinstance(error, simsql.LockTimeout), error
        assert "drop trigger simsql_docs_blocks_ins: gave up" in str(error)
    finally:
        holder.rollback()
        holder.close()
    assert _state(mysql_engine) == attached
    assert simsql.status(mysql_engine)[0].rows_fingerprinted == 4


# -- Alembic operations in a MySQL application's own history ---------------------------------

_REVISION = '''"""fingerprint docs

Revision ID: app_0001
"""

from alembic import op

import simsql.alembic  # noqa: F401

revision = "app_0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.upgrade_simsql()
    op.add_simhash("docs", source=["title", "body"]{options})
    op.create_simhash_indexes("docs", concurrently=True{options})


def downgrade() -> None:
    op.drop_simhash_indexes("docs", concurrently=True{options})
    op.drop_simhash("docs")
    op.downgrade_simsql()
'''


def _application(tmp_path: Any, options: str) -> Any:
    import shutil
    from pathlib import Path

    from alembic.config import Config

    legacy = Path(__file__).parent / "legacy_app"
    (tmp_path / "versions").mkdir()
    shutil.copy(legacy / "env.py", tmp_path / "env.py")
    shutil.copy(legacy / "script.py.mako", tmp_path / "script.py.mako")
    (tmp_path / "versions" / "app_0001.py").write_text(_REVISION.replace("{options}", options))
    config = Config()
    config.set_main_option("script_location", str(tmp_path))
    config.set_main_option("version_locations", str(tmp_path / "versions"))
    config.set_main_option("path_separator", "os")
    return config


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_alembic_operations_in_a_mysql_applications_history(mysql_engine: Engine, tmp_path: Any, side_table: bool) -> None:
    from alembic import command

    _build(mysql_engine)
    before = _state(mysql_engine)
    config = _application(tmp_path, ", side_table=True" if side_table else "")
    with mysql_engine.connect() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "heads")
        connection.commit()
        assert simsql.alembic.current(connection) == ("simsql_0001",)
        assert connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == ["app_0001"]
    entry = simsql.status(mysql_engine)[0]
    assert (entry.mode, entry.rows_missing) == ("side_table" if side_table else "columns", 4)
    holder = "docs_simhash" if side_table else "docs"
    with mysql_engine.connect() as connection:
        indexes = catalog.index_names(connection, connection.execute(text("SELECT DATABASE()")).scalar_one(), holder)
    assert [i for i in indexes if i.startswith("ix_")] == [f"ix_{holder}_simhash_b{i}" for i in range(4)]
    _fingerprint(mysql_engine, holder if side_table else None)
    assert _groups(mysql_engine) == [[1, 2]]

    with mysql_engine.connect() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "base")
        connection.commit()
    after = _state(mysql_engine)
    assert (after["create"], after["checksum"], after["triggers"]) == (before["create"], before["checksum"], before["triggers"])
    assert after["registry"] is None  # op.downgrade_simsql() removed simsql's tables too


def test_offline_scripts_are_refused_on_mysql(mysql_engine: Engine, tmp_path: Any) -> None:
    from alembic import command

    config = _application(tmp_path, "")
    config.set_main_option("sqlalchemy.url", mysql_engine.url.render_as_string(hide_password=False))
    with pytest.raises(simsql.UnsupportedDatabase, match="offline .* online"):
        command.upgrade(config, "heads", sql=True)


def test_servers_too_old_are_refused_with_the_version_found(mysql_engine: Engine) -> None:
    """The version rule on the lifecycle's paths: the real server, read as if it were MariaDB
    10.5 or MySQL 5.7 (the version SQLAlchemy read at connect is what every check looks at)."""
    from sqlalchemy import create_engine

    _build(mysql_engine)
    with mysql_engine.connect():
        pass
    real = mysql_engine.dialect.server_version_info
    if mysql_engine.dialect.is_mariadb:
        mysql_engine.dialect.server_version_info = (10, 5, 22)
        refused = r"MariaDB >= 10\.6, but the server is MariaDB 10\.5\.22"
    else:
        mysql_engine.dialect.server_version_info = (5, 7, 44)
        refused = r"MySQL >= 8\.0, but the server is MySQL 5\.7\.44"
    try:
        for attempt in (
            lambda: simsql.attach_table(mysql_engine, "docs", ["body"]),
            lambda: simsql.detach(mysql_engine, "docs"),
            lambda: simsql.status(mysql_engine),
        ):
            with pytest.raises(simsql.UnsupportedDatabase, match=refused):
                attempt()
        with pytest.raises(simsql.UnsupportedDatabase, match=refused):
            simsql.alembic.upgrade(mysql_engine)
    finally:
        mysql_engine.dialect.server_version_info = real
    assert _state(mysql_engine)["tables"] == ["doc_titles", "docs", "notes"]
    with pytest.raises(simsql.UnsupportedDatabase, match=r"'sqlite' database \(3\."):
        simsql.attach_table(create_engine("sqlite://"), "docs", ["body"])


def test_autogenerate_on_mysql_builds_what_create_all_builds(mysql_engine: Engine, mysql_admin_engine: Engine) -> None:
    """A migration autogenerated from SimHashMixin / simsql.attach models against MySQL creates
    the tables create_all creates there: unsigned fingerprint, VIRTUAL blocks, covering indexes,
    the triggers; autogenerating again finds nothing of simsql's to do."""
    import textwrap

    import sqlalchemy
    from alembic.autogenerate import produce_migrations, render_python_code
    from alembic.operations import Operations
    from alembic.runtime.migration import MigrationContext

    from .models import Base

    def autogenerate(connection: Any, downgrade: bool = False) -> str:
        context = MigrationContext.configure(connection)
        script = produce_migrations(context, Base.metadata)
        operations = script.downgrade_ops if downgrade else script.upgrade_ops
        assert operations is not None
        rendered = render_python_code(operations, migration_context=context)
        return textwrap.dedent("\n".join(line for line in rendered.splitlines() if not line.startswith("#")))

    def migrate(connection: Any, code: str) -> None:
        from sqlalchemy.dialects import mysql

        with Operations.context(MigrationContext.configure(connection)):
            from alembic import op

            exec(compile(code, "<migration>", "exec"), {"sa": sqlalchemy, "op": op, "mysql": mysql})  # noqa: S102

    def definitions(engine: Engine) -> dict[str, list[str]]:
        with engine.connect() as connection:
            return {
                table: sorted(line.rstrip(",") for line in connection.execute(text(f"SHOW CREATE TABLE {table}")).one()[1].splitlines())
                for table in ("articles", "posts_simhash")
            } | {"triggers": sorted(connection.execute(text(
                "SELECT CONCAT(TRIGGER_NAME, ' ', ACTION_STATEMENT) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()"
            )).scalars())}

    with mysql_engine.begin() as connection:
        code = autogenerate(connection)
        downgrade = autogenerate(connection, downgrade=True)
        assert "mysql.BIGINT(unsigned=True)" in code and "persisted=False" in code
        assert "op.drop_simhash_trigger('articles', ['title', 'body'])" in downgrade
        migrate(connection, code)
    with mysql_engine.connect() as connection:
        again = autogenerate(connection)
    assert "simhash" not in again, again
    other = mysql_engine.url.set(database=f"{mysql_engine.url.database}_b")
    with mysql_admin_engine.begin() as connection:
        connection.execute(text(f"CREATE DATABASE `{other.database}`"))
    try:
        created = sqlalchemy.create_engine(other)
        Base.metadata.create_all(created)
        assert definitions(mysql_engine) == definitions(created)
        created.dispose()
        with mysql_engine.begin() as connection:
            migrate(connection, downgrade)
        assert _state_tables(mysql_engine) == ([], [])  # tables and triggers gone
    finally:
        with mysql_admin_engine.begin() as connection:
            connection.execute(text(f"DROP DATABASE `{other.database}`"))


def _state_tables(engine: Engine) -> tuple[list[str], list[str]]:
    with engine.connect() as connection:
        tables = sorted(connection.execute(text("SHOW TABLES")).scalars())
        triggers = sorted(connection.execute(text("SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()")).scalars())
    return tables, triggers


def test_a_mysql_without_md5_is_refused_before_anything_is_created(mysql_engine: Engine, mysql_admin_engine: Engine) -> None:
    """MySQL 9.6 moved MD5() into component_classic_hashing: a trigger simsql created without it
    would fail every INSERT into the user's table. attach, backfill, status, create_all and
    Alembic's create-trigger refuse first and name the fix; detach still runs. The component is
    uninstalled for the test's duration (the tests' server is their own) and put back."""
    from sqlalchemy import create_engine

    from .models import Article, Base

    urn = my.CLASSIC_HASHING
    with mysql_admin_engine.connect() as admin:
        if mysql_admin_engine.dialect.is_mariadb:
            pytest.skip("MariaDB has MD5() built in")
        installed = admin.execute(text("SELECT COUNT(*) FROM mysql.component WHERE component_urn = :u"), {"u": urn}).scalar()
        if not installed:
            try:
                admin.execute(text("SELECT MD5('')"))
            except Exception:  # noqa: BLE001 - missing: the refusal below is what this server gives
                pass
            else:
                pytest.skip(f"MD5() is built into MySQL {mysql_admin_engine.dialect.server_version_info}")
        _build(mysql_engine)
        _run(mysql_engine, "CREATE TABLE memos (id INT PRIMARY KEY, body TEXT)", "INSERT INTO memos VALUES (1, 'a memo')")
        simsql.alembic.upgrade(mysql_engine)
        simsql.attach_table(mysql_engine, "memos", ["body"])  # attached while MD5() was there
        if installed:
            admin.execute(text(f"UNINSTALL COMPONENT '{urn}'"))
        try:
            fresh = create_engine(mysql_engine.url)  # sessions that have not seen MD5() yet
            before = _state(fresh)
            refused = r"has no MD5\(\) \(MySQL 9\.6 moved it into a component\): an administrator can add it with INSTALL COMPONENT 'file://component_classic_hashing'"
            for attempt in (
                lambda: simsql.attach_table(fresh, "docs", ["title", "body"]),
                lambda: simsql.backfill(fresh, "memos"),
                lambda: simsql.status(fresh),
                lambda: Base.metadata.create_all(fresh, tables=[Article.__table__]),
                lambda: _in_migration(fresh, lambda op: op.add_simhash("docs", ["title", "body"])),
                lambda: _in_migration(fresh, lambda op: op.create_simhash_trigger("docs", ["title", "body"])),
            ):
                with pytest.raises(simsql.UnsupportedDatabase, match=refused):
                    attempt()
            assert _state(fresh) == before
            simsql.detach(fresh, "memos")  # taking simsql away needs no MD5()
            with fresh.connect() as connection:
                assert my.triggers_on(connection, connection.execute(text("SELECT DATABASE()")).scalar_one(), "memos") == ()
            fresh.dispose()
        finally:
            if installed:
                admin.execute(text(f"INSTALL COMPONENT '{urn}'"))


def _in_migration(engine: Engine, operation: Callable[[Any], None]) -> None:
    """Run one Alembic operation as a user's migration would, online."""
    from alembic.operations import Operations
    from alembic.runtime.migration import MigrationContext

    with engine.begin() as connection:
        operation(Operations(MigrationContext.configure(connection)))
