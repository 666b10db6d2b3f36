"""The command line as a first-time user meets it (issue 23 item 8): the top-level help names
every server simsql runs on, an error is not preceded by an empty progress bar, an empty result
is not a lone table header, an unsupported URL is refused before anything is created, and a
configuration mismatch says which settings differ instead of printing 128 numbers."""

from __future__ import annotations

import random
import re
from pathlib import Path

from sqlalchemy import Engine, text

import simsql
import simsql.text.background
from tests.command_line import cli, failed, ok


def _notes(engine: Engine, rows: int = 0) -> None:
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE notes (id int PRIMARY KEY, body text)"))
        for key in range(1, rows + 1):
            connection.execute(text("INSERT INTO notes VALUES (:id, :body)"), {"id": key, "body": f"note number {key} about the harvest"})


def test_top_level_help_names_mysql_and_mariadb() -> None:
    shown = ok(cli("--help")).stdout
    assert "PostgreSQL" in shown and "MySQL/MariaDB" in shown


def test_no_progress_bar_before_an_error(any_url: str) -> None:
    result = cli("backfill", "--table", "missing", url=any_url)
    failed(result, 1, "missing")
    assert result.stderr.strip().splitlines() == [line for line in result.stderr.strip().splitlines() if line.startswith("simsql: error:")]
    assert "rows" not in result.stderr.split("simsql: error:")[0]


def test_an_empty_result_prints_no_lone_header(any_engine: Engine, any_url: str) -> None:
    status = ok(cli("status", url=any_url))
    assert status.stdout == ""
    assert "no table is attached" in status.stderr
    _notes(any_engine)
    ok(cli("attach", "--table", "notes", "--text-column", "body", "--no-concurrently", "--no-backfill", url=any_url))
    assert ok(cli("dupes", "--table", "notes", url=any_url)).stdout == ""
    assert ok(cli("similar", "--table", "notes", "--text", "the harvest came in late", url=any_url)).stdout == ""
    assert ok(cli("dupes", "--table", "notes", "--format", "csv", url=any_url)).stdout != ""  # programs get the header
    assert ok(cli("dupes", "--table", "notes", "--format", "json", url=any_url)).stdout.strip() == "[]"


def test_an_unsupported_url_is_refused_without_creating_anything(tmp_path: Path) -> None:
    database = tmp_path / "x.db"
    for command in (["status"], ["db", "upgrade"], ["attach", "--table", "t", "--text-column", "b"]):
        result = cli(*command, url=f"sqlite:///{database}")
        failed(result, 2, "sqlite")
        assert "PostgreSQL" in result.stderr and "MySQL" in result.stderr
        assert not database.exists()
    failed(cli("demo", "--url", f"sqlite:///{database}"), 2, "sqlite")
    assert not database.exists()


def _background(tmp_path: Path, seed: int) -> Path:
    rng = random.Random(seed)
    words = [f"w{rng.randrange(400)}" for _ in range(3000)]
    texts = [" ".join(rng.sample(words, 25)) for _ in range(150)]
    path = tmp_path / f"background-{seed}.json"
    simsql.text.background.Background.fit(texts).save(path)
    return path


def test_a_config_mismatch_names_the_settings_that_differ(any_engine: Engine, any_url: str, tmp_path: Path) -> None:
    _notes(any_engine, rows=3)
    first, second = _background(tmp_path, 1), _background(tmp_path, 2)
    attach = ["attach", "--table", "notes", "--text-column", "body", "--no-concurrently", "--no-backfill"]
    ok(cli(*attach, "--background", str(first), url=any_url))
    result = cli(*attach, "--background", str(second), url=any_url)
    failed(result, 1, "background")
    message = result.stderr.split("simsql: error:", 1)[1]
    assert len(re.findall(r"\d+\.\d+", message)) < 4, message  # not the 128 centres
    assert len(message) < 600, message
