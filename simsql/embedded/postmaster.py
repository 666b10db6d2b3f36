"""What ``postmaster.pid`` says about a cluster's server, and whether it is true.

A pid alone proves nothing: after a reboot it often belongs to another program, even another
PostgreSQL. A server counts as this cluster's only when its process runs in the data directory
(PostgreSQL changes into it) and started when the file says; anything else is never signalled
nor connected to, and its pid file is stale. A process that cannot be inspected is neither.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .errors import EmbeddedPostgresUnavailable
from .paths import SOCKET_PORT, socket_dir
from .url import server_url

__all__ = [
    "NOT_READY_WAIT_S", "START_TIME_SLACK_S", "Identity", "Postmaster", "identify", "read_postmaster",
    "remove_stale_lock_files", "settled_server",
]  # fmt: skip

_log = logging.getLogger(__name__)

#: How long to wait for a server that is up but not yet (or no longer) accepting connections.
NOT_READY_WAIT_S = 30.0
#: Between a postmaster's process creation and the start time it writes in postmaster.pid.
START_TIME_SLACK_S = 5.0

Identity = Literal["ours", "gone", "unknown"]


@dataclass(frozen=True)
class Postmaster:
    """What ``postmaster.pid`` says about a server (not whether it is true: see :func:`identify`)."""

    pid: int
    data_dir: Path | None
    start_time: int | None
    port: int
    socket_dir: Path | None
    host: str | None
    status: str

    def url(self) -> str:
        """The SQLAlchemy URL that reaches this server."""
        return server_url(self.socket_dir, self.host, self.port)


def _int_or_none(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def read_postmaster(pgdata: Path) -> Postmaster | None:
    """Parse ``postmaster.pid`` leniently: a server that died while starting leaves it short,
    and that must read as "not running", not crash the caller."""
    try:
        lines = (pgdata / "postmaster.pid").read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise EmbeddedPostgresUnavailable(
            f"Cannot read {pgdata / 'postmaster.pid'} ({exc}). Check the permissions of {pgdata}."
        ) from exc
    fields = [line.strip() for line in lines] + [""] * 8
    return Postmaster(
        pid=_int_or_none(fields[0]) or 0,
        data_dir=Path(fields[1]) if fields[1] else None,
        start_time=_int_or_none(fields[2]),
        port=_int_or_none(fields[3]) or SOCKET_PORT,
        socket_dir=Path(fields[4]) if fields[4] else None,
        host=fields[5] or None,
        status=fields[7] or "starting",
    )


def identify(pgdata: Path, postmaster: Postmaster) -> Identity:
    """``"ours"`` only when the pid is a live process that runs in this data directory (a
    postmaster's working directory is its data directory) and was created when the file says;
    ``"gone"`` when the pid is free or provably another program; ``"unknown"`` otherwise.

    A pid alone proves nothing: after a reboot it often belongs to another program, even
    another PostgreSQL, and signalling it would shut down someone else's server.
    """
    import psutil  # type: ignore[import-untyped, unused-ignore]

    if postmaster.pid <= 0 or postmaster.pid == os.getpid():
        return "gone"
    try:
        process = psutil.Process(postmaster.pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return "gone"
        cwd = Path(process.cwd()).resolve()
        created = process.create_time()
    except psutil.NoSuchProcess:
        return "gone"
    except psutil.Error:
        # No right to look: a postmaster of a data directory we own runs as us, so a process
        # we may not inspect is not this cluster's, unless it is root's account handling.
        return "unknown" if _looks_like_postgres(postmaster.pid) else "gone"
    if cwd != pgdata:
        return "gone"
    recorded = postmaster.data_dir.resolve() if postmaster.data_dir is not None else None
    if recorded != pgdata or postmaster.start_time is None:
        return "unknown"
    return "ours" if abs(created - postmaster.start_time) <= START_TIME_SLACK_S else "unknown"


def _looks_like_postgres(pid: int) -> bool:
    import psutil  # type: ignore[import-untyped, unused-ignore]

    try:
        return psutil.Process(pid).name().lower().startswith("postgres")
    except psutil.Error:
        return False


def settled_server(pgdata: Path) -> Postmaster | None:
    """This cluster's server once it accepts connections, or None when none runs; waits out one
    that is starting or shutting down instead of racing it."""
    deadline = time.monotonic() + NOT_READY_WAIT_S
    while True:
        postmaster = read_postmaster(pgdata)
        if postmaster is None:
            return None
        identity = identify(pgdata, postmaster)
        if identity == "gone":
            return None
        if identity == "unknown":
            raise EmbeddedPostgresUnavailable(
                f"{pgdata / 'postmaster.pid'} names pid {postmaster.pid}, a process simsql cannot prove "
                "is this cluster's server (it may belong to another user or program), so simsql will "
                "neither use nor stop it. If no PostgreSQL runs on this directory, delete "
                "postmaster.pid and try again."
            )
        socket_ok = postmaster.socket_dir is None or (
            postmaster.socket_dir / f".s.PGSQL.{postmaster.port}"
        ).exists()
        if postmaster.status == "ready" and socket_ok:
            return postmaster
        if time.monotonic() > deadline:
            raise EmbeddedPostgresUnavailable(
                f"A PostgreSQL server (pid {postmaster.pid}, status {postmaster.status!r}) runs on "
                f"{pgdata} but has not accepted connections for {NOT_READY_WAIT_S:.0f} s. See "
                f"{pgdata / 'log'}; stop it (simsql.embedded.stop_embedded) and try again."
            )
        time.sleep(0.1)


def remove_stale_lock_files(pgdata: Path) -> None:
    """Remove the lock files of a server that is gone: PostgreSQL refuses to start while the
    recorded pid belongs to any live process, even one that is not PostgreSQL."""
    postmaster = read_postmaster(pgdata)
    if postmaster is None or identify(pgdata, postmaster) != "gone":
        return
    _log.info("removing stale postmaster.pid of %s (pid %s is not its server)", pgdata, postmaster.pid)
    stale = [pgdata / "postmaster.pid"]
    if postmaster.socket_dir is not None and postmaster.socket_dir.resolve() in (pgdata, socket_dir(pgdata)):
        # Only our own socket directory: a forged or stale file may name another server's.
        stale.append(postmaster.socket_dir / f".s.PGSQL.{postmaster.port}.lock")
        stale.append(postmaster.socket_dir / f".s.PGSQL.{postmaster.port}")
    for path in stale:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
