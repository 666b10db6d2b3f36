"""The ``simsql`` command line, run as a real subprocess against a real database.

Every call goes through ``python -m simsql.cli`` (tests/command_line.py) with ``--url`` pointing
at the test's own PostgreSQL schema (``options=-csearch_path=...``) or MySQL database (a plain
``mysql://`` URL), so what is tested is what a user types.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
from typing import Any

from sqlalchemy import Engine, text

import simsql
import simsql.bits
import simsql.text.fingerprint

from .command_line import (  # test_cli_frictions and test_urls import cli, failed, ok from here
    cli,
    command,
    environment,
    failed,
    ok,
)
from .tables import BODIES, KILL_ROWS, build_big_articles, build_live_docs, is_mysql, progress, run, state, wait_for_rows
from .test_migrations import _check_attached, build_legacy, snapshot

# Version 2, the 64-bit fingerprint: these tests are about the basics (attach's default, version 3
# with the wide signature, is tests/test_wide_lifecycle.py's and tests/test_refingerprint_v3.py's).
ATTACH = ("attach", "--table", "articles", "--text-column", "title", "--text-column", "body", "--no-wide")


def _registry_exists(engine: Engine) -> bool:
    with engine.connect() as connection:
        return bool(connection.execute(text("SELECT to_regclass('simsql_registry') IS NOT NULL")).scalar_one())


def _simsql_tables(engine: Engine) -> list[str]:
    """simsql's own tables in the test's schema (registry, cursors, its version table)."""
    with engine.connect() as connection:
        return list(connection.execute(text(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
            "AND table_name LIKE 'simsql%' ORDER BY 1"
        )).scalars())  # fmt: skip


# -- attach, backfill, query -------------------------------------------------------------


def test_attach_backfill_similar_dupes(engine: Engine, url: str) -> None:
    bodies = build_legacy(engine, rows=120)

    attached = ok(cli(*ATTACH, url=url))
    # Not a terminal and no --backfill: nothing fingerprinted, the command to run is printed.
    assert "118 rows have no fingerprint yet" in attached.stdout
    assert "simsql backfill --table articles" in attached.stdout
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(simhash) FROM articles")).scalar() == 0
        valid = connection.execute(
            text(
                "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE c.relnamespace = CAST(current_schema() AS regnamespace) "
                "AND c.relname LIKE 'ix_articles_simhash_b%' AND i.indisvalid"
            )
        ).scalar()
        assert valid == 4

    filled = ok(cli("backfill", "--table", "articles", "--batch-size", "50", "--workers", "0", "--format", "json", url=url))
    summary = json.loads(filled.stdout)
    assert (summary["rows_read"], summary["rows_fingerprinted"], summary["rows_empty"]) == (120, 118, 2)
    assert "120/120" in filled.stderr  # the progress bar
    _check_attached(engine, bodies)

    by_id = json.loads(ok(cli("similar", "--table", "articles", "--id", "19", "--format", "json", url=url)).stdout)
    assert by_id[0]["key"] == 20 and by_id[0]["distance"] <= 3
    assert 19 not in [m["key"] for m in by_id]  # the row itself is left out
    assert len(by_id) == 10
    assert [m["distance"] for m in by_id] == sorted(m["distance"] for m in by_id)
    assert all(m["similarity"] == 1 - m["distance"] / 64 for m in by_id)
    assert by_id[0]["preview"].startswith("title 20 ")

    as_csv = ok(
        cli(
            "similar", "--table", "articles", "--text", f"title 33\n{bodies[33]}",
            "--limit", "3", "--columns", "id,title", "--format", "csv", url=url,
        )
    ).stdout
    rows = list(csv.DictReader(io.StringIO(as_csv)))
    assert len(rows) == 3
    assert rows[0] == {"id": "33", "title": "title 33", "distance": "0", "similarity": "1.0"}

    piped = ok(
        cli("similar", "--table", "articles", "--file", "-", "--max-distance", "3", "--format", "json",
            input=f"title 41\n{bodies[41]}", url=url)
    ).stdout
    near = json.loads(piped)
    assert near[0]["key"] == 41 and all(m["distance"] <= 3 for m in near)

    table = ok(cli("similar", "--table", "articles", "--id", "19", "--limit", "2", url=url)).stdout.splitlines()
    assert table[0].split() == ["key", "distance", "similarity", "preview"]
    assert table[1].split()[0] == "20" and "title 20" in table[1]
    assert len(table) == 3

    groups = json.loads(ok(cli("dupes", "--table", "articles", "--format", "json", url=url)).stdout)
    assert {"size": 2, "keys": [19, 20]} in groups
    assert all(g["size"] == len(g["keys"]) >= 2 for g in groups)
    listed = ok(cli("dupes", "--table", "articles", url=url)).stdout
    assert any(line.split(None, 1) == ["2", "19, 20"] for line in listed.splitlines())


def test_attach_side_table_asks_on_a_terminal(engine: Engine, url: str) -> None:
    bodies = build_legacy(engine, rows=60)
    before = snapshot(engine)
    master, slave = os.openpty()
    process = subprocess.Popen(
        command(url, *ATTACH, "--side-table", "--no-concurrently", "--workers", "0"),
        stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment(),
    )
    os.close(slave)
    try:
        os.write(master, b"y\n")  # typed ahead; the terminal holds it until the prompt reads
        out, err = process.communicate(timeout=60)
    finally:
        os.close(master)
    assert process.returncode == 0, err
    assert "Backfill 59 rows now? [Y/n]" in err  # row 50 has no text at all
    assert "fingerprinted 59 rows" in out

    with engine.connect() as connection:
        stored: dict[int, int] = dict(connection.execute(text("SELECT id, simhash FROM articles_simhash WHERE simhash IS NOT NULL")).all())
    assert len(stored) == 59
    for key, fingerprint in stored.items():
        assert simsql.bits.to_unsigned(fingerprint) == simsql.text.fingerprint.simhash(f"title {key}\n{bodies[key]}")
    after = snapshot(engine)
    assert after["columns"] == before["columns"] and after["checksum"] == before["checksum"]

    # Attaching again is harmless, and with nothing left to fingerprint there is no question.
    again = ok(cli(*ATTACH, "--side-table", url=url))
    assert "no fingerprint yet" not in again.stdout
    best = json.loads(ok(cli("similar", "--table", "articles", "--id", "19", "--limit", "1", "--format", "json", url=url)).stdout)
    assert best[0]["key"] == 20


def test_query_errors_are_clean(engine: Engine, url: str) -> None:
    build_legacy(engine, rows=20)
    ok(cli(*ATTACH, "--backfill", "--workers", "0", url=url))
    failed(cli("similar", "--table", "articles", "--id", "999", url=url), 1, "no row with id = 999")
    failed(cli("similar", "--table", "articles", "--id", "1; DROP TABLE comments", url=url), 1, "invalid input syntax")
    failed(cli("similar", "--table", "articles", "--text", "  ... !!! ", url=url), 1, "no features")
    failed(cli("similar", "--table", "articles", "--id", "1", "--columns", "id,nope", url=url), 1, "no column 'nope'")
    failed(cli("similar", "--table", "articles", "--file", "/nonexistent/file", url=url), 1, "cannot read")
    failed(cli("dupes", "--table", "comments", url=url), 1, "not attached")
    assert cli("similar", "--table", "articles", "--id", "1", "--text", "x", url=url).returncode == 2
    assert cli("dupes", "--table", "articles", "--max-distance", "4", url=url).returncode == 2
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM comments")).scalar() == 20


# -- fingerprint, db ----------------------------------------------------------------------


def test_fingerprint_needs_no_database() -> None:
    sample = "The quick brown fox jumps over the lazy dog, again and again"
    document = json.loads(ok(cli("fingerprint", sample, "--format", "json")).stdout)
    expected = simsql.text.fingerprint.simhash(sample)
    assert document["unsigned"] == expected
    assert document["hex"] == f"0x{expected:016x}"
    assert document["signed"] == simsql.bits.to_signed(expected)
    assert document["blocks"] == list(simsql.bits.blocks(expected))
    assert document["config_id"] == simsql.Fingerprinter().config_id

    shingled = ok(cli("fingerprint", "--file", "-", "--shingle-size", "2", input=sample)).stdout
    assert f"0x{simsql.text.fingerprint.simhash(sample, shingle_size=2):016x}" in shingled
    assert str(simsql.bits.to_signed(simsql.text.fingerprint.simhash(sample, shingle_size=2))) in shingled
    assert simsql.Fingerprinter(shingle_size=2).config_id in shingled
    chars = json.loads(ok(cli("fingerprint", sample, "--tokenizer", "chars", "--format", "json")).stdout)
    assert chars["unsigned"] == simsql.text.fingerprint.simhash(sample, tokenizer="chars")

    failed(cli("fingerprint", " ... "), 1, "no features")
    assert cli("fingerprint").returncode == 2
    assert cli("fingerprint", "x", "--file", "-", input="y").returncode == 2


def test_db_commands(engine: Engine, url: str) -> None:
    plain = url.replace("postgresql+psycopg://", "postgresql://", 1)  # normalised by the CLI
    current = ok(cli("db", "current", url=plain))
    assert current.stdout == "" and "no simsql revision" in current.stderr
    assert ok(cli("db", "upgrade", url=plain)).stdout.split() == ["simsql_0002"]
    assert _registry_exists(engine)
    from_environment = ok(cli("db", "current", env={"SIMSQL_DATABASE_URL": url, "DATABASE_URL": "postgresql://nowhere:1/x"}))
    assert from_environment.stdout.split() == ["simsql_0002"]
    assert ok(cli("db", "current", env={"DATABASE_URL": url})).stdout.split() == ["simsql_0002"]
    history = ok(cli("db", "history")).stdout  # no database needed
    assert "-> simsql_0002 (head)" in history
    removed = ok(cli("db", "downgrade", url=url))
    assert removed.stdout == "" and "nothing of simsql is left" in removed.stderr
    assert "db upgrade" not in removed.stderr  # no advice to undo what was just asked for
    assert ok(cli("db", "current", url=url)).stdout == ""
    assert not _registry_exists(engine)
    assert _simsql_tables(engine) == []  # nothing left behind, not even an empty version table
    assert ok(cli("db", "upgrade", url=plain)).stdout.split() == ["simsql_0002"]  # and it comes back
    ok(cli("db", "downgrade", url=url))
    assert _simsql_tables(engine) == []


# -- failures that must change nothing ----------------------------------------------------


def test_bad_names_and_settings_fail_cleanly_and_change_nothing(engine: Engine, url: str) -> None:
    build_legacy(engine, rows=5)
    before = {table: snapshot(engine, table) for table in ("articles", "comments")}
    cases = [
        (("attach", "--table", "missing", "--text-column", "body"), "does not exist"),
        (("attach", "--table", "articles", "--text-column", "body", "--text-column", "nope"), "no column 'nope'"),
        (("attach", "--table", "articles; DROP TABLE comments", "--text-column", "body"), "does not exist"),
        (("attach", "--table", "articles", "--text-column", 'body" text); DROP TABLE comments; --'), "no column"),
        (("attach", "--table", "articles", "--text-column", "created_at"), "not text"),
        (("backfill", "--table", "articles"), "not attached"),
        (("similar", "--table", "articles; DROP TABLE comments", "--text", "hello"), "not attached"),
    ]
    for args, message in cases:
        failed(cli(*args, url=url), 1, message)
    assert {table: snapshot(engine, table) for table in ("articles", "comments")} == before
    assert not _registry_exists(engine)  # not even simsql's registry was installed

    failed(cli("backfill", "--table", "articles"), 2, "no database URL")
    failed(cli("db", "current", url="postgresql://postgres@127.0.0.1:1/postgres"), 1, "127.0.0.1")
    assert cli("backfill", "--table", "articles", "--batch-size", "0", url=url).returncode == 2


# -- a backfill interrupted by Ctrl-C, then killed with SIGKILL ---------------------------


def test_backfill_interrupted_then_killed_resumes(engine: Engine, url: str) -> None:
    build_big_articles(engine)
    ok(cli(*ATTACH, "--no-backfill", url=url))

    # Ctrl-C at a terminal signals the whole process group, fingerprinting workers included.
    interrupted = subprocess.Popen(
        command(url, "backfill", "--table", "articles", "--batch-size", "500", "--workers", "2"),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment(),
        start_new_session=True,
    )
    try:
        wait_for_rows(engine, interrupted, 1000)
        os.killpg(interrupted.pid, signal.SIGINT)
        _, err = interrupted.communicate(timeout=30)  # returns only once the workers are gone too
    finally:
        if interrupted.poll() is None:
            os.killpg(interrupted.pid, signal.SIGKILL)
            interrupted.wait()
    message = err.decode()
    assert interrupted.returncode == 130, message
    assert "Run `simsql backfill --table articles` again to resume" in message
    assert "Traceback" not in message
    after_interrupt = progress(engine, "articles")[0]  # type: ignore[index]

    killed = subprocess.Popen(
        command(url, "backfill", "--table", "articles", "--batch-size", "500", "--workers", "0", "--no-progress"),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment(),
    )
    try:
        wait_for_rows(engine, killed, after_interrupt + 1000)  # a few more batches committed
        os.kill(killed.pid, signal.SIGKILL)
    finally:
        if killed.poll() is None:
            killed.kill()
        killed.communicate(timeout=30)
    assert killed.returncode == -signal.SIGKILL
    _resumes_after_the_kill(engine, url)


def _resumes_after_the_kill(engine: Engine, url: str) -> None:
    rows_done, last_key, phase = progress(engine, "articles")  # type: ignore[misc]
    assert phase == "scan" and last_key is not None and rows_done == last_key[0] < KILL_ROWS
    with engine.connect() as connection:
        # Each batch committed its fingerprints and the cursor together: exactly the rows up to
        # the cursor have fingerprints, none of the batch in flight survived.
        missing_before, written_after, empty_before = connection.execute(
            text(
                "SELECT count(*) FILTER (WHERE id <= :last AND simhash IS NULL AND body IS NOT NULL), "
                "count(*) FILTER (WHERE id > :last AND simhash IS NOT NULL), "
                "count(*) FILTER (WHERE id <= :last AND body IS NULL) FROM articles"
            ),
            {"last": last_key[0]},
        ).one()
    assert (missing_before, written_after) == (0, 0)

    rerun = ok(cli("backfill", "--table", "articles", "--batch-size", "2000", "--workers", "0", "--format", "json", url=url))
    summary = json.loads(rerun.stdout)
    assert summary["resumed"] is True
    # Finished batches were not read again: only the rest, plus the textless rows rechecked.
    assert summary["rows_read"] == KILL_ROWS - rows_done + empty_before < KILL_ROWS
    empty = KILL_ROWS // 97
    assert summary["rows_fingerprinted"] == KILL_ROWS - empty - (rows_done - empty_before)
    assert progress(engine, "articles")[2] == "done"  # type: ignore[index]
    _check_attached(engine, {})


# -- detach, status -----------------------------------------------------------------------


def test_prefix_status_detach_leave_the_table_as_before(engine: Engine, url: str) -> None:
    build_legacy(engine, rows=40)
    with engine.begin() as connection:
        connection.execute(text("ALTER TABLE articles ADD COLUMN simhash bigint"))  # the user's own
    before = snapshot(engine)
    failed(cli(*ATTACH, url=url), 1, "another column prefix")
    assert snapshot(engine) == before

    ok(cli(*ATTACH, "--prefix", "fp", "--backfill", "--workers", "0", url=url))
    status = json.loads(ok(cli("status", "--format", "json", url=url)).stdout)
    assert [(s["table"].split(".")[-1], s["mode"], s["prefix"]) for s in status] == [("articles", "columns", "fp")]
    assert (status[0]["rows"], status[0]["fingerprinted"], status[0]["missing"], status[0]["stale"]) == (40, 40, 0, 0)
    best = json.loads(ok(cli("similar", "--table", "articles", "--id", "19", "--limit", "1", "--format", "json", url=url)).stdout)
    assert best[0]["key"] == 20

    detached = ok(cli("detach", "--table", "articles", url=url))
    assert "as before attach" in detached.stdout
    assert snapshot(engine) == before
    assert json.loads(ok(cli("status", "--format", "json", url=url)).stdout) == []
    failed(cli("detach", "--table", "articles", url=url), 1, "not attached")


def test_a_registry_dropped_by_hand_breaks_no_command(engine: Engine, url: str) -> None:
    build_legacy(engine, rows=10)
    ok(cli(*ATTACH, "--backfill", "--workers", "0", url=url))
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE simsql_registry"))
    failed(cli("similar", "--table", "articles", "--id", "3", url=url), 1, "db upgrade")  # not silently unchecked
    ok(cli("db", "upgrade", url=url))
    assert _registry_exists(engine)
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE other (id int PRIMARY KEY, body text)"))
    ok(cli("attach", "--table", "other", "--text-column", "body", url=url))
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE simsql_registry"))
    ok(cli("db", "downgrade", url=url))
    assert not _registry_exists(engine)


def test_queries_behind_an_exclusive_lock_fail_instead_of_hanging(engine: Engine, url: str) -> None:
    build_legacy(engine, rows=20)
    ok(cli(*ATTACH, "--backfill", "--workers", "0", url=url))
    holder = engine.connect()
    holder.execute(text("LOCK TABLE articles IN ACCESS EXCLUSIVE MODE"))
    try:
        failed(cli("similar", "--table", "articles", "--text", "some words here", url=url, timeout=30), 1, "lock timeout")
        failed(cli("backfill", "--table", "articles", "--lock-timeout", "1s", url=url, timeout=30), 1, "gave up after waiting 1s")
    finally:
        holder.rollback()
        holder.close()


# -- on every server: a live table as a user's application has it ---------------------------------

DOCS = ("attach", "--table", "docs", "--text-column", "title", "--text-column", "body", "--no-wide")


def _the_table(found: dict[str, Any]) -> tuple[Any, ...]:
    """The user's table (definition, checksum) and every trigger: not simsql's own tables."""
    return found["create"], found["checksum"], found["triggers"]


def test_attach_status_similar_dupes_detach(any_engine: Engine, any_url: str) -> None:
    build_live_docs(any_engine)
    before = state(any_engine)

    attached = ok(cli(*DOCS, url=any_url))
    built = "built online" if is_mysql(any_engine) else "built concurrently"
    assert "installed simsql's registry (revision simsql_0002)" in attached.stdout
    assert "attached " in attached.stdout and f"block indexes ready ({built})" in attached.stdout
    assert "4 rows have no fingerprint yet" in attached.stdout and "simsql backfill --table docs" in attached.stdout
    assert ok(cli("db", "current", url=any_url)).stdout.split() == ["simsql_0002"]

    status = json.loads(ok(cli("status", "--format", "json", url=any_url)).stdout)
    assert [(s["table"].split(".")[-1], s["mode"], s["rows"], s["fingerprinted"], s["missing"]) for s in status] == [
        ("docs", "columns", 5, 0, 4)
    ]
    backfilled = ok(cli("backfill", "--table", "docs", url=any_url))
    assert "fingerprinted 4 rows" in backfilled.stdout, backfilled.stdout
    status = json.loads(ok(cli("status", "--format", "json", url=any_url)).stdout)
    assert (status[0]["fingerprinted"], status[0]["missing"], status[0]["stale"]) == (4, 0, 0)

    similar = json.loads(ok(cli("similar", "--table", "docs", "--id", "1", "--format", "json", url=any_url)).stdout)
    assert similar[0]["key"] == 2 and similar[0]["distance"] <= 3 and 1 not in [m["key"] for m in similar]
    by_text = ok(cli("similar", "--table", "docs", "--text", f"title\n{BODIES[3]}", "--limit", "1", "--format", "json", url=any_url))
    assert json.loads(by_text.stdout)[0]["key"] == 3 and json.loads(by_text.stdout)[0]["distance"] == 0
    groups = json.loads(ok(cli("dupes", "--table", "docs", "--format", "json", url=any_url)).stdout)
    assert groups == [{"size": 2, "keys": [1, 2]}]
    _detach_and_downgrade(any_engine, any_url, before)


def _detach_and_downgrade(engine: Engine, url: str, before: dict[str, Any]) -> None:
    failed(cli(*DOCS[:3], "--text-column", "body", url=url), 1, "already attached")
    detached = ok(cli("detach", "--table", "docs", url=url))
    assert "as before attach" in detached.stdout
    after = state(engine)
    assert _the_table(after) == _the_table(before) and after["registry"] == []
    assert json.loads(ok(cli("status", "--format", "json", url=url)).stdout) == []

    ok(cli("db", "downgrade", url=url))
    assert ok(cli("db", "current", url=url)).stdout == ""
    gone = state(engine)
    assert gone["registry"] is None  # the registry and cursors are dropped, and the version table
    assert set(gone["tables"]) - set(before["tables"]) == set()


# -- MySQL/MariaDB ---------------------------------------------------------------------------------


def test_side_table_and_clean_refusals(mysql_engine: Engine, mysql_cli_url: str) -> None:
    build_live_docs(mysql_engine, extra=", FULLTEXT KEY docs_body (body)")
    before = state(mysql_engine)
    failed(cli(*DOCS, url=mysql_cli_url), 1, "cannot do this online")
    assert _the_table(state(mysql_engine)) == _the_table(before)
    ok(cli(*DOCS, "--side-table", url=mysql_cli_url))
    with mysql_engine.connect() as connection:
        assert connection.execute(text("SELECT COUNT(*) FROM docs_simhash")).scalar() == 0
    ok(cli("detach", "--table", "docs", url=mysql_cli_url))
    failed(cli("detach", "--table", "docs", url=mysql_cli_url), 1, "not attached")


README_URL = "mysql://user:pass@host/dbname"


def test_the_readmes_mysql_commands_run_as_written(mysql_engine: Engine, mysql_cli_url: str) -> None:
    """docs/mysql.md's ``sh mysql`` block, line by line in one shell, with the test's database in
    place of the user's; on a table like the README's ``articles``."""
    from pathlib import Path

    from .readme import DOCS, blocks, commands

    (block,) = blocks("sh mysql", DOCS / "mysql.md")
    lines = commands(block)
    assert lines[0] == f"export DATABASE_URL={README_URL}"
    run(mysql_engine, "CREATE TABLE articles (id INT AUTO_INCREMENT PRIMARY KEY, title VARCHAR(200), body TEXT)")
    with mysql_engine.begin() as connection:
        for key, body in BODIES.items():
            connection.execute(text("INSERT INTO articles VALUES (:i, 'title', :b)"), {"i": key, "b": body})
    before = _create_and_checksum(mysql_engine)
    variables = environment()
    variables["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{variables.get('PATH', '')}"
    script = "set -e\n" + "\n".join(line.replace(README_URL, mysql_cli_url) for line in lines)
    result = subprocess.run(["bash", "-c", script], env=variables, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, f"stdout: {result.stdout}\nstderr: {result.stderr}"
    assert "attached " in result.stdout and "as before attach" in result.stdout
    assert "fingerprinted 5 rows" in result.stdout, result.stdout
    assert _create_and_checksum(mysql_engine) == before


def _create_and_checksum(engine: Engine) -> tuple[str, Any]:
    with engine.connect() as connection:
        return connection.execute(text("SHOW CREATE TABLE articles")).one()[1], connection.execute(text("CHECKSUM TABLE articles")).one()[1]
