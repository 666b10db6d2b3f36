"""Temporary directories for embedded clusters, and a throwaway PostgreSQL that is not simsql's.

Under root the embedded server runs as an unprivileged account, which must be able to enter the
data directory's parent; pytest's own temporary directories (``/tmp/pytest-of-root``, mode 0700)
are closed to it, and simsql never opens them. The tests make their own directory in the
system's temporary directory and open only that one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PG15_BIN = Path("/usr/lib/postgresql/15/bin")


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@contextlib.contextmanager
def cluster_parent(prefix: str = "simsql-pg-") -> Iterator[Path]:
    """A fresh directory an embedded cluster can live in, removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    if is_root():
        path.chmod(0o711)  # our own directory: the server's account may pass through, not list
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@dataclass
class UnrelatedCluster:
    """A PostgreSQL 15 cluster simsql did not start: the bystander that must survive."""

    data_dir: Path
    socket_dir: Path
    port: int
    pid: int

    def postmaster_lines(self) -> list[str]:
        return (self.data_dir / "postmaster.pid").read_text().splitlines()

    def alive(self) -> bool:
        import psutil

        try:
            return psutil.Process(self.pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def unrelated_cluster() -> Iterator[UnrelatedCluster]:
    """Start a PG15 cluster of its own (temporary data dir, own port, Unix socket only), never
    the system service on 5432. Runs as the ``postgres`` account under root."""
    import pwd

    kwargs: dict[str, object] = {}
    if is_root():
        entry = pwd.getpwnam("postgres")
        kwargs = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
    with cluster_parent("simsql-unrelated-") as parent:
        parent.chmod(0o755)
        data = parent / "data"
        data.mkdir(mode=0o700)
        if is_root():
            os.chown(data, kwargs["user"], kwargs["group"])  # type: ignore[arg-type]
            os.chown(parent, kwargs["user"], kwargs["group"])  # type: ignore[arg-type]
        port = _free_port()
        run = {"check": True, "capture_output": True, "text": True, "timeout": 120, **kwargs}
        subprocess.run([str(PG15_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"], **run)
        options = f"-h '' -k {parent} -p {port}"
        subprocess.run(
            [str(PG15_BIN / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(parent / "log"), "-w", "start"],
            **run,
        )
        pid = int((data / "postmaster.pid").read_text().split()[0])
        try:
            yield UnrelatedCluster(data, parent, port, pid)
        finally:
            subprocess.run(
                [str(PG15_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                **{**run, "check": False},
            )
            time.sleep(0.1)
