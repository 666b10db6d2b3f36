"""Backfill on every server: every row gets the fingerprint Python computes, batches are bounded
by bytes, keys of every kind resume exactly where a run stopped, and the command line fills a
table from a plain URL.

Tables come from ``metadata.create_all()`` (tests/models.py: the mixin's columns and triggers,
or an ``attach()`` side table) or are attached live; rows are inserted by raw SQL with no
fingerprint, as a bulk loader would leave them. Writers racing a backfill, kills and restarts:
tests/test_faults.py; a backfill behind a held lock: tests/test_bounds.py.
"""

from __future__ import annotations

import random
import subprocess
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

import simsql
import simsql.alembic
import simsql.store
import simsql.text.fingerprint
from simsql.schema.names import BATCH_TABLE
from simsql.store import registry

from .command_line import command, environment
from .models import KEYED_MODES, Amount, Blob, Doc, Huge, KeyedBase, Part, Stamp
from .tables import (
    WORDS,
    add_simhash,
    check_fingerprints,
    check_model,
    create_models,
    expected,
    explain,
    fingerprints_by,
    insert_rows,
    is_mysql,
    stop_after,
    stored,
    texts,
)


def _no_session_keeps_the_batch_table(engine: Engine) -> None:
    """Every pooled session of ``engine``: simsql's temporary batch table (MySQL's) is gone."""
    connections = [engine.connect() for _ in range(max(engine.pool.checkedin(), 1))]  # type: ignore[attr-defined]
    try:
        for connection in connections:
            with pytest.raises(DBAPIError, match="1146"):  # ER_NO_SUCH_TABLE
                connection.execute(text(f"SELECT COUNT(*) FROM {BATCH_TABLE}"))
            connection.rollback()
    finally:
        for connection in connections:
            connection.close()


def _wrong_digests(engine: Engine) -> int:
    """Side rows of side_docs whose digest is not the server's md5 of the row's text (the
    expression its triggers compare with)."""
    digest = (
        "MD5(CONCAT_WS(CHAR(10), d.title, d.body))" if is_mysql(engine)
        else "CAST(md5(convert_to(concat_ws(chr(10), d.title, d.body), 'UTF8')) AS uuid)"
    )
    with engine.connect() as connection:
        return int(connection.execute(
            text(f"SELECT COUNT(*) FROM side_docs_simhash s JOIN side_docs d ON d.id = s.id WHERE s.simhash_src <> {digest}")
        ).scalar_one())


# -- every row, both modes ---------------------------------------------------------------------


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("mode", list(KEYED_MODES))
def test_every_row_gets_the_fingerprint_python_computes(any_engine: Engine, mode: str, workers: int) -> None:
    model = KEYED_MODES[mode]
    create_models(any_engine, model)
    rows = texts(300)
    insert_rows(any_engine, model, rows)
    empty = sum(1 for r in rows if expected(model, r["title"], r["body"]) is None)
    no_text = sum(1 for r in rows if r["title"] is None and r["body"] is None)
    assert 0 < empty < 300

    result = simsql.backfill(any_engine, model, workers=workers, batch_size=50)
    assert (result.rows_read, result.rows_fingerprinted, result.rows_empty) == (300, 300 - empty, empty)
    assert result.rows_skipped_changed == 0 and not result.resumed
    assert check_model(any_engine, model) == (300 - empty, 300 - empty)
    if mode == "side_table":
        # Text without features gets a side row (NULL fingerprint, the digest of its text), so it
        # is not read again; a row without any text has nothing to record.
        with any_engine.connect() as connection:
            recorded = connection.execute(
                text("SELECT COUNT(*) FROM side_docs_simhash WHERE simhash IS NULL AND simhash_src IS NOT NULL")
            ).scalar_one()
        assert recorded == empty - no_text > 0 and _wrong_digests(any_engine) == 0
    if is_mysql(any_engine):
        _no_session_keeps_the_batch_table(any_engine)

    again = simsql.backfill(any_engine, model, workers=workers, batch_size=50)
    assert again.rows_fingerprinted == 0
    assert again.rows_read == (empty if mode == "columns" else no_text)
    with any_engine.connect() as connection:
        assert connection.execute(text("SELECT phase FROM simsql_backfill")).scalar_one() == "done"


@pytest.mark.parametrize("how", ["attached", "mapped"])
def test_batches_are_bounded_by_bytes(any_engine: Engine, how: str) -> None:
    """About 420 bytes a row and 1,000 bytes a batch: at most two rows a batch, on a table
    attached by simsql's Alembic operation and on a mapped one."""
    rows = [{"id": i, "title": None, "body": f"word{i} " * 60} for i in range(1, 11)]
    if how == "attached":
        with any_engine.begin() as connection:
            connection.execute(text("CREATE TABLE big (id int PRIMARY KEY, body text)"))
            connection.execute(text("INSERT INTO big VALUES (:id, :body)"), [{"id": r["id"], "body": r["body"]} for r in rows])
        add_simhash(any_engine, "big", ("body",))
        result = simsql.backfill(any_engine, "big", workers=0, batch_size=100, max_batch_bytes=1000)
        assert check_fingerprints(any_engine, "SELECT id, NULL, body, simhash FROM big") == (10, 10)
    else:
        create_models(any_engine, Doc)
        insert_rows(any_engine, Doc, rows)
        result = simsql.backfill(any_engine, Doc, workers=0, batch_size=100, max_batch_bytes=1000)
        check_model(any_engine, Doc)
    assert result.rows_fingerprinted == 10
    assert result.batches >= 5


# -- keys of every kind resume exactly ---------------------------------------------------------


def _interrupted_then_resumed(engine: Engine, model: type, rows: list[dict[str, Any]], batch: int, order: list[tuple[Any, ...]]) -> simsql.BackfillResult:
    """Stop after two batches, then resume; the resumed run's first batch must be the next
    ``batch`` keys in the server's key ``order`` (a cursor read back wrong would start
    elsewhere, and the catch-up pass would hide it in the totals)."""
    create_models(engine, model)
    insert_rows(engine, model, rows)
    with pytest.raises(KeyboardInterrupt):
        simsql.backfill(engine, model, workers=0, batch_size=batch, progress=stop_after(2))
    check_model(engine, model, complete=False)
    n = len(order[0])
    first_batch: list[set[tuple[Any, ...]]] = []

    def progress(done: int, total: int) -> None:
        if not first_batch:
            first_batch.append({row[:n] for row in stored(engine, model) if row[-2] is not None})

    rest = simsql.backfill(engine, model, workers=0, batch_size=batch, progress=progress)
    assert rest.resumed
    assert first_batch == [set(order[: 3 * batch])]
    check_model(engine, model)
    return rest


OLD = "the quick brown fox jumps over the lazy dog near the river bank today"
NEW = "completely different words about databases indexes and query planners"


def test_composite_keys_backfill_reflect_and_query(any_engine: Engine) -> None:
    simsql.alembic.upgrade(any_engine)
    KeyedBase.metadata.create_all(any_engine, tables=[Part.__table__, simsql.store.binding_for(Part).table])  # type: ignore[list-item]
    with any_engine.begin() as connection:
        connection.execute(
            Part.__table__.insert(),  # type: ignore[attr-defined]
            [{"shelf": f"s{i % 3}", "slot": i, "body": f"{OLD} {i}" if i != 4 else NEW} for i in range(12)],
        )
    result = simsql.backfill(any_engine, Part, workers=0, batch_size=5)
    assert result.rows_fingerprinted == 12
    with any_engine.connect() as connection:
        model = simsql.reflect(connection, "parts")
    with Session(any_engine) as session:
        found = session.execute(select(Part.shelf, Part.slot).where(simsql.similar_to(Part, NEW, 0))).all()
        assert found == [("s1", 4)]
        again = session.execute(select(model).where(simsql.similar_to(model, NEW, 0))).scalars().all()
        assert [(r.shelf, r.slot) for r in again] == [("s1", 4)]


def test_composite_keys_under_a_case_insensitive_collation_resume_where_they_stopped(mysql_engine: Engine) -> None:
    shelves = ["a", "B", "c", "D", "e", "F"]  # mixed case under MySQL's case-insensitive collation
    keys = [(shelves[i % 6], i) for i in range(60)]
    rows = [{"shelf": shelf, "slot": slot, "body": f"part {slot} " + " ".join(WORDS[slot % 7 :])} for shelf, slot in keys]
    order: list[tuple[Any, ...]] = sorted(keys, key=lambda k: (k[0].lower(), k[1]))
    rest = _interrupted_then_resumed(mysql_engine, Part, rows, 10, order)
    assert (rest.rows_read, rest.rows_fingerprinted) == (40, 40)


def test_binary_keys_resume_where_they_stopped(any_engine: Engine) -> None:
    """A live table keyed by two-byte binary strings, attached by simsql's Alembic operation."""
    key_type = "VARBINARY(8)" if is_mysql(any_engine) else "bytea"
    with any_engine.begin() as connection:
        connection.execute(text(f"CREATE TABLE blobs (id {key_type} PRIMARY KEY, body text)"))
        connection.execute(text("INSERT INTO blobs VALUES (:k, :b)"), [{"k": i.to_bytes(2, "big"), "b": f"{OLD}{i}"} for i in range(100)])
    add_simhash(any_engine, "blobs", ("body",))
    with pytest.raises(KeyboardInterrupt):
        simsql.backfill(any_engine, "blobs", workers=0, batch_size=10, progress=stop_after(2))
    rest = simsql.backfill(any_engine, "blobs", workers=0, batch_size=10)
    assert rest.resumed and rest.rows_read == 80 and rest.rows_fingerprinted == 80
    fingerprints = fingerprints_by(any_engine, "SELECT body, simhash FROM blobs")
    assert len(fingerprints) == 100 and all(fp == simsql.text.fingerprint.simhash(body) for body, fp in fingerprints.items())


def test_binary_keys_of_every_length_resume_in_the_servers_order(mysql_engine: Engine) -> None:
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


def test_the_keyset_read_after_a_composite_cursor_is_a_range_on_the_key(mysql_engine: Engine) -> None:
    """MariaDB scans a key from its start for ``(a, b) > (x, y)``, which makes each batch
    slower than the one before; the read it gets is a range on the primary key."""
    from simsql.dialects import backend
    from simsql.lifecycle.backfill_start import resolve_job

    create_models(mysql_engine, Part)
    insert_rows(mysql_engine, Part, [{"shelf": f"s{i % 20}", "slot": i, "body": f"part {i}"} for i in range(4000)])
    with mysql_engine.connect() as connection:
        connection.execute(text("ANALYZE TABLE parts"))
        sql = backend(connection).batch_sql(resolve_job(connection, Part, None, None))
        statement = sql.rows[True].bindparams(limit=100, **sql.cursor_params(["s7", 1907]))
        compiled = str(statement.compile(connection, compile_kwargs={"literal_binds": True}))
        plan = {row.table: row for row in connection.execute(text(explain(connection) + compiled).execution_options(no_parameters=True))}
    assert (plan["b"].type, plan["b"].key) == ("range", "PRIMARY"), plan


# -- the command line, on a URL as a user writes it ----------------------------------------------


def _register(engine: Engine, model: type) -> None:
    """The registry entry a table gets from its first ORM write (what ``--table`` reads)."""
    binding = simsql.store.binding_for(model)
    with engine.begin() as connection:
        registry.claim(connection, binding.names.table, None, binding.fingerprinter, binding.source_columns, binding.names)


def _backfill_docs(url: str, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(url, "backfill", "--table", "docs", *options), stdin=subprocess.DEVNULL, capture_output=True, text=True,
        env=environment(), timeout=120, check=False,
    )


def test_cli_backfills_a_mixin_table(any_engine: Engine, any_url: str) -> None:
    create_models(any_engine, Doc)
    rows = texts(200)
    insert_rows(any_engine, Doc, rows)
    _register(any_engine, Doc)
    done = _backfill_docs(any_url, "--workers", "0")
    assert done.returncode == 0, done.stderr
    featured = sum(1 for r in rows if expected(Doc, r["title"], r["body"]) is not None)
    assert f"fingerprinted {featured} rows, {200 - featured} without words" in done.stdout
    assert check_model(any_engine, Doc) == (featured, featured)


def test_cli_on_a_table_the_registry_does_not_know_says_what_to_do(any_engine: Engine, any_url: str) -> None:
    """A mixin table made by create_all, no registry: the command line cannot know its text
    columns; it says so and names the call that can (the model knows them)."""
    KeyedBase.metadata.create_all(any_engine, tables=[Doc.__table__])  # type: ignore[list-item]
    insert_rows(any_engine, Doc, texts(5))
    with any_engine.begin() as connection:  # as create_all of a simsql before 0.3 left it: not recorded
        connection.execute(text("DELETE FROM simsql_registry"))
    done = _backfill_docs(any_url)
    assert done.returncode == 1, done.stderr
    assert "not attached" in done.stderr and "simsql.backfill(engine, Model)" in done.stderr
    assert "Traceback" not in done.stderr
