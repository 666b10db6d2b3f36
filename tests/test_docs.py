"""docs/api.md names every public name, and no name the package does not export."""

from __future__ import annotations

import re
from pathlib import Path

import simsql

API = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def test_every_public_name_is_documented() -> None:
    text = API.read_text(encoding="utf-8")
    mentioned = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)", text))
    assert [name for name in simsql.__all__ if name not in mentioned] == []


def test_deprecated_names_are_documented_as_deprecated() -> None:
    text = API.read_text(encoding="utf-8")
    for old, new in simsql.DEPRECATED_NAMES.items():
        assert f"`simsql.{old}`, deprecated" in text, old
        assert f"`{new}(" in text, new
