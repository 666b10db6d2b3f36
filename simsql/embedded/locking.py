"""One caller at a time per cluster: a lock file across processes, an ``RLock`` across threads.

Every step that inspects or changes a cluster (start, stop, the record of its users) runs
under both, so two demos, a test run and an ``atexit`` release never race each other.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from .errors import EmbeddedPostgresUnavailable

__all__ = ["file_lock", "guard"]

#: The lock file excludes other processes, not other threads of this one: they take this first.
guard = threading.RLock()


@contextlib.contextmanager
def file_lock(pgdata: Path) -> Iterator[None]:
    """Exclude other processes working on the same cluster (two demos at once, a test run).

    The lock file is ``.<name>.lock`` beside the data directory, so it exists before the
    cluster does; closing it releases the lock, even when the process is killed.
    """
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
