"""Issue 21 item 8: run as root, the embedded server follows no link and takes over no directory
that another user planted at ``SIMSQL_HOME/pg`` (or above it): it refuses, says why, and writes
nothing there.

Before the fix only the resolved path was checked: root ran ``initdb`` in the other user's
directory and handed it to its own service account.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterator
from pathlib import Path

import pytest

from simsql.embedded import EmbeddedPostgresUnavailable, embedded_url, stop_embedded

from .pg_dirs import cluster_parent, is_root

pytestmark = pytest.mark.skipif(not is_root(), reason="a root-only safeguard")


@pytest.fixture
def other() -> int:
    return pwd.getpwnam("nobody").pw_uid


@pytest.fixture
def parent() -> Iterator[Path]:
    with cluster_parent() as path:
        yield path


def _theirs(parent: Path, uid: int) -> Path:
    """A directory of the other user's, the kind they would point a link at."""
    theirs = parent / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, uid, uid)
    return theirs


def _untouched(theirs: Path, uid: int) -> None:
    assert list(theirs.iterdir()) == []
    assert theirs.stat().st_uid == uid


def _refused(monkeypatch: pytest.MonkeyPatch, home: Path, data_dir: Path | None, match: str) -> None:
    monkeypatch.setenv("SIMSQL_HOME", str(home))
    try:
        with pytest.raises(EmbeddedPostgresUnavailable, match=match):
            embedded_url(data_dir)
    finally:
        stop_embedded(data_dir)


def test_root_refuses_a_link_planted_at_simsql_home_pg(parent: Path, other: int, monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = _theirs(parent, other)
    home = parent / "home"
    home.mkdir(mode=0o755)
    (home / "pg").symlink_to(theirs)
    os.lchown(home / "pg", other, other)
    _refused(monkeypatch, home, None, "is a symbolic link")
    _untouched(theirs, other)


def test_root_refuses_a_link_given_as_the_data_dir(parent: Path, other: int, monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = _theirs(parent, other)
    (parent / "pg").symlink_to(theirs)
    _refused(monkeypatch, parent / "unused", parent / "pg", "is a symbolic link")
    _untouched(theirs, other)


def test_root_refuses_a_data_dir_another_user_owns(parent: Path, other: int, monkeypatch: pytest.MonkeyPatch) -> None:
    home = parent / "home"
    home.mkdir(mode=0o755)
    theirs = _theirs(home, other)
    theirs.rename(home / "pg")
    _refused(monkeypatch, home, None, "belongs to 'nobody'")
    _untouched(home / "pg", other)


def test_root_refuses_a_simsql_home_another_user_owns(parent: Path, other: int, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _theirs(parent, other)  # they can put anything at home/pg, at any time
    _refused(monkeypatch, home, None, "lies below .*, which belongs to 'nobody'")
    _untouched(home, other)
