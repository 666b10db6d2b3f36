"""Under root: the system account that runs PostgreSQL, and which paths root may hand to it.

``initdb`` and ``postgres`` refuse to run as root, so under root they run as ``simsql-pg``, a
system account nobody can log in as. No permission of an existing directory is ever changed:
a path the account cannot reach, or one other users could swap, is refused with the reason.
As a normal user every function here is a no-op.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

from .errors import EmbeddedPostgresUnavailable
from .paths import ROOT_HOME, is_root

__all__ = [
    "ACCOUNT", "account_kwargs", "blocking_ancestor", "check_location", "check_written_path", "ensure_account", "run_tool",
]  # fmt: skip

_log = logging.getLogger(__name__)

#: The system account that runs the server under root (PostgreSQL refuses root).
ACCOUNT = "simsql-pg"


def ensure_account() -> tuple[int, int]:
    """The server's account under root, created as a system account nobody can log in as."""
    import pwd

    try:
        entry = pwd.getpwnam(ACCOUNT)
    except KeyError:
        useradd = shutil.which("useradd")
        if useradd is None:
            raise EmbeddedPostgresUnavailable(
                f"Running as root: PostgreSQL refuses to run as root, so it must run as the system "
                f"account {ACCOUNT!r}, which does not exist and cannot be created here (no `useradd`). "
                f"Create it (`adduser -S -s /sbin/nologin {ACCOUNT}`), run as a normal user, or give "
                "simsql a database URL."
            ) from None
        nologin = shutil.which("nologin") or "/bin/false"
        command = [useradd, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                   "--shell", nologin, "--comment", "simsql embedded PostgreSQL", ACCOUNT]  # fmt: skip
        try:
            subprocess.run(command, check=True, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as exc:
            detail = getattr(exc, "stderr", "") or exc
            raise EmbeddedPostgresUnavailable(
                f"Could not create the system account {ACCOUNT!r} that runs PostgreSQL under root "
                f"({detail}). Create it yourself, run as a normal user, or give simsql a database URL."
            ) from exc
        _log.info("created the system account %s (shell %s) to run PostgreSQL", ACCOUNT, nologin)
        entry = pwd.getpwnam(ACCOUNT)
    return entry.pw_uid, entry.pw_gid


def account_kwargs() -> dict[str, Any]:
    """``subprocess`` arguments that run a PostgreSQL tool as the server's account under root,
    without root's supplementary groups; none otherwise."""
    if not is_root():
        return {}
    uid, gid = ensure_account()
    return {"user": uid, "group": gid, "extra_groups": []}


def run_tool(command: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a PostgreSQL tool as the server's account; raises on a non-zero exit or timeout."""
    return subprocess.run(command, check=True, capture_output=True, text=True, timeout=timeout, **account_kwargs())


def blocking_ancestor(path: Path, uid: int, gid: int) -> Path | None:
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


def check_location(pgdata: Path) -> None:
    """Refuse, with the reason, a data directory root cannot hand safely to the account."""
    if not is_root():
        return
    uid, gid = ensure_account()
    existing = [p for p in reversed(pgdata.parents) if p.exists()]
    for directory in existing:
        mode = directory.stat().st_mode
        if mode & (stat.S_IWGRP | stat.S_IWOTH) and not mode & stat.S_ISVTX:
            raise EmbeddedPostgresUnavailable(
                f"Running as root, the data directory {pgdata} lies below {directory}, which is "
                f"writable by other users (mode {stat.filemode(mode)}): anyone could replace the "
                "cluster with their own. Use a directory only root can write to (the default "
                f"{ROOT_HOME / 'pg'}), or run as a normal user."
            )
    blocking = blocking_ancestor(existing[-1] / "_", uid, gid) if existing else None
    if blocking is not None:
        raise EmbeddedPostgresUnavailable(
            f"Running as root, PostgreSQL runs as the account {ACCOUNT!r}, which cannot enter "
            f"{blocking} (mode {stat.filemode(blocking.stat().st_mode)}), above the data directory "
            f"{pgdata}. simsql changes no permission outside its data directory: use a data "
            f"directory the account can reach (the default {ROOT_HOME / 'pg'}, or SIMSQL_HOME="
            f"{ROOT_HOME}), or run as a normal user."
        )
    if (pgdata / "PG_VERSION").exists() and pgdata.stat().st_uid != uid:
        import pwd

        owner = pgdata.stat().st_uid
        with contextlib.suppress(KeyError):
            owner = pwd.getpwuid(owner).pw_name  # type: ignore[assignment]
        raise EmbeddedPostgresUnavailable(
            f"{pgdata} belongs to {owner!r}, not to {ACCOUNT!r} that runs simsql's PostgreSQL under "
            "root, so simsql will not take it over. If it is an embedded cluster of an older simsql, "
            f"stop its server and `chown -R {ACCOUNT}: {pgdata}`; otherwise use another directory."
        )


def _owner_name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def check_written_path(pgdata: Path) -> None:
    """Under root, refuse a data directory (as the caller wrote it, before any link is followed)
    that is a symbolic link, or that belongs, or lies below a directory or link that belongs, to
    a user other than root and the server's account.

    Such a user could point it at a directory of theirs, or swap it between the check and
    ``initdb``; root would then create a cluster there and hand it to its account. Checking
    the resolved path, as :func:`check_location` does, cannot see that. Raises before anything
    is written. As a normal user it does nothing: a user's own links are theirs to make.
    """
    if not is_root():
        return
    account_uid, _ = ensure_account()
    trusted = {os.geteuid(), account_uid}
    if pgdata.is_symlink():
        raise EmbeddedPostgresUnavailable(
            f"Running as root, the data directory {pgdata} is a symbolic link (to {os.readlink(pgdata)}, made by "
            f"{_owner_name(pgdata.lstat().st_uid)!r}), and root follows none: whoever can make it could point it "
            "at a directory of theirs. Remove the link and pass the real directory if it is root's, or set "
            f"SIMSQL_HOME elsewhere (the default is {ROOT_HOME})."
        )
    for path in (pgdata, *pgdata.parents):
        try:
            owner = path.lstat().st_uid
        except FileNotFoundError:
            continue
        if owner not in trusted:
            where = "belongs" if path == pgdata else f"lies below {path}, which belongs"
            raise EmbeddedPostgresUnavailable(
                f"Running as root, the data directory {pgdata} {where} to {_owner_name(owner)!r}, not to root "
                f"or {ACCOUNT!r}: that user could replace it with a directory or link of theirs. Use a "
                f"directory only root owns (the default {ROOT_HOME / 'pg'}), or run as that user."
            )
