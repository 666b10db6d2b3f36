"""A fork server for the command line tests: ``python -m simsql.cli`` (and ``alembic``) without
paying for Python's start-up and the imports on every call.

Each ``cli(...)`` call of the tests used to start a fresh interpreter that imported SQLAlchemy,
numpy and simsql before doing a few milliseconds of work: about 0.5 s of CPU per call, a few
hundred calls per run, on a CI machine with two cores. This server imports ``simsql.cli`` and
Alembic's command line once,
then forks one child per call, as ``multiprocessing``'s forkserver does. The child is still a
separate process running the real entry point (``runpy`` of ``simsql.cli``, exactly what ``-m``
runs; ``alembic``'s ``__main__`` for the ``alembic`` command) with the caller's argv,
environment, working directory and its own stdin, stdout and
stderr (file descriptors passed over a Unix socket); its exit status is the process's. What it
does not repeat is the interpreter start-up and the imports, so tests that are about those (the
console script, import-time behaviour, hash seeds) start a real ``subprocess`` themselves.

The server holds no database connection (importing simsql opens none), so no child inherits one.

Protocol, one connection per call: the client sends stdin, stdout and stderr with a one-byte
message (``socket.send_fds``), then a length-prefixed JSON request ``{"module", "argv", "env",
"cwd"}`` (``module``: one of :data:`MODULES`).
The server answers ``{"pid": N}`` once the child exists and ``{"status": S}`` (``os.waitpid``'s
status) when it has ended, one JSON document per line.
"""

from __future__ import annotations

import json
import os
import runpy
import socket
import struct
import sys
import threading
import traceback
from typing import Any

HEADER = struct.Struct("!I")
LIFELINE: list[int] = []  # the read end of the pipe whose end means the test session ended


def _receive_exactly(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise EOFError("the client went away")
        data += chunk
    return data


MODULES = frozenset({"simsql.cli", "alembic", "tests.run_blocks"})
"""What a child may become: ``python -m <module>``."""


def _child(request: dict[str, Any], fds: list[int], listener: socket.socket, connection: socket.socket) -> None:
    """Become ``python -m <module> <argv>``; never returns."""
    code = 1
    try:
        listener.close()
        connection.close()
        os.close(LIFELINE[0])
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.argv = [sys.argv[0], *request["argv"]]  # runpy sets argv[0] to the module's file, as -m does
        try:
            module = request.get("module", "simsql.cli")
            if module not in MODULES:
                raise ValueError(f"the fork server runs {sorted(MODULES)}, not {module!r}")
            runpy.run_module(module, run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exit_:
            if exit_.code is None:
                code = 0
            elif isinstance(exit_.code, int):
                code = exit_.code
            else:
                print(exit_.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def _reap(connection: socket.socket, pid: int) -> None:
    _, status = os.waitpid(pid, 0)
    try:
        connection.sendall(json.dumps({"status": status}).encode() + b"\n")
    finally:
        connection.close()


def _exit_at_eof(fd: int) -> None:
    # os.read, not sys.stdin: a thread blocked inside a Python file object holds its lock, and a
    # child forked meanwhile would inherit it locked (and hang on its first read of stdin).
    while os.read(fd, 1):
        pass
    os._exit(0)


def serve(path: str, lifeline: int) -> None:
    """Listen on the Unix socket ``path`` until the pipe ``lifeline`` ends (the session ended)."""
    import alembic.command  # noqa: F401  (the imports every child shares)
    import alembic.config  # noqa: F401

    import simsql.alembic  # noqa: F401
    import simsql.cli  # noqa: F401

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    LIFELINE.append(lifeline)
    threading.Thread(target=_exit_at_eof, args=(lifeline,), daemon=True).start()
    print("ready", flush=True)
    while True:
        connection, _ = listener.accept()
        try:
            _, fds, _, _ = socket.recv_fds(connection, 1, 3)
            (size,) = HEADER.unpack(_receive_exactly(connection, HEADER.size))
            request = json.loads(_receive_exactly(connection, size))
        except (EOFError, OSError, ValueError):
            connection.close()
            continue
        pid = os.fork()
        if pid == 0:
            _child(request, fds, listener, connection)
        for fd in fds:
            os.close(fd)
        connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        threading.Thread(target=_reap, args=(connection, pid), daemon=True).start()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
