"""The wheel is what users install: it must carry the licence and build without warnings that
announce a future breakage (setuptools drops the TOML-table ``project.license`` after 2027-02-18).

Built with pip in an isolated build environment, as ``pip install .`` does, from a copy of the
files the build reads (so the worktree gets no ``build/`` or ``*.egg-info``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (REPO / name).exists():
            shutil.copy2(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("simsql", "migrations"):
        shutil.copytree(REPO / name, source / name, ignore=ignore)
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(out), str(source)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    log = result.stdout + result.stderr
    if result.returncode != 0 and "No matching distribution found for setuptools" in log:
        pytest.skip("no package index to fetch the build backend from")
    assert result.returncode == 0, log[-4000:]
    (wheel,) = out.glob("simsql-*.whl")
    return wheel, log


def test_wheel_ships_the_license(wheel_build: tuple[Path, str]) -> None:
    wheel, _ = wheel_build
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        licence = next((n for n in names if re.search(r"\.dist-info/licenses/LICENSE$", n)), None)
        assert licence is not None, names
        assert "MIT License" in archive.read(licence).decode()
    assert "License-Expression: MIT" in metadata
    assert "License-File: LICENSE" in metadata


def test_build_gives_no_license_warning(wheel_build: tuple[Path, str]) -> None:
    _, log = wheel_build
    warnings = [line for line in log.splitlines() if re.search(r"warn|deprecat", line, re.I) and "licen" in line.lower()]
    assert warnings == []


def test_build_gives_no_setuptools_warning(wheel_build: tuple[Path, str]) -> None:
    # e.g. "_Warning: Package 'simsql.migrations.versions' is absent from the `packages`
    # configuration": setuptools announces it will stop shipping such files.
    _, log = wheel_build
    assert [line for line in log.splitlines() if re.search(r"_Warning:|DeprecationWarning:", line)] == []


def test_wheel_ships_simsqls_own_revisions(wheel_build: tuple[Path, str]) -> None:
    wheel, _ = wheel_build
    with zipfile.ZipFile(wheel) as archive:
        assert any(re.fullmatch(r"simsql/migrations/versions/0001_\w+\.py", n) for n in archive.namelist())
