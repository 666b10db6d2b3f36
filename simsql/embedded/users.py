"""Which processes use a cluster's server, so that the last one to exit stops it.

Every process that asked for the server is recorded in the data directory
(``.simsql_users.json``); at exit it drops itself, and the last one stops the server, because
a restart costs ~0.1 s and a server left behind the user's back would buy little. A process
killed by SIGKILL cannot run its ``atexit``; the next caller drops it from the record.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
from pathlib import Path

from .locking import file_lock, guard
from .paths import has_cluster
from .postmaster import identify, read_postmaster
from .server import stop_server

__all__ = ["USERS_FILE", "live_users", "read_users", "register_user", "release", "write_users"]

_log = logging.getLogger(__name__)

#: Which processes use a cluster (a JSON list of pids in the data dir).
USERS_FILE = ".simsql_users.json"

#: Data directories this process has registered an ``atexit`` release for.
_held: set[Path] = set()


def read_users(pgdata: Path) -> list[int]:
    """The recorded pids; empty when the record is missing or torn."""
    try:
        value = json.loads((pgdata / USERS_FILE).read_text(encoding="utf-8") or "[]")
    except (OSError, ValueError):
        return []  # missing, or torn by a killed process: rebuilt by the next users
    return [pid for pid in value if isinstance(pid, int)] if isinstance(value, list) else []


def write_users(pgdata: Path, pids: list[int]) -> None:
    """Replace the record; nothing when the data directory is gone."""
    with contextlib.suppress(FileNotFoundError):
        (pgdata / USERS_FILE).write_text(json.dumps(pids), encoding="utf-8")


def live_users(pgdata: Path) -> list[int]:
    """The recorded pids of other processes that are still alive."""
    import psutil  # type: ignore[import-untyped, unused-ignore]

    return [pid for pid in read_users(pgdata) if pid != os.getpid() and psutil.pid_exists(pid)]


def register_user(pgdata: Path) -> None:
    """Record this process as a user of the server, and stop it at exit if it is the last."""
    write_users(pgdata, [*live_users(pgdata), os.getpid()])
    if pgdata not in _held:
        _held.add(pgdata)
        atexit.register(release, pgdata)


def release(pgdata: Path) -> None:
    """At exit: drop this process from the record; the last user stops the server it can prove
    is the cluster's (never whatever the pid file names)."""
    if not has_cluster(pgdata):
        return  # removed while in use (a test's temporary directory): nothing left to stop
    try:
        with guard, file_lock(pgdata):
            _held.discard(pgdata)
            others = live_users(pgdata)
            write_users(pgdata, others)
            postmaster = read_postmaster(pgdata)
            if not others and postmaster is not None and identify(pgdata, postmaster) == "ours":
                stop_server(pgdata, postmaster)
    except Exception as exc:  # noqa: BLE001 - at exit there is nobody left to raise to
        _log.warning("could not stop the embedded PostgreSQL of %s: %s", pgdata, exc)
