"""Fault suite: the lifecycle under concurrent writers, lock holders and kills, on a real
PostgreSQL, checked against fingerprints computed independently in Python.

Rerunnable (each test has its own schema). The SIGKILL-during-backfill test lives with the
command line tests (``test_cli.py::test_backfill_interrupted_then_killed_resumes``); lock
holders during attach and backfill are in ``test_lifecycle.py`` (``*_behind_*``).
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest
from sqlalchemy import Engine, text

import simsql
import simsql.alembic

WORDS = (
    "index query planner vacuum replication backup schema table column tuple page buffer transaction lock "
    "snapshot isolation commit rollback cursor join aggregate window partition trigger function sequence"
).split()
ROWS = 3000


def _text(rng: random.Random) -> str | None:
    if rng.random() < 0.02:
        return None
    return " ".join(rng.choice(WORDS) if rng.random() < 0.4 else f"w{rng.randrange(100_000)}" for _ in range(40))


def _build(engine: Engine, rows: int = ROWS) -> None:
    """A ``docs`` table of ``rows`` rows (SQL both PostgreSQL and MySQL/MariaDB take)."""
    rng = random.Random(5)
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE docs (id int PRIMARY KEY, title text, body text)"))
        connection.execute(
            text("INSERT INTO docs VALUES (:id, :title, :body)"),
            [{"id": i, "title": f"doc {i}", "body": _text(rng)} for i in range(1, rows + 1)],
        )


def _writer(engine: Engine, seed: int, stop: threading.Event, counts: dict[str, int]) -> None:
    """Updates, inserts and deletes in small transactions, some touching several rows."""
    rng = random.Random(seed)
    with engine.connect() as connection:
        while not stop.is_set():
            kind = rng.random()
            if kind < 0.8:
                ids = rng.sample(range(1, ROWS + 1), rng.choice((1, 1, 3)))
                for key in sorted(ids):
                    connection.execute(text("UPDATE docs SET body = :b WHERE id = :id"), {"b": _text(rng), "id": key})
            elif kind < 0.9:
                connection.execute(
                    text("INSERT INTO docs VALUES (:id, 'new', :b) ON CONFLICT DO NOTHING"),
                    {"id": ROWS + 1 + rng.randrange(10_000), "b": _text(rng)},
                )
            else:
                connection.execute(text("DELETE FROM docs WHERE id = :id"), {"id": rng.randrange(1, ROWS + 1)})
            connection.commit()
            counts["writes"] += 1


def _check_no_stale(engine: Engine, holder_sql: str) -> tuple[int, int]:
    """Every stored fingerprint equals the one Python computes from the row's current text.
    Returns (rows with text, rows with a fingerprint)."""
    with engine.connect() as connection:
        rows = connection.execute(text(holder_sql)).all()
    with_text = fingerprinted = 0
    for key, title, body, stored in rows:
        parts = [p for p in (title, body) if p is not None]
        expected = simsql.simhash("\n".join(parts)) if parts else None
        with_text += expected is not None
        if stored is not None:
            fingerprinted += 1
            assert simsql.to_unsigned(stored) == expected, f"row {key} keeps a fingerprint of text it no longer holds"
    return with_text, fingerprinted


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_backfill_with_concurrent_writers_never_stores_a_stale_fingerprint(engine: Engine, side_table: bool) -> None:
    _build(engine)
    simsql.alembic.upgrade(engine)
    simsql.attach_table(engine, "docs", source=["title", "body"], side_table=side_table)
    holder_sql = (
        "SELECT d.id, d.title, d.body, s.simhash FROM docs d LEFT JOIN docs_simhash s ON s.id = d.id"
        if side_table
        else "SELECT id, title, body, simhash FROM docs"
    )
    stop = threading.Event()
    counts = {"writes": 0}
    writers = [threading.Thread(target=_writer, args=(engine, seed, stop, counts)) for seed in range(3)]
    for writer in writers:
        writer.start()
    try:
        result = simsql.backfill(engine, "docs", batch_size=100, workers=2)
        _check_no_stale(engine, holder_sql)  # while the writers still run
    finally:
        stop.set()
        for writer in writers:
            writer.join(30)
    assert counts["writes"] > 50, "the writers barely ran; the test proved nothing"
    assert result.rows_fingerprinted > 0
    _check_no_stale(engine, holder_sql)
    simsql.backfill(engine, "docs", workers=0)  # what the writers left NULL
    with_text, fingerprinted = _check_no_stale(engine, holder_sql)
    assert fingerprinted == with_text  # every row with text has its fingerprint (text yields features)
    report = simsql.status(engine)[0]
    assert (report.rows_missing, report.rows_stale) == (0, 0)


def test_lock_holder_during_detach_gives_up_and_keeps_the_attachment(engine: Engine) -> None:
    _build(engine)
    simsql.alembic.upgrade(engine)
    simsql.attach_table(engine, "docs", source=["body"])
    holder = engine.connect()
    holder.execute(text("SELECT count(*) FROM docs"))  # a reader in an open transaction
    try:
        started = time.monotonic()
        with pytest.raises(simsql.LockTimeout, match="held by: pid"):
            simsql.detach(engine, "docs", lock_timeout="1s")
        assert time.monotonic() - started < 15
    finally:
        holder.rollback()
        holder.close()
    assert [s.table for s in simsql.status(engine)] == ["docs"]
    simsql.detach(engine, "docs")



def test_server_restart_mid_backfill_then_resume() -> None:
    """The embedded server (never the shared service) is stopped while a backfill runs in
    another process: the command fails cleanly, and a rerun after the restart resumes and
    finishes with every fingerprint right. The cluster lives in a directory the server's
    account can enter when run as root (see tests/pg_dirs.py)."""
    from .pg_dirs import cluster_parent

    with cluster_parent() as parent:
        _restart_mid_backfill_then_resume(parent / "pg")


def _restart_mid_backfill_then_resume(data_dir: Any) -> None:
    import os
    import subprocess
    import sys

    from sqlalchemy import create_engine

    from simsql.embedded import EmbeddedPostgresUnavailable, embedded_url, stop_embedded

    from .test_cli import _build_big_legacy, _progress, _wait_for_rows

    try:
        try:
            url = embedded_url(data_dir)
        except EmbeddedPostgresUnavailable as error:
            pytest.skip(f"no embedded PostgreSQL here: {error}")
        engine = create_engine(url)
        _build_big_legacy(engine)
        simsql.alembic.upgrade(engine)
        simsql.attach_table(engine, "articles", source=["title", "body"], indexes=False)
        environment = {k: v for k, v in os.environ.items() if k not in ("SIMSQL_DATABASE_URL", "DATABASE_URL")}
        command = [sys.executable, "-m", "simsql.cli", "--url", url, "backfill", "--table", "articles",
                   "--batch-size", "300", "--workers", "0", "--no-progress"]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=environment, text=True)
        try:
            _wait_for_rows(engine, process, 1500)  # type: ignore[arg-type]
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
        done_before = _progress(engine)[0]  # type: ignore[index]
        result = simsql.backfill(engine, "articles", workers=0)
        assert result.resumed and result.rows_read < 30_000 - done_before + 400
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT id, title, body, simhash FROM articles")).all()
        for key, title, body, stored in rows:
            expected = simsql.simhash(f"{title}\n{body}") if body is not None else None
            assert (None if stored is None else simsql.to_unsigned(stored)) == expected, key
        engine.dispose()
    finally:
        stop_embedded(data_dir)
