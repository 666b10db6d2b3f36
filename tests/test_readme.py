"""Every ```python block of the README runs as written, in order, in one fresh interpreter given
only ``DATABASE_URL`` (the test's database and schema), so the README cannot drift from the code;
and runs again, unchanged, on the same database (a newcomer's second try).

Blocks with another info string are run elsewhere: ``python alembic-revision`` and
``python alembic-after`` belong to the Alembic walk-through (tests/test_readme_alembic.py). The
pages of docs/ are run by tests/test_docs.py.
"""

from __future__ import annotations

from sqlalchemy import Engine

from tests.command_line import cli, ok
from tests.readme import README, blocks, check_print_claims, commands, print_claims, python_blocks, run_blocks


def _readme_blocks(server: str) -> list[str]:
    code = python_blocks(README, server)
    assert len(code) >= 2, f"{README} lost its examples"
    return code


def test_readme_python_blocks_run_and_print_what_their_comments_say(url: str) -> None:
    """A ``print(...)  # prints X`` (or ``# e.g. X``) in the README is a promise to a newcomer
    running it: X must be in what the blocks print. (The duplicate_groups example once said
    ``[[1, 2]]`` over rows 4 bits apart, past its 3-bit default, and printed ``[]``.)"""
    code = _readme_blocks("postgresql")
    assert print_claims(code), "the README's examples no longer say what they print"
    check_print_claims(code, run_blocks(code, "README.md", url), "README.md")


def test_readme_runs_twice_in_a_row(url: str) -> None:
    """Issue 23: the examples wrote fixed rows into a shared table and failed the second time.
    Run twice on the same database, they succeed and print the same."""
    code = _readme_blocks("postgresql")
    assert run_blocks(code, "README.md", url) == run_blocks(code, "README.md", url)


def test_readme_python_blocks_run_on_mysql_unchanged(mysql_engine: Engine) -> None:
    """The README says MySQL and MariaDB run "the same models and queries": its examples, given a
    ``mysql://`` DATABASE_URL and nothing else, must run as written (a newcomer's first try)."""
    code = _readme_blocks("mysql")
    mysql_url = mysql_engine.url.set(drivername="mysql").render_as_string(hide_password=False)
    check_print_claims(code, run_blocks(code, "README.md", mysql_url), "README.md")


def test_the_first_model_is_seen_by_the_command_line(any_engine: Engine, any_url: str) -> None:
    """Issue 33: the README's first model, on a database where simsql was never installed, then
    the commands the README gives right after it, as typed: each works (status lists the table,
    similar and dupes find the copy, backfill has nothing left to do)."""
    mysql = any_engine.dialect.name in ("mysql", "mariadb")
    code = _readme_blocks("mysql" if mysql else "postgresql")
    run_blocks(code, "README.md", any_url)
    (block,) = blocks("sh first-model")
    typed = [command for command in commands(block) if command.startswith("simsql ")]  # the export names the URL given here
    printed = [ok(cli(*command.split()[1:], url=any_url)).stdout for command in typed]
    assert "simsql_example_articles" in printed[0]
    assert len(printed) == 4 and all(printed), printed


def test_the_first_model_commands_run_as_typed_on_the_embedded_default() -> None:
    """A newcomer with no server and no DATABASE_URL runs the README's first model (on the
    embedded PostgreSQL, its default), then the commands under it, typed as they are, in a
    shell: they must reach that same database (they stopped at "no database URL")."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = _readme_blocks("postgresql")
    environment = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SIMSQL_DATABASE_URL")}
    first = subprocess.run([sys.executable, "-c", code[0]], env=environment, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    (block,) = blocks("sh first-model")
    script = "set -e\n" + block
    bin_dir = str(Path(sys.executable).parent)
    environment["PATH"] = bin_dir + os.pathsep + environment.get("PATH", "")
    shell = subprocess.run(["bash", "-c", script], env=environment, capture_output=True, text=True, timeout=600)
    assert shell.returncode == 0, shell.stdout + shell.stderr
    assert "simsql_example_articles" in shell.stdout
