"""Writers during a configuration switch (issue 21, items 2 and 3).

Item 2: an application still configured with the old Fingerprinter went on writing old
fingerprints after ``simsql refingerprint`` switched its table (its registry check was cached,
or ran before its write waited for the switch's lock). Those rows kept a digest that matched
their text, so ``simsql status`` read 0 stale and ``simsql backfill`` never looked at them.
Now every write through simsql's ORM hooks confirms the configuration in its own transaction,
after its first statement on the table: once the switch committed, an old writer is refused
with ConfigMismatch and nothing of its transaction is stored.

Item 3: the switch locked writers out (SHARE ROW EXCLUSIVE), then needed ACCESS EXCLUSIVE for
its DDL; an ORM writer that had read the table in its transaction (an ACCESS SHARE lock) and
then waited to write closed a cycle, and the server aborted one of them with a deadlock.

Also: a backfill started with the old configuration is a writer too; an ORM session in
autocommit mode has its refused row cleared to "missing"; a savepoint rolled back does not
leave a stale confirmation behind.

On MySQL/MariaDB a table changes configuration by detach and attach (refingerprint is not
built there); an old writer must be refused after that too. Writers that read then write
can still be chosen as the victim of a metadata-lock deadlock by the server while detach and
attach alter the table: an xfail here, not fixed.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine, String, Text, create_engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.alembic
from simsql import Fingerprinter
from simsql.errors import ConfigMismatch
from simsql.lifecycle.refingerprinting import refingerprint

from .tables import check_fingerprints, config_id, is_mysql, random_text

V1 = Fingerprinter()
V2 = Fingerprinter(shingle_size=2)
"""Differs from V1 on every text here (``Fingerprinter(version=1)`` agrees with today's default
on most of them, so a test moving between those two could not see an old fingerprint)."""
ROWS = 400
SOURCE = ("title", "body")


class OldBase(DeclarativeBase):
    pass


class OldNote(simsql.SimHashMixin, OldBase):
    """The application before the move: fingerprints on the table itself, V1."""

    __tablename__ = "notes"
    __simhash_source__ = SOURCE
    __simhash_fingerprinter__ = V1
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


class NewBase(DeclarativeBase):
    pass


class NewNote(simsql.SimHashMixin, NewBase):
    """The same table, as the application after the move sees it."""

    __tablename__ = "notes"
    __simhash_source__ = SOURCE
    __simhash_fingerprinter__ = V2
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


class OldSideBase(DeclarativeBase):
    pass


class OldPost(OldSideBase):
    """Side-table mode, V1."""

    __tablename__ = "posts"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


class NewSideBase(DeclarativeBase):
    pass


class NewPost(NewSideBase):
    __tablename__ = "posts"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


simsql.attach_model(OldPost, source=SOURCE, fingerprinter=V1)
simsql.attach_model(NewPost, source=SOURCE, fingerprinter=V2)
MODELS: dict[str, tuple[Any, Any, str]] = {"columns": (OldNote, NewNote, "notes"), "side_table": (OldPost, NewPost, "posts")}


def _holder_sql(table: str) -> str:
    if table == "posts":
        return "SELECT d.id, d.title, d.body, s.simhash, s.simhash_src FROM posts d LEFT JOIN posts_simhash s ON s.id = d.id"
    return "SELECT id, title, body, simhash, simhash_src FROM notes"


def _build(engine: Engine, mode: str) -> tuple[Any, Any, str]:
    """The table of ``mode`` with ROWS rows written by the old application (V1)."""
    old, new, table = MODELS[mode]
    simsql.alembic.upgrade(engine)
    old.metadata.create_all(engine)
    rng = random.Random(7)
    with Session(engine) as session:
        session.add_all([old(id=i, title=f"note {i}", body=random_text(rng)) for i in range(1, ROWS + 1)])
        session.commit()
    return old, new, table


def _switch(engine: Engine, table: str, side_table: bool) -> None:
    """Move ``table`` to V2 from another process's engine: online on PostgreSQL, by
    detach and attach where refingerprint is not built (MySQL/MariaDB)."""
    second = _second_engine(engine)
    try:
        if is_mysql(engine):
            simsql.detach_table(second, table)
            simsql.attach_table(second, table, list(SOURCE), fingerprinter=V2, side_table=side_table)
            simsql.backfill(second, table, workers=0)
        else:
            assert refingerprint(second, table, to=V2, workers=0).switched
    finally:
        second.dispose()


def _second_engine(engine: Engine) -> Engine:
    """An engine of its own on the test's database (as another process would have)."""
    if is_mysql(engine):
        return create_engine(engine.url)
    with engine.connect() as connection:
        schema = connection.execute(text("SELECT current_schema()")).scalar_one()
    return create_engine(engine.url, connect_args={"options": f"-csearch_path={schema},public"})


def _all_current(engine: Engine, table: str) -> None:
    """After a backfill: every row with text holds V2's fingerprint of its text, and
    status reads finished."""
    simsql.backfill(engine, table, workers=0)
    with_text, fingerprinted = check_fingerprints(engine, _holder_sql(table), V2)
    assert fingerprinted == with_text
    (report,) = [r for r in simsql.status(engine) if r.table == table]
    assert (report.config_id, report.rows_missing, report.rows_stale) == (V2.config_id, 0, 0)


# -- item 2: a writer that checked before the switch ---------------------------------------


@pytest.mark.parametrize("mode", ["columns", "side_table"])
def test_a_writer_that_checked_before_the_switch_is_refused_after_it(any_engine: Engine, mode: str) -> None:
    """Within ``registry.CHECK_TTL`` of its last check the old writer wrote on, unrefused."""
    old, new, table = _build(any_engine, mode)
    with Session(any_engine) as session:  # checked (and cached) with V1 just now
        session.get(old, 1).body = "an edit by the old application before the move"
        session.commit()
    _switch(any_engine, table, mode == "side_table")
    assert config_id(any_engine, table) == V2.config_id
    with Session(any_engine) as session, pytest.raises(ConfigMismatch, match=V2.config_id):
        session.add(old(id=ROWS + 1, title="late", body="a row written by the old application after the move"))
        session.commit()
    with Session(any_engine) as session, pytest.raises(ConfigMismatch, match=V2.config_id):
        session.get(old, 2).body = "an edit by the old application after the move"
        session.commit()
    with any_engine.connect() as connection:
        assert connection.execute(text(f"SELECT count(*) FROM {table} WHERE id = {ROWS + 1}")).scalar_one() == 0
    with Session(any_engine) as session:  # the new application writes as usual
        session.add(new(id=ROWS + 2, title="new", body="a row written by the new application after the move"))
        session.commit()
    _all_current(any_engine, table)


@pytest.mark.parametrize("mode", ["columns", "side_table"])
def test_an_old_writer_in_autocommit_mode_is_refused_and_its_row_reads_as_missing(any_engine: Engine, mode: str) -> None:
    """Each statement commits on its own there, so the write is in before the confirmation can
    refuse it: its fingerprint is cleared, status counts the row missing, backfill fills it."""
    old, _, table = _build(any_engine, mode)
    autocommit = any_engine.execution_options(isolation_level="AUTOCOMMIT")
    with Session(autocommit) as session:
        session.get(old, 1).body = "an edit by the old application before the move"
        session.commit()
    _switch(any_engine, table, mode == "side_table")
    with Session(autocommit) as session, pytest.raises(ConfigMismatch, match=V2.config_id):
        session.add(old(id=ROWS + 1, title="late", body="a row written by the old application after the move"))
        session.commit()
    rows = {row[0]: row for row in _rows(any_engine, table)}
    assert rows[ROWS + 1][3] is None  # kept (committed), without the old fingerprint
    (report,) = [r for r in simsql.status(any_engine) if r.table == table]
    assert (report.rows_missing, report.rows_stale) == (1, 0)
    _all_current(any_engine, table)


def _old_write_refused_then_all_current(writer: Engine, engine: Engine, old: Any, table: str) -> None:
    """After a move to V2: an old application's edit through ``writer`` is refused, and after a
    backfill every row holds V2's fingerprint of its text."""
    with Session(writer) as session, pytest.raises(ConfigMismatch, match=V2.config_id):
        session.get(old, 3).body = "an edit by the old application after the move"
        session.commit()
    _all_current(engine, table)


@pytest.mark.parametrize("mode", ["columns", "side_table"])
def test_a_check_that_found_no_entry_mid_move_does_not_let_old_writes_through_after_it(any_engine: Engine, mode: str) -> None:
    """A move by detach and attach leaves a moment with no registry entry. An old writer whose
    cached check has expired (``CHECK_TTL``; here: forget) and that writes in that moment fails
    (its columns are gone), and must not leave behind a pass that lets its writes through once
    the table is attached again with V2. (A candidate window for the V1 rows a loaded CI run once
    found after a move on MariaDB; this sequence does not reproduce that run, which stays open.)"""
    old, _, table = _build(any_engine, mode)
    with Session(any_engine) as session:
        session.get(old, 1).body = "an edit by the old application before the move"
        session.commit()
    second = _second_engine(any_engine)
    try:
        simsql.detach_table(second, table)
        simsql.store.registry.forget(any_engine)  # the old writer's check has expired
        with Session(any_engine) as session, pytest.raises(DBAPIError):  # its columns are gone
            session.get(old, 2).body = "an edit by the old application while the table is detached"
            session.commit()
        simsql.attach_table(second, table, list(SOURCE), fingerprinter=V2, side_table=mode == "side_table")
        simsql.backfill(second, table, workers=0)
    finally:
        second.dispose()
    _old_write_refused_then_all_current(any_engine, any_engine, old, table)


def test_a_snapshot_from_before_the_re_attach_does_not_vouch_for_old_writes(mysql_engine: Engine) -> None:
    """Found under load in CI (MariaDB, side table): 47 rows kept V1's fingerprints of their
    edited text after a move by detach and attach, with only 2 of 3 old writers ever refused.
    A writer whose snapshot (REPEATABLE READ) was taken while the table had no registry entry
    checked after its cached check was dropped (another writer's refusal, or ``CHECK_TTL``),
    read "not recorded" from that snapshot, and that pass then skipped the confirmation's
    locking read, for its own write and every old writer's on the engine for the next 10 s.
    (MySQL/MariaDB, where a move is a detach and an attach; side-table mode, since in columns
    mode the move alters the table, which the old transaction then cannot read. On PostgreSQL
    an attach's concurrent index build waits for such a snapshot to end.)"""
    any_engine = mysql_engine
    old, _, table = _build(any_engine, "side_table")
    writer = any_engine.execution_options(isolation_level="REPEATABLE READ")
    second = _second_engine(any_engine)
    try:
        simsql.detach_table(second, table)
        with Session(writer) as session:
            session.execute(text("SELECT count(*) FROM simsql_registry"))  # the snapshot: no entry for the table
            simsql.attach_table(second, table, list(SOURCE), fingerprinter=V2, side_table=True)
            simsql.backfill(second, table, workers=0)
            simsql.store.registry.forget(any_engine)  # another old writer was refused meanwhile
            row = session.get(old, 2)
            assert row is not None
            row.body = "an edit by the old application, in a transaction begun before the move"
            with pytest.raises((ConfigMismatch, DBAPIError)) as refused:
                session.commit()
            # MySQL refuses the old snapshot's write itself (the attach's triggers changed the
            # table's definition: error 1412), and so never showed the fault; MariaDB lets it
            # through to the confirmation, where it failed before the fix.
            assert V2.config_id in str(refused.value) or "1412" in str(refused.value), refused.value
    finally:
        second.dispose()
    _old_write_refused_then_all_current(writer, any_engine, old, table)


def _rows(engine: Engine, table: str) -> list[Any]:
    with engine.connect() as connection:
        return list(connection.execute(text(_holder_sql(table))).all())


def test_a_write_confirmed_in_a_savepoint_rolled_back_is_confirmed_again(engine: Engine) -> None:
    """The savepoint's rollback released the table lock its write took, so the switch could
    commit while the transaction stayed open: the next write must not trust that confirmation."""
    old, _, table = _build(engine, "columns")
    with Session(engine) as session:
        with session.begin_nested() as savepoint:
            session.add(old(id=ROWS + 1, title="kept back", body="a row the application changes its mind about"))
            session.flush()  # written and confirmed in the savepoint
            savepoint.rollback()
        _switch(engine, table, False)
        with pytest.raises(ConfigMismatch, match=V2.config_id):
            session.add(old(id=ROWS + 2, title="late", body="a row written by the old application after the move"))
            session.commit()
    with engine.connect() as connection:
        assert connection.execute(text(f"SELECT count(*) FROM {table} WHERE id > {ROWS}")).scalar_one() == 0


@pytest.mark.parametrize("mode", ["columns", "side_table"])
def test_a_backfill_with_the_old_configuration_stops_at_the_switch(any_engine: Engine, mode: str) -> None:
    """A backfill is a writer too: one started with V1 before the table moved wrote V1's
    fingerprints into it afterwards (rows loaded without any, behind its cursor's reach)."""
    old, _, table = _build(any_engine, mode)
    with any_engine.begin() as connection:  # loaded by raw SQL: no fingerprints yet
        connection.execute(text(f"INSERT INTO {table} (id, title, body) VALUES (:id, 'raw', :body)"),
                           [{"id": ROWS + i, "body": f"loaded in bulk, row {i} about vacuum and indexes"} for i in range(1, 301)])  # fmt: skip
    switched: list[bool] = []

    def midway(done: int, total: int) -> None:
        if switched:
            return
        switched.append(True)
        _switch(any_engine, table, mode == "side_table")
        with any_engine.begin() as connection:  # more rows, after the move, for the old backfill to reach
            connection.execute(text(f"INSERT INTO {table} (id, title, body) VALUES (:id, 'raw', :body)"),
                               [{"id": ROWS + 1000 + i, "body": f"loaded after the move, row {i}"} for i in range(1, 301)])  # fmt: skip

    with pytest.raises(ConfigMismatch, match=V2.config_id):
        simsql.backfill(any_engine, old, workers=0, batch_size=50, progress=midway)
    assert switched
    _all_current(any_engine, table)


# -- items 2 and 3: old writers running through the switch -----------------------------------


def _old_writer(engine: Engine, models: tuple[Any, Any], seed: int, stop: threading.Event, log: dict[str, Any]) -> None:
    """An ORM application that reads a row, then edits it or adds one, in one transaction:
    with V1 until it is refused, then with V2 (as a redeployed one would), and
    back when the table moves back. Records every error other than that refusal."""
    rng, model = random.Random(seed), models[0]
    while not stop.is_set():
        try:
            with Session(engine) as session:
                row = session.get(model, rng.randrange(1, ROWS + 1))  # ACCESS SHARE, then the write
                if rng.random() < 0.7 and row is not None:
                    row.body = random_text(rng)
                else:
                    session.add(model(id=ROWS + 1 + rng.randrange(100_000), title="added", body=random_text(rng)))
                session.commit()
            log["writes"] += 1
            log["after_switch"] += log["switched"]
        except ConfigMismatch:
            log["refused"] += 1
            model = models[1] if model is models[0] else models[0]
        except DBAPIError as error:
            if "duplicate" in str(error).lower():
                continue
            log["errors"].append(f"{type(error.orig).__name__}: {str(error.orig).strip().splitlines()[0]} [{str(error.statement)[:80]}]")


def _through_switch(engine: Engine, mode: str, switch: Callable[[], None], writers: int) -> dict[str, Any]:
    old, new, _ = MODELS[mode]
    stop = threading.Event()
    log: dict[str, Any] = {"writes": 0, "refused": 0, "after_switch": 0, "switched": 0, "errors": []}
    threads = [threading.Thread(target=_old_writer, args=(engine, (old, new), seed, stop, log)) for seed in range(writers)]
    for thread in threads:
        thread.start()
    try:
        switch()
        log["switched"] = 1
        deadline = time.monotonic() + 60
        while log["after_switch"] < 20 * writers and time.monotonic() < deadline:
            stop.wait(0.05)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    return log


@pytest.mark.parametrize("mode", ["columns", "side_table"])
def test_old_writers_through_a_switch_leave_no_old_fingerprint(any_engine: Engine, mode: str) -> None:
    """Before: hundreds of rows kept V1's fingerprints after the switch, which status and
    backfill never saw. Now old writers are refused once the table moved, and after the usual
    backfill every fingerprint is V2's of the row's text. (On MySQL/MariaDB the move is
    offline: writes fail while the columns are gone, but none may deadlock.)"""
    _, _, table = _build(any_engine, mode)
    log = _through_switch(any_engine, mode, lambda: _switch(any_engine, table, mode == "side_table"), writers=3)
    assert log["writes"] > 30 and log["after_switch"] > 0, log
    if not is_mysql(any_engine):  # there, see test_no_writer_sees_a_deadlock_during_an_offline_move
        assert log["errors"] == [], log["errors"]
    _all_current(any_engine, table)
    assert log["refused"] >= 1, log


@pytest.mark.parametrize("mode", ["columns", "side_table"])
def test_no_writer_sees_a_deadlock_during_refingerprints(engine: Engine, mode: str) -> None:
    """Writers that read a row before they write it, through several switches there and back."""
    _, _, table = _build(engine, mode)

    def switches() -> None:
        second = _second_engine(engine)
        try:
            for to in (V2, V1, V2):
                assert refingerprint(second, table, to=to, workers=0, batch_size=50).switched
        finally:
            second.dispose()

    log = _through_switch(engine, mode, switches, writers=6)
    assert log["writes"] > 30, log
    assert log["errors"] == [], log["errors"]


@pytest.mark.xfail(strict=True, reason="MySQL/MariaDB: DDL waiting for its metadata lock is chosen over a writer that read "
                   "the table and then writes (a metadata-lock deadlock, the writer is its victim); not fixed yet")
def test_no_writer_sees_a_deadlock_during_an_offline_move(mysql_engine: Engine) -> None:
    """Detach and attach (how a table changes configuration there) with ORM writers that read
    a row before they write it. Writes fail while the columns are gone; none may deadlock."""
    _, _, table = _build(mysql_engine, "columns")
    log = _through_switch(mysql_engine, "columns", lambda: _switch(mysql_engine, table, False), writers=3)
    assert log["writes"] > 30, log
    assert not [e for e in log["errors"] if "deadlock" in e.lower()], log["errors"]
