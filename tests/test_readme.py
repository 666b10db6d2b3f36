"""Every ```python block of the README runs as written, in order, in one fresh interpreter given
only ``DATABASE_URL`` (the test's database and schema), so the README cannot drift from the code.

Blocks with another info string are run elsewhere: ``python alembic-revision`` and
``python alembic-after`` belong to the Alembic walk-through (tests/test_readme_alembic.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from sqlalchemy import Engine, make_url

from tests.readme import README, blocks

RUNNER = """
import sys
namespace = {"__name__": "__main__"}
for number, code in enumerate(BLOCKS, 1):
    print(f"--- block {number}", flush=True)
    exec(compile(code, f"README.md python block {number}", "exec"), namespace)
"""


@pytest.fixture
def url(database_url: str, schema: str) -> str:
    return make_url(database_url).update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(
        hide_password=False
    )


def _run_blocks(database_url: str) -> str:
    """Run the README's ```python blocks in order in a fresh interpreter given only DATABASE_URL."""
    code = blocks("python")
    assert len(code) >= 4, f"{README} lost its examples"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIMSQL_", "DATABASE_URL"))}
    env["DATABASE_URL"] = database_url
    result = subprocess.run(
        [sys.executable, "-c", f"BLOCKS = {code!r}\n{RUNNER}"],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.stdout.count("--- block") == len(code)
    return result.stdout


_PRINT_CLAIM = re.compile(r"^\s*print\(.*\)\s*#\s*(?:prints|e\.g\.)\s+(.+?)\s*$", re.MULTILINE)


def test_readme_python_blocks_run_in_order(url: str) -> None:
    _run_blocks(url)


def test_readme_prints_what_its_comments_say(url: str) -> None:
    """A ``print(...)  # prints X`` (or ``# e.g. X``) in the README is a promise to a newcomer
    running it: X must be in what the blocks print. (The duplicate_groups example once said
    ``[[1, 2]]`` over rows 4 bits apart, past its 3-bit default, and printed ``[]``.)"""
    _check_print_claims(_run_blocks(url))


def _check_print_claims(printed: str) -> None:
    claims = [claim for code in blocks("python") for claim in _PRINT_CLAIM.findall(code)]
    assert claims, "the README's examples no longer say what they print"
    for claim in claims:
        assert claim in printed, f"README promises {claim!r}; the blocks printed:\n{printed}"


def test_readme_python_blocks_run_on_mysql_unchanged(mysql_engine: Engine) -> None:
    """The README says MySQL and MariaDB run "the same models and queries": its examples, given a
    ``mysql://`` DATABASE_URL and nothing else, must run as written (a newcomer's first try)."""
    _check_print_claims(_run_blocks(mysql_engine.url.set(drivername="mysql").render_as_string(hide_password=False)))
