"""Every subpackage of simsql ships: setuptools installs only the packages pyproject lists, so a
new directory (simsql.lifecycle, simsql.dialects) missing there imports in an editable checkout
and fails with ModuleNotFoundError after ``pip install simsql``."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

REPO = Path(__file__).resolve().parents[1]


def test_every_simsql_subpackage_is_listed_in_pyproject() -> None:
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(REPO).parts)
        for init in (REPO / "simsql").rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert found <= listed, f"missing from [tool.setuptools] packages: {sorted(found - listed)}"
