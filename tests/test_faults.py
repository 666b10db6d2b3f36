"""Fault suite: backfill under concurrent writers, a writer racing a batch, kills and a server
restart, on every server, checked against fingerprints computed independently in Python.

Rerunnable (each test has its own schema or database). Tables are attached live (tests/tables.py
``build_docs``) or mapped (tests/models.py), in both storage modes. The SIGKILL-and-Ctrl-C test
on PostgreSQL lives with the command line tests
(``test_cli.py::test_backfill_interrupted_then_killed_resumes``); lock holders during attach,
detach and backfill are in tests/test_bounds.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine, text

import simsql
import simsql.alembic
import simsql.bits
import simsql.store
import simsql.text.fingerprint

from .command_line import command, environment
from .models import KEYED_MODES, Doc
from .tables import (
    KILL_ROWS,
    build_big_articles,
    build_docs,
    check_fingerprints,
    check_model,
    create_models,
    expected,
    fingerprints_by,
    holder_sql,
    insert_rows,
    progress,
    rewrite,
    stored,
    texts,
    wait_for_rows,
    writer,
)


def _table(engine: Engine, side_table: bool, how: str, rows: int) -> tuple[str, Any, Callable[..., tuple[int, int]]]:
    """A table of ``rows`` rows without fingerprints: attached live (``docs``) or mapped (the
    mode's model). Returns its name, what backfill is given, and its check (complete=...)."""
    if how == "attached":
        build_docs(engine, rows)
        simsql.alembic.upgrade(engine)
        simsql.attach_table(engine, "docs", source=["title", "body"], side_table=side_table)
        sql = holder_sql(side_table)
        return "docs", "docs", lambda complete=True: _complete(check_fingerprints(engine, sql), complete)
    model = KEYED_MODES["side_table" if side_table else "columns"]
    create_models(engine, model)
    insert_rows(engine, model, texts(rows, seed=5))
    return model.__tablename__, model, lambda complete=True: check_model(engine, model, complete=complete)  # type: ignore[attr-defined]


def _complete(counts: tuple[int, int], complete: bool) -> tuple[int, int]:
    """check_fingerprints' counts; with ``complete``, every row with text has its fingerprint."""
    assert not complete or counts[0] == counts[1], f"{counts[0] - counts[1]} rows with text have no fingerprint"
    return counts


WRITERS = [("postgresql", "attached"), ("mysql", "attached"), ("mysql", "mapped")]  # the slowest tests: not every pair


@pytest.mark.parametrize(("any_engine", "how"), WRITERS, indirect=["any_engine"])
@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_backfill_with_concurrent_writers_never_stores_a_stale_fingerprint(any_engine: Engine, side_table: bool, how: str) -> None:
    rows = 3000
    table, target, check = _table(any_engine, side_table, how, rows)
    stop = threading.Event()
    counts = {"writes": 0}
    writers = [threading.Thread(target=writer, args=(any_engine, seed, stop, counts, table, rows)) for seed in range(3)]
    for thread in writers:
        thread.start()
    try:
        result = simsql.backfill(any_engine, target, batch_size=100, workers=2)
        check(complete=False)  # while the writers still run
    finally:
        stop.set()
        for thread in writers:
            thread.join(30)
    assert counts["writes"] > 50, "the writers barely ran; the test proved nothing"
    assert result.rows_fingerprinted > 0
    check(complete=False)
    simsql.backfill(any_engine, target, workers=0)  # what the writers left without one
    featured, fingerprinted = check()
    assert featured == fingerprinted > 0
    if how == "attached":
        report = simsql.status(any_engine)[0]
        assert (report.rows_missing, report.rows_stale) == (0, 0)


RACES = [
    ("postgresql", "attached", "READ COMMITTED"),
    ("postgresql", "mapped", "READ COMMITTED"),
    ("mysql", "attached", "READ COMMITTED"),
    ("mysql", "mapped", "REPEATABLE READ"),  # InnoDB's default
    ("mysql", "mapped", "READ COMMITTED"),
]


@pytest.mark.parametrize(("any_engine", "how", "isolation"), RACES, indirect=["any_engine"])
@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_a_writer_racing_a_batch_keeps_no_stale_fingerprint(any_engine: Engine, side_table: bool, how: str, isolation: str) -> None:
    """A writer changes a row after backfill read it and commits after backfill tried to write it.
    Under READ COMMITTED a MySQL ``INSERT ... SELECT`` reads a snapshot unless it asks for
    locks: the side-table write must lock the user's rows itself. (PostgreSQL's backfill runs
    at its default, READ COMMITTED: under REPEATABLE READ its write fails with a serialization
    error instead of waiting.)"""
    engine = any_engine.execution_options(isolation_level=isolation)
    table, target, check = _table(engine, side_table, how, 40)
    new = "entirely different words written by another session"
    with engine.connect() as connection:
        title = connection.execute(text(f"SELECT title FROM {table} WHERE id = 7")).scalar_one()
    holder = engine.connect()
    holder.execute(text(f"UPDATE {table} SET body = :b WHERE id = 7"), {"b": new})  # not committed yet
    outcome: dict[str, Any] = {}

    def run() -> None:
        outcome["result"] = simsql.backfill(engine, target, workers=0)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(1.5)  # backfill has read the old text by now, and waits for the writer's row lock
    holder.commit()
    holder.close()
    thread.join(30)
    assert not thread.is_alive() and "result" in outcome
    assert _fingerprint_of(engine, table, target, side_table, 7) in (None, expected(Doc, title, new))
    check(complete=False)
    simsql.backfill(engine, target, workers=0)
    assert _fingerprint_of(engine, table, target, side_table, 7) == expected(Doc, title, new)
    check()


def _fingerprint_of(engine: Engine, table: str, target: Any, side_table: bool, key: int) -> int | None:
    """Row ``key``'s stored fingerprint (None: none stored)."""
    if isinstance(target, str):
        return fingerprints_by(engine, f"SELECT id, simhash FROM {table}_simhash" if side_table else f"SELECT id, simhash FROM {table}").get(key)
    return {row[0]: row[-2] for row in stored(engine, target)}[key]


# -- killed with SIGKILL, then run again ----------------------------------------------------------


def test_a_backfill_killed_mid_run_resumes_where_it_stopped(mysql_engine: Engine, mysql_cli_url: str) -> None:
    """SIGKILL while batches commit: exactly the rows up to the saved cursor have their
    fingerprints (the batch in flight left nothing), and a rerun reads only the rest."""
    create_models(mysql_engine, Doc)
    rows = texts(KILL_ROWS, seed=11)
    insert_rows(mysql_engine, Doc, rows)
    binding = simsql.store.binding_for(Doc)
    with mysql_engine.begin() as connection:  # the registry entry a table gets from its first ORM write
        simsql.store.registry.claim(connection, binding.names.table, None, binding.fingerprinter, binding.source_columns, binding.names)
    backfill = ("backfill", "--table", "docs", "--workers", "0")
    killed = subprocess.Popen(
        command(mysql_cli_url, *backfill, "--batch-size", "500", "--no-progress"),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment(),
    )
    try:
        deadline = time.monotonic() + 60
        while (state := progress(mysql_engine, "docs")) is None or state[0] < 3000:
            assert killed.poll() is None, f"backfill ended before it could be killed: {killed.communicate()}"
            assert time.monotonic() < deadline, "backfill made no progress"
            time.sleep(0.01)
        os.kill(killed.pid, signal.SIGKILL)
    finally:
        if killed.poll() is None:
            killed.kill()
        killed.communicate(timeout=30)
    assert killed.returncode == -signal.SIGKILL
    _resumes_after_the_kill(mysql_engine, mysql_cli_url, rows, backfill)


def _resumes_after_the_kill(engine: Engine, url: str, rows: list[dict[str, Any]], backfill: tuple[str, ...]) -> None:
    rows_done, last_key, phase = progress(engine, "docs")  # type: ignore[misc]
    assert phase == "scan" and last_key is not None and rows_done == last_key[0] < KILL_ROWS
    last = last_key[0]
    kept = {row[0]: row[-2] for row in stored(engine, Doc)}
    wanted = {r["id"]: expected(Doc, r["title"], r["body"]) for r in rows}
    assert all(kept[k] == wanted[k] for k in wanted if k <= last)  # every committed batch kept
    assert all(kept[k] is None for k in wanted if k > last)  # nothing of the batch in flight
    empty_before = sum(1 for k in wanted if k <= last and wanted[k] is None)

    rerun = subprocess.run(
        command(url, *backfill, "--batch-size", "2000", "--format", "json"),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, env=environment(), timeout=300, check=False,
    )
    assert rerun.returncode == 0, rerun.stderr
    summary = json.loads(rerun.stdout)
    assert summary["resumed"] is True
    # Finished batches were not read again: only the rest, plus the featureless rows rechecked.
    assert summary["rows_read"] == KILL_ROWS - last + empty_before
    assert summary["rows_fingerprinted"] == sum(1 for k in wanted if k > last and wanted[k] is not None)
    assert progress(engine, "docs")[2] == "done"  # type: ignore[index]
    check_model(engine, Doc)


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_a_run_stopped_in_its_catch_up_then_resumed_leaves_no_row_behind(any_engine: Engine, side_table: bool) -> None:
    """The fault round's ``31 missing`` on MySQL (issue 33, part 5): a run stopped during its
    catch-up pass saved that pass's cursor, the writers went on clearing fingerprints below it,
    and the final run, resuming the catch-up at the cursor, never went back for them. Driven
    here step by step: 60 rows, batches of 10, so the scan is 6 batches and the 7th is the
    catch-up's first."""
    table, target, check = _table(any_engine, side_table, "attached", 60)
    calls: list[int] = []

    def step(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 2:  # the scan's cursor is at row 20: a writer changes rows 1 and 15 behind it
            rewrite(any_engine, (1, 15))
        if len(calls) == 7:  # the catch-up has stored rows 1 and 15 and saved its cursor: stopped here
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        simsql.backfill(any_engine, target, workers=0, batch_size=10, progress=step)
    _, last_key, phase = progress(any_engine, table)  # type: ignore[misc]
    assert phase == "catchup" and last_key is not None and last_key[0] >= 15
    rewrite(any_engine, (5,))  # nothing runs; a writer clears a row below the saved cursor
    resumed = simsql.backfill(any_engine, target, workers=0, batch_size=10)
    assert resumed.resumed
    check(complete=True)


# -- the server itself goes away ------------------------------------------------------------------


def test_server_restart_mid_backfill_then_resume() -> None:
    """The embedded server (never the shared service) is stopped while a backfill runs in
    another process: the command fails cleanly, and a rerun after the restart resumes and
    finishes with every fingerprint right. The cluster lives in a directory the server's
    account can enter when run as root (see tests/pg_dirs.py)."""
    from .pg_dirs import cluster_parent

    with cluster_parent() as parent:
        _restart_mid_backfill_then_resume(parent / "pg")


def _restart_mid_backfill_then_resume(data_dir: Any) -> None:
    from sqlalchemy import create_engine

    from simsql.embedded import EmbeddedPostgresUnavailable, embedded_url, stop_embedded

    try:
        try:
            url = embedded_url(data_dir)
        except EmbeddedPostgresUnavailable as error:
            pytest.skip(f"no embedded PostgreSQL here: {error}")
        engine = create_engine(url)
        build_big_articles(engine)
        simsql.alembic.upgrade(engine)
        simsql.attach_table(engine, "articles", source=["title", "body"], indexes=False)
        argv = command(url, "backfill", "--table", "articles", "--batch-size", "300", "--workers", "0", "--no-progress")
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=environment(), text=True)
        try:
            wait_for_rows(engine, process, 1500)  # type: ignore[arg-type]
            engine.dispose()
            stop_embedded(data_dir)
            _, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert process.returncode == 1 and "simsql: error:" in err and "Traceback" not in err, err

        url = embedded_url(data_dir)  # restart
        engine = create_engine(url)
        done_before = progress(engine, "articles")[0]  # type: ignore[index]
        result = simsql.backfill(engine, "articles", workers=0)
        assert result.resumed and result.rows_read < 30_000 - done_before + 400
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT id, title, body, simhash FROM articles")).all()
        for key, title, body, fingerprint in rows:
            wanted = simsql.text.fingerprint.simhash(f"{title}\n{body}") if body is not None else None
            assert (None if fingerprint is None else simsql.bits.to_unsigned(fingerprint)) == wanted, key
        engine.dispose()
    finally:
        stop_embedded(data_dir)
