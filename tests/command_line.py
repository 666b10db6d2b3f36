"""The ``simsql`` command line as a user runs it: a real subprocess, ``python -m simsql.cli``,
with no database URL inherited from the environment unless the test gives one."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

URL_VARIABLES = ("SIMSQL_DATABASE_URL", "DATABASE_URL")


def environment() -> dict[str, str]:
    """This process's environment without the variables the command line reads a URL from."""
    return {k: v for k, v in os.environ.items() if k not in URL_VARIABLES}


def command(url: str, *args: str) -> list[str]:
    """The argv of ``simsql --url <url> <args>``, for tests that start and stop it themselves."""
    return [sys.executable, "-m", "simsql.cli", "--url", url, *args]


def cli(
    *args: str,
    url: str | None = None,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run the real entry point; without ``input`` stdin is not a terminal (and is empty)."""
    variables = environment()
    variables.update(env or {})
    argv = [sys.executable, "-m", "simsql.cli", *(("--url", url) if url else ()), *args]
    return subprocess.run(
        argv,
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True,
        text=True,
        env=variables,
        timeout=timeout,
    )


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    return result


def failed(result: subprocess.CompletedProcess[str], code: int, message: str) -> None:
    """A clean failure: the exit code, one ``simsql: error:`` line, no traceback."""
    assert result.returncode == code, f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    assert "simsql: error:" in result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
