"""Where a cluster and its socket live: the default data directory, the socket directory and
the directories above them.

Paths only: nothing here starts a process. Root's rules for which paths it may hand to the
server's account live in :mod:`.account`.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
from pathlib import Path

from .errors import EmbeddedPostgresUnavailable

__all__ = [
    "MAX_SOCKET_PATH", "ROOT_HOME", "SOCKET_PORT", "default_data_dir", "has_cluster", "is_root",
    "make_dir", "make_parent", "resolve_data_dir", "socket_dir", "written_data_dir",
]  # fmt: skip

#: Where root's state lives: the default cluster and, when needed, a copy of the binaries.
ROOT_HOME = Path("/var/lib/simsql")
#: The socket's port number: only its name, since the server listens on no TCP port.
SOCKET_PORT = 5432
#: Longest Unix socket path the kernel accepts (sun_path less its NUL byte).
MAX_SOCKET_PATH = 103 if sys.platform == "darwin" else 107


def is_root() -> bool:
    """Whether this process runs as root, which PostgreSQL refuses to run as."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


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
    if is_root():
        return ROOT_HOME / "pg"
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        base = Path(local) if local else Path.home() / "AppData" / "Local"
        return base / "simsql" / "pg"
    return Path.home() / ".local" / "share" / "simsql" / "pg"


def resolve_data_dir(data_dir: str | os.PathLike[str] | None) -> Path:
    """The absolute data directory a caller means: :func:`default_data_dir` for None."""
    path = default_data_dir() if data_dir is None else Path(data_dir)
    return path.expanduser().resolve()


def written_data_dir(data_dir: str | os.PathLike[str] | None) -> Path:
    """The data directory as the caller wrote it, made absolute but with no link followed: what
    root checks before trusting :func:`resolve_data_dir`'s answer."""
    path = default_data_dir() if data_dir is None else Path(data_dir)
    return Path(os.path.abspath(path.expanduser()))


def has_cluster(pgdata: Path) -> bool:
    """Whether ``initdb`` has made a cluster in ``pgdata`` (it writes ``PG_VERSION``)."""
    return (pgdata / "PG_VERSION").is_file()


def socket_dir(pgdata: Path) -> Path:
    """The data directory when the socket's path fits in the kernel's limit; otherwise a private
    directory of the user's own (never under root: a shared directory would let others in)."""
    if sys.platform == "win32" or len(os.fsencode(pgdata / f".s.PGSQL.{SOCKET_PORT}.lock")) <= MAX_SOCKET_PATH:
        return pgdata  # (Windows listens on TCP: no socket)
    if is_root():
        raise EmbeddedPostgresUnavailable(
            f"Running as root with a data directory path too long for a Unix socket ({pgdata}). "
            f"Use a shorter path (e.g. set SIMSQL_HOME={ROOT_HOME}) or run as a normal user."
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


def make_dir(path: Path) -> Path:
    """``path`` and its parents, created readable by all (mode 0755) where missing."""
    path.mkdir(mode=0o755, parents=True, exist_ok=True)
    return path


def make_parent(pgdata: Path) -> None:
    """The data directory's parent, where the lock file goes; a message if it cannot be made."""
    try:
        make_dir(pgdata.parent)
    except OSError as exc:
        raise EmbeddedPostgresUnavailable(
            f"Cannot create {pgdata.parent} for the embedded PostgreSQL data ({exc}). Set "
            "SIMSQL_HOME to a writable directory or pass another data directory."
        ) from exc
