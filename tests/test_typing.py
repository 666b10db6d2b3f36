"""simsql ships ``py.typed``: users' type checkers read its annotations as a promise, so its own
code must type-check (mypy, the configuration in pyproject.toml)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_type_checks(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api")
    stdout, stderr, status = api.run(
        ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path), str(ROOT / "simsql")]
    )
    assert status == 0, stdout + stderr
