"""The public names: the 0.2 names still work for one minor version, with a warning naming the
new one; the new names are the same functions; nothing deprecated is exported by ``*``."""

from __future__ import annotations

import subprocess
import sys

import pytest

import simsql
from simsql.lifecycle.tables import detach_table
from simsql.side_tables import attach_model


@pytest.mark.parametrize(("old", "new"), [("attach", attach_model), ("detach", detach_table)])
def test_old_names_warn_and_are_the_new_functions(old: str, new: object) -> None:
    with pytest.warns(DeprecationWarning, match=f"simsql.{old} is deprecated.*use simsql.{new.__name__}"):  # type: ignore[attr-defined]
        found = getattr(simsql, old)
    assert found is new


def test_from_import_of_an_old_name_warns() -> None:
    with pytest.warns(DeprecationWarning, match="simsql.attach is deprecated"):
        from simsql import attach  # noqa: F401
    with pytest.warns(DeprecationWarning, match="simsql.detach is deprecated"):
        from simsql import detach  # noqa: F401


def test_new_names_are_exported_and_old_ones_are_not() -> None:
    assert {"attach_model", "attach_table", "detach_table"} <= set(simsql.__all__)
    assert not {"attach", "detach"} & set(simsql.__all__)
    missing = [name for name in simsql.__all__ if not hasattr(simsql, name)]
    assert missing == []


def test_star_import_warns_about_nothing() -> None:
    result = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", "from simsql import *"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'attach_models'"):
        simsql.attach_models  # noqa: B018
