"""Starting and stopping the server process.

On POSIX the server listens on a Unix socket (in its data directory, or a private 0700
directory for a path too long for a socket) and on no TCP port, so it never collides with a
system PostgreSQL on 5432 and nothing outside the machine can reach it. On Windows, where the
wheel has no socket support, it listens on a free 127.0.0.1 port picked at start.
"""

from __future__ import annotations

import shlex
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from .account import account_kwargs, run_tool
from .errors import EmbeddedPostgresUnavailable, tail
from .install import exe, wheel_install
from .paths import SOCKET_PORT, socket_dir
from .postmaster import Postmaster

__all__ = ["START_TIMEOUT_S", "STOP_TIMEOUT_S", "start", "start_failure", "stop_server"]

START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 60.0


def start(install: Path, pgdata: Path) -> None:
    """``pg_ctl start``: no TCP listener on POSIX (a Unix socket only), a free loopback port on
    Windows, where the wheel has no socket support."""
    if sys.platform == "win32":
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        options = f'-h 127.0.0.1 -p {port}'
    else:
        # pg_ctl hands -o to a shell, hence the quoting.
        options = f"-h '' -k {shlex.quote(str(socket_dir(pgdata)))} -p {SOCKET_PORT}"
    command = [exe(install, "pg_ctl"), "-D", str(pgdata), "-l", str(pgdata / "log"), "-o", options,
               "-w", "-t", str(START_TIMEOUT_S), "start"]  # fmt: skip
    try:
        # Output goes to files: pg_ctl's children may keep pipes open past its exit.
        with tempfile.TemporaryFile("w+") as output:
            subprocess.run(command, check=True, stdout=output, stderr=subprocess.STDOUT, text=True,
                           timeout=START_TIMEOUT_S + 10, **account_kwargs())  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        raise EmbeddedPostgresUnavailable(start_failure(pgdata, exc)) from exc


def stop_server(pgdata: Path, postmaster: Postmaster) -> None:
    """Fast shutdown (roll back open transactions, then checkpoint), then immediate shutdown if
    that hangs. Only called for a server :func:`.postmaster.identify` proved is this cluster's;
    psutil checks again that the pid still is that process before each signal."""
    import psutil  # type: ignore[import-untyped, unused-ignore]

    try:
        process = psutil.Process(postmaster.pid)
        if sys.platform == "win32":
            run_tool([exe(wheel_install(), "pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "stop"],
                     STOP_TIMEOUT_S)  # fmt: skip
        else:
            process.send_signal(signal.SIGINT)  # PostgreSQL's fast shutdown
        try:
            process.wait(STOP_TIMEOUT_S)
        except psutil.TimeoutExpired:
            process.send_signal(getattr(signal, "SIGQUIT", signal.SIGTERM))  # immediate shutdown
            process.wait(10)
    except psutil.NoSuchProcess:
        return
    except (psutil.Error, OSError, subprocess.SubprocessError) as exc:
        raise EmbeddedPostgresUnavailable(
            f"Could not stop the PostgreSQL server (pid {postmaster.pid}) of {pgdata}: {exc}. Stop it by hand."
        ) from exc


def start_failure(pgdata: Path, exc: BaseException | None) -> str:
    """The message for a server that did not start: the cause, if known, and the log's tail."""
    reason = f" ({type(exc).__name__}: {exc})" if exc is not None else ""
    log = pgdata / "log"
    try:
        log_tail = tail(log.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        log_tail = "(no log)"
    return (
        f"The embedded PostgreSQL did not start from {pgdata}{reason}.\n"
        f"Last lines of {log}:\n{log_tail}\n"
        "If another program uses this directory, stop it; otherwise remove the directory to start "
        "afresh, or give simsql the URL of an existing PostgreSQL >= 14."
    )
