"""Errors that reached users raw (issue 33 part 4): a half-attached table read by ``similar``
and ``dupes`` (a ``KeyError``), an undecodable ``--table`` (a ``UnicodeEncodeError``), a
64-character table name on MySQL/MariaDB (refused in PostgreSQL's terms though legal there)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from sqlalchemy import Engine, text

import simsql
from simsql.schema.names import Names

from .command_line import cli, command, environment, failed, ok
from .tables import is_mysql

TEXT = "the harvest came in late this year after a long and very wet summer in the valley"


def _legacy(engine: Engine, table: str = "legacy") -> None:
    with engine.begin() as connection:
        connection.execute(text(f"CREATE TABLE {table} (id int PRIMARY KEY, body text)"))
        connection.execute(text(f"INSERT INTO {table} VALUES (1, :a), (2, :b)"), {"a": TEXT, "b": TEXT + " again"})


def test_a_half_attached_table_names_the_attach_that_finishes_it(mysql_engine: Engine, mysql_cli_url: str) -> None:
    """Columns added, the attach killed before the block columns (MySQL/MariaDB run each ALTER
    on its own; PostgreSQL's attach is one transaction): what ``similar`` and ``dupes`` say
    leads to the command that finishes it."""
    any_engine, any_url = mysql_engine, mysql_cli_url
    _legacy(any_engine)
    simsql.attach_table(any_engine, "legacy", ["body"], indexes=False)
    with any_engine.begin() as connection:  # what the killed run had not made yet
        drops = ", ".join(f"DROP COLUMN {name}" for name in Names("legacy").blocks)
        connection.execute(text(f"ALTER TABLE legacy {drops}"))
    for args in (("similar", "--table", "legacy", "--id", "1"), ("dupes", "--table", "legacy")):
        result = cli(*args, url=any_url)
        failed(result, 1, "simsql attach --table legacy")
        assert "simhash_b0" in result.stderr, result.stderr
    ok(cli("attach", "--table", "legacy", "--text-column", "body", "--no-backfill", url=any_url))
    ok(cli("backfill", "--table", "legacy", "--no-progress", url=any_url))
    similar = json.loads(ok(cli("similar", "--table", "legacy", "--id", "1", "--format", "json", url=any_url)).stdout)
    assert [row["key"] for row in similar] == [2]


def test_an_undecodable_table_name_is_a_usage_error(any_url: str) -> None:
    """A shell passes bytes that are not UTF-8 (``$'\\xff'``): Python holds them as lone
    surrogates, which no driver can send."""
    env = {**environment(), "LC_ALL": "C.UTF-8"}
    for args in (("similar", "--table", b"t\xff".decode("utf-8", "surrogateescape"), "--id", "1"),
                 ("attach", "--table", "t", "--text-column", b"b\xff".decode("utf-8", "surrogateescape"))):  # fmt: skip
        argv = [os.fsencode(word) for word in command(any_url, *args)]
        result = subprocess.run(argv, capture_output=True, env=env, timeout=120)
        stderr = result.stderr.decode("utf-8", "replace")
        assert result.returncode == 2, stderr
        assert "Traceback" not in stderr and "not valid UTF-8" in stderr, stderr


def test_a_64_character_table_name_on_mysql(mysql_engine: Engine, mysql_cli_url: str) -> None:
    name = "a" * 64
    _legacy(mysql_engine, name)
    ok(cli("attach", "--table", name, "--text-column", "body", "--backfill", url=mysql_cli_url))
    similar = json.loads(ok(cli("similar", "--table", name, "--id", "1", "--format", "json", url=mysql_cli_url)).stdout)
    assert [row["key"] for row in similar] == [2]
    failed(cli("attach", "--table", "a" * 65, "--text-column", "body", url=mysql_cli_url), 1, "MySQL and MariaDB names hold at most 64")


@pytest.mark.parametrize("length", [64])
def test_a_64_byte_table_name_on_postgresql_is_refused_in_its_terms(engine: Engine, url: str, length: int) -> None:
    failed(cli("attach", "--table", "a" * length, "--text-column", "body", url=url), 1, "PostgreSQL names hold at most 63")
    assert not is_mysql(engine)
