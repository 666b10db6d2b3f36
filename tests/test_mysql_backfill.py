"""Backfill on a real MySQL/MariaDB: every row gets the fingerprint Python computes, nothing is
lost when the run is killed, keys of every kind resume exactly, and a concurrent writer never
leaves a stale fingerprint behind.

Tables come from ``metadata.create_all()`` (the mixin's columns and triggers, or an
``attach()`` side table); rows are inserted by raw SQL with no fingerprint, as a bulk loader
would leave them. Each test has a database of its own (fixture ``mysql_engine``).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import Engine, String, Text, text
from sqlalchemy.dialects.mysql import BIGINT, DATETIME, DECIMAL, VARBINARY
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

import simsql
from simsql import registry
from simsql.errors import EmptyDocument
from simsql.schema import BATCH_TABLE
from simsql.schema import metadata as simsql_metadata


class Base(DeclarativeBase):
    pass


class Doc(simsql.SimHashMixin, Base):
    """Columns mode."""

    __tablename__ = "docs"
    __simhash_source__ = ("title", "body")
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


class SideDoc(Base):
    """Side-table mode, same columns."""

    __tablename__ = "side_docs"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


class Part(Base):
    """A composite key (text under a case-insensitive collation, then a number), side table."""

    __tablename__ = "parts"
    shelf: Mapped[str] = mapped_column(String(10), primary_key=True)
    slot: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    body: Mapped[str | None] = mapped_column(Text)


class Blob(simsql.SimHashMixin, Base):
    """A binary key."""

    __tablename__ = "blobs"
    __simhash_source__ = ("body",)
    id: Mapped[bytes] = mapped_column(VARBINARY(8), primary_key=True)
    body: Mapped[str | None] = mapped_column(Text)


class Huge(simsql.SimHashMixin, Base):
    """Keys past 2**53: bound as text they would compare as doubles and collapse."""

    __tablename__ = "huge"
    __simhash_source__ = ("body",)
    id: Mapped[int] = mapped_column(BIGINT(unsigned=True), primary_key=True, autoincrement=False)
    body: Mapped[str | None] = mapped_column(Text)


class Stamp(simsql.SimHashMixin, Base):
    """A key of microsecond timestamps (the cursor keeps them as text)."""

    __tablename__ = "stamps"
    __simhash_source__ = ("body",)
    id: Mapped[datetime] = mapped_column(DATETIME(fsp=6), primary_key=True)
    body: Mapped[str | None] = mapped_column(Text)


class Amount(simsql.SimHashMixin, Base):
    """A decimal key finer than a double can tell apart."""

    __tablename__ = "amounts"
    __simhash_source__ = ("body",)
    id: Mapped[Decimal] = mapped_column(DECIMAL(30, 10), primary_key=True)
    body: Mapped[str | None] = mapped_column(Text)


simsql.attach(SideDoc, source=("title", "body"))
simsql.attach(Part, source=("body",))
MODES = {"columns": Doc, "side_table": SideDoc}
WORDS = [
    "index", "query", "planner", "vacuum", "replication", "backup", "schema", "table", "column", "tuple", "page",
    "buffer", "transaction", "lock", "snapshot", "isolation", "commit", "rollback", "cursor", "join", "aggregate",
    "window", "partition", "trigger", "function", "sequence",
]


def _create(engine: Engine, *models: type) -> None:
    """simsql's registry and progress tables, then the models' tables (with their triggers)."""
    simsql_metadata.create_all(engine)
    tables = []
    for model in models:
        tables.append(model.__table__)  # type: ignore[attr-defined]
        binding = simsql.binding_for(model)
        if binding.mode == "side_table":
            tables.append(binding.table)
    Base.metadata.create_all(engine, tables=tables)


def _insert(engine: Engine, model: type, rows: list[dict[str, Any]]) -> None:
    """Rows written by raw SQL: no fingerprint (nothing in this path computes one)."""
    table: Any = model.__table__  # type: ignore[attr-defined]
    columns = list(rows[0])
    sql = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join(':' + c for c in columns)})"
    with engine.begin() as connection:
        for start in range(0, len(rows), 2000):
            connection.execute(text(sql), rows[start : start + 2000])


def _expected(model: type, *parts: str | None) -> int | None:
    """What Python computes for a row's text (None: no text, or no features)."""
    present = [p for p in parts if p is not None]
    if not present:
        return None
    try:
        return simsql.binding_for(model).fingerprinter.fingerprint("\n".join(present))
    except EmptyDocument:
        return None


def _stored(engine: Engine, model: type) -> list[tuple[Any, ...]]:
    """(key..., source values..., stored fingerprint, stored digest) of every row of ``model``."""
    binding = simsql.binding_for(model)
    table: Any = model.__table__  # type: ignore[attr-defined]
    keys = [c.name for c in table.primary_key.columns]
    columns = ", ".join(f"b.{c}" for c in [*keys, *binding.source_columns])
    if binding.mode == "columns":
        sql = f"SELECT {columns}, b.simhash, b.simhash_src FROM {table.name} b"
    else:
        on = " AND ".join(f"s.{k} = b.{k}" for k in keys)
        sql = f"SELECT {columns}, s.simhash, s.simhash_src FROM {table.name} b LEFT JOIN {binding.table.name} s ON {on}"
    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(text(sql))]


def _check_all(engine: Engine, model: type, *, complete: bool = True) -> tuple[int, int]:
    """No stored fingerprint differs from Python's for the row's current text; with
    ``complete``, every row with features has one. Returns (rows with features, stored)."""
    source = len(simsql.binding_for(model).source_columns)
    featured = stored = 0
    for row in _stored(engine, model):
        values, fingerprint = row[-2 - source : -2], row[-2]
        expected = _expected(model, *values)
        featured += expected is not None
        if fingerprint is not None:
            stored += 1
            assert fingerprint == expected, f"row {row[: -2 - source]} keeps a fingerprint of text it no longer holds"
        elif complete:
            assert expected is None, f"row {row[: -2 - source]} has text but no fingerprint"
    return featured, stored


def _stop_after(batches: int) -> Callable[[int, int], None]:
    """A progress callback that interrupts the run (as Ctrl-C would) after ``batches`` batches."""
    calls: list[int] = []

    def progress(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == batches:
            raise KeyboardInterrupt

    return progress


def _progress(engine: Engine, table: str) -> tuple[int, list[Any] | None, str] | None:
    with engine.connect() as connection:
        row = connection.execute(
            text("SELECT rows_done, last_key, phase FROM simsql_backfill WHERE table_name = :t"), {"t": table}
        ).first()
    if row is None:
        return None
    return row.rows_done, None if row.last_key is None else json.loads(row.last_key), row.phase


def _no_session_keeps_the_batch_table(engine: Engine) -> None:
    """Every pooled session of ``engine``: simsql's temporary batch table is gone."""
    connections = [engine.connect() for _ in range(max(engine.pool.checkedin(), 1))]  # type: ignore[attr-defined]
    try:
        for connection in connections:
            with pytest.raises(DBAPIError, match="1146"):  # ER_NO_SUCH_TABLE
                connection.execute(text(f"SELECT COUNT(*) FROM {BATCH_TABLE}"))
            connection.rollback()
    finally:
        for connection in connections:
            connection.close()


def _texts(n: int, seed: int = 3) -> list[dict[str, Any]]:
    """Rows with every kind of text: plain, non-ASCII, title or body missing, both missing,
    empty, and text without any feature."""
    rng = random.Random(seed)
    odd = {0: (None, None), 1: ("", None), 2: (None, ""), 3: ("!!! ...", None), 4: ("Ünïcödé 中文 ok", None), 5: ("title only", None)}
    rows = []
    for i in range(1, n + 1):
        title, body = odd.get(i % 23, (f"title {i}", " ".join(rng.choice(WORDS) if rng.random() < 0.5 else f"w{rng.randrange(10**5)}" for _ in range(30))))
        rows.append({"id": i, "title": title, "body": body})
    return rows


# -- every row, both modes ---------------------------------------------------------------------


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("mode", list(MODES))
def test_every_row_gets_the_fingerprint_python_computes(mysql_engine: Engine, mode: str, workers: int) -> None:
    model = MODES[mode]
    _create(mysql_engine, model)
    rows = _texts(300)
    _insert(mysql_engine, model, rows)
    empty = sum(1 for r in rows if _expected(model, r["title"], r["body"]) is None)
    assert 0 < empty < 300

    result = simsql.backfill(mysql_engine, model, workers=workers, batch_size=50)
    assert (result.rows_read, result.rows_fingerprinted, result.rows_empty) == (300, 300 - empty, empty)
    assert result.rows_skipped_changed == 0 and not result.resumed
    assert _check_all(mysql_engine, model) == (300 - empty, 300 - empty)
    if mode == "side_table":
        # Text without features gets a side row (NULL fingerprint, the digest of its text), so it
        # is not read again; a row without any text has nothing to record.
        with mysql_engine.connect() as connection:
            recorded = connection.execute(
                text("SELECT COUNT(*) FROM side_docs_simhash WHERE simhash IS NULL AND simhash_src IS NOT NULL")
            ).scalar_one()
            wrong_digest = connection.execute(
                text("SELECT COUNT(*) FROM side_docs_simhash s JOIN side_docs d ON d.id = s.id "
                     "WHERE s.simhash_src <> MD5(CONCAT_WS(CHAR(10), d.title, d.body))")
            ).scalar_one()
        no_text = sum(1 for r in rows if r["title"] is None and r["body"] is None)
        assert recorded == empty - no_text > 0 and wrong_digest == 0
    _no_session_keeps_the_batch_table(mysql_engine)

    again = simsql.backfill(mysql_engine, model, workers=workers, batch_size=50)
    no_text = sum(1 for r in rows if r["title"] is None and r["body"] is None)
    assert again.rows_fingerprinted == 0
    assert again.rows_read == (empty if mode == "columns" else no_text)
    with mysql_engine.connect() as connection:
        assert connection.execute(text("SELECT phase FROM simsql_backfill")).scalar_one() == "done"


def test_batches_are_bounded_by_bytes(mysql_engine: Engine) -> None:
    _create(mysql_engine, Doc)
    _insert(mysql_engine, Doc, [{"id": i, "title": None, "body": f"word{i} " * 60} for i in range(1, 11)])
    result = simsql.backfill(mysql_engine, Doc, workers=0, batch_size=100, max_batch_bytes=1000)
    assert result.rows_fingerprinted == 10
    assert result.batches >= 5  # about 420 bytes a row: at most two rows a batch
    _check_all(mysql_engine, Doc)


# -- keys of every kind resume exactly ---------------------------------------------------------


def _interrupted_then_resumed(engine: Engine, model: type, rows: list[dict[str, Any]], batch: int, order: list[tuple[Any, ...]]) -> simsql.BackfillResult:
    """Stop after two batches, then resume; the resumed run's first batch must be the next
    ``batch`` keys in the server's key ``order`` (a cursor read back wrong would start
    elsewhere, and the catch-up pass would hide it in the totals)."""
    _create(engine, model)
    _insert(engine, model, rows)
    with pytest.raises(KeyboardInterrupt):
        simsql.backfill(engine, model, workers=0, batch_size=batch, progress=_stop_after(2))
    _check_all(engine, model, complete=False)
    n = len(order[0])
    first_batch: list[set[tuple[Any, ...]]] = []

    def progress(done: int, total: int) -> None:
        if not first_batch:
            first_batch.append({row[:n] for row in _stored(engine, model) if row[-2] is not None})

    rest = simsql.backfill(engine, model, workers=0, batch_size=batch, progress=progress)
    assert rest.resumed
    assert first_batch == [set(order[: 3 * batch])]
    _check_all(engine, model)
    return rest


def test_composite_keys_resume_where_they_stopped(mysql_engine: Engine) -> None:
    shelves = ["a", "B", "c", "D", "e", "F"]  # mixed case under a case-insensitive collation
    keys = [(shelves[i % 6], i) for i in range(60)]
    rows = [{"shelf": shelf, "slot": slot, "body": f"part {slot} " + " ".join(WORDS[slot % 7 :])} for shelf, slot in keys]
    order: list[tuple[Any, ...]] = sorted(keys, key=lambda k: (k[0].lower(), k[1]))
    rest = _interrupted_then_resumed(mysql_engine, Part, rows, 10, order)
    assert (rest.rows_read, rest.rows_fingerprinted) == (40, 40)


def test_binary_keys_resume_where_they_stopped(mysql_engine: Engine) -> None:
    keys = {b"\x00", b"\x00\x00", b"\x7f", b"\x80", b"\xff", b"\xff\x00", b"\\x41", b"A", b"a", b" "}
    rng = random.Random(9)
    while len(keys) < 100:
        keys.add(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9))))
    order = sorted(keys)  # bytewise, like the server
    rows = [{"id": key, "body": f"blob {key.hex()} {WORDS[i % len(WORDS)]}"} for i, key in enumerate(order)]
    rest = _interrupted_then_resumed(mysql_engine, Blob, rows, 10, [(k,) for k in order])
    assert (rest.rows_read, rest.rows_fingerprinted) == (80, 80)
    with mysql_engine.connect() as connection:
        assert connection.execute(text("SELECT phase FROM simsql_backfill WHERE table_name = 'blobs'")).scalar_one() == "done"


def test_unsigned_keys_past_2_to_the_53_resume_where_they_stopped(mysql_engine: Engine) -> None:
    rows = [{"id": 2**64 - 1 - i, "body": f"huge {i} {WORDS[i % len(WORDS)]}"} for i in range(40)]
    order = sorted((r["id"],) for r in rows)
    rest = _interrupted_then_resumed(mysql_engine, Huge, rows, 10, order)
    assert (rest.rows_read, rest.rows_fingerprinted) == (20, 20)


@pytest.mark.parametrize("model", [Stamp, Amount], ids=["datetime", "decimal"])
def test_temporal_and_decimal_keys_resume_where_they_stopped(mysql_engine: Engine, model: type) -> None:
    if model is Stamp:
        start = datetime(2024, 2, 29, 23, 59, 59, 999_980)
        keys: list[Any] = [start + timedelta(microseconds=i) for i in range(40)]
    else:
        keys = [Decimal("1234567890123456.0000000001") + Decimal("0.0000000001") * i for i in range(40)]
    rows = [{"id": key, "body": f"keyed {i} {WORDS[i % len(WORDS)]}"} for i, key in enumerate(keys)]
    rest = _interrupted_then_resumed(mysql_engine, model, rows, 10, [(k,) for k in sorted(keys)])
    assert (rest.rows_read, rest.rows_fingerprinted) == (20, 20)


# -- concurrent writers win ----------------------------------------------------------------------


@pytest.mark.parametrize("isolation", ["REPEATABLE READ", "READ COMMITTED"])
@pytest.mark.parametrize("mode", list(MODES))
def test_a_writer_racing_a_batch_keeps_no_stale_fingerprint(mysql_engine: Engine, mode: str, isolation: str) -> None:
    """A writer changes a row after backfill read it and commits after backfill tried to write it.
    Under READ COMMITTED an ``INSERT ... SELECT`` reads a snapshot unless it asks for locks:
    the side-table write must lock the user's rows itself."""
    model = MODES[mode]
    mysql_engine = mysql_engine.execution_options(isolation_level=isolation)
    table = model.__tablename__  # type: ignore[attr-defined]
    _create(mysql_engine, model)
    _insert(mysql_engine, model, [{"id": i, "title": f"title {i}", "body": f"old words {i} and more"} for i in range(1, 41)])
    new = "entirely different words written by another session"
    writer = mysql_engine.connect()
    writer.execute(text(f"UPDATE {table} SET body = :b WHERE id = 7"), {"b": new})  # not committed yet
    outcome: dict[str, Any] = {}

    def run() -> None:
        outcome["result"] = simsql.backfill(mysql_engine, model, workers=0)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(1.5)  # backfill has read the old text by now, and waits for the writer's row lock
    writer.commit()
    writer.close()
    thread.join(30)
    assert not thread.is_alive() and "result" in outcome
    stored = {row[0]: row[-2] for row in _stored(mysql_engine, model)}
    assert stored[7] in (None, _expected(model, "title 7", new))
    _check_all(mysql_engine, model, complete=False)
    simsql.backfill(mysql_engine, model, workers=0)
    assert {row[0]: row[-2] for row in _stored(mysql_engine, model)}[7] == _expected(model, "title 7", new)
    _check_all(mysql_engine, model)


def _writer(engine: Engine, table: str, rows: int, seed: int, stop: threading.Event, counts: dict[str, int]) -> None:
    """Updates, inserts and deletes in small transactions, some touching several rows."""
    rng = random.Random(seed)
    with engine.connect() as connection:
        while not stop.is_set():
            kind = rng.random()
            body = None if rng.random() < 0.02 else " ".join(rng.choice(WORDS) if rng.random() < 0.4 else f"w{rng.randrange(10**5)}" for _ in range(40))
            if kind < 0.8:
                for key in sorted(rng.sample(range(1, rows + 1), rng.choice((1, 1, 3)))):
                    connection.execute(text(f"UPDATE {table} SET body = :b WHERE id = :id"), {"b": body, "id": key})
            elif kind < 0.9:
                connection.execute(
                    text(f"INSERT INTO {table} (id, title, body) VALUES (:id, 'new', :b) ON DUPLICATE KEY UPDATE id = id"),
                    {"id": rows + 1 + rng.randrange(10_000), "b": body},
                )
            else:
                connection.execute(text(f"DELETE FROM {table} WHERE id = :id"), {"id": rng.randrange(1, rows + 1)})
            connection.commit()
            counts["writes"] += 1


@pytest.mark.parametrize("mode", list(MODES))
def test_concurrent_writers_never_leave_a_stale_fingerprint(mysql_engine: Engine, mode: str) -> None:
    model = MODES[mode]
    table = model.__tablename__  # type: ignore[attr-defined]
    rows = 3000
    _create(mysql_engine, model)
    _insert(mysql_engine, model, _texts(rows, seed=5))
    stop = threading.Event()
    counts = {"writes": 0}
    writers = [threading.Thread(target=_writer, args=(mysql_engine, table, rows, seed, stop, counts)) for seed in range(3)]
    for thread in writers:
        thread.start()
    try:
        result = simsql.backfill(mysql_engine, model, batch_size=100, workers=2)
        _check_all(mysql_engine, model, complete=False)  # while the writers still run
    finally:
        stop.set()
        for thread in writers:
            thread.join(30)
    assert counts["writes"] > 50, "the writers barely ran; the test proved nothing"
    assert result.rows_fingerprinted > 0
    _check_all(mysql_engine, model, complete=False)
    simsql.backfill(mysql_engine, model, workers=0)  # what the writers left without one
    featured, stored = _check_all(mysql_engine, model)
    assert featured == stored > 0


# -- bounded: a held lock ends the run with a message, nothing half-written ---------------------


def test_a_held_row_lock_gives_up_naming_the_holder_and_keeps_earlier_batches(mysql_engine: Engine) -> None:
    _create(mysql_engine, Doc)
    _insert(mysql_engine, Doc, [{"id": i, "title": f"title {i}", "body": f"some words {i}"} for i in range(1, 31)])
    holder = mysql_engine.connect()
    holder.execute(text("SELECT id FROM docs WHERE id = 25 FOR UPDATE"))  # an open transaction holds row 25
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            simsql.backfill(mysql_engine, Doc, workers=0, batch_size=10, lock_timeout="1s")
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome["error"] = error

    try:
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(30)
        assert not thread.is_alive(), "backfill still waiting after 30 s despite lock_timeout=1s"
    finally:
        holder.rollback()
        holder.close()
    error = outcome.get("error")
    assert isinstance(error, simsql.LockTimeout), error
    message = str(error)
    assert "gave up after waiting 1s for a lock" in message and "idle in transaction" in message
    assert "run the same backfill again to resume" in message
    stored = {row[0]: row[-2] for row in _stored(mysql_engine, Doc)}
    assert all(stored[i] is not None for i in range(1, 21)) and all(stored[i] is None for i in range(21, 31)), sorted(k for k, v in stored.items() if v is None)
    rest = simsql.backfill(mysql_engine, Doc, workers=0, batch_size=10)
    assert rest.resumed and rest.rows_fingerprinted == 10
    _check_all(mysql_engine, Doc)


# -- the command line, on a mysql:// URL ----------------------------------------------------------


def _cli_url(engine: Engine) -> str:
    """The test's database as a user writes it: plain ``mysql://`` (simsql picks PyMySQL)."""
    return make_url(engine.url).set(drivername="mysql").render_as_string(hide_password=False)


def _cli(url: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "simsql.cli", "--url", url, "backfill", "--table", "docs", *args]


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("SIMSQL_DATABASE_URL", "DATABASE_URL")}


def _register(engine: Engine, model: type) -> None:
    """The registry entry a table gets from its first ORM write (what ``--table`` reads)."""
    binding = simsql.binding_for(model)
    with engine.begin() as connection:
        registry.claim(connection, binding.names.table, None, binding.fingerprinter, binding.source_columns, binding.names)


def test_cli_backfills_a_mixin_table_from_a_mysql_url(mysql_engine: Engine) -> None:
    _create(mysql_engine, Doc)
    rows = _texts(200)
    _insert(mysql_engine, Doc, rows)
    _register(mysql_engine, Doc)
    done = subprocess.run(
        _cli(_cli_url(mysql_engine), "--workers", "0"), stdin=subprocess.DEVNULL, capture_output=True, text=True,
        env=_environment(), timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    featured = sum(1 for r in rows if _expected(Doc, r["title"], r["body"]) is not None)
    assert f"fingerprinted {featured} rows, {200 - featured} without words" in done.stdout
    assert _check_all(mysql_engine, Doc) == (featured, featured)


def test_cli_on_a_table_the_registry_does_not_know_says_what_to_do(mysql_engine: Engine) -> None:
    """A mixin table made by create_all, no registry: the command line cannot know its text
    columns; it says so and names the call that can (the model knows them)."""
    Base.metadata.create_all(mysql_engine, tables=[Doc.__table__])  # type: ignore[list-item]
    _insert(mysql_engine, Doc, _texts(5))
    done = subprocess.run(
        _cli(_cli_url(mysql_engine)), stdin=subprocess.DEVNULL, capture_output=True, text=True,
        env=_environment(), timeout=120, check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "not attached" in done.stderr and "simsql.backfill(engine, Model)" in done.stderr
    assert "Traceback" not in done.stderr


KILL_ROWS = 30_000


def test_a_backfill_killed_mid_run_resumes_where_it_stopped(mysql_engine: Engine) -> None:
    """SIGKILL while batches commit: exactly the rows up to the saved cursor have their
    fingerprints (the batch in flight left nothing), and a rerun reads only the rest."""
    _create(mysql_engine, Doc)
    rows = _texts(KILL_ROWS, seed=11)
    _insert(mysql_engine, Doc, rows)
    _register(mysql_engine, Doc)
    url = _cli_url(mysql_engine)
    killed = subprocess.Popen(
        _cli(url, "--batch-size", "500", "--workers", "0", "--no-progress"),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_environment(),
    )
    try:
        deadline = time.monotonic() + 60
        while (state := _progress(mysql_engine, "docs")) is None or state[0] < 3000:
            assert killed.poll() is None, f"backfill ended before it could be killed: {killed.communicate()}"
            assert time.monotonic() < deadline, "backfill made no progress"
            time.sleep(0.01)
        os.kill(killed.pid, signal.SIGKILL)
    finally:
        if killed.poll() is None:
            killed.kill()
        killed.communicate(timeout=30)
    assert killed.returncode == -signal.SIGKILL

    rows_done, last_key, phase = _progress(mysql_engine, "docs")  # type: ignore[misc]
    assert phase == "scan" and last_key is not None and rows_done == last_key[0] < KILL_ROWS
    last = last_key[0]
    stored = {row[0]: row[-2] for row in _stored(mysql_engine, Doc)}
    expected = {r["id"]: _expected(Doc, r["title"], r["body"]) for r in rows}
    assert all(stored[k] == expected[k] for k in expected if k <= last)  # every committed batch kept
    assert all(stored[k] is None for k in expected if k > last)  # nothing of the batch in flight
    empty_before = sum(1 for k in expected if k <= last and expected[k] is None)

    rerun = subprocess.run(
        _cli(url, "--batch-size", "2000", "--workers", "0", "--format", "json"),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, env=_environment(), timeout=300, check=False,
    )
    assert rerun.returncode == 0, rerun.stderr
    summary = json.loads(rerun.stdout)
    assert summary["resumed"] is True
    # Finished batches were not read again: only the rest, plus the featureless rows rechecked.
    assert summary["rows_read"] == KILL_ROWS - last + empty_before
    assert summary["rows_fingerprinted"] == sum(1 for k in expected if k > last and expected[k] is not None)
    assert _progress(mysql_engine, "docs")[2] == "done"  # type: ignore[index]
    _check_all(mysql_engine, Doc)


def test_the_keyset_read_after_a_composite_cursor_is_a_range_on_the_key(mysql_engine: Engine) -> None:
    """MariaDB scans a key from its start for ``(a, b) > (x, y)``, which makes each batch
    slower than the one before; the read it gets is a range on the primary key."""
    from simsql.lifecycle.backfill import _resolve
    from simsql.lifecycle.backfill_sql import batch_sql

    from .test_mysql_queries import explain

    _create(mysql_engine, Part)
    _insert(mysql_engine, Part, [{"shelf": f"s{i % 20}", "slot": i, "body": f"part {i}"} for i in range(4000)])
    with mysql_engine.connect() as connection:
        connection.execute(text("ANALYZE TABLE parts"))
        sql = batch_sql(connection.dialect, _resolve(connection, Part, None, None))
        statement = sql.rows[True].bindparams(limit=100, **sql.cursor_params(["s7", 1907]))
        compiled = str(statement.compile(connection, compile_kwargs={"literal_binds": True}))
        plan = {row.table: row for row in connection.execute(text(explain(connection) + compiled).execution_options(no_parameters=True))}
    assert (plan["b"].type, plan["b"].key) == ("range", "PRIMARY"), plan
