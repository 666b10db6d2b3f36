"""The ``simsql`` command line as a user runs it: a separate process running ``python -m
simsql.cli``, with no database URL inherited from the environment unless the test gives one.

``cli`` forks it from tests/cli_forkserver.py (one interpreter that has imported simsql, shared
by the session: the calls skip Python's start-up and the imports, not the process); ``command``
gives the argv of a fresh interpreter, for tests that start, signal and stop it themselves.
``SIMSQL_TEST_CLI_FORKSERVER=0`` makes ``cli`` start a fresh interpreter each time too.
"""

from __future__ import annotations

import atexit
import json
import locale
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from .cli_forkserver import HEADER

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
    arguments = [*(("--url", url) if url else ()), *args]
    server = _forkserver()
    if server is not None:
        return server.run(arguments, input, variables, timeout)
    argv = [sys.executable, "-m", "simsql.cli", *arguments]
    return subprocess.run(
        argv,
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True,
        text=True,
        env=variables,
        timeout=timeout,
    )


_SHELL_SYNTAX = frozenset("|&;<>()$`\\\n~")
"""Characters that make ``/bin/sh`` do more than split words and remove quotes. Glob characters
are not among them: the commands' URLs hold ``?`` and no file in a test's directory matches
them, so ``/bin/sh`` passes them on as they are."""
FORKED_COMMANDS = {"simsql": "simsql.cli", "alembic": "alembic"}


def shell(command: str, cwd: Path, env: Mapping[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """A command line as a user types it in ``cwd``. A plain ``simsql ...`` or ``alembic ...``
    (quotes and comments, no operators or expansions) is forked from the session's fork server,
    as ``cli`` does, with the words ``/bin/sh`` would give it; anything else goes to ``/bin/sh``."""
    server = _forkserver()
    words = [] if _SHELL_SYNTAX.intersection(command) else shlex.split(command, comments=True)
    if server is None or not words or words[0] not in FORKED_COMMANDS:
        return subprocess.run(command, shell=True, cwd=cwd, env=dict(env), capture_output=True, text=True,
                              timeout=timeout, check=False)  # fmt: skip
    return server.run(words[1:], None, env, timeout, module=FORKED_COMMANDS[words[0]], cwd=str(cwd))


def python_module(
    module: str, arguments: list[str], cwd: Path, env: Mapping[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python -m <module> <arguments>`` in ``cwd`` with exactly ``env``: forked from the
    session's fork server when there is one (for modules it runs), else a fresh interpreter."""
    server = _forkserver()
    if server is None:
        return subprocess.run([sys.executable, "-m", module, *arguments], cwd=cwd, env=dict(env), capture_output=True,
                              text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)  # fmt: skip
    return server.run(arguments, None, env, timeout, module=module, cwd=str(cwd))


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    return result


def kill_when(argv: list[str], reached: Callable[[], bool], timeout: float = 120) -> None:
    """Start the command ``argv`` and SIGKILL it as soon as ``reached()`` is true (polled every
    10 ms): a kill -9 in the middle of a long job. Fails if the command ends first or makes no
    progress within ``timeout`` seconds."""
    killed = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment())
    try:
        deadline = time.monotonic() + timeout
        while not reached():
            assert killed.poll() is None, f"{argv[3:5]} ended before it could be killed: {killed.communicate()}"
            assert time.monotonic() < deadline, f"{argv[3:5]} made no progress"
            time.sleep(0.01)
        os.kill(killed.pid, signal.SIGKILL)
    finally:
        if killed.poll() is None:
            killed.kill()
        killed.wait()


def failed(result: subprocess.CompletedProcess[str], code: int, message: str) -> None:
    """A clean failure: the exit code, one ``simsql: error:`` line, no traceback."""
    assert result.returncode == code, f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    assert "simsql: error:" in result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


class _ForkServer:
    """The client of tests/cli_forkserver.py; one per test session, started on first use."""

    def __init__(self) -> None:
        self.directory = tempfile.mkdtemp(prefix="simsql-cli-")
        self.path = os.path.join(self.directory, "socket")
        root = Path(__file__).resolve().parent.parent
        lifeline, self.lifeline = os.pipe()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.cli_forkserver", self.path, str(lifeline)],
            cwd=root, env=environment(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True, pass_fds=[lifeline],
        )
        os.close(lifeline)
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != "ready":
            raise RuntimeError("the command line's fork server did not start")
        atexit.register(self.close)

    def close(self) -> None:
        if self.process.poll() is None:
            os.close(self.lifeline)  # the server exits when this pipe ends
            self.process.wait(timeout=10)

    def run(
        self, arguments: list[str], input: str | None, env: Mapping[str, str], timeout: float,
        module: str = "simsql.cli", cwd: str | None = None,
    ) -> subprocess.CompletedProcess[str]:  # fmt: skip
        encoding = locale.getpreferredencoding(False)
        with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
            if input is None:
                stdin_file: IO[Any] = open(os.devnull, "rb")
            else:
                stdin.write(input.encode(encoding))
                stdin.seek(0)
                stdin_file = stdin
            try:
                request = {"module": module, "argv": arguments, "env": dict(env), "cwd": cwd or os.getcwd()}
                status = self._call(request, [stdin_file.fileno(), stdout.fileno(), stderr.fileno()], timeout)
            finally:
                if input is None:
                    stdin_file.close()
            stdout.seek(0)
            stderr.seek(0)
            argv = [sys.executable, "-m", module, *arguments]
            out, err = stdout.read().decode(encoding), stderr.read().decode(encoding)
            if status is None:
                raise subprocess.TimeoutExpired(argv, timeout, out, err)
            return subprocess.CompletedProcess(argv, os.waitstatus_to_exitcode(status), out, err)

    def _call(self, request_fields: dict[str, Any], fds: list[int], timeout: float) -> int | None:
        """The child's wait status, or None when it outlived ``timeout`` (it is then killed)."""
        request = json.dumps(request_fields).encode()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(self.path)
            socket.send_fds(connection, [b"x"], fds)
            connection.sendall(HEADER.pack(len(request)) + request)
            replies = connection.makefile("r")
            pid = json.loads(replies.readline())["pid"]
            killed = threading.Event()

            def kill() -> None:
                killed.set()
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass

            timer = threading.Timer(timeout, kill)
            timer.start()
            try:
                status = int(json.loads(replies.readline())["status"])
            finally:
                timer.cancel()
            return None if killed.is_set() else status


_SERVER: list[_ForkServer | None] = []


def _forkserver() -> _ForkServer | None:
    """The session's fork server, or None where there is none (not Linux/macOS, or turned off)."""
    if os.environ.get("SIMSQL_TEST_CLI_FORKSERVER", "1") == "0" or not hasattr(os, "fork"):
        return None
    if not _SERVER:
        _SERVER.append(_ForkServer())
    return _SERVER[0]
