"""The public face: a small, sorted ``simsql.__all__``; the names 0.3 exported at the top and 0.4
moved to their module still work until 0.5, each with a warning naming its new home and being the
very object found there; nothing in this repository uses them (the package, its tests,
benchmarks, research and tools, the README and docs/)."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import simsql

ROOT = Path(__file__).resolve().parents[1]
MOVED = sorted(simsql.DEPRECATED_NAMES)


def _new_home(name: str) -> object:
    module, _, attribute = simsql.DEPRECATED_NAMES[name].rpartition(".")
    return getattr(importlib.import_module(module), attribute)


def test_all_is_sorted_small_and_without_duplicates() -> None:
    assert simsql.__all__ == sorted(simsql.__all__)
    assert len(set(simsql.__all__)) == len(simsql.__all__)
    assert len(simsql.__all__) <= 25, "the top level is what an application needs first; the rest has a module"
    assert [name for name in simsql.__all__ if not hasattr(simsql, name)] == []


def test_moved_names_are_not_exported() -> None:
    assert not set(simsql.DEPRECATED_NAMES) & set(simsql.__all__)
    assert all(target.startswith("simsql.") and target.count(".") >= 2 for target in simsql.DEPRECATED_NAMES.values())


@pytest.mark.parametrize("name", MOVED)
def test_a_moved_name_warns_and_is_the_object_of_its_new_home(name: str) -> None:
    new = re.escape(simsql.DEPRECATED_NAMES[name])
    with pytest.warns(DeprecationWarning, match=rf"simsql\.{name} is deprecated and will be removed in simsql 0\.5; use {new}"):
        found = getattr(simsql, name)
    assert found is _new_home(name)


def test_from_import_of_a_moved_name_warns() -> None:
    with pytest.warns(DeprecationWarning, match=r"simsql\.hamming is deprecated.*use simsql\.bits\.hamming"):
        from simsql import hamming
    from simsql.bits import hamming as bits_hamming

    assert hamming is bits_hamming
    assert hamming(0b1011, 0b0001) == 2


def test_each_access_warns_again() -> None:
    """Nothing is cached at the top level: the second use warns as the first did."""
    for _ in range(2):
        with pytest.warns(DeprecationWarning):
            simsql.simhash  # noqa: B018
    assert "simhash" not in vars(simsql)


def test_star_import_warns_about_nothing() -> None:
    result = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", "from simsql import *; print(len(dir()))"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("name", ["attach", "detach"])
def test_the_0_2_names_are_gone_in_0_4(name: str) -> None:
    """Deprecated in 0.3 'until 0.4': attach_model and detach_table replace them."""
    with pytest.raises(AttributeError, match=f"no attribute '{name}'"):
        getattr(simsql, name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'attach_models'"):
        simsql.attach_models  # noqa: B018


# Nothing here uses a moved name -------------------------------------------------------------------


def _python_files() -> Iterator[Path]:
    for folder in ("simsql", "tests", "benchmarks", "research", "tools"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path != Path(__file__).resolve():
                yield path


def _package_of(path: Path, level: int) -> str:
    """The dotted package a relative import of ``level`` dots in ``path`` starts from."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts[: len(parts) - level])


def _moved_names_used(path: Path) -> Iterator[str]:
    """``simsql.X`` and ``from simsql import X`` (relative too) for a moved ``X``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom):
            module = _package_of(path, node.level) + (f".{node.module}" if node.module else "") if node.level else node.module
            if module == "simsql":
                yield from (f"line {node.lineno}: from simsql import {alias.name}" for alias in node.names if alias.name in simsql.DEPRECATED_NAMES)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "simsql":
            if node.attr in simsql.DEPRECATED_NAMES:
                yield f"line {node.lineno}: simsql.{node.attr}"


def test_the_package_uses_no_moved_name() -> None:
    found = {str(path.relative_to(ROOT)): used for path in (ROOT / "simsql").rglob("*.py") if (used := list(_moved_names_used(path)))}
    assert found == {}


def test_tests_benchmarks_research_and_tools_use_no_moved_name() -> None:
    found = {str(path.relative_to(ROOT)): used for path in _python_files() if (used := list(_moved_names_used(path)))}
    assert found == {}


_MOVED_IN_PROSE = re.compile(r"\bsimsql\.(" + "|".join(MOVED) + r")\b")


def test_the_readme_and_docs_name_no_moved_name() -> None:
    """Code and prose alike; docs/changes.md and api.md's table of moves name them on purpose."""
    found = {}
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        if page.name == "changes.md":
            continue
        text = page.read_text(encoding="utf-8")
        text = re.sub(r"^## Moved in 0\.4\n.*?(?=^## )", "", text, flags=re.MULTILINE | re.DOTALL)
        if used := sorted(set(_MOVED_IN_PROSE.findall(text))):
            found[page.name] = used
    assert found == {}
