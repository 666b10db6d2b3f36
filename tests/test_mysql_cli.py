"""The ``simsql`` command line with a ``mysql://`` URL, run as a real subprocess against a
real MySQL/MariaDB: what a user types, on a database of the test's own."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import Engine, text

from .test_cli import cli, failed, ok
from .test_mysql_lifecycle import BODIES, _build, _state

ATTACH = ("attach", "--table", "docs", "--text-column", "title", "--text-column", "body")


def _the_table(state: dict[str, Any]) -> tuple[Any, ...]:
    """The user's table (definition, checksum) and every trigger: not simsql's own tables."""
    return state["create"], state["checksum"], state["triggers"]


@pytest.fixture
def url(mysql_engine: Engine) -> str:
    """The test's database as a user writes it: a plain ``mysql://`` URL (no driver named)."""
    return mysql_engine.url.set(drivername="mysql").render_as_string(hide_password=False)


def test_attach_status_similar_dupes_detach(mysql_engine: Engine, url: str) -> None:
    _build(mysql_engine)
    before = _state(mysql_engine)

    attached = ok(cli(*ATTACH, url=url))
    assert "installed simsql's registry (revision simsql_0001)" in attached.stdout
    assert "attached " in attached.stdout and "block indexes ready (built online)" in attached.stdout
    assert "4 rows have no fingerprint yet" in attached.stdout and "simsql backfill --table docs" in attached.stdout
    assert ok(cli("db", "current", url=url)).stdout.split() == ["simsql_0001"]

    status = json.loads(ok(cli("status", "--format", "json", url=url)).stdout)
    assert [(s["table"].split(".")[-1], s["mode"], s["rows"], s["fingerprinted"], s["missing"]) for s in status] == [
        ("docs", "columns", 5, 0, 4)
    ]
    backfilled = ok(cli("backfill", "--table", "docs", url=url))
    assert "fingerprinted 4 rows" in backfilled.stdout, backfilled.stdout
    status = json.loads(ok(cli("status", "--format", "json", url=url)).stdout)
    assert (status[0]["fingerprinted"], status[0]["missing"], status[0]["stale"]) == (4, 0, 0)

    similar = json.loads(ok(cli("similar", "--table", "docs", "--id", "1", "--format", "json", url=url)).stdout)
    assert similar[0]["key"] == 2 and similar[0]["distance"] <= 3 and 1 not in [m["key"] for m in similar]
    by_text = json.loads(
        ok(cli("similar", "--table", "docs", "--text", f"title\n{BODIES[3]}", "--limit", "1", "--format", "json", url=url)).stdout
    )
    assert by_text[0]["key"] == 3 and by_text[0]["distance"] == 0
    groups = json.loads(ok(cli("dupes", "--table", "docs", "--format", "json", url=url)).stdout)
    assert groups == [{"size": 2, "keys": [1, 2]}]

    failed(cli(*ATTACH[:3], "--text-column", "body", url=url), 1, "already attached")
    detached = ok(cli("detach", "--table", "docs", url=url))
    assert "as before attach" in detached.stdout
    after = _state(mysql_engine)
    assert _the_table(after) == _the_table(before) and after["registry"] == []
    assert json.loads(ok(cli("status", "--format", "json", url=url)).stdout) == []

    ok(cli("db", "downgrade", url=url))
    assert ok(cli("db", "current", url=url)).stdout == ""
    gone = _state(mysql_engine)
    assert gone["registry"] is None  # the registry and cursors are dropped, and the version table
    assert set(gone["tables"]) - set(before["tables"]) == set()


def test_side_table_and_clean_refusals(mysql_engine: Engine, url: str) -> None:
    _build(mysql_engine, extra=", FULLTEXT KEY docs_body (body)")
    before = _state(mysql_engine)
    failed(cli(*ATTACH, url=url), 1, "cannot do this online")
    assert _the_table(_state(mysql_engine)) == _the_table(before)
    ok(cli(*ATTACH, "--side-table", url=url))
    with mysql_engine.connect() as connection:
        assert connection.execute(text("SELECT COUNT(*) FROM docs_simhash")).scalar() == 0
    ok(cli("detach", "--table", "docs", url=url))
    failed(cli("detach", "--table", "docs", url=url), 1, "not attached")


README_URL = "mysql://user:pass@host/dbname"


def test_the_readmes_mysql_commands_run_as_written(mysql_engine: Engine, url: str) -> None:
    """The README's ``sh mysql`` block, line by line in one shell, with the test's database in
    place of the user's; on a table like the README's ``articles``."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from .readme import blocks, commands

    (block,) = blocks("sh mysql")
    lines = commands(block)
    assert lines[0] == f"export DATABASE_URL={README_URL}"
    with mysql_engine.begin() as connection:
        connection.execute(text("CREATE TABLE articles (id INT AUTO_INCREMENT PRIMARY KEY, title VARCHAR(200), body TEXT)"))
        for key, body in BODIES.items():
            connection.execute(text("INSERT INTO articles VALUES (:i, 'title', :b)"), {"i": key, "b": body})
        before = connection.execute(text("SHOW CREATE TABLE articles")).one()[1], connection.execute(text("CHECKSUM TABLE articles")).one()[1]
    bin_dir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if k not in ("SIMSQL_DATABASE_URL", "DATABASE_URL")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    script = "set -e\n" + "\n".join(line.replace(README_URL, url) for line in lines)
    result = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, f"stdout: {result.stdout}\nstderr: {result.stderr}"
    assert "attached " in result.stdout and "as before attach" in result.stdout
    assert "fingerprinted 5 rows" in result.stdout, result.stdout
    with mysql_engine.connect() as connection:
        after = connection.execute(text("SHOW CREATE TABLE articles")).one()[1], connection.execute(text("CHECKSUM TABLE articles")).one()[1]
    assert after == before
