"""attach -> backfill -> query -> detach on a live table, on every server: nothing lost, nothing
stale, the table as it was before attach once detached, and whatever simsql cannot do safely
refused before anything changed.

Each PostgreSQL-only test reproduces one way the lifecycle used to lose data or answer wrong
(issue 9); each MySQL-only test, something only MySQL/MariaDB can get wrong (online DDL,
instant column limits, MD5() in a component, server versions). Storage invariants:
tests/test_storage.py; backfill: tests/test_backfill.py; lock holders: tests/test_bounds.py;
catalog reading: tests/test_catalog.py; Alembic operations: tests/test_alembic_ops.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine, Text, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.alembic
import simsql.errors
import simsql.store
from simsql.dialects.mysql import backend as mysql_backend
from simsql.dialects.mysql import catalog
from simsql.errors import SchemaError
from simsql.lifecycle import attach as operations

from .tables import (
    BODIES,
    add_simhash,
    build_live_docs,
    fingerprint_by_hand,
    groups,
    is_mysql,
    neighbours,
    run,
    state,
)
from .test_migrations import build_legacy, snapshot

OLD = "the quick brown fox jumps over the lazy dog near the river bank today"


def _counts(engine: Engine) -> tuple[int, int, int, int]:
    """(rows, fingerprinted, missing, stale) of the one attached table."""
    report = simsql.status(engine)[0]
    return report.rows, report.rows_fingerprinted, report.rows_missing, report.rows_stale


def _postgresql_leftovers(engine: Engine) -> tuple[int, int]:
    """Relations named like simsql's and functions of simsql's for docs, in the test's schema."""
    with engine.connect() as connection:
        return tuple(connection.execute(text(
            "SELECT (SELECT count(*) FROM pg_class WHERE relnamespace = CAST(current_schema() AS regnamespace) "
            "AND relname LIKE '%simhash%'), (SELECT count(*) FROM pg_proc WHERE proname LIKE 'simsql_docs%' "
            "AND pronamespace = CAST(current_schema() AS regnamespace))"
        )).one())


# -- attach, query, status, detach: the same on every server -----------------------------------


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_attach_query_detach_restores_the_table_exactly(any_engine: Engine, side_table: bool) -> None:
    build_live_docs(any_engine)
    simsql.alembic.upgrade(any_engine)
    before = state(any_engine)
    entry = simsql.attach_table(any_engine, "docs", ["title", "body"], side_table=side_table)
    assert (entry.mode, entry.side_table) == (("side_table", "docs_simhash") if side_table else ("columns", None))
    assert _counts(any_engine) == (5, 0, 4, 0) and simsql.status(any_engine)[0].mode == entry.mode
    fingerprint_by_hand(any_engine, "docs_simhash" if side_table else None)
    assert _counts(any_engine) == (5, 4, 0, 0)
    assert simsql.backfill(any_engine, "docs", workers=0).rows_fingerprinted == 0  # the digests by hand are the server's

    assert neighbours(any_engine, 1)[0][0] == 2
    assert groups(any_engine) == [[1, 2]]

    # the trigger: a raw UPDATE of the text leaves no fingerprint of the old text behind
    run(any_engine, "UPDATE docs SET body = 'rewritten entirely, nothing like before' WHERE id = 2")
    assert _counts(any_engine)[1:] == (3, 1, 0)
    assert groups(any_engine) == []
    assert simsql.backfill(any_engine, "docs", workers=0).rows_fingerprinted == 1
    assert _counts(any_engine) == (5, 4, 0, 0)

    removed = simsql.detach_table(any_engine, "docs")
    assert removed.table_name == "docs"
    with any_engine.begin() as connection:  # the text as it was: the table is as before attach
        connection.execute(text("UPDATE docs SET body = :b WHERE id = 2"), {"b": BODIES[2]})
    assert state(any_engine) == before
    assert simsql.status(any_engine) == []
    if not is_mysql(any_engine):
        assert _postgresql_leftovers(any_engine) == (0, 0)


def test_attaching_again_with_the_same_settings_changes_nothing_and_other_settings_are_refused(any_engine: Engine) -> None:
    build_live_docs(any_engine)
    simsql.alembic.upgrade(any_engine)
    simsql.attach_table(any_engine, "docs", ["title", "body"])
    attached = state(any_engine)
    simsql.attach_table(any_engine, "docs", ["title", "body"])
    assert state(any_engine) == attached
    with pytest.raises(simsql.text.errors.SchemaError, match="already attached .*detach --table docs"):
        simsql.attach_table(any_engine, "docs", ["body"])
    with pytest.raises(simsql.text.errors.SchemaError, match="already attached"):
        simsql.attach_table(any_engine, "docs", ["title", "body"], side_table=True)
    with pytest.raises(simsql.text.errors.ConfigMismatch):
        simsql.attach_table(any_engine, "docs", ["title", "body"], fingerprinter=simsql.Fingerprinter(shingle_size=2))
    assert state(any_engine) == attached


def _dependents(engine: Engine) -> list[tuple[str, str, str]]:
    """(create, drop, how detach names it) for objects of the user's on simsql's columns."""
    if is_mysql(engine):
        return [
            ("CREATE VIEW prints AS SELECT id, simhash FROM docs", "DROP VIEW prints", r"view .*\.prints"),
            ("CREATE INDEX mine ON docs (simhash_b1, id)", "DROP INDEX mine ON docs", "index mine on table docs"),
        ]
    return [
        ("CREATE VIEW prints AS SELECT id, simhash FROM docs", "DROP VIEW prints", "rule _RETURN on view prints"),
        ("CREATE INDEX mine ON docs (simhash_b1, id)", "DROP INDEX mine", "index mine"),
    ]


def test_detach_refuses_to_harm_what_depends_on_simsql(any_engine: Engine) -> None:
    build_live_docs(any_engine)
    simsql.alembic.upgrade(any_engine)
    simsql.attach_table(any_engine, "docs", ["body"])
    for create, drop, named in _dependents(any_engine):
        run(any_engine, create)
        before = state(any_engine)
        with pytest.raises(simsql.text.errors.SchemaError, match=f"would drop objects simsql did not create: {named}"):
            simsql.detach_table(any_engine, "docs")
        assert state(any_engine) == before
        if "VIEW" in create:
            with any_engine.connect() as connection:
                assert connection.execute(text("SELECT count(*) FROM prints")).scalar() == 5
        run(any_engine, drop)
    simsql.detach_table(any_engine, "docs")

    simsql.attach_table(any_engine, "docs", ["body"], side_table=True)
    run(any_engine, "CREATE TABLE likes (doc_id INT PRIMARY KEY, FOREIGN KEY (doc_id) REFERENCES docs_simhash (id))")
    before = state(any_engine)
    constraint = "likes_ibfk_1" if is_mysql(any_engine) else "likes_doc_id_fkey"
    with pytest.raises(simsql.text.errors.SchemaError, match=f"constraint {constraint} on table likes"):
        simsql.detach_table(any_engine, "docs")
    assert state(any_engine) == before


def _write_behind_the_triggers(engine: Engine, sql: str) -> None:
    """Run ``sql`` with simsql's triggers out of the way (PostgreSQL: replica role; MySQL: the
    update trigger dropped)."""
    if is_mysql(engine):
        run(engine, "DROP TRIGGER simsql_docs_blocks_upd", sql)
    else:
        run(engine, "SET LOCAL session_replication_role = replica", sql)  # triggers off


def test_status_counts_rows_written_behind_the_triggers(any_engine: Engine) -> None:
    build_live_docs(any_engine)
    simsql.alembic.upgrade(any_engine)
    simsql.attach_table(any_engine, "docs", ["title", "body"])
    fingerprint_by_hand(any_engine)
    assert simsql.backfill(any_engine, "docs", workers=0).rows_fingerprinted == 0
    _write_behind_the_triggers(any_engine, "UPDATE docs SET body = 'edited behind simsql' WHERE id IN (2, 3)")
    assert _counts(any_engine)[1:] == (4, 0, 2)


# -- PostgreSQL: what the lifecycle used to get wrong there --------------------------------------


@pytest.mark.parametrize("column_type", ["bigint", "text"])
def test_a_users_own_simhash_column_is_never_adopted(engine: Engine, column_type: str) -> None:
    build_legacy(engine, rows=20)
    with engine.begin() as connection:
        connection.execute(text(f"ALTER TABLE articles ADD COLUMN simhash {column_type}"))
        connection.execute(text("UPDATE articles SET simhash = CAST(id * 7 AS " + column_type + ")"))
    simsql.alembic.upgrade(engine)
    before = snapshot(engine)
    with engine.begin() as connection, pytest.raises(SchemaError, match=r"column articles\.simhash .*another column prefix"):
        operations.add_simhash(connection, "articles", ["title", "body"])
    assert snapshot(engine) == before

    # Another prefix attaches beside it; detaching takes away only what simsql added.
    add_simhash(engine, "articles", prefix="sim")
    simsql.backfill(engine, "articles", workers=0)
    with engine.begin() as connection:
        connection.execute(text("UPDATE articles SET body = body || ' more' WHERE id = 3"))  # trigger fires
        operations.drop_simhash(connection, "articles")
    after = snapshot(engine)
    assert after["columns"] == before["columns"] and after["triggers"] == before["triggers"]
    with engine.connect() as connection:
        kept = connection.execute(text("SELECT count(*) FROM articles WHERE CAST(simhash AS text) = CAST(id * 7 AS text)")).scalar()
    assert kept == 20


def test_attaching_again_with_other_settings_is_refused_and_same_settings_change_nothing(engine: Engine) -> None:
    build_legacy(engine, rows=20)
    add_simhash(engine, "articles", ("body",))
    simsql.backfill(engine, "articles", workers=0)
    before = snapshot(engine)
    with engine.begin() as connection:
        operations.add_simhash(connection, "articles", ["body"])  # same settings: nothing to do
    assert snapshot(engine) == before
    for options in ({"source": ["title", "body"]}, {"source": ["body"], "side_table": True}):
        with engine.begin() as connection, pytest.raises(SchemaError, match="already attached.*detach"):
            operations.add_simhash(connection, "articles", **options)  # type: ignore[arg-type]
    assert snapshot(engine) == before
    with engine.connect() as connection:
        assert connection.execute(text("SELECT to_regclass('articles_simhash')")).scalar() is None


def test_a_registry_dropped_by_hand_is_reported_and_repaired(engine: Engine, schema: str) -> None:
    build_legacy(engine, rows=10)
    add_simhash(engine, "articles")
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE simsql_registry"))
    with engine.connect() as connection, pytest.raises(SchemaError, match="db upgrade"):
        simsql.store.registry.read(connection, "articles")
    simsql.alembic.upgrade(engine)  # repairs
    with engine.connect() as connection:
        assert connection.execute(text("SELECT to_regclass('simsql_registry')")).scalar() is not None
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE simsql_registry"))
    simsql.alembic.downgrade(engine)  # must not fail on the missing table
    assert simsql.alembic.current(engine) == ()


def test_long_multibyte_table_names_get_four_distinct_indexes(engine: Engine) -> None:
    name = "文" * 17
    with engine.begin() as connection:
        connection.execute(text(f'CREATE TABLE "{name}" (id int PRIMARY KEY, body text)'))
        connection.execute(text(f'INSERT INTO "{name}" VALUES (1, :b)'), {"b": OLD})
    add_simhash(engine, name, ("body",))
    with engine.connect() as connection:
        connection = connection.execution_options(isolation_level="AUTOCOMMIT")
        operations.create_simhash_indexes(connection, name, concurrently=True)
        indexes = connection.execute(
            text("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = :t AND indexname <> :pk"),
            {"t": name, "pk": f"{name}_pkey"},
        ).scalars().all()
    assert len(set(indexes)) == 4 and all(len(i.encode()) <= 63 for i in indexes)
    with engine.begin() as connection:
        operations.drop_simhash_indexes(connection, name)
        remaining = connection.execute(
            text("SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND tablename = :t"), {"t": name}
        ).scalar()
    assert remaining == 1  # the primary key


def test_orm_and_migrations_name_long_indexes_alike(engine: Engine) -> None:
    class LongBase(DeclarativeBase):
        pass

    class Long(simsql.SimHashMixin, LongBase):
        __tablename__ = "文" * 18
        __simhash_source__ = ("body",)
        id: Mapped[int] = mapped_column(primary_key=True)
        body: Mapped[str | None] = mapped_column(Text)

    LongBase.metadata.create_all(engine)
    with engine.connect() as connection:
        built = set(
            connection.execute(
                text("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = :t"),
                {"t": Long.__tablename__},
            ).scalars()
        )
    assert set(simsql.store.binding_for(Long).names.indexes) <= built


def test_partitioned_tables(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE events (id int, region text, body text, PRIMARY KEY (id, region)) PARTITION BY LIST (region)"))
        connection.execute(text("CREATE TABLE events_eu PARTITION OF events FOR VALUES IN ('eu')"))
        connection.execute(text("CREATE TABLE events_us PARTITION OF events FOR VALUES IN ('us')"))
        connection.execute(
            text("INSERT INTO events SELECT i, CASE WHEN i % 2 = 0 THEN 'eu' ELSE 'us' END, :b || i FROM generate_series(1, 40) i"),
            {"b": OLD},
        )
    simsql.alembic.upgrade(engine)
    simsql.attach_table(engine, "events", source=["body"])  # concurrent builds, per partition
    simsql.backfill(engine, "events", workers=0)
    with engine.connect() as connection:
        valid = connection.execute(
            text(
                "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE c.relnamespace = CAST(current_schema() AS regnamespace) AND i.indisvalid"
                " AND i.indrelid = CAST('events' AS regclass)"
            )
        ).scalar()
        model = simsql.reflect(connection, "events")
    assert valid == 4 + 1  # four block indexes and the primary key, all valid on the parent
    with Session(engine) as session:
        rows = session.execute(select(model).where(simsql.similar_to(model, f"{OLD}17", 0))).scalars().all()
    assert [(r.id, r.region) for r in rows] == [(17, "us")]
    simsql.detach_table(engine, "events")


# -- MySQL/MariaDB: what only they can get wrong -------------------------------------------------


def test_attach_builds_what_the_orm_builds(mysql_engine: Engine) -> None:
    """A table attached live and one declared with SimHashMixin get the same columns and indexes."""
    from .models import Base

    Base.metadata.create_all(mysql_engine, tables=[Base.metadata.tables["articles"]])
    run(mysql_engine, "CREATE TABLE plain (id INT AUTO_INCREMENT PRIMARY KEY, title VARCHAR(200), body TEXT, category VARCHAR(20) NOT NULL)")
    simsql.alembic.upgrade(mysql_engine)
    simsql.attach_table(mysql_engine, "plain", ["title", "body"])

    def simsql_lines(table: str) -> list[str]:
        with mysql_engine.connect() as connection:
            create = connection.execute(text(f"SHOW CREATE TABLE {table}")).one()[1]
        return sorted(line.strip().rstrip(",").replace(f"ix_{table}_", "ix_") for line in create.splitlines() if "simhash" in line)

    assert simsql_lines("plain") == simsql_lines("articles")
    assert len(simsql_lines("plain")) == 10  # 6 columns, 4 indexes


def test_conflicts_are_refused_and_change_nothing(mysql_engine: Engine) -> None:
    build_live_docs(mysql_engine)
    simsql.alembic.upgrade(mysql_engine)
    run(mysql_engine, "CREATE TABLE other (id INT PRIMARY KEY)")
    cases = [
        ("ALTER TABLE docs ADD COLUMN SimHash BIGINT", "ALTER TABLE docs DROP COLUMN SimHash", r"column docs\.simhash"),
        ("CREATE TRIGGER simsql_docs_blocks_ins BEFORE INSERT ON other FOR EACH ROW SET NEW.id = NEW.id",
         "DROP TRIGGER simsql_docs_blocks_ins", "trigger simsql_docs_blocks_ins on other"),
        ("CREATE INDEX ix_docs_simhash_b0 ON docs (title)", "DROP INDEX ix_docs_simhash_b0 ON docs", "index ix_docs_simhash_b0 on docs"),
    ]
    for create, drop, named in cases:
        run(mysql_engine, create)
        before = state(mysql_engine)
        with pytest.raises(simsql.text.errors.SchemaError, match=named + ".*another column prefix"):
            simsql.attach_table(mysql_engine, "docs", ["body"])
        assert state(mysql_engine) == before
        run(mysql_engine, drop)
    run(mysql_engine, "CREATE TABLE docs_simhash (id INT PRIMARY KEY)")
    before = state(mysql_engine)
    with pytest.raises(simsql.text.errors.SchemaError, match=r"table .*\.docs_simhash already exist"):
        simsql.attach_table(mysql_engine, "docs", ["body"], side_table=True)
    assert state(mysql_engine) == before

    # another prefix attaches beside a user's column, and detach takes only simsql's away
    run(mysql_engine, "DROP TABLE docs_simhash", "ALTER TABLE docs ADD COLUMN simhash BIGINT", "UPDATE docs SET simhash = id * 7")
    before = state(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", ["title", "body"], prefix="fp")
    fingerprint_by_hand(mysql_engine, prefix="fp")
    assert neighbours(mysql_engine, 1)[0][0] == 2
    simsql.detach_table(mysql_engine, "docs")
    assert state(mysql_engine) == before


def test_a_rerun_finishes_an_attachment_that_stopped_halfway(mysql_engine: Engine) -> None:
    """What an undo that was itself blocked leaves (recorded, columns, no triggers or indexes):
    attaching again adds only the rest; detach would remove it."""
    build_live_docs(mysql_engine)
    simsql.alembic.upgrade(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", ["title", "body"])
    complete = state(mysql_engine)
    run(
        mysql_engine,
        "DROP TRIGGER simsql_docs_blocks_upd",
        "ALTER TABLE docs DROP INDEX ix_docs_simhash_b2, DROP INDEX ix_docs_simhash_b3",
    )
    simsql.attach_table(mysql_engine, "docs", ["title", "body"])
    assert state(mysql_engine)["triggers"] == complete["triggers"]
    assert sorted(state(mysql_engine)["create"].splitlines()) == sorted(complete["create"].splitlines())


def test_a_table_the_server_cannot_alter_online_is_refused_and_left_as_it_was(mysql_engine: Engine) -> None:
    build_live_docs(mysql_engine, ", FULLTEXT KEY docs_body (body)")
    simsql.alembic.upgrade(mysql_engine)
    before = state(mysql_engine)
    with pytest.raises(simsql.text.errors.WouldLockTable) as refused:
        simsql.attach_table(mysql_engine, "docs", ["body"])
    message = str(refused.value)
    assert "add stored columns simhash, simhash_src to" in message
    reason = (  # the server's own reason, in its own words
        "Fulltext index creation requires a lock" if mysql_engine.dialect.is_mariadb
        else "InnoDB presently supports one FULLTEXT index creation at a time"
    )
    assert reason in message
    assert "Nothing was changed (its 1 earlier statement(s) were undone)" in message
    assert state(mysql_engine) == before
    # side-table mode leaves the table alone
    simsql.attach_table(mysql_engine, "docs", ["title", "body"], side_table=True)
    fingerprint_by_hand(mysql_engine, "docs_simhash")
    assert neighbours(mysql_engine, 1)[0][0] == 2


def test_a_table_that_cannot_change_instantly_is_changed_online(mysql_engine: Engine) -> None:
    build_live_docs(mysql_engine, options="ROW_FORMAT=COMPRESSED")
    simsql.alembic.upgrade(mysql_engine)
    before = state(mysql_engine)
    assert "ROW_FORMAT=COMPRESSED" in before["create"]
    simsql.attach_table(mysql_engine, "docs", ["title", "body"])
    fingerprint_by_hand(mysql_engine)
    assert neighbours(mysql_engine, 1)[0][0] == 2
    simsql.detach_table(mysql_engine, "docs")
    assert state(mysql_engine) == before


def test_a_table_out_of_instant_row_versions_is_changed_online(mysql_engine: Engine) -> None:
    """MySQL >= 8.0.29 counts instant ADD/DROP COLUMNs per table (64, 255 from 9.1) and then
    refuses ALGORITHM=INSTANT with ER_INNODB_MAX_ROW_VERSION: attach and detach rebuild online
    then, as for any table that cannot change instantly (a rebuild also resets the count)."""
    build_live_docs(mysql_engine)  # connects: what the server is, is known from here on
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
    before = state(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", ["title", "body"])
    fingerprint_by_hand(mysql_engine)
    assert neighbours(mysql_engine, 1)[0][0] == 2
    simsql.detach_table(mysql_engine, "docs")
    assert state(mysql_engine) == before


def test_servers_too_old_are_refused_with_the_version_found(mysql_engine: Engine) -> None:
    """The version rule on the lifecycle's paths: the real server, read as if it were MariaDB
    10.5 or MySQL 5.7 (the version SQLAlchemy read at connect is what every check looks at)."""
    from sqlalchemy import create_engine

    build_live_docs(mysql_engine)
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
            lambda: simsql.detach_table(mysql_engine, "docs"),
            lambda: simsql.status(mysql_engine),
        ):
            with pytest.raises(simsql.text.errors.UnsupportedDatabase, match=refused):
                attempt()
        with pytest.raises(simsql.text.errors.UnsupportedDatabase, match=refused):
            simsql.alembic.upgrade(mysql_engine)
    finally:
        mysql_engine.dialect.server_version_info = real
    assert state(mysql_engine)["tables"] == ["doc_titles", "docs", "notes"]
    with pytest.raises(simsql.text.errors.UnsupportedDatabase, match=r"'sqlite' database \(3\."):
        simsql.attach_table(create_engine("sqlite://"), "docs", ["body"])


def test_a_mysql_without_md5_is_refused_before_anything_is_created(mysql_engine: Engine, mysql_admin_engine: Engine) -> None:
    """MySQL 9.6 moved MD5() into component_classic_hashing: a trigger simsql created without it
    would fail every INSERT into the user's table. attach, backfill, status, create_all and
    Alembic's create-trigger refuse first and name the fix; detach still runs. The component is
    uninstalled for the test's duration (the tests' server is their own) and put back."""
    from sqlalchemy import create_engine

    from .models import Article, Base

    urn = mysql_backend.CLASSIC_HASHING
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
        build_live_docs(mysql_engine)
        run(mysql_engine, "CREATE TABLE memos (id INT PRIMARY KEY, body TEXT)", "INSERT INTO memos VALUES (1, 'a memo')")
        simsql.alembic.upgrade(mysql_engine)
        simsql.attach_table(mysql_engine, "memos", ["body"])  # attached while MD5() was there
        if installed:
            admin.execute(text(f"UNINSTALL COMPONENT '{urn}'"))
        try:
            fresh = create_engine(mysql_engine.url)  # sessions that have not seen MD5() yet
            before = state(fresh)
            refused = r"has no MD5\(\) \(MySQL 9\.6 moved it into a component\): an administrator can add it with INSTALL COMPONENT 'file://component_classic_hashing'"
            for attempt in (
                lambda: simsql.attach_table(fresh, "docs", ["title", "body"]),
                lambda: simsql.backfill(fresh, "memos"),
                lambda: simsql.status(fresh),
                lambda: Base.metadata.create_all(fresh, tables=[Article.__table__]),
                lambda: _in_migration(fresh, lambda op: op.add_simhash("docs", ["title", "body"])),
                lambda: _in_migration(fresh, lambda op: op.create_simhash_trigger("docs", ["title", "body"])),
            ):
                with pytest.raises(simsql.text.errors.UnsupportedDatabase, match=refused):
                    attempt()
            assert state(fresh) == before
            simsql.detach_table(fresh, "memos")  # taking simsql away needs no MD5()
            with fresh.connect() as connection:
                assert catalog.triggers_on(connection, connection.execute(text("SELECT DATABASE()")).scalar_one(), "memos") == ()
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


